package sim

import (
	"flag"
	"strings"
	"testing"
	"time"
)

var seeds = flag.Int("seeds", 300, "schedules to explore (make sim runs 10000 through dev/sim)")
var seed = flag.Uint64("seed", 0, "replay only this seed")

// TestSimulation explores the schedules of -seeds seeds and fails with the
// seed of any schedule that breaks an invariant: go test ./internal/sim
// -run TestSimulation -args -seed N replays it.
func TestSimulation(t *testing.T) {
	from, to := uint64(1), uint64(*seeds)
	if *seed != 0 {
		from, to = *seed, *seed
	}
	start := time.Now()
	r := Explore(from, to, NoBug)
	for i, f := range r.Failures {
		if i == 5 {
			break
		}
		t.Error(f)
	}
	t.Logf("%s in %s; %s", r.Summary(), time.Since(start).Round(time.Millisecond), r.Counts())
	if *seed == 0 && (r.Stats.HetznerProxies == 0 || r.Stats.HetznerReadyAtEnd == 0 || r.Stats.HetznerFaults == 0) {
		t.Errorf("the schedules exercised the hetzner provider too little: %d proxies, %d faults, %d Ready at the end", r.Stats.HetznerProxies, r.Stats.HetznerFaults, r.Stats.HetznerReadyAtEnd)
	}
	if *seed == 0 && (r.Stats.AWSProxies == 0 || r.Stats.AWSReadyAtEnd == 0 || r.Stats.AWSFaults == 0) {
		t.Errorf("the schedules exercised the aws provider too little: %d proxies, %d faults, %d Ready at the end", r.Stats.AWSProxies, r.Stats.AWSFaults, r.Stats.AWSReadyAtEnd)
	}
}

// TestPlantedBugsAreFound switches off one safety rule at a time: the
// simulation must find a violation within PlantedSeeds, or it proves
// nothing.
func TestPlantedBugsAreFound(t *testing.T) {
	n := max(*seeds, PlantedSeeds)
	for _, bug := range PlantedBugs {
		t.Run(strings.ReplaceAll(bug.String(), " ", "_"), func(t *testing.T) {
			f, ok := Find(n, bug)
			if !ok {
				t.Errorf("with %s, %d seeds found no violation", bug, n)
				return
			}
			t.Logf("found at seed %d: %s", f.Seed, f.Violations[0])
		})
	}
}

// TestRelabelBeforeClaimIsFound: a claim that relabels the warm VM before
// its transaction commits is found within a hundred seeds, and the real
// claim path (Reconfigure after the commit) breaks nothing over them.
func TestRelabelBeforeClaimIsFound(t *testing.T) {
	const n = 100
	f, ok := Find(n, RelabelBeforeClaim)
	if !ok {
		t.Fatalf("with %s, %d seeds found no violation", RelabelBeforeClaim, n)
	}
	t.Logf("found at seed %d: %s", f.Seed, f.Violations[0])
	r := Explore(1, n, NoBug)
	if len(r.Failures) != 0 {
		t.Errorf("the real claim path breaks the invariants: %s", r.Failures[0])
	}
	if r.Stats.Claims == 0 || r.Stats.PoolRuns == 0 || r.Stats.Patches == 0 || r.Stats.CredentialRotations == 0 || r.Stats.Shrinks == 0 || r.Stats.PoolDeletions == 0 {
		t.Errorf("%d seeds exercised too little: %s", n, r.PoolCounts())
	}
}

// TestLateChangeIsNoBootFailure replays the schedule in which the budget's
// invariant first found a hole: a live change reached a booting VM whose
// call-home was lost, late in its boot, and the boot timeout passed while
// the VM applied it, so the boot counted as failed and the proxy got a VM
// no request counted. A VM handed a configuration has RECONFIGURE_TIMEOUT
// from then before its boot fails.
func TestLateChangeIsNoBootFailure(t *testing.T) {
	if errs, _ := New(9617, NoBug).Run(); len(errs) > 0 {
		t.Errorf("seed 9617 breaks the invariants:\n%s", strings.Join(errs, "\n"))
	}
}
