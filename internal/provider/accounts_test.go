package provider_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
)

// named is a provider that says which account it was made for.
type named struct {
	nopProvider
	account, project string
}

// TestSetAccounts: each (type, account) gets its own provider, made once
// from the account's settings; the default account's is Get's; an
// account of another type, an unknown one, and a type that takes no
// accounts are errors that name them.
func TestSetAccounts(t *testing.T) {
	ctx := context.Background()
	r := provider.NewRegistry()
	made := map[string]int{}
	ctorFor := func(acct provider.AccountSpec) (provider.Constructor, error) {
		id, settings := acct.ID, acct.Settings
		if settings["GCP_PROJECT"] == "refused" {
			return nil, fmt.Errorf("GCP_PROJECT %q is refused", settings["GCP_PROJECT"])
		}
		return func(context.Context) (provider.Provider, error) {
			made[id]++
			return named{account: id, project: settings["GCP_PROJECT"]}, nil
		}, nil
	}
	def, _ := ctorFor(provider.AccountSpec{})
	if err := r.Register("gcp", def, provider.PerAccount(ctorFor)); err != nil {
		t.Fatal(err)
	}
	if err := r.Register("mock", func(context.Context) (provider.Provider, error) { return nopProvider{}, nil }); err != nil {
		t.Fatal(err)
	}
	docs := map[string]struct {
		typ      string
		settings map[string]string
	}{
		"second": {"gcp", map[string]string{"GCP_PROJECT": "egress-2"}},
		"third":  {"gcp", map[string]string{"GCP_PROJECT": "egress-3"}},
		"bad":    {"gcp", map[string]string{"GCP_PROJECT": "refused"}},
		"mocks":  {"mock", nil},
	}
	s := provider.NewSet(r).WithAccounts(func(_ context.Context, id string) (string, provider.AccountSpec, error) {
		d, ok := docs[id]
		if !ok {
			return "", provider.AccountSpec{}, fmt.Errorf("accounts/%s: %w", id, provider.ErrNoAccount)
		}
		return d.typ, provider.AccountSpec{Settings: d.settings}, nil
	})
	cases := map[string]struct {
		reason  string
		typ, id string
		want    provider.Provider
		wantErr string
	}{
		"Default":      {reason: "the default account's provider is made with no settings of an account", typ: "gcp", id: "", want: named{}},
		"Second":       {reason: "an account's provider is made from its settings", typ: "gcp", id: "second", want: named{account: "second", project: "egress-2"}},
		"Third":        {reason: "each account has its own", typ: "gcp", id: "third", want: named{account: "third", project: "egress-3"}},
		"OtherType":    {reason: "an account holds one type's VMs", typ: "gcp", id: "mocks", wantErr: `account "mocks" holds the VMs of "mock", not of "gcp"`},
		"Unknown":      {reason: "an account without a document", typ: "gcp", id: "fourth", wantErr: "no such account"},
		"Refused":      {reason: "a setting the cloud refuses", typ: "gcp", id: "bad", wantErr: `GCP_PROJECT "refused" is refused`},
		"NoAccounts":   {reason: "a type registered without PerAccount", typ: "mock", id: "mocks", wantErr: `type "mock" serves its default account only`},
		"Unconfigured": {reason: "a type not registered", typ: "aws", id: "second", wantErr: "not configured"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for range 2 { // the second time from the set's memory
				got, err := s.Account(ctx, tc.typ, tc.id)
				if tc.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
						t.Fatalf("%s\nAccount(%s, %q): %v, want an error with %q", tc.reason, tc.typ, tc.id, err, tc.wantErr)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s\nAccount(%s, %q): %v", tc.reason, tc.typ, tc.id, err)
				}
				if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(named{})); diff != "" {
					t.Errorf("%s\nprovider (-want +got):\n%s", tc.reason, diff)
				}
			}
		})
	}
	if diff := cmp.Diff(map[string]int{"": 1, "second": 1, "third": 1}, made); diff != "" {
		t.Errorf("providers made by account (-want +got): each once\n%s", diff)
	}
	if _, err := provider.NewSet(r).Account(ctx, "gcp", "second"); !errors.Is(err, provider.ErrNoAccount) {
		t.Errorf("Account of a set that reads no accounts: %v, want ErrNoAccount", err)
	}
}
