package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/pacing"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

// TestEveryProviderIsPaced: a cloud whose plugin declares a rate gets,
// before its provider, the budget of its default account (its type,
// account ""), at the rate PACING_SCALE scales; a scale of 0 and a cloud
// without a rate (the mock) are not paced.
func TestEveryProviderIsPaced(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")
	t.Setenv("PUBSUB_EMULATOR_HOST", "127.0.0.1:1")
	type budget struct {
		Key  pacing.Key
		Rate pacing.Rate
	}
	source := "https://example.com/limits"
	cases := map[string]struct {
		reason    string
		providers string
		scale     string
		want      map[string]*budget
	}{
		"Default": {reason: "The plugin's rate, for the default account.", providers: "demo,mock",
			want: map[string]*budget{"demo": {pacing.Key{Type: "demo"}, pacing.Rate{Calls: 60, Window: time.Minute, Source: source}}, "mock": nil}},
		"Scaled": {reason: "PACING_SCALE leaves part of the limit to others.", providers: "demo", scale: "0.5",
			want: map[string]*budget{"demo": {pacing.Key{Type: "demo"}, pacing.Rate{Calls: 30, Window: time.Minute, Source: source}}}},
		"Off": {reason: "A scale of 0 paces nothing.", providers: "demo", scale: "0",
			want: map[string]*budget{"demo": nil}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var env0 plugin.Env
			demo := demoCloud(&env0)
			demo.Rate = pacing.Rate{Calls: 60, Window: time.Minute, Source: source}
			demo.Calls = pacing.Calls{Create: 1, Get: 1, Delete: 1, ListByTag: 1}
			vars := withVars(engineVars, map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": tc.providers, "DEMO_ENDPOINT": "http://127.0.0.1:1",
				"PACING_SCALE": tc.scale})
			a, err := app.New(context.Background(), env(vars), app.Options{Serve: []app.Function{app.Reconcile}, Linked: []plugin.Plugin{demo, mock.Plugin}})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			got := map[string]*budget{}
			for _, typ := range a.Providers.Types() {
				p, err := a.Providers.Get(context.Background(), typ)
				if err != nil {
					t.Fatal(err)
				}
				got[typ] = nil
				if d, ok := p.(interface{ Pacer() *pacing.Pacer }); ok {
					got[typ] = &budget{d.Pacer().Key(), d.Pacer().Rate()}
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nbudgets by provider (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
