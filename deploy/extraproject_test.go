package deploy_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"
)

// extraProjectDir is the module applied once per extra Google project
// (an accounts document's GCP_PROJECT).
const extraProjectDir = "terraform/modules/extra-project"

// TestExtraProjectHoldsWhatTheCallsNeed: in an extra project, each
// function's account holds the compute part of its custom roles in the
// deployment's project, which TestEachAccountHoldsWhatItsCallsNeed holds
// to the code's calls, and nothing else: the same role ids, the fleet's
// roles under the deployment's condition on the fleet's names, each bound
// to the function's account as the deployment binds it. So a call that
// needs a new Compute permission fails here until the extra projects get
// it too.
func TestExtraProjectHoldsWhatTheCallsNeed(t *testing.T) {
	main := evaluate(t, parseModule(t), nil)
	const reconcile, gc = "serviceAccount:proxy-reconcile@demo-project.iam.gserviceaccount.com", "serviceAccount:proxy-gc@demo-project.iam.gserviceaccount.com"
	extra := evaluate(t, parseModuleAt(t, extraProjectDir), map[string]cty.Value{
		"project_id":       cty.StringVal("demo-second"),
		"reconcile_member": cty.StringVal(reconcile),
		"gc_member":        cty.StringVal(gc),
		"proxy_vm_account": cty.StringVal("projects/demo-project/serviceAccounts/proxy-vm@demo-project.iam.gserviceaccount.com"),
	})

	// The roles, by resource name: the extra project's are the compute
	// part of the deployment's namesakes, under the same ids.
	type role struct {
		ID          string
		Permissions []string
	}
	rolesOf := func(ev *evaluation, computeOnly bool) map[string]role {
		out := map[string]role{}
		for _, r := range ev.of("google_project_iam_custom_role") {
			v, _ := r.attr(t, r.block.Body, "permissions")
			var perms []string
			for _, p := range stringList(t, r.address(), v) {
				if !computeOnly || strings.HasPrefix(p, "compute.") {
					perms = append(perms, p)
				}
			}
			if len(perms) > 0 {
				slices.Sort(perms)
				out[r.name] = role{ID: r.str(t, r.block.Body, "role_id"), Permissions: perms}
			}
		}
		return out
	}
	want, got := rolesOf(main, true), rolesOf(extra, false)
	if len(want) == 0 {
		t.Fatal("the deployment's module has no custom role with a compute permission")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the extra project's custom roles (-the compute part of the deployment's +the module's):\n%s", diff)
	}

	// The bindings: each role to its function's account, the fleet's
	// under the deployment's condition.
	type binding struct{ Role, Member, Condition string }
	bindingsOf := func(ev *evaluation, members map[string]string) []binding {
		var out []binding
		for _, b := range ev.of("google_project_iam_member") {
			r, m := b.str(t, b.block.Body, "role"), b.str(t, b.block.Body, "member")
			id := r[strings.LastIndex(r, "/")+1:]
			if !strings.HasPrefix(id, "egress_proxy_") || members[m] == "" {
				continue
			}
			if _, ok := got[strings.TrimPrefix(id, "egress_proxy_")]; !ok {
				continue // a role of the deployment's project alone (the API's)
			}
			bd := binding{Role: id, Member: members[m]}
			for _, c := range nested(b.block.Body, "condition") {
				bd.Condition = b.str(t, c.Body, "expression")
			}
			out = append(out, bd)
		}
		slices.SortFunc(out, func(a, b binding) int { return strings.Compare(a.Role+a.Member, b.Role+b.Member) })
		return out
	}
	accounts := functionAccounts(t, main)
	mainMembers := map[string]string{accounts["Reconcile"]: "Reconcile", accounts["CollectGarbage"]: "CollectGarbage"}
	wantBindings := bindingsOf(main, mainMembers)
	gotBindings := bindingsOf(extra, map[string]string{reconcile: "Reconcile", gc: "CollectGarbage"})
	if len(wantBindings) != 4 {
		t.Errorf("the deployment binds %d roles with compute permissions to Reconcile and CollectGarbage, want 4: %+v", len(wantBindings), wantBindings)
	}
	if diff := cmp.Diff(wantBindings, gotBindings); diff != "" {
		t.Errorf("the extra project's bindings (-the deployment's +the module's):\n%s", diff)
	}
}
