package vmidentity_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/option"

	"github.com/egress-proxies/egress/internal/vmidentity"
)

const (
	project = "demo-project"
	email   = "proxy-vm@demo-project.iam.gserviceaccount.com"
)

func TestVerify(t *testing.T) {
	ctx := context.Background()
	iss, err := vmidentity.NewIssuer()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := vmidentity.NewIssuer()
	aud := vmidentity.Audience(project, "proxy-callhome")
	v, err := vmidentity.NewVerifier(ctx, aud, project, email, option.WithHTTPClient(iss.KeysClient()))
	if err != nil {
		t.Fatal(err)
	}
	vm := vmidentity.Instance{Project: project, Zone: "us-central1-a", Name: "proxy-5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f", ID: "4242", Email: email}
	sign := func(i *vmidentity.Issuer, aud string, in vmidentity.Instance, at time.Time) string {
		tok, err := i.Token(aud, in, at)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	good := sign(iss, aud, vm, time.Now())
	cases := map[string]struct {
		reason string
		token  string
		want   string // "" accepted
	}{
		"Good":         {reason: "the VM's own token", token: good},
		"None":         {reason: "a message without a token", token: "", want: "carries none"},
		"OtherKey":     {reason: "a token signed by a key Google's list does not hold (a forgery)", token: sign(other, aud, vm, time.Now()), want: "could not find matching cert"},
		"Tampered":     {reason: "a token whose claims were changed after signing", token: tamper(good), want: "verification error"},
		"Audience":     {reason: "a token the VM got for another audience", token: sign(iss, "https://example.com", vm, time.Now()), want: "audience"},
		"Expired":      {reason: "an old token", token: sign(iss, aud, vm, time.Now().Add(-2*time.Hour)), want: "expired"},
		"OtherProject": {reason: "a VM of another project", token: sign(iss, aud, vmidentity.Instance{Project: "elsewhere", Zone: "z", Name: "n", Email: email}, time.Now()), want: `is of project "elsewhere"`},
		"OtherAccount": {reason: "a VM of the project that is no proxy VM (another account)", token: sign(iss, aud, vmidentity.Instance{Project: project, Zone: "z", Name: "db", Email: "default@x"}, time.Now()), want: "not the proxy VMs' account"},
		"NoInstance":   {reason: "a token of format=standard, or a person's", token: sign(iss, aud, vmidentity.Instance{Email: email}, time.Now()), want: "names no Compute Engine instance"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := v.Verify(ctx, tc.token)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("%s: %v", tc.reason, err)
				}
				if diff := cmp.Diff(vm, got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
				}
				return
			}
			if err == nil || !errors.Is(err, vmidentity.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v; want ErrInvalid saying %q", tc.reason, err, tc.want)
			}
		})
	}
}

// tamper renames the instance in a token's claims, keeping its
// signature: what root on one VM would do to pass as another.
func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	claims, _ := base64.RawURLEncoding.DecodeString(parts[1])
	claims = []byte(strings.Replace(string(claims), "proxy-5f0c1d2e", "proxy-00000000", 1))
	return parts[0] + "." + base64.RawURLEncoding.EncodeToString(claims) + "." + parts[2]
}
