package account_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/account"
)

// perAccount is a deployment whose PROVIDERS are gcp (an account may set
// its project) and mock (whose accounts may set nothing).
func perAccount(typ string) ([]string, bool) {
	switch typ {
	case "gcp":
		return []string{"GCP_PROJECT", "GCP_COMPUTE_ENDPOINT"}, true
	case "mock":
		return nil, true
	}
	return nil, false
}

func TestValidate(t *testing.T) {
	good := account.Account{ID: "second", Provider: "gcp", Settings: map[string]string{"GCP_PROJECT": "egress-2"},
		Regions: []string{"europe-west1"}, Limits: account.Limits{InstancesPerRegion: 10}, State: account.Active}
	cases := map[string]struct {
		reason string
		change func(a *account.Account)
		want   []account.Violation
	}{
		"Good":     {reason: "an account of a configured type setting its project is valid", change: func(*account.Account) {}},
		"Draining": {reason: "a draining account is valid", change: func(a *account.Account) { a.State = account.Draining }},
		"NoRegionsNoLimits": {reason: "no regions serves every region, no limits caps nothing",
			change: func(a *account.Account) { a.Regions, a.Limits = nil, account.Limits{} }},
		"DefaultID": {reason: "the default account has no document", change: func(a *account.Account) { a.ID = "" },
			want: []account.Violation{{Field: "id", Description: `"" is not an RFC 1123 label (1-63 lowercase letters, digits and '-', starting and ending with a letter or digit); the default account has no document`}}},
		"UnknownType": {reason: "a type outside PROVIDERS has no provider to build", change: func(a *account.Account) { a.Provider, a.Settings = "hetzner", nil },
			want: []account.Violation{{Field: "provider", Description: `"hetzner" is not among the configured provider types (PROVIDERS)`}}},
		"BadType": {reason: "a type is a lowercase word", change: func(a *account.Account) { a.Provider, a.Settings = "GCP", nil },
			want: []account.Violation{{Field: "provider", Description: `"GCP" is not a provider type (a lowercase word such as gcp)`}}},
		"NotPerAccount": {reason: "a deployment's variable is the same in every account",
			change: func(a *account.Account) { a.Settings["GCP_NETWORK"] = "other" },
			want:   []account.Violation{{Field: "settings.GCP_NETWORK", Description: "is not a variable an account of gcp may set: those are GCP_PROJECT, GCP_COMPUTE_ENDPOINT"}}},
		"TypeWithNone": {reason: "a cloud whose plugin marks nothing takes no settings",
			change: func(a *account.Account) { a.Provider = "mock" },
			want:   []account.Violation{{Field: "settings.GCP_PROJECT", Description: "is not a variable an account of mock may set: those are none"}}},
		"NoSettings": {reason: "an account of a cloud with per-account variables that sets none is the default account twice",
			change: func(a *account.Account) { a.Settings = nil },
			want:   []account.Violation{{Field: "settings", Description: "sets none of GCP_PROJECT, GCP_COMPUTE_ENDPOINT: an account that sets none is the deployment's own account, whose VMs the collector would take for another account's"}}},
		"EmptySetting": {reason: "an empty value would silently take the deployment's", change: func(a *account.Account) { a.Settings["GCP_PROJECT"] = " " },
			want: []account.Violation{{Field: "settings.GCP_PROJECT", Description: "is empty: leave the variable out to take the deployment's value"}}},
		"Regions": {reason: "regions are named once each, none empty", change: func(a *account.Account) { a.Regions = []string{"a", "", "a"} },
			want: []account.Violation{{Field: "regions[1]", Description: "is empty"}, {Field: "regions[2]", Description: `"a" is named twice`}}},
		"NegativeLimits": {reason: "limits are counts", change: func(a *account.Account) { a.Limits = account.Limits{InstancesPerRegion: -1, CallsPerWindow: -2} },
			want: []account.Violation{{Field: "limits.instancesPerRegion", Description: "-1 is below 0 (0 is no cap of the account's own)"},
				{Field: "limits.callsPerWindow", Description: "-2 is below 0 (0 takes the cloud's default)"}}},
		"State": {reason: "a state is active or draining", change: func(a *account.Account) { a.State = "" },
			want: []account.Violation{{Field: "state", Description: `"" is neither "active" nor "draining"`}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := good
			a.Settings = map[string]string{}
			for k, v := range good.Settings {
				a.Settings[k] = v
			}
			tc.change(&a)
			err := account.Validate(a, perAccount)
			var got []account.Violation
			var inv *account.InvalidError
			if errors.As(err, &inv) {
				got = inv.Violations
				if !errors.Is(err, account.ErrInvalid) {
					t.Errorf("%v does not wrap ErrInvalid", err)
				}
			} else if err != nil {
				t.Fatalf("Validate: %v, want an *InvalidError or nil", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nViolations (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestServes(t *testing.T) {
	cases := map[string]struct {
		regions []string
		region  string
		want    bool
	}{
		"NoRegions": {region: "europe-west1", want: true},
		"Named":     {regions: []string{"us-east1", "europe-west1"}, region: "europe-west1", want: true},
		"NotNamed":  {regions: []string{"us-east1"}, region: "europe-west1", want: false},
	}
	for name, tc := range cases {
		if got := (account.Account{Regions: tc.regions}).Serves(tc.region); got != tc.want {
			t.Errorf("%s: Serves(%q) of %v = %v, want %v", name, tc.region, tc.regions, got, tc.want)
		}
	}
}
