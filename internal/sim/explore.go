package sim

import (
	"fmt"
	"strings"

	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
)

// Failure is a schedule that broke the invariants.
type Failure struct {
	Seed       uint64
	Violations []string
}

// Result is what exploring a range of seeds found.
type Result struct {
	Seeds    int
	Stats    Stats
	Failures []Failure
	// Edges counts the changes of phase the schedules made.
	Edges map[reconcile.Edge]int
}

// Violations is the number of invariant violations across the schedules.
func (r Result) Violations() int {
	n := 0
	for _, f := range r.Failures {
		n += len(f.Violations)
	}
	return n
}

// Summary is the line `make sim` ends with.
func (r Result) Summary() string {
	return fmt.Sprintf("sim: %d seeds, %d faults, %d pool and claim events, %d violations", r.Seeds, r.Stats.Faults(), r.Stats.PoolFaults(), r.Violations())
}

// Counts says, in a line, what the schedules did.
func (r Result) Counts() string {
	s := r.Stats
	clouds := ""
	for _, c := range s.Clouds {
		clouds += fmt.Sprintf("%s: %d proxies, %d of its faults, %d Ready at the end; ", c.Type, c.Proxies, c.Faults, c.ReadyAtEnd)
	}
	return fmt.Sprintf("faults: %d crashes, %d events dropped, %d duplicated, %d provider errors, %d VMs lost, %d stopped, %d never ready, %d boot errors, %d creates failed later, %d stockouts; call-homes %d lost, %d duplicated, %d delayed, %d forged; %d VMs of another deployment, %d without the label, %d empty document sets (%d GC runs refused, %d operator runs); %d user actions (%d Static proxies, %d rotations), %d invocations (%d GC runs), %d steps; %schecked at the end: %d Ready and %d Failed proxies, %d VMs",
		s.Crashes, s.Dropped, s.Duplicated, s.ProviderFaults, s.Lost, s.Stopped, s.NeverReady, s.BootErrors, s.AsyncCreateFailures, s.Stockouts,
		s.CallHomesLost, s.CallHomesDuplicated, s.CallHomesDelayed, s.CallHomesForged,
		s.OtherDeployment, s.Unlabelled, s.EmptyDocumentSets, s.Refused, s.OperatorRuns,
		s.UserActions, s.StaticProxies, s.Rotations, s.Invocations, s.GCRuns, s.Steps, clouds, s.ReadyAtEnd, s.FailedAtEnd, s.InstancesAtEnd)
}

// PoolCounts says, in a line, what the schedules did with configurations
// and warm pools.
func (r Result) PoolCounts() string {
	s := r.Stats
	return fmt.Sprintf("reconfigurations: %d patches, %d credential rotations, %d Reconfigure errors, %d VMs that never served theirs, %d that refused and said so, %d handed to a retiring VM (%d credential rotations while one served); pools: %d resizes (%d shrinks), %d deletions, %d creations, %d pool events dropped, %d duplicated, %d pool runs; %d claims (%d make-before-break rotations), %d claims crashed mid-way, %d members refilled, %d member deletions",
		s.Patches, s.CredentialRotations, s.ReconfigureErrors, s.ReconfigureStuck, s.ReconfigureRefused, s.RetiringReconfigured, s.RevokedWhileRetiring,
		s.PoolResizes, s.Shrinks, s.PoolDeletions, s.PoolCreations, s.PoolEventsDropped, s.PoolEventsDuplicated, s.PoolRuns,
		s.Claims, s.WarmRotations, s.ClaimsCrashed, s.Refills, s.MemberDeletions)
}

// BudgetCounts says, in a line, what the schedules did with the
// namespace's budget of VMs.
func (r Result) BudgetCounts() string {
	s := r.Stats
	return fmt.Sprintf("budget of %d VMs an hour: %d VMs caused (%d rotations by maxAge), %d requests refused past it, %d rotations by maxAge waited for it, %d VMs born to replace harmed ones; budget of %s USD a month in %d schedules: %d creates refused past it, %d creates raced by another",
		createsPerHour, s.Causes, s.AgeRotations, s.Refused429, s.Waits, s.Excused, budgetMonthly, s.Budgeted, s.BudgetRefused, s.BudgetRaces)
}

// Explore plays the schedules of seeds from to to, inclusive, with bug
// planted and clouds beside the mock, and returns what they found.
func Explore(from, to uint64, bug Bug, clouds []NewCloud) Result {
	r := Result{Edges: map[reconcile.Edge]int{}}
	for s := from; s <= to; s++ {
		w := New(s, bug, clouds)
		errs, st := w.Run()
		r.Seeds++
		r.Stats.Add(st)
		for e, n := range w.edges {
			r.Edges[e] += n
		}
		if len(errs) > 0 {
			r.Failures = append(r.Failures, Failure{Seed: s, Violations: errs})
		}
	}
	return r
}

// PlantedSeeds is how far the search for each planted bug looks, at
// least: it stops at the first violation, so a bug found early costs one
// seed. A lost rotation (a rotate request whose one event was dropped, and
// no other event on its document after it) is the rarest: since users
// also change proxies' ranges and credentials, whose writes bring events,
// and a namespace's budget refuses some of their rotations, it was first
// found at seed 492 (1549 before DigitalOcean joined the clouds, 4101
// before the clouds' providers joined the schedules), and with Azure's
// line in none of 6,000 seeds, until a rotate request's event was lost
// one time in two rather than one in twelve (World.changed): then at 125,
// and at 258 since a rate-limited call waits its turn without counting as
// an attempt (its runs' backoffs, and so the schedules, changed; the
// same change moved the lost precondition from seed 3 to 8 and the one
// request id from 2 to 3).
const PlantedSeeds = 6000

// PlantedAt is, for each planted bug, the first seed Find found it at, as
// `make sim` prints them (2026-12-07, with the five providers, a namespace
// budget in money in a third of the schedules, and a rotate request's
// event lost one time in two). make test searches from there, up to
// PlantedWindow seeds on, a few seconds where the search from seed 1
// takes minutes; the search from seed 1 is make sim's, which says when
// the first seed has moved. A change that moves a bug past its window
// fails make test, and `make sim` then prints the new first seed.
var PlantedAt = map[Bug]uint64{
	NoPrecondition:                8,
	NoLease:                       1,
	NoGracePeriod:                 1,
	NoCreatePending:               1,
	OneRequestID:                  3,
	RotationByEventOnly:           258,
	NoDeleteGuard:                 181,
	RelabelBeforeClaim:            1,
	RetiringKeepsOldConfiguration: 856,
	UncountedAgeRotation:          1,
	BudgetReadOutsideTransaction:  116,
	UnpacedAccount:                1,
}

// PlantedWindow is how many seeds make test searches from a bug's
// PlantedAt. A seed replays the same schedule on every run
// (TestASeedReplaysTheSame; until 7 December 2026 a few outcomes hung on
// the order of a map's iteration, and seed 1 broke the lease's invariant
// in seven runs of eight), but a change of the code moves schedules: the
// search goes on a little past the recorded seed, so that a bug moved a
// few seeds on is still held while make sim says where it is now.
const PlantedWindow = 100

// Find plays seeds 1 to seeds with bug planted and clouds beside the
// mock until one breaks an invariant, and returns it.
func Find(seeds int, bug Bug, clouds []NewCloud) (Failure, bool) {
	return FindFrom(1, uint64(seeds), bug, clouds)
}

// FindFrom plays seeds from to to, inclusive, with bug planted and clouds
// beside the mock until one breaks an invariant, and returns it.
func FindFrom(from, to uint64, bug Bug, clouds []NewCloud) (Failure, bool) {
	for s := from; s <= to; s++ {
		if errs := Play(s, bug, true, clouds); len(errs) > 0 {
			return Failure{Seed: s, Violations: errs}, true
		}
	}
	return Failure{}, false
}

// Play plays seed's schedule in the world bug is planted in (World, or
// the accounts schedule's small fleet, PlantedFleet, for UnpacedAccount),
// with bug planted when plant is set, and returns its violations.
func Play(seed uint64, bug Bug, plant bool, clouds []NewCloud) []string {
	if bug == UnpacedAccount {
		cfg := PlantedFleet
		cfg.Seed = seed
		if plant {
			cfg.Bug = bug
		}
		return RunAccounts(cfg).Violations
	}
	if !plant {
		bug = NoBug
	}
	errs, _ := New(seed, bug, clouds).Run()
	return errs
}

// PlantedFleet is the accounts schedule the search for UnpacedAccount
// plays, seed by seed: small enough for make test, and its limit tight
// enough (20 calls a minute an account, against AccountRate's 50) that
// an account whose calls go unpaced goes past it, since placement reads
// each account's quotas once a minute and a proxy costs few calls.
var PlantedFleet = AccountsConfig{Accounts: 3, Proxies: 300, Calls: 20}

// PlantedBugs are the safety rules the simulation must catch switched off.
var PlantedBugs = []Bug{NoPrecondition, NoLease, NoGracePeriod, NoCreatePending, OneRequestID, RotationByEventOnly, NoDeleteGuard, RelabelBeforeClaim, RetiringKeepsOldConfiguration, UncountedAgeRotation, BudgetReadOutsideTransaction, UnpacedAccount}

func (f Failure) String() string {
	return fmt.Sprintf("seed %d breaks the invariants:\n  %s", f.Seed, strings.Join(f.Violations, "\n  "))
}

// Unsimulated are the changes of phase reconcile.Transitions lists that
// the simulation does not make, with why: Unmade holds every other edge of
// the table to a change some schedule made.
var Unsimulated = map[reconcile.Edge]string{
	{From: proxy.PhaseReconfiguring, To: proxy.PhaseProvisioning}: "a rotation that claims a warm VM while the old one applies a new generation: a rotation is due in the seconds a reconfiguration takes, with a warm member to claim, in no schedule of 10,000 seeds",
	{From: proxy.PhasePending, To: proxy.PhaseFailed}:             permanentInOperation,
	{From: proxy.PhaseCreating, To: proxy.PhaseFailed}:            permanentInOperation,
	{From: proxy.PhaseReady, To: proxy.PhaseFailed}:               permanentInOperation,
	{From: proxy.PhaseReconfiguring, To: proxy.PhaseFailed}:       permanentInOperation,
	{From: proxy.PhaseReplacing, To: proxy.PhaseFailed}:           permanentInOperation,
}

// permanentInOperation: the simulated provider fails a call for good only
// in a create's operation, which a run finds in Provisioning, and every
// document names the one provider there is (internal/reconcile's
// failed_test.go fails proxies on a permanent error of other calls).
const permanentInOperation = "the simulated provider's permanent failures arrive in a create's operation, found in Provisioning"

// Unmade returns the edges of reconcile.Transitions no schedule made and
// Unsimulated does not name, and the edges Unsimulated names that a
// schedule made after all: both mean the table, or the list, says
// something the code does not do.
func (r Result) Unmade() (unmade, made []reconcile.Edge) {
	for _, e := range tableEdges {
		_, un := Unsimulated[e]
		switch {
		case r.Edges[e] == 0 && !un:
			unmade = append(unmade, e)
		case r.Edges[e] > 0 && un:
			made = append(made, e)
		}
	}
	return unmade, made
}
