package proxy

import (
	"crypto/rand"
	"fmt"
	"regexp"
)

// Credentials are a proxy's own username and password, which its proxy
// requires (HTTP Basic authentication). They are made once, when the
// reconciler first creates the proxy's VM, kept in the document's private
// part, and stay the same across replacements of the VM, so a client's
// configuration survives a lost VM.
//
// Both are drawn from an alphabet of ASCII letters and digits: it needs no
// escaping in the userinfo of a URL, in tinyproxy's configuration or in a
// shell word, so neither can carry anything but itself.
//
// The password is never stored as it is: the store keeps it sealed
// (package sealing: encrypted with a key the readers of the database do
// not hold), in Sealed, and fills Password in when it reads a document it
// may open. Password has no Firestore field at all, so no write, however
// it is made, can put it in a document in clear; a document written before
// sealing keeps it in the field "password", which the store reads, then
// seals.
type Credentials struct {
	Username string `firestore:"username,omitempty"`
	Password string `firestore:"-"`
	// Sealed is the password sealed for this proxy's uid, as the store
	// keeps it; "" for credentials not yet written.
	Sealed string `firestore:"sealedPassword,omitempty"`
}

const (
	credentialAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	// usernameLength letters and digits name the proxy's user; it is no
	// secret, but a random one tells an attacker nothing.
	usernameLength = 12
	// passwordLength letters and digits are 24·log2(62) ≈ 142 bits, above
	// the 128 the password must carry.
	passwordLength = 24
)

// The rules of the two parts: letters and digits, a username of 1–64 and a
// password of 16–128.
var (
	usernameRE = regexp.MustCompile(`^[A-Za-z0-9]{1,64}$`)
	passwordRE = regexp.MustCompile(`^[A-Za-z0-9]{16,128}$`)
)

// NewCredentials draws a new username and password from crypto/rand.
func NewCredentials() (Credentials, error) {
	user, err := randomString(usernameLength)
	if err != nil {
		return Credentials{}, err
	}
	pass, err := randomString(passwordLength)
	if err != nil {
		return Credentials{}, err
	}
	return Credentials{Username: user, Password: pass}, nil
}

// IsZero reports whether no credentials have been made yet.
func (c Credentials) IsZero() bool { return c == Credentials{} }

// Unsealed reports whether the password is known but not yet sealed: new
// credentials, or ones read in clear from a document written before
// sealing. The store seals them before it writes them.
func (c Credentials) Unsealed() bool { return c.Password != "" && c.Sealed == "" }

// Validate checks that both parts are of the alphabet and length that make
// them safe to write into a URL, a configuration file and a script.
func (c Credentials) Validate() error {
	if !usernameRE.MatchString(c.Username) {
		return fmt.Errorf("credentials: the username must be 1-64 ASCII letters and digits")
	}
	if !passwordRE.MatchString(c.Password) {
		return fmt.Errorf("credentials: the password must be 16-128 ASCII letters and digits")
	}
	return nil
}

// URL is the proxy URL a client configures: http://USER:PASSWORD@ENDPOINT,
// where endpoint is "ip:port". It is empty while there is no endpoint or
// no credentials.
func (c Credentials) URL(endpoint string) string {
	if endpoint == "" || c.IsZero() {
		return ""
	}
	return "http://" + c.Username + ":" + c.Password + "@" + endpoint
}

// Socks5URL is the SOCKS5 URL a client configures,
// socks5h://USER:PASSWORD@ENDPOINT (Proxy.Socks5Endpoint): what curl's
// -x and ALL_PROXY take, the proxy resolving names. It is empty while
// there is no endpoint or no credentials.
func (c Credentials) Socks5URL(endpoint string) string {
	if endpoint == "" || c.IsZero() {
		return ""
	}
	return "socks5h://" + c.Username + ":" + c.Password + "@" + endpoint
}

// String never shows the password, so credentials that reach a log line by
// accident give nothing away.
func (c Credentials) String() string {
	if c.IsZero() {
		return "<none>"
	}
	return c.Username + ":<redacted>"
}

func randomString(n int) (string, error) {
	// Rejection sampling keeps every letter equally likely: 248 is the
	// largest multiple of 62 below 256.
	out := make([]byte, 0, n)
	buf := make([]byte, 2*n)
	for len(out) < n {
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("credentials: reading random bytes: %w", err)
		}
		for _, b := range buf {
			if b < 248 && len(out) < n {
				out = append(out, credentialAlphabet[int(b)%len(credentialAlphabet)])
			}
		}
	}
	return string(out), nil
}
