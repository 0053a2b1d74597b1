package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocsNameOnlyWhatExists: every path of the repository the docs, the
// Terraform and CI name (internal/…, cmd/…, scripts/…) exists, and every
// relative link of a page leads to a file. The tree moves; a page that
// sends a reader to a file that went is wrong without anyone noticing.
func TestDocsNameOnlyWhatExists(t *testing.T) {
	root := filepath.Join("..", "..")
	var files []string
	for _, glob := range []string{"README.md", "docs/*.md", "docs/*/*.md", "deploy/terraform/*.tf", "Makefile", ".ci/run"} {
		m, err := filepath.Glob(filepath.Join(root, glob))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 20 {
		t.Fatalf("found %d files to check: the globs miss the docs", len(files))
	}
	path := regexp.MustCompile("(?:^|[\\s`(\"'])((?:cmd|dev|internal|deploy|scripts|emulators|functions|docs)/[A-Za-z0-9_./-]*[A-Za-z0-9_/])")
	link := regexp.MustCompile(`\]\(([^)#:\s]*)(?:#([^)]*))?\)`)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for _, m := range path.FindAllStringSubmatch(string(raw), -1) {
			p := strings.TrimSuffix(m[1], ".")
			if strings.ContainsAny(p, "{}*") {
				continue
			}
			if !exists(root, p) {
				t.Errorf("%s names %s, which does not exist", rel, p)
			}
		}
		if !strings.HasSuffix(f, ".md") {
			continue
		}
		for _, m := range link.FindAllStringSubmatch(string(raw), -1) {
			target := f
			if m[1] != "" {
				target = filepath.Join(filepath.Dir(f), m[1])
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s links to %s, which does not exist", rel, m[1])
				continue
			}
			if m[2] == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			page, err := os.ReadFile(target)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(anchors(string(page)), m[2]) {
				t.Errorf("%s links to %s#%s, a heading that page does not have", rel, m[1], m[2])
			}
		}
	}
}

// exists reports whether p is a file or folder under root, or a package's
// identifier (internal/app.Deployed: the folder internal/app).
func exists(root, p string) bool {
	if _, err := os.Stat(filepath.Join(root, p)); err == nil {
		return true
	}
	dir, ident, ok := cutLast(p, ".")
	if !ok || strings.Contains(ident, "/") {
		return false
	}
	fi, err := os.Stat(filepath.Join(root, dir))
	return err == nil && fi.IsDir()
}

func cutLast(s, sep string) (string, string, bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// anchors are the ids a code host gives a page's headings: lowercase,
// punctuation dropped, spaces as hyphens.
func anchors(page string) []string {
	var out []string
	fence := false
	for _, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(l, "```") {
			fence = !fence
		}
		if fence || !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(l, "#")))
		var b strings.Builder
		for _, r := range h {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r > 127 && r != '…' && r != '—' && r != '×' && r != '→':
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}
