package main

import (
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
)

// packageMap is every package of the tree and the first sentence of its
// doc comment, so the layout page lists each package there is, in its
// own words. A package without a doc comment is an error: every package
// says what it holds (STYLE.md).
func packageMap(root string) (string, error) {
	type pkg struct{ path, synopsis string }
	var pkgs []pkg
	var undocumented []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		text, ok, err := packageDoc(path)
		if err != nil || !ok {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if strings.TrimSpace(text) == "" {
			undocumented = append(undocumented, rel)
			return nil
		}
		pkgs = append(pkgs, pkg{rel, new(doc.Package).Synopsis(text)})
		return nil
	})
	if err != nil {
		return "", err
	}
	if len(undocumented) > 0 {
		return "", fmt.Errorf("packages without a doc comment: %s; write one (// Package NAME …, or // Command NAME …), saying what it holds", strings.Join(undocumented, ", "))
	}
	slices.SortFunc(pkgs, func(a, b pkg) int { return strings.Compare(a.path, b.path) })
	var b strings.Builder
	b.WriteString("| package | what it holds (its doc comment's first sentence) |\n| --- | --- |\n")
	for _, p := range pkgs {
		fmt.Fprintf(&b, "| `%s` | %s |\n", p.path, cell(p.synopsis))
	}
	return b.String(), nil
}

// packageDoc is the doc comment of the package in dir, and whether dir
// holds a package at all (a Go file that is not a test's).
func packageDoc(dir string) (string, bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return "", false, err
	}
	found := false
	var text []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return "", false, err
		}
		if ignored(file.Comments) {
			continue
		}
		found = true
		if file.Doc != nil {
			text = append(text, file.Doc.Text())
		}
	}
	return strings.Join(text, "\n"), found, nil
}

// ignored reports whether a file is left out of every build
// (//go:build ignore): a generator run by go run, not part of the
// package.
func ignored(comments []*ast.CommentGroup) bool {
	for _, g := range comments {
		for _, c := range g.List {
			if strings.HasPrefix(c.Text, "//go:build ") && strings.Contains(c.Text, "ignore") {
				return true
			}
		}
	}
	return false
}
