package digitalocean_test

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/egress-proxies/egress/deploy"
	"github.com/egress-proxies/egress/internal/provider/digitalocean"
)

// terraformFile is DigitalOcean's part of the deployment's Terraform
// module, its variables among it.
var terraformFile = filepath.Join("..", "..", "..", "deploy", "terraform", "digitalocean.tf")

// TestTheDigitalOceanVariablesKeepTheProvidersRules: the defaults of
// digitalocean.tf's variables are the provider's (digitalocean.Default…),
// a policy of them passes the provider's check, and each variable's
// validation takes what the provider takes and refuses, at plan time,
// what would stop the functions at start-up: a metro where a region slug
// belongs, a policy without the default size or image, an SSH key that is
// neither an id nor a fingerprint. Each validation is evaluated with its
// variable alone, as Terraform evaluates it at plan time.
func TestTheDigitalOceanVariablesKeepTheProvidersRules(t *testing.T) {
	src, err := os.ReadFile(terraformFile)
	if err != nil {
		t.Fatal(err)
	}
	f, diags := hclsyntax.ParseConfig(src, terraformFile, hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("%s does not parse: %s", terraformFile, diags.Error())
	}
	defaults := map[string][]string{}
	validations := map[string]*hclsyntax.Block{}
	for _, b := range f.Body.(*hclsyntax.Body).Blocks {
		if b.Type != "variable" || !strings.HasPrefix(b.Labels[0], "digitalocean_allowed_") && b.Labels[0] != "digitalocean_ssh_keys" {
			continue
		}
		v, diags := b.Body.Attributes["default"].Expr.Value(nil)
		if diags.HasErrors() {
			t.Fatalf("variable %s: default is not a literal: %s", b.Labels[0], diags.Error())
		}
		defaults[b.Labels[0]] = stringList(t, b.Labels[0], v)
		var vs []*hclsyntax.Block
		for _, nb := range b.Body.Blocks {
			if nb.Type == "validation" {
				vs = append(vs, nb)
			}
		}
		if len(vs) == 1 {
			validations[b.Labels[0]] = vs[0]
		}
	}
	if len(defaults) != 4 {
		t.Fatalf("%s declares the variables %v, want the allowed regions, sizes and images and the SSH keys", terraformFile, slices.Sorted(maps.Keys(defaults)))
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
			ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"var": cty.ObjectVal(map[string]cty.Value{tc.variable: cty.ListVal(vals)})}, Functions: validationFunctions}
			ok, diags := v.Body.Attributes["condition"].Expr.Value(ctx)
			if diags.HasErrors() {
				t.Fatalf("%s's validation does not evaluate: %s", tc.variable, diags.Error())
			}
			if ok.True() != tc.valid {
				t.Errorf("%s\n%s = %q: valid = %v, want %v", tc.reason, tc.variable, tc.value, ok.True(), tc.valid)
			}
		})
	}
}

// validationFunctions are the Terraform functions the variables'
// validations call: can, regex and contains from the same cty library
// Terraform takes them from, and deploy's alltrue.
var validationFunctions = map[string]function.Function{
	"can":      tryfunc.CanFunc,
	"regex":    stdlib.RegexFunc,
	"contains": stdlib.ContainsFunc,
	"alltrue":  deploy.AllTrue,
}

// stringList is a list or tuple of strings as a Go slice, nil when empty.
func stringList(t *testing.T, where string, v cty.Value) []string {
	t.Helper()
	l, err := convert.Convert(v, cty.List(cty.String))
	if err != nil {
		t.Fatalf("%s is not a list of strings: %v", where, err)
	}
	var out []string
	for _, s := range l.AsValueSlice() {
		out = append(out, s.AsString())
	}
	return out
}
