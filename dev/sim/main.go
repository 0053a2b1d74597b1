// Command sim runs the fault simulation of package internal/sim: the real
// reconciler and garbage collector under a seeded scheduler that drops,
// duplicates, delays and forges events, crashes invocations and fails the
// provider. It explores -seeds schedules, then checks that each planted bug
// (a safety rule switched off) is caught, and ends with one line:
//
//	sim: N seeds, M faults, P pool and claim events, V violations
//
// It exits 1 when a schedule broke an invariant or a planted bug went
// unseen. `make sim` runs it (SEEDS=N for another number of seeds); a
// failing seed replays with -seed N.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/egress-proxies/egress/internal/sim"
)

func main() {
	seeds := flag.Int("seeds", 10000, "schedules to explore")
	seed := flag.Uint64("seed", 0, "replay only this seed, and print what it broke")
	flag.Parse()
	if *seeds < 1 {
		fmt.Fprintln(os.Stderr, "sim: -seeds must be at least 1")
		os.Exit(2)
	}
	from, to := uint64(1), uint64(*seeds)
	if *seed != 0 {
		from, to = *seed, *seed
	}
	start := time.Now()
	r := sim.Explore(from, to, sim.NoBug)
	for _, f := range r.Failures {
		fmt.Println(f)
	}
	fmt.Printf("%d schedules in %s; %s\n", r.Seeds, time.Since(start).Round(time.Millisecond), r.Counts())
	fmt.Println(r.PoolCounts())
	fmt.Println(r.BudgetCounts())
	ok := len(r.Failures) == 0
	if *seed == 0 {
		for _, bug := range sim.PlantedBugs {
			f, found := sim.Find(min(*seeds, sim.PlantedSeeds), bug)
			if !found {
				ok = false
				fmt.Printf("planted bug %q: not found in %d seeds\n", bug, min(*seeds, sim.PlantedSeeds))
				continue
			}
			fmt.Printf("planted bug %q: found at seed %d: %s\n", bug, f.Seed, f.Violations[0])
		}
	}
	fmt.Println(r.Summary())
	if !ok {
		os.Exit(1)
	}
}
