package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"

	"github.com/egress-proxies/egress/internal/pools"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
)

// phaseTable is each phase with what it means, read from the doc comment
// of its constant in internal/proxy.
func phaseTable(root string) (string, error) {
	docs, err := constDocs(filepath.Join(root, "internal/proxy/status.go"))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("| phase | what it means |\n| --- | --- |\n")
	for _, p := range proxy.Phases {
		name := "Phase" + string(p)
		d, ok := docs[name]
		if !ok {
			return "", fmt.Errorf("internal/proxy has no documented constant %s for phase %s", name, p)
		}
		d = strings.TrimPrefix(d, name+":")
		fmt.Fprintf(&b, "| `%s` | %s |\n", p, cell(strings.TrimSpace(d)))
	}
	return b.String(), nil
}

// constDocs reads the doc comment of each constant a Go file declares.
func constDocs(path string) (map[string]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			if v.Doc == nil {
				continue
			}
			for _, n := range v.Names {
				out[n.Name] = strings.Join(strings.Fields(v.Doc.Text()), " ")
			}
		}
	}
	return out, nil
}

// phaseDiagram is reconcile.Transitions as a Mermaid state diagram: each
// change of phase once, labelled with what brings it.
func phaseDiagram(string) (string, error) {
	type edge = reconcile.Edge
	labels := map[edge][]string{}
	var order []edge
	for _, t := range reconcile.Transitions {
		for _, e := range t.Edges() {
			if !slices.Contains(order, e) {
				order = append(order, e)
			}
			if !slices.Contains(labels[e], t.Label) {
				labels[e] = append(labels[e], t.Label)
			}
		}
	}
	state := func(p proxy.Phase) string {
		if p == reconcile.Start || p == reconcile.Gone {
			return "[*]"
		}
		return string(p)
	}
	var b strings.Builder
	b.WriteString("```mermaid\nstateDiagram-v2\n")
	for _, e := range order {
		fmt.Fprintf(&b, "  %s --> %s: %s\n", state(e.From), state(e.To), strings.Join(labels[e], ", "))
	}
	b.WriteString("```\n")
	return b.String(), nil
}

// transitionTable is reconcile.Transitions as a table.
func transitionTable(string) (string, error) {
	phases := func(ps []proxy.Phase, none string) string {
		if len(ps) == 0 {
			return none
		}
		var s []string
		for _, p := range ps {
			s = append(s, string(p))
		}
		return strings.Join(s, ", ")
	}
	var b strings.Builder
	b.WriteString("| phase | sees | does | next |\n| --- | --- | --- | --- |\n")
	for _, t := range reconcile.Transitions {
		does := t.Does
		if t.By != "" {
			does += " (" + t.By + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", phases(t.From, "(any)"), cell(t.Sees), cell(does), phases(t.To, "the same"))
	}
	return b.String(), nil
}

// poolRuns is pools.Runs as a table.
func poolRuns(string) (string, error) {
	var b strings.Builder
	b.WriteString("| pool | sees | does |\n| --- | --- | --- |\n")
	for _, r := range pools.Runs {
		state := r.Pool
		if state == "" {
			state = "(any)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", state, cell(r.Sees), cell(r.Does))
	}
	return b.String(), nil
}
