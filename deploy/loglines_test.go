package deploy_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// loggedLines reads, from the Go source under root (tests aside), every
// message the code logs with log/slog and the fields its lines can carry:
// message => field names. A message is the message argument of a logger's
// call (Info, WarnContext, LogAttrs, …), a string literal or a string
// constant of the package; its fields are the keys of the slog attributes
// (slog.String("key", …) and the like) built in the same function, which is
// where this codebase builds a line's attributes.
func loggedLines(t *testing.T, root string) map[string][]string {
	t.Helper()
	// Position of the message argument, by logger method.
	msgArg := map[string]int{
		"Debug": 0, "Info": 0, "Warn": 0, "Error": 0,
		"DebugContext": 1, "InfoContext": 1, "WarnContext": 1, "ErrorContext": 1,
		"Log": 2, "LogAttrs": 2,
	}
	attrFuncs := map[string]bool{
		"String": true, "Int": true, "Int64": true, "Uint64": true, "Float64": true,
		"Bool": true, "Time": true, "Duration": true, "Any": true, "Group": true,
	}
	fields := map[string]map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		paths, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		var files []*ast.File
		consts := map[string]string{}
		for _, p := range paths {
			if strings.HasSuffix(p, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, p, nil, 0)
			if err != nil {
				return err
			}
			files = append(files, f)
			for _, decl := range f.Decls {
				g, ok := decl.(*ast.GenDecl)
				if !ok || g.Tok != token.CONST {
					continue
				}
				for _, spec := range g.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							if s, ok := stringLit(vs.Values[i]); ok {
								consts[n.Name] = s
							}
						}
					}
				}
			}
		}
		for _, f := range files {
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				var messages, keys []string
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					sel, ok := call.Fun.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "slog" && attrFuncs[sel.Sel.Name] && len(call.Args) > 0 {
						if k, ok := stringLit(call.Args[0]); ok {
							keys = append(keys, k)
						}
						return true
					}
					i, ok := msgArg[sel.Sel.Name]
					if !ok || len(call.Args) <= i {
						return true
					}
					if s, ok := stringLit(call.Args[i]); ok {
						messages = append(messages, s)
					} else if id, ok := call.Args[i].(*ast.Ident); ok {
						if s, ok := consts[id.Name]; ok {
							messages = append(messages, s)
						}
					}
					return true
				})
				for _, m := range messages {
					if fields[m] == nil {
						fields[m] = map[string]bool{}
					}
					for _, k := range keys {
						fields[m][k] = true
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading the Go source under %s: %v", root, err)
	}
	out := map[string][]string{}
	for m, ks := range fields {
		out[m] = []string{}
		for k := range ks {
			out[m] = append(out[m], k)
		}
		slices.Sort(out[m])
	}
	return out
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// TestLoggedLines checks the reader of log lines the metric tests rely on
// against lines known to be logged, and strings known not to be messages:
// a reader that found nothing, or everything, would pass every filter.
func TestLoggedLines(t *testing.T) {
	lines := loggedLines(t, "../internal")
	cases := map[string]struct {
		reason  string
		message string
		// fields that must be among the line's, or nil when the message
		// must not be found at all.
		fields []string
	}{
		"ThroughAConstant": {
			reason:  "metering logs its line with the constant Message, not a literal; its fields are built in End.",
			message: "invocation",
			fields:  []string{"function", "latencyMs", "outcome", "usage"},
		},
		"ContextMethod": {
			reason:  "The reconciler's lines are logged with WarnContext, whose message is the second argument.",
			message: "instance did not become ready",
			fields:  []string{"bootFailures", "providerID", "why"},
		},
		"GCSummary": {
			reason:  "gc summary carries each count under its own field.",
			message: "gc summary",
			fields:  []string{"deleted", "failed", "provider"},
		},
		"Fleet": {
			reason:  "The collector's fleet line carries the phase and the count.",
			message: "fleet",
			fields:  []string{"phase", "proxies"},
		},
		"StatusMessageIsNoLogLine": {
			reason:  "A string the code writes into a status, not a log, is not a logged message.",
			message: "Proxy is serving at ",
		},
		"PartOfAnErrorIsNoLogLine": {
			reason:  "\"did not become ready\" is in an error of the emulator package, not a message of its own.",
			message: "did not become ready",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, found := lines[tc.message]
			if tc.fields == nil {
				if found {
					t.Errorf("%s\n%q read as a logged message with fields %v", tc.reason, tc.message, got)
				}
				return
			}
			if !found {
				t.Fatalf("%s\n%q not found among the logged messages", tc.reason, tc.message)
			}
			var missing []string
			for _, f := range tc.fields {
				if !slices.Contains(got, f) {
					missing = append(missing, f)
				}
			}
			if diff := cmp.Diff([]string(nil), missing); diff != "" {
				t.Errorf("%s\nfields of %q not read (got %v):\n%s", tc.reason, tc.message, got, diff)
			}
		})
	}
}
