// Package iap verifies the signed header of Identity-Aware Proxy,
// x-goog-iap-jwt-assertion: the identity of a browser that reached the
// ProxyAPI (and so the console) through IAP for Cloud Run. A browser
// cannot mint the ID token the API reads otherwise; IAP signs in the
// person and hands the service this assertion.
//
// Unlike the ID token, which Cloud Run verifies before the request
// arrives, the assertion is verified here, every rule IAP's "signed
// headers" guide names: the algorithm is ES256, the key (kid) is one of
// Google's published IAP keys (Keys, fetched and cached by
// google.golang.org/api/idtoken, which honours their Cache-Control), the
// signature holds, the issuer is https://cloud.google.com/iap, the
// audience is this service's (/projects/PROJECT_NUMBER/locations/REGION/
// services/SERVICE, IAP_AUDIENCE), it is not expired and was not issued in
// the future (30 seconds of skew, as the guide allows). The signature and
// key handling are the idtoken package's; this package adds the rules it
// leaves to its caller, and refuses before it what would make it panic (a
// signature of the wrong length).
package iap

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"google.golang.org/api/idtoken"
	"google.golang.org/api/option"

	"github.com/egress-proxies/egress/internal/clock"
)

// Header is the request header IAP puts its signed assertion in.
const Header = "X-Goog-Iap-Jwt-Assertion"

// Issuer is the iss of every IAP assertion.
const Issuer = "https://cloud.google.com/iap"

// Keys is where Google publishes IAP's signing keys, as a JWK set.
const Keys = "https://www.gstatic.com/iap/verify/public_key-jwk"

// Skew is the clock skew allowed on exp and iat.
const Skew = 30 * time.Second

// ErrInvalid is wrapped by every refusal of an assertion.
var ErrInvalid = errors.New("IAP assertion refused")

// Verifier checks assertions for one audience.
type Verifier struct {
	audience  string
	clock     clock.Clock
	validator *idtoken.Validator
}

// Options configure a Verifier.
type Options struct {
	// Client fetches Keys; nil means http.DefaultClient. Tests serve their
	// own key set through it.
	Client *http.Client
	// Clock tells the time of exp and iat; nil means the wall clock.
	Clock clock.Clock
}

// New returns a verifier of assertions whose audience is audience.
func New(ctx context.Context, audience string, opts Options) (*Verifier, error) {
	if !strings.HasPrefix(audience, "/projects/") {
		return nil, fmt.Errorf("IAP audience %q: want /projects/PROJECT_NUMBER/locations/REGION/services/SERVICE, as IAP for Cloud Run signs it", audience)
	}
	hc := opts.Client
	if hc == nil {
		hc = http.DefaultClient
	}
	v, err := idtoken.NewValidator(ctx, option.WithHTTPClient(hc))
	if err != nil {
		return nil, fmt.Errorf("IAP key client: %w", err)
	}
	c := opts.Clock
	if c == nil {
		c = clock.Real{}
	}
	return &Verifier{audience: audience, clock: c, validator: v}, nil
}

// Audience is the audience the verifier accepts.
func (v *Verifier) Audience() string { return v.audience }

// Verify checks an assertion and returns its email, lowercase as IAP
// gives it. Every refusal wraps ErrInvalid and says which rule failed; a
// failure to fetch the keys does not (the caller answers it as a server's
// fault, not the caller's).
func (v *Verifier) Verify(ctx context.Context, assertion string) (string, error) {
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	parts := strings.Split(assertion, ".")
	if len(parts) != 3 {
		return "", refuse("not a JWT (want three dot-separated parts, found %d)", len(parts))
	}
	var head struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	if err := decodePart(parts[0], &head); err != nil {
		return "", refuse("header: %v", err)
	}
	if head.Alg != "ES256" {
		// idtoken would also take RS256 against Google's ID token keys:
		// an ID token is not an IAP assertion.
		return "", refuse("algorithm %q, want ES256", head.Alg)
	}
	if sig, err := base64.RawURLEncoding.DecodeString(parts[2]); err != nil || len(sig) != 64 {
		return "", refuse("an ES256 signature is 64 bytes of base64url")
	}
	var claims struct {
		Iss   string `json:"iss"`
		Aud   string `json:"aud"`
		Exp   int64  `json:"exp"`
		Iat   int64  `json:"iat"`
		Email string `json:"email"`
	}
	if err := decodePart(parts[1], &claims); err != nil {
		return "", refuse("payload: %v", err)
	}
	now := v.clock.Now()
	switch {
	case claims.Iss != Issuer:
		return "", refuse("issuer %q, want %s", claims.Iss, Issuer)
	case claims.Aud != v.audience:
		return "", refuse("audience %q, want this service's %s (IAP_AUDIENCE)", claims.Aud, v.audience)
	case now.After(time.Unix(claims.Exp, 0).Add(Skew)):
		return "", refuse("expired at %s", time.Unix(claims.Exp, 0).UTC().Format(time.RFC3339))
	case time.Unix(claims.Iat, 0).After(now.Add(Skew)):
		return "", refuse("issued in the future, at %s", time.Unix(claims.Iat, 0).UTC().Format(time.RFC3339))
	case claims.Email == "":
		return "", refuse("no email claim")
	}
	// The signature last: it may fetch the keys.
	if _, err := v.validator.Validate(ctx, assertion, v.audience); err != nil {
		var urlErr *url.Error
		if errors.As(err, &urlErr) || strings.Contains(err.Error(), "unable to retrieve cert") {
			return "", fmt.Errorf("fetching IAP's keys from %s: %w", Keys, err)
		}
		return "", refuse("%v", err)
	}
	// IAP prefixes the email with its identity provider in the unsigned
	// header; the signed claim is the plain address.
	return strings.ToLower(claims.Email), nil
}

func decodePart(part string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(part)
	if err != nil {
		return fmt.Errorf("not base64url: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return nil
}
