package plugin_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/pacing"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

// whole is a plugin the house can take.
func whole() plugin.Plugin {
	return plugin.Plugin{
		Type: "demo", Name: "Demo Cloud",
		Vars: []plugin.Var{{Name: "DEMO_ENDPOINT", Readers: plugin.ReadByCallers, Local: true, Meaning: "a fake's API"}},
		New: func(plugin.Env) provider.Constructor {
			return func(context.Context) (provider.Provider, error) { return nil, nil }
		},
		Validator:    func(plugin.Settings) (provider.Validator, error) { return nil, nil },
		Boot:         plugin.Boot{Kind: plugin.BootCloudInit},
		Readiness:    plugin.StatusDoor,
		FakeEndpoint: "DEMO_ENDPOINT",
	}
}

func TestCheck(t *testing.T) {
	cases := map[string]struct {
		reason string
		change func(*plugin.Plugin)
		want   string
	}{
		"Whole": {reason: "a plugin with all the house needs passes", change: func(*plugin.Plugin) {}},
		"NoType": {reason: "the registry needs a type word", change: func(p *plugin.Plugin) { p.Type = "Demo Cloud" },
			want: `cloud plugin "Demo Cloud": type "Demo Cloud" is not a lowercase word matching ^[a-z][a-z0-9-]{0,31}$`},
		"NoConstructorNorValidator": {reason: "the registry needs both", change: func(p *plugin.Plugin) { p.New, p.Validator = nil, nil },
			want: `cloud plugin "demo": no constructor (New); no validator`},
		"UndocumentedVar": {reason: "the configuration reference needs a meaning", change: func(p *plugin.Plugin) { p.Vars[0].Meaning = "" },
			want: `cloud plugin "demo": variable DEMO_ENDPOINT has no meaning`},
		"VarTwice": {reason: "one name, one variable", change: func(p *plugin.Plugin) { p.Vars = append(p.Vars, p.Vars[0]) },
			want: `cloud plugin "demo": variable DEMO_ENDPOINT is declared twice`},
		"FakeEndpointNotAVar": {reason: "the fake's endpoint is read as one of its variables", change: func(p *plugin.Plugin) { p.FakeEndpoint = "DEMO_URL" },
			want: `cloud plugin "demo": the fake's endpoint DEMO_URL is none of its variables`},
		"RateWithoutSource": {reason: "a rate is held to the cloud's page", change: func(p *plugin.Plugin) {
			p.Rate, p.Calls = pacing.Rate{Calls: 60, Window: time.Minute}, pacing.Calls{Create: 1}
		},
			want: `cloud plugin "demo": its rate (60 calls per 1m0s) names no source: want the https address of the cloud's page that gives the limit`},
		"RateSpentByNothing": {reason: "a rate that no call spends paces nothing", change: func(p *plugin.Plugin) {
			p.Rate = pacing.Rate{Calls: 60, Window: time.Minute, Source: "https://example.com/limits"}
		},
			want: `cloud plugin "demo": its rate is spent by no method: declare the calls each method makes (Calls)`},
		"StatusDoorWithoutCloudInit": {reason: "the status access travels in cloud-init's user-data", change: func(p *plugin.Plugin) { p.Boot = plugin.Boot{Kind: plugin.BootStartupScript} },
			want: `cloud plugin "demo": the status door is a cloud-init boot's (its VMs carry the status access in their user-data)`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := whole()
			tc.change(&p)
			got := ""
			if err := p.Check(); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestSettingsList(t *testing.T) {
	s := plugin.Settings{"A": " us-east-1, ,eu-central-1 ", "B": ""}
	if diff := cmp.Diff([]string{"us-east-1", "eu-central-1"}, s.List("A")); diff != "" {
		t.Errorf("a list, trimmed and without empty items (-want +got):\n%s", diff)
	}
	if got := s.List("B"); got != nil {
		t.Errorf("an empty list is nil, got %q", got)
	}
	if got := s.Get("C"); got != "" {
		t.Errorf("a variable not read is empty, got %q", got)
	}
}

// TestReadToken: a token is read trimmed; a failed read and an empty
// secret name the variable and the version, and never hold the token.
func TestReadToken(t *testing.T) {
	const version = "projects/p/secrets/s/versions/latest"
	for _, tc := range []struct {
		name, secret string
		readErr      error
		want, err    string
	}{
		{name: "trimmed", secret: " tok-123\n", want: "tok-123"},
		{name: "empty", secret: " \n", err: "the API token (X_TOKEN_SECRET) " + version + " is empty"},
		{name: "unreadable", readErr: errors.New("permission denied"), err: "the API token (X_TOKEN_SECRET): permission denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := plugin.Env{ReadSecret: func(_ context.Context, v string) (string, error) {
				if v != version {
					t.Errorf("read %q, want %q", v, version)
				}
				return tc.secret, tc.readErr
			}}
			got, err := env.ReadToken(context.Background(), "X_TOKEN_SECRET", version)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if got != tc.want || gotErr != tc.err {
				t.Errorf("ReadToken = %q, %q; want %q, %q", got, gotErr, tc.want, tc.err)
			}
		})
	}
}
