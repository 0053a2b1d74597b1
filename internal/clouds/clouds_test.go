package clouds_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/clouds"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

const module = "github.com/egress-proxies/egress/"

// root is the repository's root, from this package's folder.
var root = filepath.Join("..", "..")

// lists are the files that may import a cloud's package from outside its
// folder: this list, the list of the clouds' fakes and simulation parts
// for the developer's tools (cloudsdev's, which make docs writes from
// the plugins' Dev and AccountsStack), and the VM side's list of the clouds' VM-side
// parts, which the agent binary links (cloudsvm's, which make docs
// writes from the plugins' VM: it cannot take them from All, which
// would link every cloud's SDK into a binary each VM downloads).
var lists = []string{"internal/clouds/clouds.go", "internal/clouds/cloudsdev/clouds_gen.go", "internal/clouds/cloudsdev/accounts_gen.go", "internal/clouds/cloudsvm/clouds_gen.go"}

// TestOnlyTheListImportsACloud: no production Go file outside a cloud's
// own folder imports that cloud's package (or one below it), except the
// lists: a cloud is its folder and one line here, and the composition
// root, the docs, the CLI and the deploy tests take it from All. The
// imports are read with go/parser over the whole tree, tests excepted
// (they may import what they test).
func TestOnlyTheListImportsACloud(t *testing.T) {
	var importers = map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if name := d.Name(); name == ".git" || name == "testdata" || name == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, c := range clouds.All {
				folder := "internal/provider/" + c.Type
				if (path == module+folder || strings.HasPrefix(path, module+folder+"/")) && !strings.HasPrefix(rel, folder+"/") {
					importers[rel] = append(importers[rel], strings.TrimPrefix(path, module))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(importers["internal/clouds/clouds.go"], "internal/provider/"+clouds.All[0].Type) {
		t.Fatalf("internal/clouds/clouds.go does not import internal/provider/%s: the walk saw %d importers and is blind", clouds.All[0].Type, len(importers))
	}
	for f, pkgs := range importers {
		if !slices.Contains(lists, f) {
			t.Errorf("%s imports %s: a cloud's package is imported by its own folder and the lists (%s) only; take the cloud from clouds.All (its plugin.Plugin)",
				f, strings.Join(pkgs, ", "), strings.Join(lists, ", "))
		}
	}
}

// TestEachCloudDeclaresWhatTheHouseNeeds: every registered plugin (the
// production ones and the mock) passes plugin.Check (a type, a name, a
// constructor, a validator, variables each named and meant, a boot its
// readiness can use), documents at least one variable, is registered
// once, and declares no variable another cloud or the house declares;
// each production cloud says what the docs and the deploy tests read of
// it (its name, images, API, the placement's words), and what it names in
// the tree exists.
func TestEachCloudDeclaresWhatTheHouseNeeds(t *testing.T) {
	all := append(slices.Clone(clouds.All), mock.Plugin)
	seenType := map[string]bool{}
	declared := map[string]string{}
	for _, v := range app.VarsOf(nil) {
		declared[v.Name] = "the house"
	}
	for _, p := range all {
		if err := p.Check(); err != nil {
			t.Error(err)
		}
		if len(p.Vars) == 0 {
			t.Errorf("%s declares no variable: the configuration reference would say nothing of it", p.Type)
		}
		if seenType[p.Type] {
			t.Errorf("%s is registered twice", p.Type)
		}
		seenType[p.Type] = true
		for _, v := range p.Vars {
			if by, ok := declared[v.Name]; ok {
				t.Errorf("%s declares %s, which %s declares too", p.Type, v.Name, by)
			}
			declared[v.Name] = p.Type
			if v.Name == p.FakeEndpoint && !v.Local {
				t.Errorf("%s's fake endpoint %s is not Local: Terraform would set it", p.Type, v.Name)
			}
		}
	}
	for _, p := range clouds.All {
		vars := map[string]bool{}
		for _, v := range p.Vars {
			vars[v.Name] = true
		}
		if p.Images.Default == "" || !slices.Contains(p.Images.Allowed, p.Images.Default) || !vars[p.Images.Var] {
			t.Errorf("%s's images %+v: want a default among the allowed ones, and a variable of its own that allows others", p.Type, p.Images)
		}
		if len(p.APIs) == 0 {
			t.Errorf("%s names no API: the compatibility page would not list it", p.Type)
		}
		if pl := p.Placement; pl.Region == "" || pl.Zone == "" || pl.MachineType == "" || pl.DefaultMachineType == "" || pl.Image == "" || pl.Example == "" {
			t.Errorf("%s's placement %+v: the CLI's help needs every word of it", p.Type, pl)
		}
		tf := p.Terraform
		for _, path := range []string{tf.Module, tf.Policy} {
			if path == "" {
				continue
			}
			if _, err := os.Stat(filepath.Join(root, path)); err != nil {
				t.Errorf("%s's Terraform names %s: %v", p.Type, path, err)
			}
		}
		for _, s := range tf.Secrets {
			name, ok := strings.CutPrefix(s, "google_secret_manager_secret.")
			if !ok || !terraformDeclares(t, `resource "google_secret_manager_secret" "`+name+`"`) {
				t.Errorf("%s's Terraform secret %s is no google_secret_manager_secret of deploy/terraform", p.Type, s)
			}
		}
		if p.Boot.Kind == plugin.BootNone {
			t.Errorf("%s boots no VM: only the mock's VMs live in the process", p.Type)
		}
		if p.Dev != "" {
			checkOwnPackage(t, p, "development", p.Dev)
		}
		if p.VM != "" {
			checkOwnPackage(t, p, "VM-side", p.VM)
		}
		if p.ImageTest != "" {
			checkOwnPackage(t, p, "image-test", p.ImageTest)
		}
	}
}

// terraformDeclares reports whether a .tf file of deploy/terraform holds
// text.
func terraformDeclares(t *testing.T, text string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "deploy", "terraform", "*.tf"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Terraform in deploy/terraform: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), text) {
			return true
		}
	}
	return false
}

// checkOwnPackage holds a plugin's package for a generated list (its
// Dev, its VM or its ImageTest, the kind what) to what make docs writes
// the list by: a
// package in the cloud's own folder, named by the last element of its
// path.
func checkOwnPackage(t *testing.T, p plugin.Plugin, what, pkg string) {
	t.Helper()
	rel, ok := strings.CutPrefix(pkg, module+"internal/provider/"+p.Type+"/")
	if !ok || rel == "" {
		t.Errorf("%s's %s package %s is not in its folder, internal/provider/%s/", p.Type, what, pkg, p.Type)
		return
	}
	files, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(pkg, module)), "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.PackageClauseOnly)
		if err != nil {
			t.Fatal(err)
		}
		names[file.Name.Name] = true
	}
	if !names[path.Base(pkg)] || len(names) != 1 {
		t.Errorf("%s's %s package %s holds packages %v: want one, named %s", p.Type, what, pkg, slices.Sorted(maps.Keys(names)), path.Base(pkg))
	}
}
