package deploy_test

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/egress-proxies/egress/deploy"
)

// TestEachAccountHoldsWhatItsCallsNeed: for each function, the Google API
// calls its code can reach (reachedCalls, from the code itself) need the
// permissions deploy.APIs gives them; its account must hold exactly those:
// in its one custom role, all but what deploy.ResourceGrants grants on a
// single resource, which it must hold there, and no other role. So a new
// call, a call whose permission Terraform lacks, a permission no call
// needs and a broad predefined role each fail here.
func TestEachAccountHoldsWhatItsCallsNeed(t *testing.T) {
	apis := apiTable(t)
	calls := reachedCalls(t, functionsPkg)
	ev := evaluate(t, parseModule(t), nil)
	accounts := functionAccounts(t, ev)
	grants := bindings(t, ev)
	roles := customRoles(t, ev)

	docsCalls(t, calls)
	if len(calls) != len(accounts) {
		t.Errorf("the code registers %d functions and Terraform deploys %d", len(calls), len(accounts))
	}
	names := make([]string, 0, len(calls))
	for name := range calls {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		member, ok := accounts[name]
		if !ok {
			t.Errorf("%s: Terraform deploys no function with this entry point", name)
			continue
		}
		// What the calls need, and which call needs it.
		need := map[string][]string{}
		for _, c := range calls[name] {
			for _, m := range c.api {
				if strings.HasPrefix(m, "ec2:") || strings.HasPrefix(m, "pricing:") {
					continue // AWS's: the role's policy holds them (TestTheAWSRoleHoldsWhatItsCallsNeed)
				}
				if strings.HasPrefix(m, "unknown:") {
					t.Errorf("%s calls %s (in %s), which deploy.ClientMethods does not account for: add it with the API methods it sends, nil if none", name, c.client, c.where)
					continue
				}
				api, ok := apis[m]
				if !ok {
					t.Errorf("%s calls %s (%s, in %s), which deploy.APIs does not list: add it with the permissions Google documents for it", name, m, c.client, c.where)
					continue
				}
				for _, p := range api.Permissions {
					need[p] = append(need[p], m)
				}
			}
		}

		var custom []string
		onResources := map[string]bool{}
		for _, g := range grants[member] {
			switch {
			case g.custom != "":
				perms, ok := roles[g.custom]
				if !ok {
					t.Errorf("%s's account is bound to %s, which is no custom role of the module", name, g.custom)
				}
				custom = append(custom, perms...)
			default:
				narrow := resourceGrant(g)
				if len(narrow) == 0 {
					t.Errorf("%s's account holds %s on %s: a predefined role no call of it needs so broadly; give it a custom role (iam.tf) or a grant of deploy.ResourceGrants", name, g.role, g.on)
					continue
				}
				for _, p := range narrow {
					if _, needed := need[p]; !needed {
						t.Errorf("%s's account holds %s on %s for %s, which none of its calls needs", name, g.role, g.on, p)
					}
					onResources[p] = true
				}
			}
		}

		var want []string
		for p, by := range need {
			if _, narrow := deploy.ResourceGrants[p]; narrow {
				if !onResources[p] {
					t.Errorf("%s calls %v, which need %s, granted on %s: its account holds no %s there", name, uniq(by), p, deploy.ResourceGrants[p].On, deploy.ResourceGrants[p].Role)
				}
				continue
			}
			want = append(want, p)
		}
		sort.Strings(want)
		sort.Strings(custom)
		if diff := cmp.Diff(want, custom); diff != "" {
			t.Errorf("%s: the permissions of its custom role (-what its calls need +what Terraform grants):\n%s\nthe calls: %s", name, diff, describe(calls[name]))
		}
	}
}

// TestIAMTableIsWhole: every API method a client call names is in the
// table once, with permissions, a page of Google's documentation, and no
// permission that only a resource-level grant may hold twice over.
func TestIAMTableIsWhole(t *testing.T) {
	apis := apiTable(t)
	for key, methods := range deploy.ClientMethods {
		for _, m := range methods {
			if _, ok := apis[m]; !ok {
				t.Errorf("deploy.ClientMethods[%q] names %s, which deploy.APIs does not list", key, m)
			}
		}
	}
	for _, a := range deploy.APIs {
		if len(a.Permissions) == 0 || !strings.HasPrefix(a.Doc, "https://cloud.google.com/") {
			t.Errorf("%s: want its permissions and the page of Google's documentation they are from, got %v and %q", a.Method, a.Permissions, a.Doc)
		}
	}
	for p, g := range deploy.ResourceGrants {
		if !slices.Contains(g.Permissions, p) {
			t.Errorf("deploy.ResourceGrants[%q]: %s does not hold it", p, g.Role)
		}
	}
}

// TestCustomRolesAreValid: Google takes a custom role's id of 3 to 64
// letters, digits, underscores and periods
// (https://cloud.google.com/iam/docs/reference/rest/v1/projects.roles/create),
// and its permissions must be known ones, each once.
func TestCustomRolesAreValid(t *testing.T) {
	ev := evaluate(t, parseModule(t), nil)
	valid := regexp.MustCompile(`^[A-Za-z0-9_.]{3,64}$`)
	permission := regexp.MustCompile(`^[a-z]+\.[A-Za-z]+\.[A-Za-z]+$`)
	known := map[string]bool{}
	for _, a := range deploy.APIs {
		for _, p := range a.Permissions {
			known[p] = true
		}
	}
	roles := ev.of("google_project_iam_custom_role")
	if len(roles) == 0 {
		t.Fatal("the module has no custom role")
	}
	for _, r := range roles {
		id := r.str(t, r.block.Body, "role_id")
		if !valid.MatchString(id) {
			t.Errorf("%s: role_id %q is not 3 to 64 letters, digits, '_' or '.'", r.address(), id)
		}
		v, _ := r.attr(t, r.block.Body, "permissions")
		perms := stringList(t, r.address(), v)
		for _, p := range perms {
			if !permission.MatchString(p) || !known[p] {
				t.Errorf("%s: %q is no permission of deploy.APIs", r.address(), p)
			}
		}
		if !slices.IsSorted(perms) || len(slices.Compact(slices.Clone(perms))) != len(perms) {
			t.Errorf("%s: permissions %v: want them sorted, each once", r.address(), perms)
		}
	}
}

// TestProxyVMHoldsWhatItUses: the VMs' own account holds the predefined
// roles deploy.ProxyVM lists, where it lists them, and no other; and the
// startup script does publish its call-home, the one call of this project
// the VM makes.
func TestProxyVMHoldsWhatItUses(t *testing.T) {
	ev := evaluate(t, parseModule(t), nil)
	member := ev.ctx.Variables["google_service_account"].GetAttr("proxy_vm").GetAttr("member").AsString()
	var got, want []string
	for _, g := range bindings(t, ev)[member] {
		got = append(got, g.role+" on "+g.on)
	}
	for _, u := range deploy.ProxyVM {
		want = append(want, u.Role+" on "+u.On)
	}
	sort.Strings(got)
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("roles of proxy-vm (-deploy.ProxyVM +Terraform):\n%s", diff)
	}
	script, err := os.ReadFile("../internal/vm/vmconfig/startup-script.sh.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), ":publish") {
		t.Error("the startup script publishes nothing, yet deploy.ProxyVM says its call-home does")
	}
}

// grant is one binding of a role to a member.
type grant struct {
	role   string // as bound
	custom string // the custom role's id, if role is one of the module's
	typ    string // the binding's resource type
	on     string // what it is bound on, as the module names it
	cond   bool   // whether it carries an IAM condition
}

// bindings are the module's IAM bindings by member, for every member the
// evaluation reaches (the Pub/Sub service agent's needs the project's
// number, which it does not).
func bindings(t *testing.T, ev *evaluation) map[string][]grant {
	t.Helper()
	out := map[string][]grant{}
	for _, i := range ev.instances {
		if !strings.HasSuffix(i.typ, "_iam_member") {
			continue
		}
		member, ok := tryString(i, "member")
		if !ok {
			continue
		}
		role, ok := tryString(i, "role")
		if !ok {
			t.Fatalf("%s: its role does not evaluate", i.address())
		}
		g := grant{role: role, typ: i.typ, on: "project", cond: len(nested(i.block.Body, "condition")) > 0}
		if strings.HasPrefix(role, "projects/") {
			g.custom = role
		}
		for _, attr := range []string{"topic", "subscription", "service_account_id", "service", "bucket", "secret_id", "crypto_key_id"} {
			if a, ok := i.block.Body.Attributes[attr]; ok {
				g.on = resourceNamed(a.Expr)
			}
		}
		out[member] = append(out[member], g)
	}
	return out
}

// resourceNamed is TYPE.NAME of the resource an expression refers to, or
// its source text.
func resourceNamed(e hclsyntax.Expression) string {
	for _, tr := range e.Variables() {
		if len(tr) >= 2 && tr.RootName() != "var" && tr.RootName() != "local" && tr.RootName() != "each" {
			if attr, ok := tr[1].(hcl.TraverseAttr); ok {
				return tr.RootName() + "." + attr.Name
			}
		}
	}
	return "?"
}

// tryString is a string attribute of an instance, false if it does not
// evaluate without a cloud.
func tryString(i instance, name string) (string, bool) {
	a, ok := i.block.Body.Attributes[name]
	if !ok {
		return "", false
	}
	v, diags := a.Expr.Value(i.ctx)
	if diags.HasErrors() || !v.IsWhollyKnown() || v.IsNull() || v.Type() != cty.String {
		return "", false
	}
	return v.AsString(), true
}

// resourceGrant are the permissions of deploy.ResourceGrants a predefined
// role's binding grants, if it is one of those, bound where the table says
// (the secret accessor on the project with its condition, or on a secret
// the module makes, whose readers TestSecretAccessIsConditionedOnThePrefix
// holds to the two functions that call the clouds): none if it is not.
func resourceGrant(g grant) []string {
	if r := deploy.ResourceGrants["secretmanager.versions.access"]; g.role == r.Role && strings.HasPrefix(g.on, moduleSecret) {
		return []string{"secretmanager.versions.access"}
	}
	var out []string
	for p, r := range deploy.ResourceGrants {
		if r.Role != g.role {
			continue
		}
		if g.on == r.On || (g.on == "project" && g.cond && g.typ == "google_project_iam_member" && !strings.Contains(r.On, ".")) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// functionAccounts are the members of the functions' accounts, by entry
// point.
func functionAccounts(t *testing.T, ev *evaluation) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, fn := range ev.of("google_cloudfunctions2_function") {
		var entry, email string
		for _, bc := range nested(fn.block.Body, "build_config") {
			entry = fn.str(t, bc.Body, "entry_point")
		}
		for _, sc := range nested(fn.block.Body, "service_config") {
			email = fn.str(t, sc.Body, "service_account_email")
		}
		out[entry] = "serviceAccount:" + email
	}
	return out
}

// customRoles are the module's custom roles' permissions, by role name
// (projects/P/roles/ID, as bindings name them).
func customRoles(t *testing.T, ev *evaluation) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, r := range ev.of("google_project_iam_custom_role") {
		id := r.str(t, r.block.Body, "role_id")
		v, _ := r.attr(t, r.block.Body, "permissions")
		out["projects/"+requiredVars["project_id"].AsString()+"/roles/"+id] = stringList(t, r.address(), v)
	}
	return out
}

func apiTable(t *testing.T) map[string]deploy.API {
	t.Helper()
	out := map[string]deploy.API{}
	for _, a := range deploy.APIs {
		if _, dup := out[a.Method]; dup {
			t.Errorf("deploy.APIs lists %s twice", a.Method)
		}
		out[a.Method] = a
	}
	return out
}

// describe lists calls as the failure message shows them.
func describe(calls []call) string {
	var b strings.Builder
	for _, c := range calls {
		if len(c.api) > 0 {
			fmt.Fprintf(&b, "\n\t%s → %s (in %s)", c.client, strings.Join(c.api, ", "), c.where)
		}
	}
	return b.String()
}

func uniq(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// docsCalls: the deploy page's table of the API methods each function
// calls (docs/operations/deploy.md) is what the code calls, so an operator
// reading it reads the code.
func docsCalls(t *testing.T, calls map[string][]call) {
	t.Helper()
	page, err := os.ReadFile("../docs/operations/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	row := regexp.MustCompile("^\\| (ProxyAPI|Reconcile|CollectGarbage) \\| (`.*`) \\|$")
	for _, l := range strings.Split(string(page), "\n") {
		if m := row.FindStringSubmatch(l); m != nil {
			got[m[1]] = m[2]
		}
	}
	want := map[string]string{}
	for name, cs := range calls {
		var methods []string
		for _, c := range cs {
			methods = append(methods, c.api...)
		}
		want[name] = "`" + strings.Join(uniq(methods), "`, `") + "`"
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docs/operations/deploy.md's rows of the API methods each function calls (-what the code calls +the page):\n%s", diff)
	}
}
