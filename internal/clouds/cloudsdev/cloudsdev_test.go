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

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/clouds"
	"github.com/egress-proxies/egress/internal/sim"
)

// TestEachCloudIsOneLine: each cloud of the list brings its three parts,
// the simulated cloud, the benchmark's phase and the stack's test's
// part, of the same provider type, and no type is listed twice.
func TestEachCloudIsOneLine(t *testing.T) {
	seen := map[string]bool{}
	for i, c := range Clouds() {
		if c.Sim == nil || c.Bench == nil || c.Stack == nil {
			t.Fatalf("cloud %d of the list: Sim %t, Bench %t, Stack %t; want all three", i, c.Sim != nil, c.Bench != nil, c.Stack != nil)
		}
		typ := c.Sim(sim.Env{Seed: 1, Now: time.Now}).Type()
		if c.Bench.Name() != typ || c.Stack.Type() != typ {
			t.Errorf("cloud %d of the list: the simulation's cloud is %q, the benchmark's phase %q, the stack's %q; want one type", i, typ, c.Bench.Name(), c.Stack.Type())
		}
		if seen[typ] {
			t.Errorf("cloud %q is listed twice", typ)
		}
		seen[typ] = true
	}
}

// TestTheListFollowsAll: the list holds a cloud for each plugin of
// clouds.All that names its development package, of that plugin's type,
// in All's order: the order the simulation offers each new proxy in, so
// that a cloud added last to All leaves the seeds' schedules of the
// others as they were.
func TestTheListFollowsAll(t *testing.T) {
	var want, got []string
	for _, p := range clouds.All {
		if p.Dev != "" {
			want = append(want, p.Type)
		}
	}
	for _, c := range Clouds() {
		got = append(got, c.Sim(sim.Env{Seed: 1, Now: time.Now}).Type())
	}
	// Every cloud but the first, the deployment's own, which the
	// simulation's base (the mock) stands for, has a fake of its own.
	if len(want) < len(clouds.All)-1 {
		t.Fatalf("%d plugins of clouds.All name a development package (%v): want every cloud's but the first's, %d at least", len(want), want, len(clouds.All)-1)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the clouds of the list, by type (-clouds.All's with a Dev +the list's); run `make docs`:\n%s", diff)
	}
}

// TestTheSimulationAndTheBenchmarkNameNoCloud: internal/sim, dev/sim and
// dev/bench (tests aside), and dev/localstack with its end-to-end test,
// import no cloud's package: they take the clouds from this list, so that
// a cloud added is its folder and one line here. What they may import of
// internal/provider is the contracts (provider, plugin), the mock (the simulation's own base
// provider and the stack's default), providerbench and providerstack.
func TestTheSimulationAndTheBenchmarkNameNoCloud(t *testing.T) {
	const module = "github.com/egress-proxies/egress/"
	allowed := map[string]bool{"internal/provider": true, "internal/provider/plugin": true, "internal/provider/mock": true, "internal/provider/providerbench": true, "internal/provider/providerstack": true}
	read := 0
	for _, dir := range []string{"internal/sim", "dev/sim", "dev/bench", "dev/localstack"} {
		files, err := filepath.Glob(filepath.Join("..", "..", "..", dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") && dir != "dev/localstack" {
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
					t.Errorf("%s imports %s: the simulation, the benchmark and the local stack's test take their clouds from internal/clouds/cloudsdev", filepath.ToSlash(filepath.Join(dir, filepath.Base(f))), rel)
				}
			}
		}
	}
	if read < 20 {
		t.Fatalf("read %d files of internal/sim, dev/sim, dev/bench and dev/localstack: the walk missed them", read)
	}
}
