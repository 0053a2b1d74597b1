package deploy

import (
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// AllTrue is Terraform's alltrue, which the variables' validations call
// and the cty library (whence the tests take Terraform's other functions)
// lacks: for the tests here and a cloud's own test of its variables
// (internal/provider/TYPE), which evaluate those validations.
var AllTrue = function.New(&function.Spec{
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
})
