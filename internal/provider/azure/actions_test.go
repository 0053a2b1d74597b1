package azure

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestEveryCallHasItsActions: every call this package makes through its
// Clients (p.c.FIELD.METHOD) is in Calls, and Calls has no call the
// package does not make; the actions they need are exactly the ones the
// plan's contract lists, which the fake serves and the Terraform role
// grants.
func TestEveryCallHasItsActions(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	made := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			// p.c.VMs.Get: a selector of a selector of p.c.
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			field, ok := sel.X.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if c, ok := field.X.(*ast.SelectorExpr); ok && c.Sel.Name == "c" {
				made[field.Sel.Name+"."+sel.Sel.Name] = true
			}
			return true
		})
	}
	var missing, unmade []string
	for call := range made {
		if _, ok := Calls[call]; !ok {
			missing = append(missing, call)
		}
	}
	for call := range Calls {
		if !made[call] {
			unmade = append(unmade, call)
		}
	}
	slices.Sort(missing)
	slices.Sort(unmade)
	if len(missing) > 0 || len(unmade) > 0 {
		t.Errorf("calls without their actions in Calls: %v; Calls the package does not make: %v", missing, unmade)
	}
	contract := []string{
		"Microsoft.Compute/disks/delete",
		"Microsoft.Compute/disks/read",
		"Microsoft.Compute/virtualMachines/delete",
		"Microsoft.Compute/virtualMachines/read",
		"Microsoft.Compute/virtualMachines/write",
		"Microsoft.Network/networkInterfaces/delete",
		"Microsoft.Network/networkInterfaces/join/action",
		"Microsoft.Network/networkInterfaces/read",
		"Microsoft.Network/networkInterfaces/write",
		"Microsoft.Network/networkSecurityGroups/join/action",
		"Microsoft.Network/publicIPAddresses/delete",
		"Microsoft.Network/publicIPAddresses/join/action",
		"Microsoft.Network/publicIPAddresses/read",
		"Microsoft.Network/publicIPAddresses/write",
		"Microsoft.Network/virtualNetworks/subnets/join/action",
		"Microsoft.Network/virtualNetworks/subnets/read",
	}
	if diff := cmp.Diff(contract, Actions()); diff != "" {
		t.Errorf("the actions of the package's calls against the contract's (-contract +calls):\n%s", diff)
	}
	// The usages Quotas reads are the subscription's.
	subscription := []string{"Microsoft.Compute/locations/usages/read", "Microsoft.Network/locations/usages/read"}
	if diff := cmp.Diff(subscription, SubscriptionActions()); diff != "" {
		t.Errorf("the actions of the package's calls on the subscription (-contract +calls):\n%s", diff)
	}
}
