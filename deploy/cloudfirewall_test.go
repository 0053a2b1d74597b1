package deploy_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/egress-proxies/egress/internal/clouds"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/plugin"
	"github.com/egress-proxies/egress/internal/provider/vmside"
)

// TestCloudMadeFirewallsOpenWhatTheAPIHolds: a cloud whose provider makes
// the deployment's cloud firewall (plugin.Plugin.MakesFirewall) makes it
// from Reconcile's and CollectGarbage's PROXY_PORTS and
// FIREWALL_SOURCE_RANGES, and each is the ProxyAPI's own value, from the
// same variables (so the firewall opens what the API holds every spec to,
// as the GCE rule does), beside VM_STATUS_SOURCE_RANGES for the status
// request; and each such cloud's provider takes what Terraform sends, and
// refuses a firewall it could not make (so that taking it says something).
// Those variables reach Reconcile and CollectGarbage through the makers'
// own files (TYPE_env): without a maker, there is nothing to hold.
func TestCloudMadeFirewallsOpenWhatTheAPIHolds(t *testing.T) {
	var makers []plugin.Plugin
	for _, p := range clouds.All {
		if p.MakesFirewall {
			makers = append(makers, p)
		}
	}
	if len(makers) == 0 {
		t.Skip("no cloud of clouds.All makes its own firewall (plugin.Plugin.MakesFirewall)")
	}
	m := parseModule(t)
	fns := map[string]*hclsyntax.Block{}
	for _, fn := range m.resources("google_cloudfunctions2_function") {
		fns[fn.Labels[1]] = fn
	}
	for _, key := range []string{"PROXY_PORTS", "FIREWALL_SOURCE_RANGES"} {
		api := envSource(t, m, fns["api"], key)
		for _, name := range []string{"reconcile", "gc"} {
			if got := envSource(t, m, fns[name], key); got != api {
				t.Errorf("%s's %s is %s, the ProxyAPI's %s: the firewall would open other than what the API holds specs to", name, key, got, api)
			}
		}
	}
	for _, name := range []string{"reconcile", "gc"} {
		if src := envSource(t, m, fns[name], "VM_STATUS_SOURCE_RANGES"); !strings.Contains(src, "google_compute_address.control_egress") {
			t.Errorf("%s's VM_STATUS_SOURCE_RANGES is %s, not the functions' fixed egress", name, src)
		}
	}

	e := evaluate(t, m, map[string]cty.Value{
		"proxy_ports":           cty.ListVal([]cty.Value{cty.StringVal("3128"), cty.StringVal("8080-8090")}),
		"allowed_source_ranges": cty.ListVal([]cty.Value{cty.StringVal("203.0.113.0/24"), cty.StringVal("2001:db8::/32")}),
	})
	api := e.one(t, "google_cloudfunctions2_function", "api")
	env := map[string]string{}
	for _, sc := range nested(api.block.Body, "service_config") {
		v, _ := api.attr(t, sc.Body, "environment_variables")
		env = stringMap(t, "the ProxyAPI's environment", v)
	}
	fw := plugin.Firewall{
		ProxyPorts:         strings.Split(env["PROXY_PORTS"], ","),
		SourceRanges:       strings.Split(env["FIREWALL_SOURCE_RANGES"], ","),
		StatusSourceRanges: []string{"198.51.100.7/32"},
	}
	if diff := cmp.Diff([]string{"3128", "8080-8090"}, fw.ProxyPorts); diff != "" {
		t.Errorf("the firewall's ports (-proxy_ports +PROXY_PORTS):\n%s", diff)
	}
	refused := fw
	refused.ProxyPorts = []string{"3128", "not-a-port"}
	for _, p := range makers {
		if err := firewallTaken(p, fw); err != nil {
			t.Errorf("the %s provider refuses the firewall Terraform's variables make: %v", p.Type, err)
		}
		if err := firewallTaken(p, refused); err == nil {
			t.Errorf("the %s provider takes a firewall of ports %q: its constructor does not check the firewall, and taking Terraform's says nothing", p.Type, refused.ProxyPorts)
		}
	}
}

// firewallTaken makes p's provider with the firewall fw, against its fake's
// endpoint (nothing is asked of it: making the provider calls no API),
// and returns what refused it.
func firewallTaken(p plugin.Plugin, fw plugin.Firewall) error {
	noVM := errors.New("no VM here")
	env := plugin.Env{
		Settings:   plugin.Settings{p.FakeEndpoint: "http://127.0.0.1:1"},
		Deployment: provider.DefaultDeployment,
		Log:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		VM: plugin.VMSide{
			Renderer: vmside.RendererFunc(func(provider.CreateRequest) (string, error) { return "", noVM }),
			Prober: vmside.ProberFunc(func(context.Context, string, int32, string, string) (vmside.Status, error) {
				return vmside.Status{}, noVM
			}),
		},
		Firewall: fw,
	}
	_, err := p.New(env)(context.Background())
	return err
}
