package deploy_test

import (
	"maps"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/clouds"
	"github.com/egress-proxies/egress/internal/provider/hetzner"
	"github.com/egress-proxies/egress/internal/proxy"
)

// TestTheAPIKnowsWhatTheFirewallOpens: the ports and sources the ProxyAPI
// holds every spec to (PROXY_PORTS, FIREWALL_SOURCE_RANGES) are those the
// firewall rules open, as Terraform sends both, read as the function reads
// its environment. A spec the API takes is then one a client can reach.
// Each rule holds the sources of one address family, as a VPC firewall
// rule must (one holding both is refused at apply time), and every rule
// opens the same ports (a SOCKS5 port among them, for clients of either
// family).
func TestTheAPIKnowsWhatTheFirewallOpens(t *testing.T) {
	m := parseModule(t)
	for name, tc := range map[string]struct {
		vars  map[string]cty.Value
		rules int
	}{
		"Defaults": {rules: 1},
		"PortsRangesAndSources": {vars: map[string]cty.Value{
			"proxy_ports":           cty.ListVal([]cty.Value{cty.StringVal("3128"), cty.StringVal("8080-8090")}),
			"allowed_source_ranges": cty.ListVal([]cty.Value{cty.StringVal("203.0.113.0/24"), cty.StringVal("2001:db8::/32"), cty.StringVal("198.51.100.0/24")}),
		}, rules: 2},
		"IPv6Only": {vars: map[string]cty.Value{
			"allowed_source_ranges": cty.ListVal([]cty.Value{cty.StringVal("2001:db8::/32")}),
		}, rules: 1},
	} {
		t.Run(name, func(t *testing.T) {
			e := evaluate(t, m, tc.vars)
			var ports, sources []string
			rules := 0
			for _, fw := range e.of("google_compute_firewall") {
				if fw.name != "proxy" {
					continue
				}
				rules++
				// Ports by protocol: TCP for the proxies, UDP the same
				// for SOCKS5's relay.
				byProtocol := map[string][]string{}
				for _, allow := range nested(fw.block.Body, "allow") {
					p, _ := fw.attr(t, allow.Body, "protocol")
					v, _ := fw.attr(t, allow.Body, "ports")
					byProtocol[p.AsString()] = append(byProtocol[p.AsString()], stringList(t, "the firewall's ports", v)...)
				}
				rulePorts := byProtocol["tcp"]
				if diff := cmp.Diff(rulePorts, byProtocol["udp"]); diff != "" {
					t.Errorf("%s opens UDP on other ports than TCP (-tcp +udp):\n%s", fw.address(), diff)
				}
				if len(byProtocol) != 2 {
					t.Errorf("%s allows protocols %v, want tcp and udp", fw.address(), slices.Sorted(maps.Keys(byProtocol)))
				}
				if ports != nil && !slices.Equal(ports, rulePorts) {
					t.Errorf("%s opens ports %v, another rule %v", fw.address(), rulePorts, ports)
				}
				ports = rulePorts
				v, _ := fw.attr(t, fw.block.Body, "source_ranges")
				ranges, err := proxy.ParsePrefixes(stringList(t, "the firewall's source_ranges", v))
				if err != nil {
					t.Fatalf("%s's source ranges: %v", fw.address(), err)
				}
				families := map[bool]bool{}
				for _, r := range ranges {
					families[r.Addr().Is4()] = true
					sources = append(sources, r.String())
				}
				if len(families) != 1 {
					t.Errorf("%s holds IPv4 and IPv6 source ranges, which a VPC firewall rule may not: %v", fw.address(), ranges)
				}
			}
			if rules != tc.rules {
				t.Errorf("%d firewall rules for the proxy ports, want %d", rules, tc.rules)
			}
			wantPorts, err := proxy.ParsePortRanges(ports)
			if err != nil {
				t.Fatalf("the firewall's ports: %v", err)
			}
			wantSources, err := proxy.ParsePrefixes(sources)
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
			cfg, err := app.Load(func(k string) string { return env[k] }, clouds.All, app.ProxyAPI)
			if err != nil {
				t.Fatalf("the ProxyAPI's environment as Terraform sends it: %v", err)
			}
			if diff := cmp.Diff(wantPorts, cfg.API.Policy.ProxyPorts); diff != "" {
				t.Errorf("PROXY_PORTS (-the firewall's ports +what the API holds specs to):\n%s", diff)
			}
			if diff := cmp.Diff(wantSources, cfg.API.Policy.FirewallSourceRanges, cmpopts.EquateComparable(netip.Prefix{}),
				cmpopts.SortSlices(func(a, b netip.Prefix) bool { return a.String() < b.String() })); diff != "" {
				t.Errorf("FIREWALL_SOURCE_RANGES (-the firewall's source_ranges +what the API holds specs to):\n%s", diff)
			}
		})
	}
}

// TestTheHetznerFirewallOpensWhatTheAPIHolds: the Hetzner firewall's
// module (terraform/hetzner-firewall, applied with the main module's
// variables file) takes the main module's variables by the same names,
// opens one inbound TCP rule per port of proxy_ports from
// allowed_source_ranges (the GCE rule's variables, which the API's
// PROXY_PORTS and FIREWALL_SOURCE_RANGES come from), and is applied by
// the label selector of the deployment's servers, as the hetzner provider
// labels them.
func TestTheHetznerFirewallOpensWhatTheAPIHolds(t *testing.T) {
	main := parseModule(t)
	fwm := parseModuleAt(t, filepath.Join(terraformDir, "hetzner-firewall"))
	declared := func(m *module) map[string]string {
		out := map[string]string{}
		for _, b := range m.blocks {
			if b.Type == "variable" {
				if a, ok := b.Body.Attributes["type"]; ok {
					out[b.Labels[0]] = m.source(t, a.Expr.Range())
				}
			}
		}
		return out
	}
	mainVars, fwVars := declared(main), declared(fwm)
	outputs := map[string]bool{}
	for _, b := range main.blocks {
		if b.Type == "output" {
			outputs[b.Labels[0]] = true
		}
	}
	for name, typ := range fwVars {
		// status_source_ranges is the main module's output of that name,
		// the functions' egress address it reserves.
		if mainVars[name] != typ && !(outputs[name] && typ == "list(string)") {
			t.Errorf("the firewall module's variable %s (%s) is not the main module's (%q): the one variables file would not fit both", name, typ, mainVars[name])
		}
	}
	for _, name := range []string{"deployment", "proxy_ports", "allowed_source_ranges", "status_source_ranges"} {
		if _, ok := fwVars[name]; !ok {
			t.Errorf("the firewall module has no variable %s", name)
		}
	}

	ev := evaluate(t, fwm, map[string]cty.Value{
		"deployment":            cty.StringVal("staging"),
		"allowed_source_ranges": cty.ListVal([]cty.Value{cty.StringVal("203.0.113.0/24")}),
		"status_source_ranges":  cty.ListVal([]cty.Value{cty.StringVal("198.51.100.7/32")}),
	})
	fw := ev.one(t, "hcloud_firewall", "proxy")
	for _, at := range nested(fw.block.Body, "apply_to") {
		if got, want := fw.str(t, at.Body, "label_selector"), hetzner.FirewallSelector("staging"); got != want {
			t.Errorf("the firewall applies to %q, want %q: the servers the hetzner provider makes", got, want)
		}
	}
	var sources []string
	for _, d := range nested(fw.block.Body, "dynamic") {
		if len(d.Labels) != 1 || d.Labels[0] != "rule" {
			continue
		}
		if src := fwm.source(t, d.Body.Attributes["for_each"].Expr.Range()); src != "var.proxy_ports" {
			t.Errorf("the rules are one per %s, want one per var.proxy_ports", src)
		}
		for _, c := range nested(d.Body, "content") {
			source := ""
			if a, ok := c.Body.Attributes["source_ips"]; ok {
				source = fwm.source(t, a.Expr.Range())
			}
			protocol := `"tcp"`
			if a, ok := c.Body.Attributes["protocol"]; ok && fwm.source(t, a.Expr.Range()) == `"udp"` {
				protocol = `"udp"`
			}
			sources = append(sources, protocol+" "+source)
			want := map[string]string{"direction": `"in"`, "protocol": protocol, "port": "rule.value", "source_ips": source}
			got := map[string]string{}
			for k := range want {
				if a, ok := c.Body.Attributes[k]; ok {
					got[k] = fwm.source(t, a.Expr.Range())
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("a rule of the firewall (-want +got):\n%s", diff)
			}
		}
	}
	// The tenants' sources on TCP and on UDP (SOCKS5's relay), and the
	// control plane's for the status request (vmstatus) on TCP, each on
	// every proxy port.
	if diff := cmp.Diff([]string{`"tcp" var.allowed_source_ranges`, `"udp" var.allowed_source_ranges`, `"tcp" var.status_source_ranges`}, sources); diff != "" {
		t.Errorf("the sources of the firewall's rules over proxy_ports (-want +got):\n%s", diff)
	}
}

// TestProxiesRelyOnNoRuleOfTheNetwork: whichever network the proxies join,
// the module's own rules decide what reaches them: a deny of every
// protocol from every IPv4 and IPv6 source, on the proxy tag, at a
// precedence above every rule a network is made with (Google's
// default-allow-ssh, -rdp, -icmp and -internal are at 65534) and below the
// proxy ports' rules. By default the network is the deployment's own,
// which the module makes, and the gcp provider (GCP_NETWORK) puts the VMs
// in the network the rules are on.
func TestProxiesRelyOnNoRuleOfTheNetwork(t *testing.T) {
	// The priority of the rules Google makes with a network (the default
	// network's default-allow-*): https://cloud.google.com/firewall/docs/firewalls#more_rules_default_vpc
	const defaultRules = 65534
	m := parseModule(t)
	cases := map[string]struct {
		reason  string
		vars    map[string]cty.Value
		network string
		made    bool
	}{
		"Defaults": {
			reason:  "the variable's default is the project's default network, where an existing deployment's VMs run: the module makes none, and its deny rules shadow the network's default-allow-*",
			network: "default",
		},
		"TheDeploymentsOwnNetwork": {
			reason:  "network = \"\" (as terraform.tfvars.example sets it): the deployment gets its own, with no rule of Google's",
			vars:    map[string]cty.Value{"network": cty.StringVal("")},
			network: "egress-proxies-egress", made: true,
		},
		"ANamedNetwork": {
			reason:  "on a network the operator names, the module makes none, and its deny rules hold there too",
			vars:    map[string]cty.Value{"network": cty.StringVal("shared-vpc")},
			network: "shared-vpc",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := evaluate(t, m, tc.vars)
			net := e.one(t, "google_compute_network", "proxies")
			count, diags := net.block.Body.Attributes["count"].Expr.Value(net.ctx)
			if diags.HasErrors() {
				t.Fatalf("%s's count: %s", net.address(), diags.Error())
			}
			if made := count.Equals(cty.NumberIntVal(1)).True(); made != tc.made {
				t.Errorf("%s: the module makes a network: %t, want %t", tc.reason, made, tc.made)
			}
			if tc.made {
				if got := net.str(t, net.block.Body, "name"); got != tc.network {
					t.Errorf("the module's network is %q, want %q", got, tc.network)
				}
				if v, _ := net.attr(t, net.block.Body, "auto_create_subnetworks"); !v.True() {
					t.Errorf("%s is not auto-mode: the proxies would find no subnet in a region", net.address())
				}
			}
			if got := gcpEnv(t, m, e, "GCP_NETWORK"); got != tc.network {
				t.Errorf("GCP_NETWORK %q, want %q, the network the rules are on", got, tc.network)
			}
			allowPriority := 0
			for _, fw := range e.of("google_compute_firewall") {
				if fw.name != "proxy" {
					continue
				}
				if got := fw.str(t, fw.block.Body, "network"); got != tc.network {
					t.Errorf("%s is on %q, want %q", fw.address(), got, tc.network)
				}
				p, _ := fw.attr(t, fw.block.Body, "priority")
				n, _ := p.AsBigFloat().Int64()
				allowPriority = max(allowPriority, int(n))
			}
			type deny struct {
				Network, Protocol string
				Sources, Tags     []string
			}
			var got []deny
			for _, fw := range e.of("google_compute_firewall") {
				if fw.name != "proxy_deny" {
					continue
				}
				if fw.str(t, fw.block.Body, "direction") != "INGRESS" {
					t.Errorf("%s is not an ingress rule", fw.address())
				}
				p, _ := fw.attr(t, fw.block.Body, "priority")
				n, _ := p.AsBigFloat().Int64()
				if int(n) <= allowPriority || int(n) >= defaultRules {
					t.Errorf("%s is at priority %d, want above the proxy ports' rules (%d) and below Google's default rules (%d)", fw.address(), n, allowPriority, defaultRules)
				}
				src, _ := fw.attr(t, fw.block.Body, "source_ranges")
				tags, _ := fw.attr(t, fw.block.Body, "target_tags")
				d := deny{Network: fw.str(t, fw.block.Body, "network"), Sources: stringList(t, "source_ranges", src), Tags: stringList(t, "target_tags", tags)}
				for _, b := range nested(fw.block.Body, "deny") {
					d.Protocol = fw.str(t, b.Body, "protocol")
				}
				if len(nested(fw.block.Body, "allow")) > 0 {
					t.Errorf("%s allows something", fw.address())
				}
				got = append(got, d)
			}
			want := []deny{
				{Network: tc.network, Protocol: "all", Sources: []string{"0.0.0.0/0"}, Tags: []string{"egress-proxy"}},
				{Network: tc.network, Protocol: "all", Sources: []string{"::/0"}, Tags: []string{"egress-proxy"}},
			}
			if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b deny) bool { return a.Sources[0] < b.Sources[0] })); diff != "" {
				t.Errorf("%s\nthe deny rules (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// gcpEnv evaluates one entry of local.gcp_env, which as a whole needs a
// provider (a bucket's name, a file's hash).
func gcpEnv(t *testing.T, m *module, e *evaluation, key string) string {
	t.Helper()
	for _, b := range m.blocks {
		if b.Type != "locals" {
			continue
		}
		a, ok := b.Body.Attributes["gcp_env"]
		if !ok {
			continue
		}
		obj, ok := a.Expr.(*hclsyntax.ObjectConsExpr)
		if !ok {
			t.Fatalf("local.gcp_env is not an object literal")
		}
		for _, item := range obj.Items {
			if hcl.ExprAsKeyword(item.KeyExpr) != key {
				continue
			}
			v, diags := item.ValueExpr.Value(e.ctx)
			if diags.HasErrors() {
				t.Fatalf("local.gcp_env's %s: %s", key, diags.Error())
			}
			return v.AsString()
		}
	}
	t.Fatalf("local.gcp_env has no %s", key)
	return ""
}

// TestCloudFirewallsOpenOnlyTheProxyPorts: on Hetzner and EC2 the only
// inbound rules are those made over proxy_ports (which
// TestTheHetznerFirewallOpensWhatTheAPIHolds and
// TestTheAWSSecurityGroupAdmitsTheStatusRequest hold to their sources):
// no rule written out by hand (an SSH port, say), and no second firewall,
// security group or rule resource beside them. Both clouds deny what no
// rule opens, so that is all a proxy takes from outside.
func TestCloudFirewallsOpenOnlyTheProxyPorts(t *testing.T) {
	for dir, c := range map[string]struct{ resource, block string }{
		"hetzner-firewall": {"hcloud_firewall", "rule"},
		"aws":              {"aws_security_group", "ingress"},
	} {
		m := parseModuleAt(t, filepath.Join(terraformDir, dir))
		var inbound []string
		for _, b := range m.blocks {
			if b.Type != "resource" {
				continue
			}
			typ := b.Labels[0]
			if strings.Contains(typ, "firewall") || strings.Contains(typ, "security_group") {
				inbound = append(inbound, typ+"."+b.Labels[1])
			}
			if typ != c.resource {
				continue
			}
			for _, r := range nested(b.Body, c.block) {
				direction := ""
				if a, ok := r.Body.Attributes["direction"]; ok {
					direction = m.source(t, a.Expr.Range())
				}
				if direction != `"out"` {
					t.Errorf("%s: %s.%s has an inbound %s block of its own, beside those over proxy_ports: %s", dir, typ, b.Labels[1], c.block, m.source(t, r.Body.SrcRange))
				}
			}
		}
		if diff := cmp.Diff([]string{c.resource + ".proxy"}, inbound); diff != "" {
			t.Errorf("%s: the resources that open ports (-want +got):\n%s", dir, diff)
		}
	}
}
