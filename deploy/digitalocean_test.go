package deploy_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/egress-proxies/egress/internal/provider/digitalocean"
)

// TestTheDigitalOceanVariablesKeepTheProvidersRules: the defaults of
// digitalocean.tf's variables are the provider's (digitalocean.Default…),
// a policy of them passes the provider's check, and each variable's
// validation takes what the provider takes and refuses, at plan time,
// what would stop the functions at start-up: a metro where a region slug
// belongs, a policy without the default size or image, an SSH key that is
// neither an id nor a fingerprint.
func TestTheDigitalOceanVariablesKeepTheProvidersRules(t *testing.T) {
	m := parseModule(t)
	defaults := map[string][]string{}
	validations := map[string]*hclsyntax.Block{}
	for _, b := range m.blocks {
		if b.Type != "variable" || !strings.HasPrefix(b.Labels[0], "digitalocean_allowed_") && b.Labels[0] != "digitalocean_ssh_keys" {
			continue
		}
		v, diags := b.Body.Attributes["default"].Expr.Value(nil)
		if diags.HasErrors() {
			t.Fatalf("variable %s: default is not a literal: %s", b.Labels[0], diags.Error())
		}
		defaults[b.Labels[0]] = stringList(t, b.Labels[0], v)
		if v := nested(b.Body, "validation"); len(v) == 1 {
			validations[b.Labels[0]] = v[0]
		}
	}
	want := map[string][]string{
		"digitalocean_allowed_regions": nil,
		"digitalocean_allowed_sizes":   digitalocean.DefaultAllowedSizes,
		"digitalocean_allowed_images":  digitalocean.DefaultAllowedImages,
		"digitalocean_ssh_keys":        nil,
	}
	if diff := cmp.Diff(want, defaults); diff != "" {
		t.Errorf("the variables' defaults (-the provider's +digitalocean.tf's):\n%s", diff)
	}
	pol := digitalocean.Policy{Regions: defaults["digitalocean_allowed_regions"], Sizes: defaults["digitalocean_allowed_sizes"], Images: defaults["digitalocean_allowed_images"]}
	if err := pol.Check(); err != nil {
		t.Errorf("the provider refuses the variables' defaults: %v", err)
	}

	regions := slices.Sorted(maps.Keys(digitalocean.Regions()))
	cases := map[string]struct {
		reason   string
		variable string
		value    []string
		valid    bool
	}{
		"EveryRegion": {
			reason:   "Every region the provider knows is a slug the variable takes.",
			variable: "digitalocean_allowed_regions", value: regions, valid: true,
		},
		"AMetro": {
			reason:   "A metro is a placement's region; the list holds regions (the provider would refuse it at start-up).",
			variable: "digitalocean_allowed_regions", value: []string{"nyc"},
		},
		"UpperCase": {
			reason:   "Slugs are lower case.",
			variable: "digitalocean_allowed_regions", value: []string{"NYC3"},
		},
		"SizesWithTheDefault": {
			reason:   "Any slugs, as long as the default size is among them.",
			variable: "digitalocean_allowed_sizes", value: []string{"s-2vcpu-4gb", digitalocean.DefaultSize}, valid: true,
		},
		"SizesWithoutTheDefault": {
			reason:   "A placement that names no size gets the default, which must be allowed.",
			variable: "digitalocean_allowed_sizes", value: []string{"s-2vcpu-4gb"},
		},
		"NotASizeSlug": {
			reason:   "A size is a slug.",
			variable: "digitalocean_allowed_sizes", value: []string{digitalocean.DefaultSize, "2 GB"},
		},
		"ImagesWithoutTheDefault": {
			reason:   "A placement that names no image gets the default, which must be allowed.",
			variable: "digitalocean_allowed_images", value: []string{"debian-12-x64"},
		},
		"SSHKeyIDAndFingerprint": {
			reason:   "An account key's id, or its MD5 fingerprint as DigitalOcean shows it.",
			variable: "digitalocean_ssh_keys", value: []string{"512190", "3b:16:bf:e4:8b:00:8b:b8:59:8c:a9:d3:f0:19:45:fa"}, valid: true,
		},
		"SSHKeyByName": {
			reason:   "The API takes no key by its name.",
			variable: "digitalocean_ssh_keys", value: []string{"my laptop"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v := validations[tc.variable]
			if v == nil {
				t.Fatalf("variable %s has no validation", tc.variable)
			}
			var vals []cty.Value
			for _, s := range tc.value {
				vals = append(vals, cty.StringVal(s))
			}
			e := evaluate(t, m, map[string]cty.Value{tc.variable: cty.ListVal(vals)})
			ok, diags := v.Body.Attributes["condition"].Expr.Value(withListFunctions(e.ctx))
			if diags.HasErrors() {
				t.Fatalf("%s's validation does not evaluate: %s", tc.variable, diags.Error())
			}
			if ok.True() != tc.valid {
				t.Errorf("%s\n%s = %q: valid = %v, want %v", tc.reason, tc.variable, tc.value, ok.True(), tc.valid)
			}
		})
	}
}

// TestTheDigitalOceanFirewallOpensWhatTheAPIHolds: the provider makes the
// deployment's cloud firewall from Reconcile's and CollectGarbage's
// PROXY_PORTS and FIREWALL_SOURCE_RANGES, and each is the ProxyAPI's own
// value, from the same variables (so the firewall opens what the API holds
// every spec to, as the GCE rule does), beside VM_STATUS_SOURCE_RANGES
// for the status request; and the provider takes what Terraform sends.
func TestTheDigitalOceanFirewallOpensWhatTheAPIHolds(t *testing.T) {
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
	fw := digitalocean.Firewall{
		ProxyPorts:         strings.Split(env["PROXY_PORTS"], ","),
		SourceRanges:       strings.Split(env["FIREWALL_SOURCE_RANGES"], ","),
		StatusSourceRanges: []string{"198.51.100.7/32"},
	}
	if err := fw.Check(); err != nil {
		t.Errorf("the provider refuses the firewall Terraform's variables make: %v", err)
	}
	if diff := cmp.Diff([]string{"3128", "8080-8090"}, fw.ProxyPorts); diff != "" {
		t.Errorf("the firewall's ports (-proxy_ports +PROXY_PORTS):\n%s", diff)
	}
}

// withListFunctions is ctx with the collection functions a validation
// calls that the evaluation of the module's resources does not need:
// Terraform's contains and alltrue.
func withListFunctions(ctx *hcl.EvalContext) *hcl.EvalContext {
	c := ctx.NewChild()
	c.Functions = map[string]function.Function{
		"contains": stdlib.ContainsFunc,
		"alltrue": function.New(&function.Spec{
			Params: []function.Parameter{{Name: "list", Type: cty.List(cty.Bool)}},
			Type:   function.StaticReturnType(cty.Bool),
			Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
				for it := args[0].ElementIterator(); it.Next(); {
					if _, v := it.Element(); !v.True() {
						return cty.False, nil
					}
				}
				return cty.True, nil
			},
		}),
	}
	return c
}
