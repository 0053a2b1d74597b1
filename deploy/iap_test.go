package deploy_test

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// TestIAPConvergesOnEveryApply: the step that switches the API's service
// to IAP (terraform_data.api_iap, a gcloud call) runs on every apply, not
// only when the function's id changes: a code update, or a hand, that
// turned IAP off is set right by the next apply. Its triggers_replace is
// evaluated as Terraform would at two plans of the same function; the two
// values must differ, so that each plan replaces it and runs gcloud.
func TestIAPConvergesOnEveryApply(t *testing.T) {
	m := parseModule(t)
	b := m.resource("terraform_data", "api_iap")
	if b == nil {
		t.Fatal("no terraform_data.api_iap in the module: who turns IAP on for the console?")
	}
	trig, ok := b.Body.Attributes["triggers_replace"]
	if !ok {
		t.Fatal("terraform_data.api_iap has no triggers_replace")
	}
	fn := cty.ObjectVal(map[string]cty.Value{
		"id":   cty.StringVal("projects/demo-project/locations/us-central1/functions/proxy-api"),
		"name": cty.StringVal("proxy-api"),
		"service_config": cty.TupleVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{
			"service": cty.StringVal("projects/demo-project/locations/us-central1/services/proxy-api"),
		})}),
	})
	at := func(planTime string) cty.Value {
		ctx := &hcl.EvalContext{
			Variables: map[string]cty.Value{
				"google_cloudfunctions2_function": cty.ObjectVal(map[string]cty.Value{"api": fn}),
			},
			Functions: map[string]function.Function{
				// Terraform's plantimestamp: the time of the plan.
				"plantimestamp": function.New(&function.Spec{Type: function.StaticReturnType(cty.String),
					Impl: func([]cty.Value, cty.Type) (cty.Value, error) { return cty.StringVal(planTime), nil }}),
			},
		}
		v, diags := trig.Expr.Value(ctx)
		if diags.HasErrors() {
			t.Fatalf("terraform_data.api_iap's triggers_replace does not evaluate: %s", diags.Error())
		}
		return v
	}
	first, second := at("2026-12-06T07:00:00Z"), at("2026-12-06T08:00:00Z")
	if first.Equals(second).True() {
		t.Errorf("terraform_data.api_iap's triggers_replace is %#v at both plans of the same function: the IAP step re-runs only when the function changes, so IAP turned off stays off", first)
	}
}
