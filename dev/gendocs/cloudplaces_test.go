package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/egress-proxies/egress/internal/clouds"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

// addingACloud is the guide whose list of places the test below holds.
const addingACloud = "docs/development/adding-a-cloud.md"

// cloudWords are the words a file uses when it deals with a cloud, by the
// cloud's provider type: the type itself, and the names of the cloud's
// API and tools that the code uses for it (its plugin's Words).
var cloudWords = map[string][]string{}

func init() {
	for _, c := range clouds.All {
		cloudWords[c.Type] = append([]string{c.Type}, c.Words...)
	}
}

// TestAddingACloudNamesEveryPlace: the guide to adding a cloud lists every
// file outside a cloud's own package that deals with that cloud today, so
// that a reader who follows it misses none. The clouds measured are those
// of clouds.All whose VMs do not call home (hetzner's and aws's: the shape
// a new cloud takes); a place (outside the cloud's folder, its
// deploy/terraform/TYPE.tf and the pages published from the clouds'
// folders) is a non-test Go file that imports the cloud's package (internal/provider/TYPE or below) or names the cloud in
// its code (identifiers and strings; a comment is no place), and any other
// file of the tree that names it: the Terraform, the scripts, the API's
// OpenAPI document, the Makefile, the pages of docs/ and the README (not
// the changelog, whose mentions are history). A file added that imports or
// names a cloud fails here until the guide lists it; a path the guide
// lists that went fails too.
func TestAddingACloudNamesEveryPlace(t *testing.T) {
	root := filepath.Join("..", "..")
	raw, err := os.ReadFile(filepath.Join(root, addingACloud))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("`([^`\\s]+)`").FindAllStringSubmatch(string(raw), -1) {
		p := strings.TrimRight(m[1], ".,:;")
		listed[p] = true
		if repoPath.MatchString(p) && !strings.ContainsAny(p, "{}*<>") && !exists(root, p) {
			t.Errorf("%s lists %s, which does not exist", addingACloud, p)
		}
	}

	var measured []string
	for _, c := range clouds.All {
		if c.Readiness == plugin.CallsHome {
			continue
		}
		measured = append(measured, c.Type)
	}
	places, err := cloudPlaces(root, measured)
	if err != nil {
		t.Fatal(err)
	}
	// The walk is not allowed to go blind: the one list of clouds imports
	// each cloud's package.
	for _, c := range measured {
		if !slices.Contains(places["internal/clouds/clouds.go"], "imports internal/provider/"+c) {
			t.Fatalf("found no import of internal/provider/%s in internal/clouds/clouds.go: the walk misses files (found %d places)", c, len(places))
		}
	}
	for _, f := range sortedKeys(places) {
		if !listed[f] {
			t.Errorf("%s does not list %s, which %s: add it to the step it belongs to", addingACloud, f, strings.Join(places[f], ", "))
		}
	}
}

// repoPath is a path of the repository, as the docs name one.
var repoPath = regexp.MustCompile(`^(?:cmd|dev|internal|deploy|scripts|emulators|functions|docs)/`)

// cloudPlaces walks the tree under root and returns, by slash path, each
// file outside the clouds' own packages that deals with one of clouds,
// and how.
func cloudPlaces(root string, clouds []string) (map[string][]string, error) {
	const module = "github.com/egress-proxies/egress/"
	words := map[string]*regexp.Regexp{}
	for _, c := range clouds {
		var alts []string
		for _, w := range cloudWords[c] {
			alts = append(alts, regexp.QuoteMeta(w), regexp.QuoteMeta(strings.ToUpper(w)), regexp.QuoteMeta(strings.ToUpper(w[:1])+w[1:]))
		}
		// Not after a lower-case letter: "draws" is no aws, "awsEnabled",
		// "AWS_REGION" and "hetzner_env" are.
		words[c] = regexp.MustCompile(`(?:^|[^a-z])(?:` + strings.Join(alts, "|") + `)`)
	}
	ignored, err := gitIgnored(root)
	if err != nil {
		return nil, err
	}
	places := map[string][]string{}
	note := func(f, why string) {
		if !slices.Contains(places[f], why) {
			places[f] = append(places[f], why)
		}
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if ignored(rel, d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			switch {
			case d.Name() == ".git", d.Name() == "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		switch {
		case strings.HasSuffix(name, "_test.go"), name == "go.mod", name == "go.sum", strings.HasSuffix(name, ".min.js"), rel == addingACloud:
			return nil
		// A page to change is under docs/ or the README; the changelog's
		// mentions are history, and a new cloud is a new entry.
		case strings.HasSuffix(name, ".md") && !strings.HasPrefix(rel, "docs/") && rel != "README.md":
			return nil
		}
		// A cloud's own: its folder and its file of deploy/terraform (the
		// one file beside its folder that is all its own).
		own := func(c string) bool {
			return strings.HasPrefix(rel, "internal/provider/"+c+"/") || rel == "deploy/terraform/"+c+".tf"
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		// A page make docs publishes from a cloud's folder is written
		// there, as the folders' other pages, which are no places.
		if strings.HasSuffix(name, ".md") && bytes.HasPrefix(b, []byte(cloudPageHeaderPrefix)) {
			return nil
		}
		// Most files name no cloud at all (an import of a cloud's package
		// names it too): only those are parsed, which keeps the walk
		// quick under -race.
		lower := bytes.ToLower(b)
		if !slices.ContainsFunc(clouds, func(c string) bool {
			return slices.ContainsFunc(cloudWords[c], func(w string) bool { return bytes.Contains(lower, []byte(w)) })
		}) {
			return nil
		}
		if strings.HasSuffix(name, ".go") {
			f, err := parser.ParseFile(token.NewFileSet(), p, b, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				for _, c := range clouds {
					pkg := module + "internal/provider/" + c
					if !own(c) && (path == pkg || strings.HasPrefix(path, pkg+"/")) {
						note(rel, "imports "+strings.TrimPrefix(pkg, module))
					}
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				var text string
				switch x := n.(type) {
				case *ast.ImportSpec:
					return false // counted above
				case *ast.Ident:
					text = x.Name
				case *ast.BasicLit:
					if x.Kind != token.STRING {
						return true
					}
					text = x.Value
				default:
					return true
				}
				for _, c := range clouds {
					if !own(c) && words[c].MatchString(text) {
						note(rel, "names "+c+" in its code")
					}
				}
				return true
			})
			return nil
		}
		if !utf8.Valid(b) || slices.Contains(b, 0) {
			return nil // a binary
		}
		for _, c := range clouds {
			if !own(c) && words[c].Match(b) {
				note(rel, "names "+c)
			}
		}
		return nil
	})
	return places, err
}

// gitIgnored reads the root's .gitignore, as far as the repository uses
// it (a name or a glob of a base name, "/" first for the root's alone,
// "/" last for a folder), so that a developer's build and bench artefacts
// are no places.
func gitIgnored(root string) (func(rel string, dir bool) bool, error) {
	raw, err := os.ReadFile(filepath.Join(root, ".gitignore"))
	if err != nil {
		return nil, err
	}
	var patterns []string
	for _, l := range strings.Split(string(raw), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, l)
		}
	}
	return func(rel string, dir bool) bool {
		for _, p := range patterns {
			p, onlyDir := strings.CutSuffix(p, "/")
			if onlyDir && !dir {
				continue
			}
			p, atRoot := strings.CutPrefix(p, "/")
			name := rel
			if !atRoot {
				name = filepath.Base(rel)
			}
			if ok, _ := filepath.Match(p, name); ok {
				return true
			}
		}
		return false
	}, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
