package app_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

// TestAccountsProviders: the provider of an account is the cloud's plugin
// made with the account's settings over the deployment's; a setting its
// variable's check refuses, and a variable the plugin does not mark per
// account, are errors naming the account, the variable and the rule.
func TestAccountsProviders(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")
	t.Setenv("PUBSUB_EMULATOR_HOST", "127.0.0.1:1")
	var got plugin.Env
	demo := demoCloud(&got)
	demo.Vars = append(demo.Vars, plugin.Var{Name: "DEMO_PROJECT", Default: "p1", Readers: plugin.ReadByCallers, PerAccount: true, Meaning: "where VMs are made",
		Check: func(v string, _ plugin.Settings) error {
			if strings.Contains(v, " ") {
				return errors.New("holds a space")
			}
			return nil
		}})
	vars := withVars(engineVars, map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "demo", "DEMO_ENDPOINT": "http://127.0.0.1:1"})
	a, err := app.New(context.Background(), env(vars), app.Options{Serve: []app.Function{app.Reconcile}, Linked: []plugin.Plugin{demo}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	docs := map[string]map[string]string{
		"second": {"DEMO_PROJECT": "p2"},
		"spaced": {"DEMO_PROJECT": "p 2"},
		"wider":  {"DEMO_REGIONS": "r9"},
	}
	a.Providers.WithAccounts(func(_ context.Context, id string) (string, provider.AccountSpec, error) {
		return "demo", provider.AccountSpec{Settings: docs[id]}, nil
	})
	cases := map[string]struct {
		reason       string
		id           string
		wantSettings plugin.Settings
		wantErr      string
	}{
		"Default": {reason: "the default account's provider is made with no account document", id: ""},
		"Second": {reason: "an account's settings over the deployment's", id: "second",
			wantSettings: plugin.Settings{"DEMO_ENDPOINT": "http://127.0.0.1:1", "DEMO_REGIONS": "r1", "DEMO_PROJECT": "p2"}},
		"Checked": {reason: "an account's value passes its variable's check", id: "spaced",
			wantErr: `account "spaced": DEMO_PROJECT="p 2" holds a space`},
		"NotPerAccount": {reason: "a variable the plugin does not mark per account is the deployment's", id: "wider",
			wantErr: `account "wider" sets DEMO_REGIONS, which is the deployment's, not an account's`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got = plugin.Env{}
			_, err := a.Providers.Account(context.Background(), "demo", tc.id)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%s\nAccount(%q): %v, want an error with %q", tc.reason, tc.id, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\nAccount(%q): %v", tc.reason, tc.id, err)
			}
			if tc.id == "" {
				return // its plugin's New ran at app.New, with the deployment's settings alone
			}
			if diff := cmp.Diff(tc.wantSettings, got.Settings); diff != "" {
				t.Errorf("%s\nthe settings the constructor got (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
