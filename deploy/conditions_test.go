package deploy_test

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/deploy"
	"github.com/egress-proxies/egress/internal/provider"
)

// The policy the module grants, evaluated as IAM evaluates it: a binding
// grants its role's permissions where its condition, a CEL expression over
// the resource the permission is checked on, holds. The conditions are
// compiled with cel-go, with IAM's extract function
// (https://cloud.google.com/iam/docs/conditions-attribute-reference), so
// a test asks what a Terraform-applied policy would answer.

// resource is what IAM knows of the resource a permission is checked on
// (https://cloud.google.com/iam/docs/conditions-resource-attributes).
type resource struct{ typ, name string }

const (
	instanceType = "compute.googleapis.com/Instance"
	diskType     = "compute.googleapis.com/Disk"
	addressType  = "compute.googleapis.com/Address"
	projectType  = "cloudresourcemanager.googleapis.com/Project"
)

type policyBinding struct {
	address     string
	member      string
	permissions []string
	condition   cel.Program // nil: unconditional
	// opaque is a condition that needs a cloud to evaluate (the secret
	// accessor's names the project's number): a test that asks about a
	// permission it grants fails.
	opaque bool
}

// extract is IAM's resource.name.extract(template): the text between the
// template's prefix, at its first occurrence, and its suffix (the end
// when the suffix is empty); "" when the name does not hold the prefix.
func extract(name, template string) string {
	before, rest, ok := strings.Cut(template, "{")
	if !ok {
		return ""
	}
	_, after, ok := strings.Cut(rest, "}")
	if !ok {
		return ""
	}
	i := strings.Index(name, before)
	if i < 0 {
		return ""
	}
	v := name[i+len(before):]
	if after == "" {
		return v
	}
	j := strings.Index(v, after)
	if j < 0 {
		return ""
	}
	return v[:j]
}

func conditionEnv(t *testing.T) *cel.Env {
	t.Helper()
	env, err := cel.NewEnv(
		cel.Variable("resource", cel.MapType(cel.StringType, cel.StringType)),
		cel.Function("extract", cel.MemberOverload("string_extract_string", []*cel.Type{cel.StringType, cel.StringType}, cel.StringType,
			cel.BinaryBinding(func(name, template ref.Val) ref.Val {
				return types.String(extract(string(name.(types.String)), string(template.(types.String))))
			}))),
	)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// policy is every binding of the module on the project, with its
// condition compiled.
func policy(t *testing.T) []policyBinding {
	t.Helper()
	ev := evaluate(t, parseModule(t), nil)
	roles := customRoles(t, ev)
	env := conditionEnv(t)
	var out []policyBinding
	for _, i := range ev.of("google_project_iam_member") {
		member, ok := tryString(i, "member")
		if !ok {
			continue
		}
		role, _ := tryString(i, "role")
		b := policyBinding{address: i.address(), member: member, permissions: roles[role]}
		if b.permissions == nil {
			b.permissions = predefined(role)
		}
		for _, c := range nested(i.block.Body, "condition") {
			v, diags := c.Body.Attributes["expression"].Expr.Value(i.ctx)
			if diags.HasErrors() || !v.IsWhollyKnown() {
				b.opaque = true
				continue
			}
			expr := v.AsString()
			ast, iss := env.Compile(expr)
			if iss.Err() != nil {
				t.Fatalf("%s: the condition %s does not compile as CEL: %v", i.address(), expr, iss.Err())
			}
			if ast.OutputType() != cel.BoolType {
				t.Fatalf("%s: the condition %s is not a bool", i.address(), expr)
			}
			prg, err := env.Program(ast)
			if err != nil {
				t.Fatal(err)
			}
			b.condition = prg
		}
		out = append(out, b)
	}
	return out
}

// predefined are the permissions of a predefined role the deploy tables
// know (deploy.ResourceGrants, deploy.ProxyVM).
func predefined(role string) []string {
	for _, g := range deploy.ResourceGrants {
		if g.Role == role {
			return g.Permissions
		}
	}
	for _, u := range deploy.ProxyVM {
		if u.Role == role {
			return u.Permissions
		}
	}
	return nil
}

// allowed reports whether member holds permission on r, and by which
// binding.
func allowed(t *testing.T, pol []policyBinding, member, permission string, r resource) (bool, string) {
	t.Helper()
	for _, b := range pol {
		if b.member != member || !slices.Contains(b.permissions, permission) {
			continue
		}
		if b.opaque {
			t.Fatalf("%s grants %s under a condition that needs a cloud to evaluate", b.address, permission)
		}
		if b.condition == nil {
			return true, b.address
		}
		out, _, err := b.condition.Eval(map[string]any{"resource": map[string]string{"name": r.name, "type": r.typ, "service": "compute.googleapis.com"}})
		if err != nil {
			t.Fatalf("%s: evaluating its condition on %s: %v", b.address, r.name, err)
		}
		if out == types.True {
			return true, b.address
		}
	}
	return false, ""
}

// TestComputeRightsAreTheFleets: what the reconciler and the collector may
// do to a VM, a disk or an address holds on the names the product gives
// (provider.NameFromUID) and on no other resource of the project, in the
// policy Terraform applies: a VM named outside the prefixes cannot have
// its metadata set (a startup script: root on it), its service account
// changed, or be deleted.
func TestComputeRightsAreTheFleets(t *testing.T) {
	pol := policy(t)
	reconcile := "serviceAccount:proxy-reconcile@demo-project.iam.gserviceaccount.com"
	gc := "serviceAccount:proxy-gc@demo-project.iam.gserviceaccount.com"
	fleetVM := "projects/demo-project/zones/us-central1-a/instances/" + provider.NameFromUID("5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f")
	hashedVM := "projects/demo-project/zones/europe-west4-b/instances/" + provider.NameFromUID("not-a-uuid")
	hidden := "projects/demo-project/zones/us-central1-a/instances/db-primary"
	lookalike := "projects/demo-project/zones/us-central1-a/instances/proxydb-1"
	cases := map[string]struct {
		reason     string
		member     string
		permission string
		on         resource
		want       bool
	}{
		"SetMetadataFleet":        {"the reconciler reconfigures its VMs", reconcile, "compute.instances.setMetadata", resource{instanceType, fleetVM}, true},
		"SetMetadataHashedName":   {"and those of a uid that is no UUID", reconcile, "compute.instances.setMetadata", resource{instanceType, hashedVM}, true},
		"SetMetadataHidden":       {"a startup script on another VM of the project is root there", reconcile, "compute.instances.setMetadata", resource{instanceType, hidden}, false},
		"SetMetadataLookalike":    {"a name that only starts like the fleet's is not the fleet's", reconcile, "compute.instances.setMetadata", resource{instanceType, lookalike}, false},
		"SetServiceAccountHidden": {"another VM's identity", reconcile, "compute.instances.setServiceAccount", resource{instanceType, hidden}, false},
		"SetLabelsHidden":         {"another VM's labels (a forged uid label would make it look like the fleet's)", reconcile, "compute.instances.setLabels", resource{instanceType, hidden}, false},
		"GetHidden":               {"another VM's metadata is not the reconciler's to read", reconcile, "compute.instances.get", resource{instanceType, hidden}, false},
		"CreateFleet":             {"a VM of the fleet's name", reconcile, "compute.instances.create", resource{instanceType, fleetVM}, true},
		"CreateHidden":            {"a VM of another name", reconcile, "compute.instances.create", resource{instanceType, hidden}, false},
		"BootDiskFleet":           {"the VM's boot disk, named as the VM", reconcile, "compute.disks.create", resource{diskType, strings.Replace(fleetVM, "/instances/", "/disks/", 1)}, true},
		"AddressFleet":            {"a Static proxy's address", reconcile, "compute.addresses.create", resource{addressType, "projects/demo-project/regions/us-central1/addresses/" + provider.NameFromUID("5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f")}, true},
		"AddressUseHidden":        {"another address of the project, as a VM's NAT IP", reconcile, "compute.addresses.use", resource{addressType, "projects/demo-project/regions/us-central1/addresses/ingress"}, false},
		"DeleteFleet":             {"the collector deletes orphans of the fleet", gc, "compute.instances.delete", resource{instanceType, fleetVM}, true},
		"DeleteHidden":            {"and nothing else", gc, "compute.instances.delete", resource{instanceType, hidden}, false},
		"DeleteAddressHidden":     {"no other address either", gc, "compute.addresses.delete", resource{addressType, "projects/demo-project/regions/us-central1/addresses/ingress"}, false},
		"CollectorSetsNothing":    {"the collector changes no VM", gc, "compute.instances.setMetadata", resource{instanceType, fleetVM}, false},
		"ListProject":             {"an aggregated list is checked on the project, whatever it returns", gc, "compute.instances.list", resource{projectType, "projects/demo-project"}, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, by := allowed(t, pol, tc.member, tc.permission, tc.on)
			if got != tc.want {
				t.Errorf("%s: %s %s on %s: allowed %v (by %s), want %v", tc.reason, tc.member, tc.permission, tc.on.name, got, by, tc.want)
			}
		})
	}
}

// TestEveryFleetRightIsConditioned reads the conditions: every permission
// the functions hold on an instance, a disk or an address (all but the
// lists, which Compute checks on the project) is in a conditioned role and
// no unconditioned one, and the condition's names are
// provider.NamePrefixes.
func TestEveryFleetRightIsConditioned(t *testing.T) {
	pol := policy(t)
	fleet := func(p string) bool {
		for _, kind := range []string{"compute.instances.", "compute.disks.", "compute.addresses."} {
			if strings.HasPrefix(p, kind) && !strings.HasSuffix(p, ".list") {
				return true
			}
		}
		return false
	}
	conditioned := 0
	for _, b := range pol {
		for _, p := range b.permissions {
			switch {
			case fleet(p) && b.condition == nil:
				t.Errorf("%s grants %s with no condition: on every VM of the project", b.address, p)
			case !fleet(p) && b.condition != nil && strings.HasPrefix(p, "compute."):
				t.Errorf("%s grants %s under the fleet's condition: Compute checks it on no resource of the fleet's names, so it would always be refused", b.address, p)
			}
		}
		if b.condition != nil && slices.ContainsFunc(b.permissions, fleet) {
			conditioned++
		}
	}
	if conditioned != 2 {
		t.Errorf("%d conditioned bindings of fleet rights, want the reconciler's and the collector's", conditioned)
	}
	ev := evaluate(t, parseModule(t), nil)
	got := stringList(t, "local.fleet_name_prefixes", ev.local(t, "fleet_name_prefixes"))
	want := slices.Clone(provider.NamePrefixes)
	sort.Strings(got)
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the fleet's names in iam.tf (-provider.NamePrefixes +local.fleet_name_prefixes):\n%s", diff)
	}
	for _, uid := range []string{"5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f", "pool-member-7", ""} {
		name := provider.NameFromUID(uid)
		if !slices.ContainsFunc(provider.NamePrefixes, func(p string) bool { return strings.HasPrefix(name, p) }) {
			t.Errorf("NameFromUID(%q) = %s, under none of %v", uid, name, provider.NamePrefixes)
		}
	}
}
