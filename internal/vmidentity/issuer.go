package vmidentity

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"time"
)

// Issuer signs identity tokens as Google's metadata server does, for the
// VMs of the local stack and of the tests, whose Verifier trusts its keys
// (KeysClient). It is safe for concurrent use.
type Issuer struct {
	key *rsa.PrivateKey
	kid string
}

// NewIssuer makes an Issuer with a new RSA key.
func NewIssuer() (*Issuer, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("identity issuer key: %w", err)
	}
	sum := sha256.Sum256(k.PublicKey.N.Bytes())
	return &Issuer{key: k, kid: fmt.Sprintf("%x", sum[:8])}, nil
}

// Token is the identity token of format=full the metadata server of in
// gives for audience, valid for an hour from now.
func (i *Issuer) Token(audience string, in Instance, now time.Time) (string, error) {
	header, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": i.kid})
	claims, _ := json.Marshal(map[string]any{
		"iss": "https://accounts.google.com", "aud": audience, "azp": in.Email, "email": in.Email, "email_verified": true,
		"sub": "1" + in.ID, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		"google": map[string]any{"compute_engine": map[string]any{
			"project_id": in.Project, "zone": in.Zone, "instance_name": in.Name, "instance_id": in.ID,
		}},
	})
	enc := base64.RawURLEncoding
	signed := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	sum := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, i.key, crypto.SHA256, sum[:])
	if err != nil {
		return "", err
	}
	return signed + "." + enc.EncodeToString(sig), nil
}

// Keys is the issuer's public key in the form Google publishes its own
// (https://www.googleapis.com/oauth2/v3/certs).
func (i *Issuer) Keys() []byte {
	enc := base64.RawURLEncoding
	b, _ := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "alg": "RS256", "use": "sig", "kid": i.kid,
		"n": enc.EncodeToString(i.key.PublicKey.N.Bytes()),
		"e": enc.EncodeToString(big.NewInt(int64(i.key.PublicKey.E)).Bytes()),
	}}})
	return b
}

// KeysClient is an HTTP client that answers every request with Keys: a
// Verifier given it (option.WithHTTPClient) trusts this issuer's tokens
// and no one else's, Google's included.
func (i *Issuer) KeysClient() *http.Client {
	return &http.Client{Transport: keysTransport(i.Keys())}
}

type keysTransport []byte

func (k keysTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Header: http.Header{"Content-Type": {"application/json"}, "Cache-Control": {"public, max-age=3600"}},
		Body: io.NopCloser(bytes.NewReader(k)), Request: r}, nil
}
