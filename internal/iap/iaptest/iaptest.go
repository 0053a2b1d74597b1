// Package iaptest signs IAP assertions with a key of its own and serves
// that key as Google's published IAP key set, for tests of what verifies
// them (package iap, the API's identity).
package iaptest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/iap"
)

// Signer holds a P-256 key and its kid.
type Signer struct {
	Kid string
	key *ecdsa.PrivateKey
}

// NewSigner makes a fresh key.
func NewSigner(t testing.TB, kid string) *Signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &Signer{Kid: kid, key: k}
}

// Claims are an assertion's payload.
type Claims struct {
	Iss   string `json:"iss"`
	Aud   string `json:"aud"`
	Exp   int64  `json:"exp"`
	Iat   int64  `json:"iat"`
	Sub   string `json:"sub,omitempty"`
	Email string `json:"email"`
}

// Valid are the claims IAP would sign for email to audience at now.
func Valid(audience, email string, now time.Time) Claims {
	return Claims{Iss: iap.Issuer, Aud: audience, Iat: now.Unix(), Exp: now.Add(10 * time.Minute).Unix(), Sub: "accounts.google.com:1234", Email: email}
}

// Sign returns the assertion of c, signed ES256 with the signer's key.
func (s *Signer) Sign(t testing.TB, c Claims) string {
	t.Helper()
	head, _ := json.Marshal(map[string]string{"alg": "ES256", "typ": "JWT", "kid": s.Kid})
	body, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding
	signed := enc.EncodeToString(head) + "." + enc.EncodeToString(body)
	sum := sha256.Sum256([]byte(signed))
	r, ss, err := ecdsa.Sign(rand.Reader, s.key, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	ss.FillBytes(sig[32:])
	return signed + "." + enc.EncodeToString(sig)
}

// jwk is the signer's public key as Google publishes IAP's.
func (s *Signer) jwk() map[string]string {
	enc := base64.RawURLEncoding
	x, y := make([]byte, 32), make([]byte, 32)
	s.key.PublicKey.X.FillBytes(x)
	s.key.PublicKey.Y.FillBytes(y)
	return map[string]string{"alg": "ES256", "crv": "P-256", "kid": s.Kid, "kty": "EC", "use": "sig", "x": enc.EncodeToString(x), "y": enc.EncodeToString(y)}
}

// Client is an HTTP client that answers a GET of iap.Keys with the
// signers' keys, and counts the fetches in *fetches when it is not nil;
// any other URL is an error, so a test reaches no network.
func Client(fetches *atomic.Int64, signers ...*Signer) *http.Client {
	var keys []map[string]string
	for _, s := range signers {
		keys = append(keys, s.jwk())
	}
	body, _ := json.Marshal(map[string]any{"keys": keys})
	return &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		if r.URL.String() != iap.Keys {
			return &http.Response{StatusCode: http.StatusNotFound, Body: io.NopCloser(strings.NewReader("not served by iaptest")), Request: r}, nil
		}
		if fetches != nil {
			fetches.Add(1)
		}
		h := http.Header{"Content-Type": {"application/json"}, "Cache-Control": {"public, max-age=3600"}}
		return &http.Response{StatusCode: http.StatusOK, Header: h, Body: io.NopCloser(strings.NewReader(string(body))), Request: r}, nil
	})}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
