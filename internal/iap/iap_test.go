package iap_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/iap"
	"github.com/egress-proxies/egress/internal/iap/iaptest"
)

const audience = "/projects/123456789/locations/us-central1/services/proxy-api"

// TestVerify: an assertion IAP would sign is taken, its email returned;
// each broken rule is refused with the rule named.
func TestVerify(t *testing.T) {
	now := time.Now()
	google := iaptest.NewSigner(t, "iap-key-1")
	other := iaptest.NewSigner(t, "iap-key-1") // same kid, another key: a forged signature
	var fetches atomic.Int64
	v, err := iap.New(context.Background(), audience, iap.Options{Client: iaptest.Client(&fetches, google), Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
	valid := iaptest.Valid(audience, "Alice@Example.com", now)
	with := func(change func(*iaptest.Claims)) iaptest.Claims {
		c := valid
		change(&c)
		return c
	}
	cases := map[string]struct {
		reason    string
		assertion string
		wantEmail string
		wantRule  string
	}{
		"Valid": {reason: "a fresh assertion for this audience, signed by the published key", assertion: google.Sign(t, valid), wantEmail: "alice@example.com"},
		"WrongAudience": {reason: "an assertion for another service is not for this one",
			assertion: google.Sign(t, with(func(c *iaptest.Claims) { c.Aud = "/projects/123456789/locations/us-central1/services/other" })), wantRule: "audience"},
		"Expired": {reason: "an assertion past its exp (and the skew) is refused",
			assertion: google.Sign(t, with(func(c *iaptest.Claims) { c.Iat, c.Exp = now.Add(-time.Hour).Unix(), now.Add(-50*time.Minute).Unix() })), wantRule: "expired"},
		"IssuedInTheFuture": {reason: "iat beyond the skew",
			assertion: google.Sign(t, with(func(c *iaptest.Claims) { c.Iat = now.Add(time.Hour).Unix() })), wantRule: "future"},
		"BadSignature": {reason: "a key that is not the published one, under its kid", assertion: other.Sign(t, valid), wantRule: "signature"},
		"TamperedPayload": {reason: "a payload changed after signing",
			assertion: tamper(google.Sign(t, valid), google.Sign(t, with(func(c *iaptest.Claims) { c.Email = "mallory@example.com" }))), wantRule: "signature"},
		"WrongIssuer": {reason: "only IAP issues assertions",
			assertion: google.Sign(t, with(func(c *iaptest.Claims) { c.Iss = "https://accounts.google.com" })), wantRule: "issuer"},
		"NoEmail":    {reason: "an assertion without an email names no one", assertion: google.Sign(t, with(func(c *iaptest.Claims) { c.Email = "" })), wantRule: "email"},
		"UnknownKid": {reason: "a kid Google does not publish", assertion: iaptest.NewSigner(t, "iap-key-9").Sign(t, valid), wantRule: "keyId"},
		"RS256":      {reason: "an ID token's algorithm is not IAP's", assertion: "eyJhbGciOiJSUzI1NiJ9.e30.c2ln", wantRule: "ES256"},
		"ShortSig":   {reason: "a signature of the wrong length is refused before it is checked", assertion: strings.Join(strings.Split(google.Sign(t, valid), ".")[:2], ".") + ".AAAA", wantRule: "64 bytes"},
		"NotAJWT":    {reason: "two parts", assertion: "a.b", wantRule: "not a JWT"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			email, err := v.Verify(context.Background(), tc.assertion)
			if tc.wantRule == "" {
				if err != nil {
					t.Fatalf("%s: %v", tc.reason, err)
				}
				if diff := cmp.Diff(tc.wantEmail, email); diff != "" {
					t.Errorf("%s: email (-want +got):\n%s", tc.reason, diff)
				}
				return
			}
			if !errors.Is(err, iap.ErrInvalid) || !strings.Contains(err.Error(), tc.wantRule) {
				t.Errorf("%s: got (%q, %v), want a refusal naming %q", tc.reason, email, err, tc.wantRule)
			}
		})
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("the key set was fetched %d times, want once (cached as its Cache-Control says)", n)
	}
}

// tamper is a's header and signature around b's payload.
func tamper(a, b string) string {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	return pa[0] + "." + pb[1] + "." + pa[2]
}

// TestKeysUnreachable: keys that cannot be fetched are not the caller's
// fault: the error says so and does not wrap ErrInvalid.
func TestKeysUnreachable(t *testing.T) {
	s := iaptest.NewSigner(t, "k")
	down := &http.Client{Transport: failing{}}
	v, err := iap.New(context.Background(), audience, iap.Options{Client: down})
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Verify(context.Background(), s.Sign(t, iaptest.Valid(audience, "a@example.com", time.Now())))
	if err == nil || errors.Is(err, iap.ErrInvalid) || !strings.Contains(err.Error(), iap.Keys) {
		t.Errorf("keys unreachable: %v, want an error naming %s that is not a refusal", err, iap.Keys)
	}
}

type failing struct{}

func (failing) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("connection refused")
}

func TestNewRefusesAnAudienceOfAnotherShape(t *testing.T) {
	if _, err := iap.New(context.Background(), "https://proxy-api.run.app", iap.Options{}); err == nil {
		t.Error("a URL taken as IAP's audience: IAP signs /projects/NUMBER/…")
	}
}
