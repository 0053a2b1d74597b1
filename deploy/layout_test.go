package deploy

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/egress-proxies/egress/internal/clouds"
)

const modulePath = "github.com/egress-proxies/egress/"

// imports lists every package of the module (tests aside) with the module's
// packages it imports, as `go list` sees the tree, and apart the other
// packages each imports.
func imports(t *testing.T) (module, others map[string][]string) {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	m, o := map[string][]string{}, map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		pkg := strings.TrimPrefix(f[0], modulePath)
		m[pkg] = nil
		for _, imp := range f[1:] {
			if rel, ok := strings.CutPrefix(imp, modulePath); ok {
				m[pkg] = append(m[pkg], rel)
			} else {
				o[pkg] = append(o[pkg], imp)
			}
		}
	}
	return m, o
}

// under reports whether pkg is dir or inside it.
func under(pkg string, dirs ...string) bool {
	for _, d := range dirs {
		if pkg == d || strings.HasPrefix(pkg, d+"/") {
			return true
		}
	}
	return false
}

// cloudFakes are the clouds' fakes, as their plugins say: the packages in
// a cloud's folder that its development package (plugin.Plugin.Dev, the
// cloud's provider over its fake) imports, the cloud's own package aside.
// Each cloud with a development package has one at least; a cloud without
// one (Compute Engine's) is named where its fake is.
func cloudFakes(t *testing.T, graph map[string][]string) []string {
	t.Helper()
	var fakes []string
	devs := 0
	for _, c := range clouds.All {
		dev, ok := strings.CutPrefix(c.Dev, modulePath)
		if !ok {
			continue
		}
		devs++
		folder := "internal/provider/" + c.Type
		before := len(fakes)
		for _, d := range graph[dev] {
			if under(d, folder) && d != folder && !slices.Contains(fakes, d) {
				fakes = append(fakes, d)
			}
		}
		if len(fakes) == before {
			t.Fatalf("%s (the %s plugin's Dev) imports no package of %s beside the cloud's own (%v): no fake found to hold", dev, c.Type, folder, graph[dev])
		}
	}
	if devs < 2 {
		t.Fatalf("%d plugins of clouds.All name a development package: want the clouds' with a fake of their own", devs)
	}
	return fakes
}

// TestTheFunctionsLinkNoDouble: what Cloud Run builds (the functions
// package and everything it links) contains no mock, no fake, no emulator
// code and nothing that runs on the VM but the contract with it. A mock
// linked into production is one PROVIDERS setting away from a deployment
// that makes no VMs and says it did.
func TestTheFunctionsLinkNoDouble(t *testing.T) {
	graph, _ := imports(t)
	cmd := exec.Command("go", "list", "-deps", "./functions")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./functions: %v", err)
	}
	forbidden := append([]string{"internal/provider/mock", "internal/provider/gcp/computefake", "internal/provider/providertest", "internal/provider/vmside/vmsidetest",
		"internal/store/storefake", "internal/store/storetest", "internal/sealing/kmsfake", "emulators",
		"internal/vm/engine", "internal/vm/agent", "internal/vm/imagetest", "internal/vm/loopback", "internal/vm/imds", "internal/sim", "dev", "cmd"}, cloudFakes(t, graph)...)
	for _, c := range clouds.All {
		if p, ok := strings.CutPrefix(c.ImageTest, modulePath); ok {
			forbidden = append(forbidden, p)
		}
	}
	var linked []string
	for _, p := range strings.Fields(string(out)) {
		if rel, ok := strings.CutPrefix(p, modulePath); ok && under(rel, forbidden...) {
			linked = append(linked, rel)
		}
	}
	if len(linked) > 0 {
		t.Errorf("the deployed functions link %v: a deployment must contain none of %v", linked, forbidden)
	}
}

// TestDependenciesPointOneWay holds the tree's layers: entry points →
// composition root → domain logic → the provider contract and the domain
// types. Each rule names who may import a part of the tree; a new import
// that crosses one fails here with the rule it breaks.
func TestDependenciesPointOneWay(t *testing.T) {
	graph, others := imports(t)
	// The clouds' VM-side parts (each in its cloud's folder) are what
	// the VM side's list links into the agent: VM code, which may import
	// the agent's seam and which the control plane does not import.
	vm := []string{"internal/vm/engine", "internal/vm/agent", "internal/vm/imagetest", "internal/vm/loopback", "internal/vm/imds"}
	// They are the plugins' VM packages, which cloudsvm's list imports;
	// there may be none.
	list, ok := graph["internal/clouds/cloudsvm"]
	if !ok {
		t.Fatal("go list saw no internal/clouds/cloudsvm: the graph was not read")
	}
	var vmParts []string
	for _, c := range clouds.All {
		if p, ok := strings.CutPrefix(c.VM, modulePath); ok {
			vmParts = append(vmParts, p)
			if !slices.Contains(list, p) {
				t.Errorf("internal/clouds/cloudsvm does not import %s, the %s plugin's VM-side part: run make docs", p, c.Type)
			}
		}
	}
	// The plugins' image-test shapes (plugin.Plugin.ImageTest) are the
	// image test's, as internal/vm/imagetest is: they boot what runs on
	// the VM, and only that test imports them.
	var shapes []string
	for _, c := range clouds.All {
		if p, ok := strings.CutPrefix(c.ImageTest, modulePath); ok {
			shapes = append(shapes, p)
		}
	}
	fakes := cloudFakes(t, graph)
	rules := []struct {
		what    string
		target  []string
		allowed []string
	}{
		{"entry points are imported by no one", []string{"functions", "cmd", "dev"}, nil},
		{"only entry points and the local stack's wiring import the composition root", []string{"internal/app"},
			[]string{"functions", "cmd", "dev", "internal/app", "emulators"}},
		{"emulator code serves only the developer's tools and tests", []string{"emulators"}, []string{"emulators", "dev"}},
		{"what runs on the VM is imported by no part of the control plane: it sees the contract (internal/vm/vmconfig) only",
			append(vm, vmParts...),
			slices.Concat([]string{"internal/vm", "cmd/egress-proxy", "internal/clouds/cloudsvm", "internal/provider/mock", "dev"}, fakes, vmParts, shapes)},
		{"a cloud's image-test shape is the image test's alone", shapes, []string{"internal/vm/imagetest"}},
		{"the web console is mounted by the composition root alone, over the API", []string{"internal/console"},
			[]string{"internal/app", "dev"}},
		{"the doubles are linked by the local stack, the simulation and tests only",
			append([]string{"internal/provider/mock", "internal/store/storefake", "internal/provider/gcp/computefake", "internal/sealing/kmsfake"}, fakes...),
			[]string{"internal/provider", "internal/store", "internal/sealing", "internal/sim", "dev", "internal/vm/imagetest"}},
	}
	for _, r := range rules {
		for pkg, deps := range graph {
			for _, d := range deps {
				if under(d, r.target...) && !under(d, pkg) && !under(pkg, r.allowed...) {
					t.Errorf("%s imports %s, but %s", pkg, d, r.what)
				}
			}
		}
	}
	// Reconcile, the collector and the pools' logic see narrow interfaces:
	// no client of Firestore or Compute, no concrete provider, no store.
	domain := []string{"internal/reconcile", "internal/gc", "internal/pools"}
	for _, pkg := range domain {
		for _, d := range graph[pkg] {
			if under(d, "internal/store", "internal/provider/gcp", "internal/provider/hetzner", "internal/provider/aws", "internal/provider/mock", "internal/app", "internal/httpapi") && d != "internal/store/rules" {
				t.Errorf("%s imports %s: the domain logic imports no store or provider implementation", pkg, d)
			}
		}
		for _, d := range others[pkg] {
			if strings.HasPrefix(d, "cloud.google.com/") || strings.HasPrefix(d, "google.golang.org/api") || strings.HasPrefix(d, "github.com/hetznercloud/") || strings.HasPrefix(d, "github.com/aws/") {
				t.Errorf("%s imports %s: the domain logic imports no cloud's client", pkg, d)
			}
		}
	}
	if len(graph) < 20 || !slices.Contains(graph["internal/app"], "internal/reconcile") {
		t.Fatalf("go list saw %d packages and internal/app without internal/reconcile: the graph was not read", len(graph))
	}
}
