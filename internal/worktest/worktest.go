// Package worktest holds what the tests that bound the work of the
// in-memory doubles share (the mock provider, the Compute fake, the
// in-memory store). Each double counts the stored records its calls look
// at, and a test of its own bounds that count over a fleet of 100,000, so
// that a call which walks the whole fleet fails `make test` instead of
// making the benchmark quadratic. WalksCounted keeps the count honest: a
// new loop over what a double stores that does not count fails too.
package worktest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// Budget holds a double's count of the records it looked at to what its
// calls may look at, checked after every call, so that a call walking the
// whole fleet fails at once rather than after minutes of quadratic work.
type Budget struct {
	t       testing.TB
	visits  func() int
	calls   int
	allowed int
}

// NewBudget returns a budget of the double's visits (its Visits method),
// which may look at slack records beyond what the calls are allowed.
func NewBudget(t testing.TB, visits func() int, slack int) *Budget {
	return &Budget{t: t, visits: visits, allowed: slack}
}

// Spend allows the call just made (what) to have looked at looks records,
// and fails the test if the double looked at more than every call so far
// was allowed.
func (b *Budget) Spend(what string, looks int) {
	b.t.Helper()
	b.calls++
	b.allowed += looks
	if v := b.visits(); v > b.allowed {
		b.t.Fatalf("after %d calls (the last: %s), the double looked at %d records, want at most %d: a call walks more than it touches", b.calls, what, v, b.allowed)
	}
}

// WalksCounted checks the non-test Go files of the package in dir: every
// range loop over one of the stores (fields of a struct, ranged as
// x.field or x.field[key]) must begin with x.counter++. It fails the test
// when a loop does not, and when it finds no loop at all (the check would
// look at nothing).
func WalksCounted(t testing.TB, dir, counter string, stores ...string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	walks := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			r, ok := n.(*ast.RangeStmt)
			if !ok {
				return true
			}
			x := r.X
			if ix, ok := x.(*ast.IndexExpr); ok {
				x = ix.X
			}
			sel, ok := x.(*ast.SelectorExpr)
			if !ok || !contains(stores, sel.Sel.Name) {
				return true
			}
			walks++
			if !counts(r.Body, counter) {
				t.Errorf("%s: a loop over %s does not begin with %s++: the count of the work would not see it", fset.Position(r.Pos()), sel.Sel.Name, counter)
			}
			return true
		})
	}
	if walks == 0 {
		t.Fatalf("found no loop over %v in %s: the check looks at nothing", stores, dir)
	}
}

// counts reports whether a loop body begins with x.counter++.
func counts(body *ast.BlockStmt, counter string) bool {
	if len(body.List) == 0 {
		return false
	}
	inc, ok := body.List[0].(*ast.IncDecStmt)
	if !ok || inc.Tok != token.INC {
		return false
	}
	sel, ok := inc.X.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == counter
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
