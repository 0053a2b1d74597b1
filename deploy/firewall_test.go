package deploy_test

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/zclconf/go-cty/cty"

	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/proxy"
)

// TestTheAPIKnowsWhatTheFirewallOpens: the ports and sources the ProxyAPI
// holds every spec to (PROXY_PORTS, FIREWALL_SOURCE_RANGES) are those the
// firewall rule opens, as Terraform sends both, read as the function reads
// its environment. A spec the API takes is then one a client can reach.
func TestTheAPIKnowsWhatTheFirewallOpens(t *testing.T) {
	m := parseModule(t)
	for name, vars := range map[string]map[string]cty.Value{
		"Defaults": nil,
		"PortsRangesAndSources": {
			"proxy_ports":           cty.ListVal([]cty.Value{cty.StringVal("3128"), cty.StringVal("8080-8090")}),
			"allowed_source_ranges": cty.ListVal([]cty.Value{cty.StringVal("203.0.113.0/24"), cty.StringVal("2001:db8::/32")}),
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := evaluate(t, m, vars)
			fw := e.one(t, "google_compute_firewall", "proxy")
			var ports []string
			for _, allow := range nested(fw.block.Body, "allow") {
				v, _ := fw.attr(t, allow.Body, "ports")
				ports = append(ports, stringList(t, "the firewall's ports", v)...)
			}
			sources, _ := fw.attr(t, fw.block.Body, "source_ranges")
			wantPorts, err := proxy.ParsePortRanges(ports)
			if err != nil {
				t.Fatalf("the firewall's ports: %v", err)
			}
			wantSources, err := proxy.ParsePrefixes(stringList(t, "the firewall's source_ranges", sources))
			if err != nil {
				t.Fatalf("the firewall's source ranges: %v", err)
			}

			api := e.one(t, "google_cloudfunctions2_function", "api")
			var env map[string]string
			for _, sc := range nested(api.block.Body, "service_config") {
				v, _ := api.attr(t, sc.Body, "environment_variables")
				env = map[string]string{}
				for k, val := range v.AsValueMap() {
					env[k] = val.AsString()
				}
			}
			cfg, err := app.Load(func(k string) string { return env[k] }, app.ProxyAPI)
			if err != nil {
				t.Fatalf("the ProxyAPI's environment as Terraform sends it: %v", err)
			}
			if diff := cmp.Diff(wantPorts, cfg.API.Policy.ProxyPorts); diff != "" {
				t.Errorf("PROXY_PORTS (-the firewall's ports +what the API holds specs to):\n%s", diff)
			}
			if diff := cmp.Diff(wantSources, cfg.API.Policy.FirewallSourceRanges, cmpopts.EquateComparable(netip.Prefix{})); diff != "" {
				t.Errorf("FIREWALL_SOURCE_RANGES (-the firewall's source_ranges +what the API holds specs to):\n%s", diff)
			}
		})
	}
}
