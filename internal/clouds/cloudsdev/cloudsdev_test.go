package cloudsdev

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/sim"
)

// TestEachCloudIsOneLine: each cloud of the list brings its simulated
// cloud, and no type is listed twice.
func TestEachCloudIsOneLine(t *testing.T) {
	seen := map[string]bool{}
	for i, c := range Clouds() {
		if c.Sim == nil {
			t.Fatalf("cloud %d of the list has no Sim", i)
		}
		typ := c.Sim(sim.Env{Seed: 1, Now: time.Now}).Type()
		if seen[typ] {
			t.Errorf("cloud %q is listed twice", typ)
		}
		seen[typ] = true
	}
}

// TestTheSimulationNamesNoCloud: internal/sim and dev/sim (tests aside)
// import no cloud's package: they take the clouds from this list, so that
// a cloud added is its folder and one line here. What they may import of
// internal/provider is the contract and the mock (the simulation's own
// base provider).
func TestTheSimulationNamesNoCloud(t *testing.T) {
	const module = "github.com/egress-proxies/egress/"
	allowed := map[string]bool{"internal/provider": true, "internal/provider/mock": true}
	read := 0
	for _, dir := range []string{"internal/sim", "dev/sim"} {
		files, err := filepath.Glob(filepath.Join("..", "..", "..", dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			file, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			read++
			for _, imp := range file.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				rel, ok := strings.CutPrefix(path, module)
				if ok && strings.HasPrefix(rel, "internal/provider/") && !allowed[rel] {
					t.Errorf("%s imports %s: the simulation takes its clouds from internal/clouds/cloudsdev", filepath.ToSlash(filepath.Join(dir, filepath.Base(f))), rel)
				}
			}
		}
	}
	if read < 10 {
		t.Fatalf("read %d files of internal/sim and dev/sim: the walk missed them", read)
	}
}
