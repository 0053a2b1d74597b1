package deploy_test

import (
	"fmt"
	"io/fs"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"

	azureprovider "github.com/egress-proxies/egress/internal/provider/azure"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

// azureDir is the azure provider's own module, applied with the operator's
// Azure credentials.
var azureDir = filepath.Join(terraformDir, "azure")

// azureVars are what an evaluation of the azure/ module needs of its
// variables without defaults, and what the tests vary.
func azureVars(extra map[string]cty.Value) map[string]cty.Value {
	vars := map[string]cty.Value{
		"subscription_id":       cty.StringVal("00000000-0000-0000-0000-000000000001"),
		"locations":             ctyStrings("westeurope", "eastus"),
		"allowed_source_ranges": ctyStrings("203.0.113.0/24", "2001:db8::/32"),
	}
	for k, v := range extra {
		vars[k] = v
	}
	return vars
}

func ctyStrings(s ...string) cty.Value {
	if len(s) == 0 {
		return cty.ListValEmpty(cty.String)
	}
	var vals []cty.Value
	for _, v := range s {
		vals = append(vals, cty.StringVal(v))
	}
	return cty.ListVal(vals)
}

// problems collects what a check finds wrong, so a test can both require
// none of the tree and some of a planted copy.
type problems []string

func (p *problems) add(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

// attrSource is the source text of an attribute of body, "" if unset.
func attrSource(t *testing.T, m *module, body *hclsyntax.Body, name string) string {
	t.Helper()
	a, ok := body.Attributes[name]
	if !ok {
		return ""
	}
	return m.source(t, a.Expr.Range())
}

// azureRole is one of the module's custom roles as the test wants it:
// its resource name, the scope it is defined at, assigned at and only
// assignable at, the local that lists its actions, and those actions.
type azureRole struct {
	name, scope, local string
	actions            []string
}

// azureRoles are the module's two roles: functions, the provider's calls
// on the deployment's resource group (azure.Actions), and quotas, the
// usages its Quotas reads, which are the subscription's and which a role
// at the group cannot reach (azure.SubscriptionActions).
func azureRoles() []azureRole {
	return []azureRole{
		{name: "functions", scope: "azurerm_resource_group.proxies.id", local: "role_actions", actions: azureprovider.Actions()},
		{name: "quotas", scope: `"/subscriptions/${var.subscription_id}"`, local: "quota_actions", actions: azureprovider.SubscriptionActions()},
	}
}

// azureRoleProblems: the module's custom roles are exactly want, each
// granting exactly its actions, no more, at its scope alone (its scope
// and the only scope it may be assigned at), in the policy file; each
// has one role assignment, giving that role at that scope to the
// functions' identity; no built-in role, no other assignment, no
// not_actions or data actions.
func azureRoleProblems(t *testing.T, dir, policyFile string, want []azureRole) problems {
	t.Helper()
	var p problems
	m := parseModuleAt(t, dir)
	defs, assignments := map[string]*hclsyntax.Block{}, map[string]*hclsyntax.Block{}
	for _, b := range m.resources("azurerm_role_definition") {
		defs[b.Labels[1]] = b
	}
	for _, b := range m.resources("azurerm_role_assignment") {
		assignments[b.Labels[1]] = b
	}
	var names []string
	for _, r := range want {
		names = append(names, r.name)
	}
	if diff := cmp.Diff(names, slices.Sorted(maps.Keys(defs))); diff != "" {
		p.add("the module's role definitions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(names, slices.Sorted(maps.Keys(assignments))); diff != "" {
		p.add("the module's role assignments (-want +got):\n%s", diff)
	}
	e := evaluate(t, m, azureVars(nil))
	for _, r := range want {
		def, as := defs[r.name], assignments[r.name]
		if def == nil || as == nil {
			continue
		}
		if got := filepath.Base(def.Range().Filename); got != policyFile {
			p.add("the role %s is defined in %s, not in %s, the file the plugin names", r.name, got, policyFile)
		}
		if got := attrSource(t, m, def.Body, "scope"); got != r.scope {
			p.add("the role %s's scope is %s, want %s", r.name, got, r.scope)
		}
		if got := attrSource(t, m, def.Body, "assignable_scopes"); got != "["+r.scope+"]" {
			p.add("the role %s's assignable_scopes are %s, want [%s] alone", r.name, got, r.scope)
		}
		perms := nested(def.Body, "permissions")
		if len(perms) != 1 {
			p.add("the role %s has %d permissions blocks, want 1", r.name, len(perms))
			continue
		}
		for name := range perms[0].Body.Attributes {
			if name != "actions" {
				p.add("the role %s's permissions set %s: only actions, no exclusions or data actions", r.name, name)
			}
		}
		if got := attrSource(t, m, perms[0].Body, "actions"); got != "local."+r.local {
			p.add("the role %s's actions are %s, want local.%s", r.name, got, r.local)
		}
		granted := stringList(t, "local."+r.local, e.local(t, r.local))
		for _, a := range granted {
			if strings.Contains(a, "*") {
				p.add("the role %s grants %s: a wildcard grants what no call needs", r.name, a)
			}
		}
		if diff := cmp.Diff(slices.Sorted(slices.Values(r.actions)), slices.Sorted(slices.Values(granted))); diff != "" {
			p.add("the role %s's actions (-what the provider calls +what role.tf grants):\n%s", r.name, diff)
		}
		for name, want := range map[string]string{
			"scope":              r.scope,
			"role_definition_id": "azurerm_role_definition." + r.name + ".role_definition_resource_id",
			"principal_id":       "azurerm_user_assigned_identity.functions.principal_id",
		} {
			if got := attrSource(t, m, as.Body, name); got != want {
				p.add("the role assignment %s's %s is %q, want %s", r.name, name, got, want)
			}
		}
		if _, ok := as.Body.Attributes["role_definition_name"]; ok {
			p.add("the role assignment %s names a built-in role", r.name)
		}
	}
	return p
}

// TestTheAzureRoleGrantsExactlyTheProvidersActions: the role the functions'
// identity holds grants the actions the provider calls and nothing else,
// on the deployment's resource group alone; the planted copies show that
// an extra action, a missing one, a wildcard, a wider scope and a second
// assignment each fail.
func TestTheAzureRoleGrantsExactlyTheProvidersActions(t *testing.T) {
	policy, ok := strings.CutPrefix(azureprovider.Plugin.Terraform.Policy, "deploy/terraform/azure/")
	if !ok {
		t.Fatalf("the azure plugin's Terraform.Policy %q is not a file of deploy/terraform/azure", azureprovider.Plugin.Terraform.Policy)
	}
	// The provider's own table of its calls' actions, which its
	// TestEveryCallHasItsActions holds to its code.
	want := azureRoles()
	if p := azureRoleProblems(t, azureDir, policy, want); len(p) > 0 {
		t.Errorf("the azure/ module's role:\n%s", strings.Join(p, "\n"))
	}

	planted := map[string]struct {
		reason, file, old, new string
	}{
		"AnActionNoCallNeeds": {
			reason: "The role would let the functions run commands on a VM.",
			file:   "role.tf", old: `"Microsoft.Compute/disks/delete",`, new: `"Microsoft.Compute/disks/delete", "Microsoft.Compute/virtualMachines/runCommand/action",`,
		},
		"AMissingAction": {
			reason: "A crash's disk could not be deleted.",
			file:   "role.tf", old: `"Microsoft.Compute/disks/delete",`, new: ``,
		},
		"AWildcard": {
			reason: "Everything of Microsoft.Compute, for the three actions of a VM.",
			file:   "role.tf", old: `"Microsoft.Compute/virtualMachines/delete",`, new: `"Microsoft.Compute/virtualMachines/*",`,
		},
		"TheSubscriptionAsScope": {
			reason: "The role would reach every resource group of the subscription.",
			file:   "role.tf", old: `scope              = azurerm_resource_group.proxies.id`, new: `scope              = "/subscriptions/${var.subscription_id}"`,
		},
		"AQuotasRoleThatWrites": {
			reason: "The subscription's role would let the functions make VMs in every resource group.",
			file:   "role.tf", old: `"Microsoft.Network/locations/usages/read",`, new: `"Microsoft.Network/locations/usages/read", "Microsoft.Compute/virtualMachines/write",`,
		},
		"ABuiltInRoleBeside": {
			reason: "Contributor on the group would grant everything there.",
			file:   "role.tf", old: `resource "azurerm_role_assignment" "functions" {`,
			new: "resource \"azurerm_role_assignment\" \"more\" {\n  scope = azurerm_resource_group.proxies.id\n  role_definition_name = \"Contributor\"\n  principal_id = azurerm_user_assigned_identity.functions.principal_id\n}\n\nresource \"azurerm_role_assignment\" \"functions\" {",
		},
	}
	for name, tc := range planted {
		t.Run("Planted/"+name, func(t *testing.T) {
			dir := plantInCopy(t, azureDir, tc.file, tc.old, tc.new)
			if p := azureRoleProblems(t, dir, policy, want); len(p) == 0 {
				t.Errorf("%s\nthe check passes a role.tf with %q for %q", tc.reason, tc.new, tc.old)
			}
		})
	}
}

// plantInCopy copies the module of dir to a temporary one, with old
// replaced by new in file (old must be there), and returns the copy.
func plantInCopy(t *testing.T, dir, file, old, new string) string {
	t.Helper()
	out := t.TempDir()
	paths, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if filepath.Base(path) == file {
			if !strings.Contains(text, old) {
				t.Fatalf("%s has no %q to plant in", path, old)
			}
			text = strings.Replace(text, old, new, 1)
		}
		if err := os.WriteFile(filepath.Join(out, filepath.Base(path)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// nsgRule is a network security group rule that admits something, as the
// module evaluates it.
type nsgRule struct {
	Name, Protocol string
	Priority       int64
	Sources, Ports []string
}

// azureAllowRules are the module's allow rules, evaluated with vars.
func azureAllowRules(t *testing.T, m *module, vars map[string]cty.Value) []nsgRule {
	t.Helper()
	e := evaluate(t, m, azureVars(vars))
	var rules []nsgRule
	for it := e.local(t, "allow_rules").ElementIterator(); it.Next(); {
		_, v := it.Element()
		prio, _ := v.GetAttr("priority").AsBigFloat().Int64()
		rules = append(rules, nsgRule{
			Name: v.GetAttr("name").AsString(), Protocol: v.GetAttr("protocol").AsString(), Priority: prio,
			Sources: stringList(t, "sources", v.GetAttr("sources")), Ports: stringList(t, "ports", v.GetAttr("ports")),
		})
	}
	var locations []string
	for _, i := range e.of("azurerm_network_security_group") {
		locations = append(locations, i.key)
	}
	if diff := cmp.Diff([]string{"eastus", "westeurope"}, locations); diff != "" {
		t.Errorf("the network security groups, by location (-one per location +the module's):\n%s", diff)
	}
	return rules
}

// azureNSGProblems: the module's network security group admits through
// one dynamic rule over local.allow_rules, each admitting a protocol from
// its sources to its ports and nothing else, and refuses everything else
// with one literal rule; it is on each location's subnet; nothing else in
// the module makes or changes a rule.
func azureNSGProblems(t *testing.T, dir string) problems {
	t.Helper()
	var p problems
	m := parseModuleAt(t, dir)
	var opening []string
	for _, b := range m.blocks {
		if b.Type == "resource" && (strings.Contains(b.Labels[0], "security") || strings.Contains(b.Labels[0], "firewall")) {
			opening = append(opening, b.Labels[0]+"."+b.Labels[1])
		}
	}
	if diff := cmp.Diff([]string{"azurerm_network_security_group.proxies", "azurerm_subnet_network_security_group_association.proxies"}, opening); diff != "" {
		p.add("the resources that make or apply rules (-want +got):\n%s", diff)
	}
	perLocation := "toset(var.locations)"
	for _, r := range [][2]string{{"azurerm_virtual_network", "proxies"}, {"azurerm_subnet", "proxies"}, {"azurerm_network_security_group", "proxies"}, {"azurerm_subnet_network_security_group_association", "proxies"}} {
		b := m.resource(r[0], r[1])
		if b == nil {
			p.add("no resource %s.%s", r[0], r[1])
			continue
		}
		if got := attrSource(t, m, b.Body, "for_each"); got != perLocation {
			p.add("%s.%s is one per %q, want one per %s", r[0], r[1], got, perLocation)
		}
	}
	if as := m.resource("azurerm_subnet_network_security_group_association", "proxies"); as != nil {
		for name, want := range map[string]string{
			"subnet_id":                 "azurerm_subnet.proxies[each.key].id",
			"network_security_group_id": "azurerm_network_security_group.proxies[each.key].id",
		} {
			if got := attrSource(t, m, as.Body, name); got != want {
				p.add("the association's %s is %s, want %s: each location's group on its own subnet", name, got, want)
			}
		}
	}
	nsg := m.resource("azurerm_network_security_group", "proxies")
	if nsg == nil {
		return p
	}
	if _, ok := nsg.Body.Attributes["security_rule"]; ok {
		p.add("the group sets security_rule as an attribute; the test reads its blocks")
	}
	var dynamics []*hclsyntax.Block
	for _, d := range nested(nsg.Body, "dynamic") {
		if len(d.Labels) == 1 && d.Labels[0] == "security_rule" {
			dynamics = append(dynamics, d)
		}
	}
	if len(dynamics) != 1 {
		p.add("the group has %d dynamic security_rule blocks, want 1 over local.allow_rules", len(dynamics))
	} else {
		d := dynamics[0]
		if got := attrSource(t, m, d.Body, "for_each"); got != "local.allow_rules" {
			p.add("the allow rules are one per %s, want one per local.allow_rules", got)
		}
		content := map[string]string{}
		for _, c := range nested(d.Body, "content") {
			for name := range c.Body.Attributes {
				content[name] = attrSource(t, m, c.Body, name)
			}
		}
		want := map[string]string{
			"name":                       "security_rule.value.name",
			"description":                "security_rule.value.description",
			"priority":                   "security_rule.value.priority",
			"direction":                  `"Inbound"`,
			"access":                     `"Allow"`,
			"protocol":                   "security_rule.value.protocol",
			"source_address_prefixes":    "security_rule.value.sources",
			"source_port_range":          `"*"`,
			"destination_address_prefix": `"*"`,
			"destination_port_ranges":    "security_rule.value.ports",
		}
		if diff := cmp.Diff(want, content); diff != "" {
			p.add("an allow rule's attributes (-want +got):\n%s", diff)
		}
	}
	type literalRule struct {
		Name, Direction, Access, Protocol, Source, SourcePort, Destination, DestinationPort string
		Priority                                                                            int64
	}
	var literals []literalRule
	for _, r := range nested(nsg.Body, "security_rule") {
		str := func(name string) string {
			a, ok := r.Body.Attributes[name]
			if !ok {
				return ""
			}
			v, diags := a.Expr.Value(nil)
			if diags.HasErrors() {
				p.add("security_rule's %s is no literal: %s", name, m.source(t, a.Expr.Range()))
				return ""
			}
			if v.Type() == cty.Number {
				return v.AsBigFloat().String()
			}
			return v.AsString()
		}
		var prio int64
		fmt.Sscan(str("priority"), &prio)
		for name := range r.Body.Attributes {
			if strings.HasSuffix(name, "_prefixes") || strings.HasSuffix(name, "_ranges") || strings.Contains(name, "application_security_group") {
				p.add("the literal rule %s sets %s", str("name"), name)
			}
		}
		literals = append(literals, literalRule{Name: str("name"), Direction: str("direction"), Access: str("access"), Protocol: str("protocol"),
			Source: str("source_address_prefix"), SourcePort: str("source_port_range"), Destination: str("destination_address_prefix"),
			DestinationPort: str("destination_port_range"), Priority: prio})
	}
	// The last rule read, ahead of Azure's defaults (65000 and up): from
	// anywhere, to anything, nothing.
	want := []literalRule{{Name: "deny-everything-else", Direction: "Inbound", Access: "Deny", Protocol: "*", Source: "*", SourcePort: "*", Destination: "*", DestinationPort: "*", Priority: 4096}}
	if diff := cmp.Diff(want, literals); diff != "" {
		p.add("the group's literal rules (-one deny of everything +the module's):\n%s", diff)
	}
	return p
}

// TestTheAzureNSGOpensOnlyTheProxyPorts: each location's network security
// group admits the proxy ports from the allowed IPv4 sources (TCP, and UDP
// for SOCKS5's relay) and from the control plane's egress (TCP, the
// status request) and refuses everything else, ahead of Azure's default
// rules that admit the virtual network and the load balancer; the planted
// copies show that a rule by hand, a rule resource beside the group and a
// group off the subnet each fail.
func TestTheAzureNSGOpensOnlyTheProxyPorts(t *testing.T) {
	if p := azureNSGProblems(t, azureDir); len(p) > 0 {
		t.Errorf("the azure/ module's network security group:\n%s", strings.Join(p, "\n"))
	}
	m := parseModuleAt(t, azureDir)
	ports := []string{"3128", "8080-8090"}
	cases := map[string]struct {
		reason string
		vars   map[string]cty.Value
		want   []nsgRule
	}{
		"WithTheStatusRanges": {
			reason: "The main module's status_source_ranges given: the control plane asks the status on the proxy ports.",
			vars:   map[string]cty.Value{"proxy_ports": ctyStrings(ports...), "status_source_ranges": ctyStrings("198.51.100.7/32")},
			want: []nsgRule{
				{Name: "proxy-ports-tcp", Protocol: "Tcp", Priority: 100, Sources: []string{"203.0.113.0/24"}, Ports: ports},
				{Name: "proxy-ports-udp", Protocol: "Udp", Priority: 110, Sources: []string{"203.0.113.0/24"}, Ports: ports},
				{Name: "status-from-the-control-plane", Protocol: "Tcp", Priority: 120, Sources: []string{"198.51.100.7/32"}, Ports: ports},
			},
		},
		"FirstApply": {
			reason: "Before the main module has made the functions' egress: the tenants' sources alone (the IPv6 one left out: the VMs have none).",
			vars:   map[string]cty.Value{},
			want: []nsgRule{
				{Name: "proxy-ports-tcp", Protocol: "Tcp", Priority: 100, Sources: []string{"203.0.113.0/24"}, Ports: []string{"3128"}},
				{Name: "proxy-ports-udp", Protocol: "Udp", Priority: 110, Sources: []string{"203.0.113.0/24"}, Ports: []string{"3128"}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := azureAllowRules(t, m, tc.vars)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nthe allow rules (-want +got):\n%s", tc.reason, diff)
			}
			seen := map[int64]bool{4096: true}
			for _, r := range got {
				if seen[r.Priority] || r.Priority < 100 || r.Priority >= 4096 {
					t.Errorf("rule %s's priority %d is taken or outside 100-4095 (4096 is the deny's)", r.Name, r.Priority)
				}
				seen[r.Priority] = true
			}
		})
	}

	planted := map[string]struct {
		reason, file, old, new string
	}{
		"SSHByHand": {
			reason: "A literal rule admitting port 22 beside the deny.",
			file:   "network.tf", old: `  security_rule {`,
			new: "  security_rule {\n    name = \"ssh\"\n    priority = 200\n    direction = \"Inbound\"\n    access = \"Allow\"\n    protocol = \"Tcp\"\n    source_address_prefix = \"*\"\n    source_port_range = \"*\"\n    destination_address_prefix = \"*\"\n    destination_port_range = \"22\"\n  }\n  security_rule {",
		},
		"ARuleResourceBeside": {
			reason: "azurerm_network_security_rule adds rules to the group from outside it.",
			file:   "network.tf", old: `resource "azurerm_subnet_network_security_group_association" "proxies" {`,
			new: "resource \"azurerm_network_security_rule\" \"rdp\" {\n  name = \"rdp\"\n}\n\nresource \"azurerm_subnet_network_security_group_association\" \"proxies\" {",
		},
		"EveryDestinationPort": {
			reason: "An allow rule to every port instead of the proxy ports.",
			file:   "network.tf", old: `destination_port_ranges    = security_rule.value.ports`, new: `destination_port_range     = "*"`,
		},
		"TheGroupOnAnotherSubnet": {
			reason: "The first location's group on every subnet.",
			file:   "network.tf", old: `network_security_group_id = azurerm_network_security_group.proxies[each.key].id`, new: `network_security_group_id = azurerm_network_security_group.proxies[var.locations[0]].id`,
		},
	}
	for name, tc := range planted {
		t.Run("Planted/"+name, func(t *testing.T) {
			if p := azureNSGProblems(t, plantInCopy(t, azureDir, tc.file, tc.old, tc.new)); len(p) == 0 {
				t.Errorf("%s\nthe check passes it", tc.reason)
			}
		})
	}
}

// azureFederationProblems: the identity has exactly two federated
// credentials, one per function account, each trusting Google's issuer,
// Entra's token exchange audience alone and the account's unique id; the
// second is written after the first (Entra refuses concurrent writes under
// one identity); and there is no Entra application (whose passwords and
// certificates are secrets) nor any other identity.
func azureFederationProblems(t *testing.T, dir string) problems {
	t.Helper()
	var p problems
	m := parseModuleAt(t, dir)
	for _, b := range m.blocks {
		if b.Type == "resource" && strings.HasPrefix(b.Labels[0], "azuread_") {
			p.add("the module makes %s.%s: an Entra application or its credentials, where the managed identity needs none", b.Labels[0], b.Labels[1])
		}
	}
	if n := len(m.resources("azurerm_user_assigned_identity")); n != 1 {
		p.add("the module makes %d managed identities, want 1", n)
	}
	ids := map[string]string{"reconcile": "104729384756102938475", "collect_garbage": "204729384756102938475"}
	e := evaluate(t, m, azureVars(map[string]cty.Value{
		"function_account_ids": cty.ObjectVal(map[string]cty.Value{"reconcile": cty.StringVal(ids["reconcile"]), "collect_garbage": cty.StringVal(ids["collect_garbage"])}),
	}))
	type credential struct{ Issuer, Subject, Identity string }
	got := map[string]credential{}
	audiences := map[string][]string{}
	for _, i := range e.of("azurerm_federated_identity_credential") {
		got[i.name] = credential{Issuer: i.str(t, i.block.Body, "issuer"), Subject: i.str(t, i.block.Body, "subject"), Identity: attrSource(t, m, i.block.Body, "user_assigned_identity_id")}
		v, _ := i.attr(t, i.block.Body, "audience")
		audiences[i.name] = stringList(t, "audience", v)
	}
	want := map[string]credential{}
	for name, id := range ids {
		want[name] = credential{Issuer: "https://accounts.google.com", Subject: id, Identity: "azurerm_user_assigned_identity.functions.id"}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		p.add("the federated credentials (-one per function account +the module's):\n%s", diff)
	}
	for name, a := range audiences {
		if !slices.Equal(a, []string{"api://AzureADTokenExchange"}) {
			p.add("the federated credential %s takes the audiences %q, want api://AzureADTokenExchange alone", name, a)
		}
	}
	if b := m.resource("azurerm_federated_identity_credential", "collect_garbage"); b != nil {
		if got := attrSource(t, m, b.Body, "depends_on"); got != "[azurerm_federated_identity_credential.reconcile]" {
			p.add("the second federated credential depends on %q, want the first: concurrent writes are refused", got)
		}
	}
	return p
}

// TestTheAzureIdentityTakesOnlyTheFunctionsTokens: the identity trusts a
// Google ID token only with Google's issuer, Entra's token exchange
// audience and a function account's unique id as its subject; the main
// module's output azure_function_account_ids is what the azure/ module's
// variable takes; the planted copies show that another audience, another
// issuer and an Entra application each fail.
func TestTheAzureIdentityTakesOnlyTheFunctionsTokens(t *testing.T) {
	if p := azureFederationProblems(t, azureDir); len(p) > 0 {
		t.Errorf("the azure/ module's identity:\n%s", strings.Join(p, "\n"))
	}

	// The output's keys are the variable's attributes, each the unique id
	// of the function's own account.
	az, main := parseModuleAt(t, azureDir), parseModule(t)
	var attrs []string
	for _, b := range az.blocks {
		if b.Type == "variable" && b.Labels[0] == "function_account_ids" {
			ty, diags := typeexpr.TypeConstraint(b.Body.Attributes["type"].Expr)
			if diags.HasErrors() || !ty.IsObjectType() {
				t.Fatalf("variable function_account_ids is no object type: %s", diags.Error())
			}
			for name := range ty.AttributeTypes() {
				attrs = append(attrs, name)
			}
		}
	}
	got := map[string]string{}
	for _, b := range main.blocks {
		if b.Type != "output" || b.Labels[0] != "azure_function_account_ids" {
			continue
		}
		obj, ok := b.Body.Attributes["value"].Expr.(*hclsyntax.ObjectConsExpr)
		if !ok {
			t.Fatalf("output azure_function_account_ids is not an object")
		}
		for _, item := range obj.Items {
			got[hcl.ExprAsKeyword(item.KeyExpr)] = main.source(t, item.ValueExpr.Range())
		}
	}
	want := map[string]string{}
	for _, a := range attrs {
		fn := map[string]string{"reconcile": "reconcile", "collect_garbage": "gc"}[a]
		want[a] = "google_service_account." + fn + ".unique_id"
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the main module's output azure_function_account_ids (-the azure/ module's variable, by the functions' accounts +the output):\n%s", diff)
	}

	planted := map[string]struct {
		reason, file, old, new string
	}{
		"AnotherAudience": {
			reason: "A token for another audience (a Google one the functions send elsewhere) would be taken.",
			file:   "main.tf", old: `token_exchange_audience = "api://AzureADTokenExchange"`, new: `token_exchange_audience = "https://egress.example.com/azure"`,
		},
		"AnotherIssuer": {
			reason: "Tokens of another issuer would be taken.",
			file:   "main.tf", old: `google_issuer           = "https://accounts.google.com"`, new: `google_issuer           = "https://token.actions.githubusercontent.com"`,
		},
		"OneSubjectForBoth": {
			reason: "CollectGarbage's account would not be the subject of its credential.",
			file:   "main.tf", old: `subject                   = var.function_account_ids.collect_garbage`, new: `subject                   = var.function_account_ids.reconcile`,
		},
		"AnEntraApplication": {
			reason: "An application whose password is a secret.",
			file:   "main.tf", old: `resource "azurerm_resource_group" "proxies" {`,
			new: "resource \"azuread_application_password\" \"functions\" {\n  application_id = \"x\"\n}\n\nresource \"azurerm_resource_group\" \"proxies\" {",
		},
	}
	for name, tc := range planted {
		t.Run("Planted/"+name, func(t *testing.T) {
			if p := azureFederationProblems(t, plantInCopy(t, azureDir, tc.file, tc.old, tc.new)); len(p) == 0 {
				t.Errorf("%s\nthe check passes it", tc.reason)
			}
		})
	}
}

// azureContractVars are the azure plugin's variables by who reads them
// in production: the functions that call Azure, and the ProxyAPI; the
// local ones (AZURE_ENDPOINT, AZURE_AUTHORITY_HOST) are the local
// stack's alone, and Terraform sets none of them.
func azureContractVars() (callers, api, local []string) {
	for _, v := range azureprovider.Plugin.Vars {
		switch {
		case v.Local:
			local = append(local, v.Name)
			continue
		case v.Readers&plugin.ReadByCallers != 0:
			callers = append(callers, v.Name)
		}
		if v.Readers&plugin.ReadByAPI != 0 {
			api = append(api, v.Name)
		}
	}
	return callers, api, local
}

// TestTheAzureOutputsAreTheMainModulesSettings: each output of the azure/
// module the functions need is the main module's variable azure_NAME, the
// output main_module_tfvars writes those and no others, and the main
// module's environments give the plugin's variables what the azure/
// module made: the subnet ids as location=ID pairs.
func TestTheAzureOutputsAreTheMainModulesSettings(t *testing.T) {
	az, main := parseModuleAt(t, azureDir), parseModule(t)
	mainVars := map[string]bool{}
	for _, b := range main.blocks {
		if b.Type == "variable" {
			mainVars[b.Labels[0]] = true
		}
	}
	var outputs []string
	tfvars := ""
	for _, b := range az.blocks {
		switch {
		case b.Type != "output":
		case b.Labels[0] == "main_module_tfvars":
			tfvars = attrSource(t, az, b.Body, "value")
		default:
			outputs = append(outputs, "azure_"+b.Labels[0])
			if !mainVars["azure_"+b.Labels[0]] {
				t.Errorf("the azure/ module's output %s is no variable azure_%[1]s of the main module", b.Labels[0])
			}
		}
	}
	var written []string
	for _, m := range regexp.MustCompile(`(?m)^\s*(azure_\w+)\s*=`).FindAllStringSubmatch(tfvars, -1) {
		written = append(written, m[1])
	}
	if diff := cmp.Diff(slices.Sorted(slices.Values(outputs)), slices.Sorted(slices.Values(written))); diff != "" {
		t.Errorf("the variables main_module_tfvars writes (-the outputs +written):\n%s", diff)
	}

	const sub = "00000000-0000-0000-0000-000000000001"
	subnet := func(l string) string {
		return "/subscriptions/" + sub + "/resourceGroups/egress-proxies-egress/providers/Microsoft.Network/virtualNetworks/egress-proxies-" + l + "/subnets/proxies"
	}
	e := evaluate(t, main, map[string]cty.Value{
		"azure_subscription_id": cty.StringVal(sub),
		"azure_tenant_id":       cty.StringVal("00000000-0000-0000-0000-000000000002"),
		"azure_client_id":       cty.StringVal("00000000-0000-0000-0000-000000000003"),
		"azure_resource_group":  cty.StringVal("egress-proxies-egress"),
		"azure_locations":       ctyStrings("westeurope", "eastus"),
		"azure_subnet_ids":      cty.MapVal(map[string]cty.Value{"westeurope": cty.StringVal(subnet("westeurope")), "eastus": cty.StringVal(subnet("eastus"))}),
	})
	gotCallers := stringMap(t, "local.azure_env", e.local(t, "azure_env"))
	wantCallers := map[string]string{
		"AZURE_SUBSCRIPTION_ID": sub,
		"AZURE_TENANT_ID":       "00000000-0000-0000-0000-000000000002",
		"AZURE_CLIENT_ID":       "00000000-0000-0000-0000-000000000003",
		"AZURE_RESOURCE_GROUP":  "egress-proxies-egress",
		"AZURE_LOCATIONS":       "westeurope,eastus",
		"AZURE_SUBNET_IDS":      "eastus=" + subnet("eastus") + ",westeurope=" + subnet("westeurope"),
	}
	if diff := cmp.Diff(wantCallers, gotCallers); diff != "" {
		t.Errorf("what Reconcile and CollectGarbage read (-want +local.azure_env):\n%s", diff)
	}
	gotAPI := stringMap(t, "local.azure_api_env", e.local(t, "azure_api_env"))
	wantAPI := map[string]string{"AZURE_LOCATIONS": "westeurope,eastus", "AZURE_VM_SIZES": "Standard_B1s", "AZURE_IMAGES": "Debian:debian-13:13-gen2:latest"}
	if diff := cmp.Diff(wantAPI, gotAPI); diff != "" {
		t.Errorf("what the ProxyAPI reads (-want +local.azure_api_env):\n%s", diff)
	}
	keys := func(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
	callers, api, local := azureContractVars()
	if diff := cmp.Diff(slices.Sorted(slices.Values(callers)), keys(gotCallers)); diff != "" {
		t.Errorf("the callers' variables (-the plugin's +Terraform's):\n%s", diff)
	}
	if diff := cmp.Diff(slices.Sorted(slices.Values(api)), keys(gotAPI)); diff != "" {
		t.Errorf("the ProxyAPI's variables (-the plugin's +Terraform's):\n%s", diff)
	}
	for _, v := range local {
		if _, ok := gotCallers[v]; ok {
			t.Errorf("Terraform sets %s, which only the local stack sets", v)
		}
	}
}

// secretName is what a variable, argument or output that holds a secret
// is called: none exists in the Azure part (the identity is reached by
// federation, and the ids it is named by grant nothing).
var secretName = regexp.MustCompile(`(?i)secret|password|passwd|token|_key\b|key$|sas|connection_string|certificate`)

// TestTheAzurePartHasNoSecretVariable: no variable or output of the azure/
// module or of the main module's azure.tf is named as a secret or marked
// sensitive: there is none to give.
func TestTheAzurePartHasNoSecretVariable(t *testing.T) {
	az, main := parseModuleAt(t, azureDir), parseModule(t)
	for _, c := range []struct {
		m    *module
		file string
	}{{az, ""}, {main, "azure.tf"}} {
		for _, b := range c.m.blocks {
			if (b.Type != "variable" && b.Type != "output") || c.file != "" && filepath.Base(b.Range().Filename) != c.file {
				continue
			}
			if secretName.MatchString(b.Labels[0]) {
				t.Errorf("%s %s (%s) is named as a secret", b.Type, b.Labels[0], b.Range())
			}
			if _, ok := b.Body.Attributes["sensitive"]; ok {
				t.Errorf("%s %s (%s) is sensitive: what secret does it hold?", b.Type, b.Labels[0], b.Range())
			}
		}
	}
}

// azureSecretNames are what code names when it reads, sets or asks for an
// Azure secret: azidentity's and the Azure CLI's environment variables of
// a client secret, a certificate and its password, or a user's password;
// the azurerm provider's and the backend's (ARM_…, client_secret,
// client_certificate_password, a storage account's access_key or
// sas_token); Terraform's attributes that hold a storage account's keys or
// connection strings; azidentity's constructors of a credential from a
// secret, a certificate or a password, and the two that read those from
// the environment by themselves (EnvironmentCredential,
// DefaultAzureCredential). The provider's one credential is
// NewClientAssertionCredential with the function's Google ID token.
var azureSecretNames = regexp.MustCompile(`AZURE_CLIENT_SECRET|AZURE_CLIENT_CERTIFICATE_PATH|AZURE_CLIENT_CERTIFICATE_PASSWORD|AZURE_USERNAME|AZURE_PASSWORD|` +
	`ARM_CLIENT_SECRET|ARM_CLIENT_CERTIFICATE|ARM_ACCESS_KEY|ARM_SAS_TOKEN|` +
	`\bclient_secret\b|\bclient_certificate_password\b|\bclient_certificate_path\b|\bsas_token\b|` +
	`\b(primary|secondary)_(access_key|connection_string|blob_connection_string)\b|` +
	`NewClientSecretCredential|NewClientCertificateCredential|NewUsernamePasswordCredential|NewEnvironmentCredential|NewDefaultAzureCredential|azidentity\.ParseCertificates`)

// azureSecretValues are what an Azure secret itself looks like, in any
// file: an Entra client secret as the portal makes it (three characters, a
// digit and "Q~", then 31 to 34 more: Microsoft's format since 2021, which
// its own scanners key on), a storage account's or a Service Bus's key in
// a connection string (AccountKey=, SharedAccessKey=), a SAS token's query
// (its service version and then its signature), and a private key in PEM,
// the other half of a certificate credential.
var azureSecretValues = regexp.MustCompile(`\b[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}|` +
	`(?i:AccountKey|SharedAccessKey)=[A-Za-z0-9+/]{20,}|` +
	`\bsv=20\d\d-\d\d-\d\d&[^\s"'<>]*\bsig=[A-Za-z0-9%+/=]{10,}|` +
	`-----BEGIN (RSA |EC |ENCRYPTED )?PRIVATE KEY-----`)

// azureSecretsIn says what of path's content b is an Azure secret or names
// one: names in code (Go, Terraform, templates, scripts, CI, variable
// files), values anywhere; nothing of a test, which may plant them. The
// fake of Entra ID (azurefake) is a double of the side that takes a client
// secret, from az in TestAzureCLIAgainstTheFake: it may name the form's
// field, never hold a secret's value, and the functions never link it
// (TestTheFunctionsLinkNoDouble).
func azureSecretsIn(path string, b []byte) []string {
	if strings.HasSuffix(path, "_test.go") {
		return nil
	}
	ext := filepath.Ext(path)
	fake := strings.Contains(filepath.ToSlash(path), "internal/provider/azure/azurefake/")
	code := !fake && (ext == ".go" || ext == ".tf" || ext == ".tftpl" || ext == ".sh" || ext == ".example" || strings.HasSuffix(path, ".ci/run"))
	var found []string
	if m := azureSecretValues.Find(b); m != nil {
		found = append(found, fmt.Sprintf("%s holds what looks like an Azure secret, %.12s…", path, m))
	}
	if m := azureSecretNames.Find(b); code && m != nil {
		found = append(found, fmt.Sprintf("%s names %s: no code path reads, sets or asks for an Azure secret; the functions federate into their identity with their Google ID tokens", path, m))
	}
	return found
}

// TestNoAzureSecretAnywhere: no code names an Azure secret (a client
// secret, a certificate or its password, a storage key, a SAS token, a
// connection string, a credential type that reads them), and no file of
// code or documentation holds one; the planted cases show each pattern
// bites and that prose about them, the ids and the federation's words
// pass. Tests are not scanned: this one holds the planted secrets.
func TestNoAzureSecretAnywhere(t *testing.T) {
	planted := map[string]struct {
		path, text string
		found      bool
	}{
		"AClientSecretValue":        {path: "docs/operations/azure.md", text: "client secret: Abc8Q~vYg0.sXz_9kLmNoPqRsTuVwXyZ0123456-ab", found: true},
		"AClientSecretVariable":     {path: "internal/provider/azure/plugin.go", text: `os.Getenv("AZURE_CLIENT_SECRET")`, found: true},
		"TheProvidersArgument":      {path: "deploy/terraform/azure/versions.tf", text: "provider \"azurerm\" {\n  client_secret = var.secret\n}", found: true},
		"ACertificatePassword":      {path: "deploy/terraform/azure/versions.tf", text: `client_certificate_password = "x"`, found: true},
		"ACertificateCredential":    {path: "internal/provider/azure/provider.go", text: `azidentity.NewClientCertificateCredential(tenant, client, certs, key, nil)`, found: true},
		"TheDefaultChain":           {path: "internal/provider/azure/provider.go", text: `azidentity.NewDefaultAzureCredential(nil)`, found: true},
		"AStorageConnectionString":  {path: "docs/operations/azure.md", text: "DefaultEndpointsProtocol=https;AccountName=egress;AccountKey=Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmE==;EndpointSuffix=core.windows.net", found: true},
		"AStorageKeyAttribute":      {path: "deploy/terraform/azure/main.tf", text: `value = azurerm_storage_account.state.primary_access_key`, found: true},
		"ASASURL":                   {path: "docs/operations/azure.md", text: "https://egress.blob.core.windows.net/c/engine?sp=r&st=2026-12-01T00:00:00Z&se=2026-12-31T00:00:00Z&spr=https&sv=2022-11-02&sr=b&sig=n3mY0K1wq2Zx%2Fabc%3D", found: true},
		"APrivateKey":               {path: "internal/provider/azure/azurefake/fake.go", text: "-----BEGIN PRIVATE KEY-----\nMIIE", found: true},
		"TheFakeTakesASecretsField": {path: "internal/provider/azure/azurefake/token.go", text: `case f.Get("client_secret") != "":`},
		"TheFakeHoldsASecret":       {path: "internal/provider/azure/azurefake/token.go", text: `s.AddClientSecret("app", "Abc8Q~vYg0.sXz_9kLmNoPqRsTuVwXyZ0123456-ab")`, found: true},
		"TheFederation": {path: "internal/provider/azure/provider.go",
			text: `azidentity.NewClientAssertionCredential(s.Get("AZURE_TENANT_ID"), s.Get("AZURE_CLIENT_ID"), assertion, opts) // client_assertion_type urn:ietf:params:oauth:client-assertion-type:jwt-bearer`},
		"ProseAboutSecrets": {path: "docs/operations/azure.md", text: "No client secret, no certificate, no `AZURE_CLIENT_SECRET`, no storage key or SAS token: the identity is reached by federation."},
		"TheIDs":            {path: "deploy/terraform/terraform.tfvars.example", text: `azure_client_id = "00000000-0000-0000-0000-000000000003"`},
		"ATest":             {path: "internal/provider/azure/provider_test.go", text: `t.Setenv("AZURE_CLIENT_SECRET", "Abc8Q~vYg0.sXz_9kLmNoPqRsTuVwXyZ0123456-ab")`},
	}
	for name, tc := range planted {
		t.Run("Planted/"+name, func(t *testing.T) {
			if got := azureSecretsIn(tc.path, []byte(tc.text)); (len(got) > 0) != tc.found {
				t.Errorf("%s with %q: found %q, want found %t", tc.path, tc.text, got, tc.found)
			}
		})
	}

	scanned := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == ".git" || n == "node_modules" || n == "testdata" || n == ".terraform" {
				return filepath.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(path)
		if ext != ".go" && ext != ".tf" && ext != ".tftpl" && ext != ".sh" && ext != ".example" && ext != ".md" && ext != ".json" && ext != ".yaml" && ext != ".yml" && !strings.HasSuffix(path, ".ci/run") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		scanned++
		for _, f := range azureSecretsIn(path, b) {
			t.Error(f)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if scanned < 100 {
		t.Fatalf("scanned %d files: the walk did not see the tree", scanned)
	}
}

// withAzureValidationFunctions is ctx with what the Azure part's
// validations call beyond withListFunctions: Terraform's values and
// cidrhost (only ever under can(), so it need only refuse what is no
// CIDR).
func withAzureValidationFunctions(ctx *hcl.EvalContext) *hcl.EvalContext {
	c := withListFunctions(ctx)
	c.Functions["values"] = function.New(&function.Spec{
		Params: []function.Parameter{{Name: "mapping", Type: cty.DynamicPseudoType}},
		Type: func(args []cty.Value) (cty.Type, error) {
			var types []cty.Type
			for it := args[0].ElementIterator(); it.Next(); {
				_, v := it.Element()
				types = append(types, v.Type())
			}
			return cty.Tuple(types), nil
		},
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			var vals []cty.Value
			for it := args[0].ElementIterator(); it.Next(); {
				_, v := it.Element()
				vals = append(vals, v)
			}
			if len(vals) == 0 {
				return cty.EmptyTupleVal, nil
			}
			return cty.TupleVal(vals), nil
		},
	})
	c.Functions["cidrhost"] = function.New(&function.Spec{
		Params: []function.Parameter{{Name: "prefix", Type: cty.String}, {Name: "hostnum", Type: cty.Number}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			p, err := netip.ParsePrefix(args[0].AsString())
			if err != nil {
				return cty.NilVal, err
			}
			return cty.StringVal(p.Masked().Addr().String()), nil
		},
	})
	return c
}

// TestTheAzureVariablesRefuseWhatCannotHold: the validations of the
// azure/ module's and the main module's Azure variables take what the
// Azure side and the provider take, and refuse at plan time what would
// fail at Azure or at the functions' start-up: a location by its display
// name, a service account's email where its unique id belongs, an IPv6
// status range (the VMs have none), allowed ranges without an IPv4 one, a
// subnet that is no subnet's id, a policy without the default size or
// image.
func TestTheAzureVariablesRefuseWhatCannotHold(t *testing.T) {
	az, main := parseModuleAt(t, azureDir), parseModule(t)
	ids := func(r, g string) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{"reconcile": cty.StringVal(r), "collect_garbage": cty.StringVal(g)})
	}
	subnet := "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/egress-proxies-egress/providers/Microsoft.Network/virtualNetworks/egress-proxies-westeurope/subnets/proxies"
	cases := map[string]struct {
		reason   string
		main     bool
		variable string
		value    cty.Value
		valid    bool
	}{
		"Locations":           {reason: "Azure's names of locations.", variable: "locations", value: ctyStrings("westeurope", "eastus2"), valid: true},
		"ADisplayName":        {reason: "The display name is no location's name in the API.", variable: "locations", value: ctyStrings("West Europe")},
		"NoLocation":          {reason: "Each location gets the network; none is nothing to run in.", variable: "locations", value: ctyStrings()},
		"FirstApply":          {reason: "The first apply, before the main module: no account yet.", variable: "function_account_ids", value: cty.NullVal(cty.Object(map[string]cty.Type{"reconcile": cty.String, "collect_garbage": cty.String})), valid: true},
		"UniqueIDs":           {reason: "The accounts' unique ids, as the main module outputs them.", variable: "function_account_ids", value: ids("104729384756102938475", "204729384756102938475"), valid: true},
		"AnEmail":             {reason: "A Google ID token's subject is the account's unique id, never its email.", variable: "function_account_ids", value: ids("reconcile@p.iam.gserviceaccount.com", "204729384756102938475")},
		"IPv4StatusRanges":    {reason: "The main module's output status_source_ranges.", variable: "status_source_ranges", value: ctyStrings("198.51.100.7/32"), valid: true},
		"AnIPv6StatusRange":   {reason: "The VMs have no IPv6 address to be asked on.", variable: "status_source_ranges", value: ctyStrings("2001:db8::1/128")},
		"MixedSources":        {reason: "The IPv6 ones are left out, the IPv4 one admitted.", variable: "allowed_source_ranges", value: ctyStrings("203.0.113.0/24", "2001:db8::/32"), valid: true},
		"OnlyIPv6Sources":     {reason: "The rules would admit no one: the VMs have IPv4 addresses only.", variable: "allowed_source_ranges", value: ctyStrings("2001:db8::/32")},
		"NoCIDR":              {reason: "A range is a CIDR.", variable: "allowed_source_ranges", value: ctyStrings("203.0.113.0/24", "office")},
		"PortRange":           {reason: "Ports and ranges, as PROXY_PORTS has them.", variable: "proxy_ports", value: ctyStrings("3128", "8080-8090"), valid: true},
		"NamedPort":           {reason: "Azure's rules take numbers.", variable: "proxy_ports", value: ctyStrings("http")},
		"AnIPv6AddressSpace":  {reason: "The subnets are IPv4.", variable: "address_space", value: cty.StringVal("fd00::/48")},
		"ASubscription":       {reason: "A GUID.", variable: "subscription_id", value: cty.StringVal("00000000-0000-0000-0000-000000000001"), valid: true},
		"ASubscriptionByName": {reason: "The provider takes the id, not the display name.", variable: "subscription_id", value: cty.StringVal("Pay-As-You-Go")},
		"AResourceGroupName":  {reason: "Letters, digits, '-', '_', '.', '(' and ')'.", variable: "resource_group", value: cty.StringVal("egress-proxies_(prod)"), valid: true},
		"AResourceGroupDot":   {reason: "Azure refuses a name ending with '.'.", variable: "resource_group", value: cty.StringVal("egress.")},

		"MainSubscriptionUnset": {reason: "Azure not set up yet.", main: true, variable: "azure_subscription_id", value: cty.StringVal(""), valid: true},
		"MainClientByName":      {reason: "The client id is the identity's GUID.", main: true, variable: "azure_client_id", value: cty.StringVal("egress-proxy-egress-functions")},
		"MainSubnetIDs":         {reason: "The azure/ module's output subnet_ids.", main: true, variable: "azure_subnet_ids", value: cty.MapVal(map[string]cty.Value{"westeurope": cty.StringVal(subnet)}), valid: true},
		"MainSubnetByName":      {reason: "A subnet is named by its resource id.", main: true, variable: "azure_subnet_ids", value: cty.MapVal(map[string]cty.Value{"westeurope": cty.StringVal("proxies")})},
		"MainSizes":             {reason: "More sizes beside the default.", main: true, variable: "azure_vm_sizes", value: ctyStrings("Standard_B1s", "Standard_B2s"), valid: true},
		"MainSizesNoDefault":    {reason: "A placement that names no size gets Standard_B1s, which must be allowed.", main: true, variable: "azure_vm_sizes", value: ctyStrings("Standard_B2s")},
		"MainImagesNoDefault":   {reason: "A placement that names no image gets Debian 13's, which must be allowed.", main: true, variable: "azure_images", value: ctyStrings("Debian:debian-12:12-gen2:latest")},
		"MainImageNoURN":        {reason: "An image is a URN publisher:offer:sku:version.", main: true, variable: "azure_images", value: ctyStrings("Debian:debian-13:13-gen2:latest", "debian-13")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m, vars := az, azureVars(map[string]cty.Value{tc.variable: tc.value})
			if tc.main {
				m, vars = main, map[string]cty.Value{tc.variable: tc.value}
			}
			var validation *hclsyntax.Block
			for _, b := range m.blocks {
				if b.Type == "variable" && b.Labels[0] == tc.variable {
					if v := nested(b.Body, "validation"); len(v) == 1 {
						validation = v[0]
					}
				}
			}
			if validation == nil {
				t.Fatalf("variable %s has no validation", tc.variable)
			}
			e := evaluate(t, m, vars)
			ok, diags := validation.Body.Attributes["condition"].Expr.Value(withAzureValidationFunctions(e.ctx))
			if diags.HasErrors() {
				t.Fatalf("%s's validation does not evaluate: %s", tc.variable, diags.Error())
			}
			if ok.True() != tc.valid {
				t.Errorf("%s\n%s = %#v: valid = %v, want %v", tc.reason, tc.variable, tc.value, ok.True(), tc.valid)
			}
		})
	}
}
