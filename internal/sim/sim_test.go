// The simulation's tests are of an external package: they take the
// clouds from internal/clouds/cloudsdev, whose clouds import package sim.
package sim_test

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/clouds/cloudsdev"
	"github.com/egress-proxies/egress/internal/sim"
)

var seeds = flag.Int("seeds", 300, "schedules to explore (make sim runs 10000 through dev/sim)")
var seed = flag.Uint64("seed", 0, "replay only this seed")

// clouds are the simulated clouds beside the mock, as make sim has them.
var clouds = cloudsdev.Sims()

// TestSimulation explores the schedules of -seeds seeds and fails with the
// seed of any schedule that breaks an invariant: go test ./internal/sim
// -run TestSimulation -args -seed N replays it.
func TestSimulation(t *testing.T) {
	from, to := uint64(1), uint64(*seeds)
	if *seed != 0 {
		from, to = *seed, *seed
	}
	start := time.Now()
	r := sim.Explore(from, to, sim.NoBug, clouds)
	for i, f := range r.Failures {
		if i == 5 {
			break
		}
		t.Error(f)
	}
	t.Logf("%s in %s; %s", r.Summary(), time.Since(start).Round(time.Millisecond), r.Counts())
	// Each listed cloud's provider is exercised: proxies made on it,
	// its faults met, some Ready at the end.
	for _, mk := range clouds {
		typ := mk(sim.Env{Seed: 1, Now: time.Now}).Type()
		if c := r.Stats.Cloud(typ); *seed == 0 && (c.Proxies == 0 || c.ReadyAtEnd == 0 || c.Faults == 0) {
			t.Errorf("the schedules exercised the %s provider too little: %d proxies, %d faults, %d Ready at the end", typ, c.Proxies, c.Faults, c.ReadyAtEnd)
		}
	}
	// The warm pools' and the live changes' paths, among them the real
	// claim (Reconfigure after the commit), which RelabelBeforeClaim
	// breaks.
	if *seed == 0 && (r.Stats.Claims == 0 || r.Stats.PoolRuns == 0 || r.Stats.Patches == 0 || r.Stats.CredentialRotations == 0 || r.Stats.Shrinks == 0 || r.Stats.PoolDeletions == 0) {
		t.Errorf("the schedules exercised the pools and live changes too little: %s", r.PoolCounts())
	}
}

// TestPlantedBugsAreFound switches off one safety rule at a time: the
// simulation must find a violation within PlantedWindow seeds of the one
// PlantedAt records for it, and the seed that finds it must break nothing
// without the bug, so that the violation is the bug's. Every planted bug
// is held here; the search from seed 1 (up to PlantedSeeds seeds,
// minutes) is `make sim`'s.
func TestPlantedBugsAreFound(t *testing.T) {
	for _, bug := range sim.PlantedBugs {
		t.Run(strings.ReplaceAll(bug.String(), " ", "_"), func(t *testing.T) {
			at, ok := sim.PlantedAt[bug]
			if !ok {
				t.Fatalf("sim.PlantedAt records no seed for %s: `make sim` prints where it is found", bug)
			}
			f, ok := sim.FindFrom(at, at+sim.PlantedWindow-1, bug, clouds)
			if !ok {
				t.Fatalf("with %s, seeds %d to %d found no violation: `make sim` prints the seed it is first found at now (sim.PlantedAt)", bug, at, at+sim.PlantedWindow-1)
			}
			if clean := sim.Play(f.Seed, bug, false, clouds); len(clean) > 0 {
				t.Errorf("seed %d breaks the invariants without %s too, so its violation says nothing of the bug:\n%s", f.Seed, bug, strings.Join(clean, "\n"))
			}
			t.Logf("found at seed %d: %s", f.Seed, f.Violations[0])
		})
	}
}

// TestLateChangeIsNoBootFailure replays the schedule in which the budget's
// invariant first found a hole: a live change reached a booting VM whose
// call-home was lost, late in its boot, and the boot timeout passed while
// the VM applied it, so the boot counted as failed and the proxy got a VM
// no request counted. A VM handed a configuration has RECONFIGURE_TIMEOUT
// from then before its boot fails.
func TestLateChangeIsNoBootFailure(t *testing.T) {
	if errs, _ := sim.New(9617, sim.NoBug, clouds).Run(); len(errs) > 0 {
		t.Errorf("seed 9617 breaks the invariants:\n%s", strings.Join(errs, "\n"))
	}
}
