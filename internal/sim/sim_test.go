package sim

import (
	"flag"
	"strings"
	"testing"
	"time"
)

var seeds = flag.Int("seeds", 300, "schedules to explore (make sim runs 10000)")
var seed = flag.Uint64("seed", 0, "replay only this seed")

// TestSimulation explores the schedules of -seeds seeds and fails with the
// seed of any schedule that breaks an invariant: go test ./internal/sim
// -run TestSimulation -seed N replays it.
func TestSimulation(t *testing.T) {
	from, to := uint64(1), uint64(*seeds)
	if *seed != 0 {
		from, to = *seed, *seed
	}
	start := time.Now()
	var total Stats
	failed := 0
	for s := from; s <= to; s++ {
		errs, st := New(s, NoBug).Run()
		total.Add(st)
		if len(errs) > 0 {
			failed++
			if failed <= 5 {
				t.Errorf("seed %d breaks the invariants:\n  %s", s, strings.Join(errs, "\n  "))
			}
		}
	}
	t.Logf("%d seeds in %s, %d failed; faults: %d crashes, %d events dropped, %d duplicated, %d provider errors, %d VMs lost, %d stopped, %d never ready, %d boot errors, %d creates failed later, %d stockouts; call-homes %d lost, %d duplicated, %d delayed, %d forged; %d user actions (%d Static proxies), %d invocations (%d GC runs), %d steps; checked at the end: %d Ready and %d Failed proxies, %d VMs",
		to-from+1, time.Since(start).Round(time.Millisecond), failed, total.Crashes, total.Dropped, total.Duplicated,
		total.ProviderFaults, total.Lost, total.Stopped, total.NeverReady, total.BootErrors, total.AsyncCreateFailures, total.Stockouts,
		total.CallHomesLost, total.CallHomesDuplicated, total.CallHomesDelayed, total.CallHomesForged,
		total.UserActions, total.StaticProxies, total.Invocations, total.GCRuns, total.Steps,
		total.ReadyAtEnd, total.FailedAtEnd, total.InstancesAtEnd)
}

// TestPlantedBugsAreFound switches off one safety rule at a time: the
// simulation must find a violation within the default seeds, or it proves
// nothing.
func TestPlantedBugsAreFound(t *testing.T) {
	for _, bug := range []Bug{NoPrecondition, NoLease, NoGracePeriod, NoCreatePending, OneRequestID} {
		t.Run(strings.ReplaceAll(bug.String(), " ", "_"), func(t *testing.T) {
			for s := uint64(1); s <= uint64(*seeds); s++ {
				if errs, _ := New(s, bug).Run(); len(errs) > 0 {
					t.Logf("found at seed %d: %s", s, errs[0])
					return
				}
			}
			t.Errorf("with %s, %d seeds found no violation", bug, *seeds)
		})
	}
}
