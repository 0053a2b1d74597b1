package deploy_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/egress-proxies/egress/deploy"
)

// evaluation is the module evaluated as far as it can be without a cloud:
// the variables at their defaults (or at what a test gives), the locals,
// and every resource attribute that depends on nothing but those and other
// such attributes. That reaches the filters, the dashboard's JSON and the
// alert windows, which are built from names and variables, so the tests
// read them as Terraform would send them rather than as source text.
// Whatever needs a provider (an id, a URI, a data source) stays out.
type evaluation struct {
	ctx       *hcl.EvalContext
	instances []instance
}

// instance is one resource instance: one per block, or one per key of its
// for_each.
type instance struct {
	typ, name, key string
	block          *hclsyntax.Block
	ctx            *hcl.EvalContext // the module's, with each.key and each.value
}

func (i instance) address() string {
	if i.key != "" {
		return fmt.Sprintf("%s.%s[%q]", i.typ, i.name, i.key)
	}
	return i.typ + "." + i.name
}

// attr is the value of an attribute of body (the instance's block or one
// nested in it), and false if body does not set it. A test fails if the
// attribute cannot be evaluated.
func (i instance) attr(t *testing.T, body *hclsyntax.Body, name string) (cty.Value, bool) {
	t.Helper()
	a, ok := body.Attributes[name]
	if !ok {
		return cty.NilVal, false
	}
	v, diags := a.Expr.Value(i.ctx)
	if diags.HasErrors() {
		t.Fatalf("%s: %s cannot be evaluated: %s", i.address(), name, diags.Error())
	}
	return v, true
}

// str is a string attribute, "" if unset.
func (i instance) str(t *testing.T, body *hclsyntax.Body, name string) string {
	t.Helper()
	v, ok := i.attr(t, body, name)
	if !ok || v.IsNull() {
		return ""
	}
	s, err := convert.Convert(v, cty.String)
	if err != nil {
		t.Fatalf("%s: %s is not a string: %v", i.address(), name, err)
	}
	return s.AsString()
}

func (e *evaluation) of(typ string) []instance {
	var out []instance
	for _, i := range e.instances {
		if i.typ == typ {
			out = append(out, i)
		}
	}
	return out
}

func (e *evaluation) one(t *testing.T, typ, name string) instance {
	t.Helper()
	for _, i := range e.instances {
		if i.typ == typ && i.name == name {
			return i
		}
	}
	t.Fatalf("no resource %s.%s", typ, name)
	return instance{}
}

// local is the value of a local, which must evaluate.
func (e *evaluation) local(t *testing.T, name string) cty.Value {
	t.Helper()
	l := e.ctx.Variables["local"]
	if l.IsNull() || !l.Type().IsObjectType() || !l.Type().HasAttribute(name) {
		t.Fatalf("local.%s does not evaluate", name)
	}
	return l.GetAttr(name)
}

// functions are the Terraform functions the module's evaluated parts call,
// taken from the same cty library Terraform takes them from.
var functions = map[string]function.Function{
	"can":        tryfunc.CanFunc,
	"concat":     stdlib.ConcatFunc,
	"flatten":    stdlib.FlattenFunc,
	"format":     stdlib.FormatFunc,
	"join":       stdlib.JoinFunc,
	"jsonencode": stdlib.JSONEncodeFunc,
	"length":     stdlib.LengthFunc,
	"merge":      stdlib.MergeFunc,
	"regex":      stdlib.RegexFunc,
	"strcontains": function.New(&function.Spec{
		Params: []function.Parameter{{Name: "str", Type: cty.String}, {Name: "substr", Type: cty.String}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return cty.BoolVal(strings.Contains(args[0].AsString(), args[1].AsString())), nil
		},
	}),
	"tonumber":   to(cty.Number),
	"toset":      to(cty.Set(cty.String)),
	"tostring":   to(cty.String),
	"trimprefix": stdlib.TrimPrefixFunc,
	"try":        tryfunc.TryFunc,
}

func to(ty cty.Type) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "v", Type: cty.DynamicPseudoType, AllowNull: true}},
		Type:   function.StaticReturnType(ty),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return convert.Convert(args[0], ty)
		},
	})
}

// requiredVars stand in for the variables that have no default.
var requiredVars = map[string]cty.Value{
	"project_id":            cty.StringVal("demo-project"),
	"allowed_source_ranges": cty.ListVal([]cty.Value{cty.StringVal("203.0.113.0/24")}),
}

// evaluate evaluates the module with the variables at their defaults,
// overridden by vars. It goes round until a round evaluates nothing new,
// since locals and resources refer to each other in any order.
func evaluate(t *testing.T, m *module, vars map[string]cty.Value) *evaluation {
	t.Helper()
	varVals := map[string]cty.Value{}
	for _, b := range m.blocks {
		if b.Type != "variable" {
			continue
		}
		name := b.Labels[0]
		if v, ok := vars[name]; ok {
			varVals[name] = v
		} else if v, ok := requiredVars[name]; ok {
			varVals[name] = v
		} else if a, ok := b.Body.Attributes["default"]; ok {
			v, diags := a.Expr.Value(nil)
			if diags.HasErrors() {
				t.Fatalf("variable %s: default is not a literal: %s", name, diags.Error())
			}
			varVals[name] = v
		}
	}
	for name := range vars {
		if _, ok := varVals[name]; !ok {
			t.Fatalf("no variable %s to set", name)
		}
	}

	localExprs := map[string]hcl.Expression{}
	for _, b := range m.blocks {
		if b.Type == "locals" {
			for name, a := range b.Body.Attributes {
				localExprs[name] = a.Expr
			}
		}
	}
	locals := map[string]cty.Value{}
	// attrs holds, by resource type, name and instance key, the attributes
	// evaluated so far.
	attrs := map[string]map[string]map[string]map[string]cty.Value{}
	var resources []*hclsyntax.Block
	for _, b := range m.blocks {
		if b.Type == "resource" {
			resources = append(resources, b)
		}
	}

	build := func() *hcl.EvalContext {
		types := map[string]cty.Value{}
		for typ, byName := range attrs {
			names := map[string]cty.Value{}
			for name, byKey := range byName {
				if plain, ok := byKey[""]; ok && len(byKey) == 1 {
					names[name] = cty.ObjectVal(plain)
					continue
				}
				keys := map[string]cty.Value{}
				for k, a := range byKey {
					keys[k] = cty.ObjectVal(a)
				}
				names[name] = cty.ObjectVal(keys)
			}
			types[typ] = cty.ObjectVal(names)
		}
		vs := map[string]cty.Value{"var": cty.ObjectVal(varVals), "local": cty.ObjectVal(locals)}
		for typ, v := range types {
			vs[typ] = v
		}
		return &hcl.EvalContext{Variables: vs, Functions: functions}
	}
	with := func(ctx *hcl.EvalContext, key, value cty.Value) *hcl.EvalContext {
		c := ctx.NewChild()
		c.Variables = map[string]cty.Value{"each": cty.ObjectVal(map[string]cty.Value{"key": key, "value": value})}
		return c
	}
	// keysOf is a resource's for_each as key => value, or one instance
	// with key "" when it has none; false if for_each does not evaluate yet.
	keysOf := func(ctx *hcl.EvalContext, b *hclsyntax.Block) (map[string]cty.Value, bool) {
		fe, ok := b.Body.Attributes["for_each"]
		if !ok {
			return map[string]cty.Value{"": cty.NilVal}, true
		}
		v, diags := fe.Expr.Value(ctx)
		if diags.HasErrors() || !v.IsWhollyKnown() || v.IsNull() {
			return nil, false
		}
		out := map[string]cty.Value{}
		for it := v.ElementIterator(); it.Next(); {
			k, val := it.Element()
			if v.Type().IsSetType() {
				k = val
			}
			out[k.AsString()] = val
		}
		return out, true
	}
	skip := map[string]bool{"for_each": true, "count": true, "depends_on": true}
	// computeds adds the attributes the provider computes from others, as
	// it computes them, where the module's text reads them.
	computeds := func(typ string, a map[string]cty.Value) bool {
		project := varVals["project_id"]
		switch {
		case typ == "google_service_account" && a["email"] == cty.NilVal:
			id := a["account_id"]
			if id != cty.NilVal && project != cty.NilVal {
				email := id.AsString() + "@" + project.AsString() + ".iam.gserviceaccount.com"
				a["email"] = cty.StringVal(email)
				a["member"] = cty.StringVal("serviceAccount:" + email)
				return true
			}
		case typ == "google_kms_key_ring" && a["id"] == cty.NilVal:
			name, loc := a["name"], a["location"]
			if name != cty.NilVal && loc != cty.NilVal && project != cty.NilVal {
				a["id"] = cty.StringVal("projects/" + project.AsString() + "/locations/" + loc.AsString() + "/keyRings/" + name.AsString())
				return true
			}
		case typ == "google_kms_crypto_key" && a["id"] == cty.NilVal:
			name, ring := a["name"], a["key_ring"]
			if name != cty.NilVal && ring != cty.NilVal {
				a["id"] = cty.StringVal(ring.AsString() + "/cryptoKeys/" + name.AsString())
				return true
			}
		case typ == "google_project_iam_custom_role" && a["id"] == cty.NilVal:
			id := a["role_id"]
			if id != cty.NilVal && project != cty.NilVal {
				a["id"] = cty.StringVal("projects/" + project.AsString() + "/roles/" + id.AsString())
				return true
			}
		}
		return false
	}

	for {
		progress := false
		ctx := build()
		for name, expr := range localExprs {
			if _, done := locals[name]; done {
				continue
			}
			if v, diags := expr.Value(ctx); !diags.HasErrors() {
				locals[name] = v
				progress = true
			}
		}
		for _, b := range resources {
			typ, name := b.Labels[0], b.Labels[1]
			keys, ok := keysOf(ctx, b)
			if !ok {
				continue
			}
			for key, value := range keys {
				ictx := ctx
				if key != "" {
					ictx = with(ctx, cty.StringVal(key), value)
				}
				for an, a := range b.Body.Attributes {
					if skip[an] {
						continue
					}
					if _, done := attrs[typ][name][key][an]; done {
						continue
					}
					v, diags := a.Expr.Value(ictx)
					if diags.HasErrors() {
						continue
					}
					if attrs[typ] == nil {
						attrs[typ] = map[string]map[string]map[string]cty.Value{}
					}
					if attrs[typ][name] == nil {
						attrs[typ][name] = map[string]map[string]cty.Value{}
					}
					if attrs[typ][name][key] == nil {
						attrs[typ][name][key] = map[string]cty.Value{}
					}
					attrs[typ][name][key][an] = v
					progress = true
				}
				if a := attrs[typ][name][key]; a != nil && computeds(typ, a) {
					progress = true
				}
			}
		}
		if !progress {
			break
		}
	}

	ctx := build()
	e := &evaluation{ctx: ctx}
	for _, b := range resources {
		typ, name := b.Labels[0], b.Labels[1]
		keys, ok := keysOf(ctx, b)
		if !ok {
			// Only the instances of a resource whose for_each needs a
			// provider are missing; a test that wants one says so.
			continue
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			ictx := ctx
			if k != "" {
				ictx = with(ctx, cty.StringVal(k), keys[k])
			}
			e.instances = append(e.instances, instance{typ: typ, name: name, key: k, block: b, ctx: ictx})
		}
	}
	return e
}

// stringList is a list or tuple of strings as a Go slice.
func stringList(t *testing.T, where string, v cty.Value) []string {
	t.Helper()
	if v.IsNull() {
		return nil
	}
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

// stringMap is a map or object of strings as a Go map.
func stringMap(t *testing.T, where string, v cty.Value) map[string]string {
	t.Helper()
	if v.IsNull() {
		return nil
	}
	mv, err := convert.Convert(v, cty.Map(cty.String))
	if err != nil {
		t.Fatalf("%s is not a map of strings: %v", where, err)
	}
	out := map[string]string{}
	for k, s := range mv.AsValueMap() {
		out[k] = s.AsString()
	}
	return out
}

// withListFunctions is ctx with the collection functions a validation
// calls that the evaluation of the module's resources does not need:
// Terraform's contains and alltrue.
func withListFunctions(ctx *hcl.EvalContext) *hcl.EvalContext {
	c := ctx.NewChild()
	c.Functions = map[string]function.Function{
		"contains": stdlib.ContainsFunc,
		"alltrue":  deploy.AllTrue,
	}
	return c
}
