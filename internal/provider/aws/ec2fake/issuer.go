package ec2fake

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
)

// GoogleIssuer is the iss of Google's ID tokens.
const GoogleIssuer = "https://accounts.google.com"

// Issuer plays Google's token service for tests of the exchange with
// STS: it signs ID tokens with its RSA key (RS256) and serves the key as
// a JSON Web Key Set, as Google serves its certs, for Trust.JWKSURL.
type Issuer struct {
	Key *rsa.PrivateKey
	Kid string
	srv *httptest.Server
}

// NewIssuer starts an issuer's JWKS on a loopback port. Close it when
// done.
func NewIssuer() (*Issuer, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	is := &Issuer{Key: key, Kid: "egress-test-key-1"}
	is.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{
			"kid": is.Kid, "kty": "RSA", "alg": "RS256", "use": "sig",
			"n": base64.RawURLEncoding.EncodeToString(key.N.Bytes()),
			"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes()),
		}}})
	}))
	return is, nil
}

// JWKSURL is where the issuer's keys are; Client reaches it.
func (is *Issuer) JWKSURL() string      { return is.srv.URL }
func (is *Issuer) Client() *http.Client { return is.srv.Client() }

// Close stops the JWKS.
func (is *Issuer) Close() { is.srv.Close() }

// Sign makes an ID token of these claims, signed with key under the
// issuer's kid (the issuer's own key, or another to forge one).
func (is *Issuer) Sign(key *rsa.PrivateKey, claims map[string]any) (string, error) {
	enc := func(v any) (string, error) {
		b, err := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b), err
	}
	h, err := enc(map[string]string{"alg": "RS256", "kid": is.Kid, "typ": "JWT"})
	if err != nil {
		return "", err
	}
	c, err := enc(claims)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(h + "." + c))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		return "", err
	}
	return h + "." + c + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}
