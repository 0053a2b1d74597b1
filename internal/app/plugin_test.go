package app_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

// demoCloud is a cloud the composition root has never heard of, declared
// the way a cloud's package declares itself: a cloud-init boot read
// through the status door, with two variables of its own. New records
// the environment it is handed.
func demoCloud(got *plugin.Env) plugin.Plugin {
	return plugin.Plugin{
		Type: "demo", Name: "Demo Cloud",
		Vars: []plugin.Var{
			{Name: "DEMO_ENDPOINT", Readers: plugin.ReadByCallers, Local: true, Meaning: "a fake's API",
				Check: plugin.LoopbackURL("http://127.0.0.1:PORT")},
			{Name: "DEMO_REGIONS", Default: "r1", Readers: plugin.ReadByAPI | plugin.ReadByCallers, Meaning: "the regions",
				Check: func(v string, _ plugin.Settings) error {
					if strings.Contains(v, " ") {
						return errors.New("holds a space")
					}
					return nil
				}},
		},
		New: func(env plugin.Env) provider.Constructor {
			*got = env
			return func(context.Context) (provider.Provider, error) { return mock.New(mock.Options{}), nil }
		},
		Validator:    func(plugin.Settings) (provider.Validator, error) { return mock.Validate, nil },
		Boot:         plugin.Boot{Kind: plugin.BootCloudInit, Gzip: true},
		Readiness:    plugin.StatusDoor,
		FakeEndpoint: "DEMO_ENDPOINT",
	}
}

// TestACloudPlugsInByItsPluginAlone: a cloud the composition root does
// not name is served from its plugin alone: its variables are read (and
// checked) only when PROVIDERS names it, its constructor gets its
// settings, the deployment and, for a cloud-init boot, the VM side; its
// variables are in the table the docs are written from. Against its fake (FakeEndpoint) the process
// makes its own status key, so VM_STATUS_KEY_SECRET is not required.
func TestACloudPlugsInByItsPluginAlone(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")
	t.Setenv("PUBSUB_EMULATOR_HOST", "127.0.0.1:1")
	var got plugin.Env
	demo := demoCloud(&got)
	vars := withVars(engineVars, map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "demo", "DEPLOYMENT": "staging",
		"DEMO_ENDPOINT": "http://127.0.0.1:1"})
	a, err := app.New(context.Background(), env(vars), app.Options{Serve: []app.Function{app.Reconcile}, Linked: []plugin.Plugin{demo}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if diff := cmp.Diff(plugin.Settings{"DEMO_ENDPOINT": "http://127.0.0.1:1", "DEMO_REGIONS": "r1"}, got.Settings); diff != "" {
		t.Errorf("the settings the constructor got (-want +got):\n%s", diff)
	}
	if got.Deployment != "staging" || got.Project != "demo-x" || got.VM.Renderer == nil || got.VM.Prober == nil || got.Log == nil || got.ReadSecret == nil {
		t.Errorf("the environment the constructor got: %+v: want the deployment, the project, the VM side, a logger and a secret reader", got)
	}
	if _, err := a.Providers.Get(context.Background(), "demo"); err != nil || !slices.Equal(a.Providers.Types(), []string{"demo"}) {
		t.Errorf("providers %v, get: %v; want demo alone", a.Providers.Types(), err)
	}
	if !slices.ContainsFunc(app.VarsOf([]plugin.Plugin{demo}), func(v app.Var) bool { return v.Name == "DEMO_REGIONS" && v.Cloud == "demo" }) {
		t.Error("the table has no DEMO_REGIONS of demo's: the docs would not list it")
	}

	vars["DEMO_REGIONS"] = "r1, r2 x"
	if _, err := app.New(context.Background(), env(vars), app.Options{Serve: []app.Function{app.Reconcile}, Linked: []plugin.Plugin{demo}}); err == nil ||
		err.Error() != `config: DEMO_REGIONS="r1, r2 x" holds a space` {
		t.Errorf("a value its check refuses: %v, want the variable, the value and the check's words", err)
	}
	vars["PROVIDERS"] = "mock"
	a, err = app.New(context.Background(), env(vars), app.Options{Serve: []app.Function{app.Reconcile}, Linked: []plugin.Plugin{demo, mock.Plugin}})
	if err != nil {
		t.Fatalf("demo's variables are read only when PROVIDERS names it, and its bad value stopped a mock run: %v", err)
	}
	a.Close()
}

// TestACloudThatMakesItsFirewallGetsTheHouses: a cloud whose provider
// makes the deployment's firewall itself (MakesFirewall) is handed the
// house's PROXY_PORTS, FIREWALL_SOURCE_RANGES and VM_STATUS_SOURCE_RANGES,
// which Reconcile then reads; a cloud that does not is handed nothing.
func TestACloudThatMakesItsFirewallGetsTheHouses(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")
	t.Setenv("PUBSUB_EMULATOR_HOST", "127.0.0.1:1")
	vars := withVars(engineVars, map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "demo", "DEMO_ENDPOINT": "http://127.0.0.1:1",
		"PROXY_PORTS": "3128,8080-8090", "FIREWALL_SOURCE_RANGES": "203.0.113.0/24", "VM_STATUS_SOURCE_RANGES": "198.51.100.7/32"})
	for _, makes := range []bool{true, false} {
		var got plugin.Env
		demo := demoCloud(&got)
		demo.MakesFirewall = makes
		a, err := app.New(context.Background(), env(vars), app.Options{Serve: []app.Function{app.Reconcile}, Linked: []plugin.Plugin{demo}})
		if err != nil {
			t.Fatal(err)
		}
		a.Close()
		want := plugin.Firewall{}
		if makes {
			want = plugin.Firewall{ProxyPorts: []string{"3128", "8080-8090"}, SourceRanges: []string{"203.0.113.0/24"}, StatusSourceRanges: []string{"198.51.100.7/32"}}
		}
		if diff := cmp.Diff(want, got.Firewall); diff != "" {
			t.Errorf("MakesFirewall %t: the firewall the constructor got (-want +got):\n%s", makes, diff)
		}
	}
}

// TestTheMockNamesAgree: PROVIDERS names the mock by app.MockType, which
// the composition root keeps without linking the mock, and its plugin by
// mock.Type: one name.
func TestTheMockNamesAgree(t *testing.T) {
	if mock.Type != app.MockType || mock.Plugin.Type != app.MockType {
		t.Errorf("mock.Type %q, app.MockType %q, mock.Plugin.Type %q: want one name", mock.Type, app.MockType, mock.Plugin.Type)
	}
}
