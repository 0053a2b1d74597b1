package sim

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store/rules"
)

func (w *World) delay() time.Duration {
	if !w.faults {
		return time.Duration(w.rng.IntN(500)) * time.Millisecond
	}
	return time.Duration(w.rng.IntN(30_000)) * time.Millisecond
}

func (w *World) enqueue(d delivery, after time.Duration) {
	w.seq++
	d.seq = w.seq
	d.at = w.clock.Now().Add(after)
	w.pending = append(w.pending, d)
}

func (w *World) violation(format string, args ...any) {
	w.errs = append(w.errs, fmt.Sprintf(format, args...))
}

// Run plays the schedule: faults for a while, then none while time runs
// on, and returns the invariants' violations.
func (w *World) Run() ([]string, Stats) {
	for step := 0; step < faultSteps; step++ {
		w.maybeFault()
		w.tick()
	}
	w.faults = false
	w.stuck, w.refuse = 0, false
	w.mock.ClearCreateFailures()
	for _, c := range w.clouds {
		c.ClearFaults()
	}
	// The world waits quiesceFor, and then until it settles, for at most
	// the namespace budget's hour more: a proxy whose VMs the faults kept
	// harming may have spent the budget (createsPerHour), and its next VM
	// waits for the hour to pass, as the product means it to. With
	// quiesceFor alone as that bound, a fourth cloud's steps moved three
	// seeds of 10,000 to a pool member still waiting on its budget when
	// the world stopped.
	end := w.clock.Now().Add(quiesceFor)
	for guard := 0; guard < 200_000; guard++ {
		if !w.clock.Now().Before(end) && len(w.active) == 0 && len(w.duePending(true)) == 0 &&
			(w.settled() || !w.clock.Now().Before(end.Add(budgetWindow))) {
			break
		}
		w.tick()
	}
	if len(w.store.Keys()) == 0 {
		// Every proxy was deleted: the guard refuses to delete what their
		// racing creates left, as it must with no document at all, and an
		// operator, told by the alert, lets runs through with the empty
		// database allowed until one finds nothing more to delete (a
		// static address is garbage only once its VM is gone, and a delete
		// may meet a provider fault left over from the faults' time).
		// Outside the scheduler: nothing else runs now.
		for range 5 {
			w.stats.OperatorRuns++
			r, err := w.operator.Run(context.Background())
			// A cloud finishes the deletes by itself, in seconds: a
			// static address is free to go once its VM is gone.
			w.finish()
			orphaned := 0
			for _, p := range r.Providers {
				orphaned += p.Orphaned
			}
			if err == nil && orphaned == 0 {
				break
			}
		}
	}
	// The clouds finish what they were asked by themselves, in seconds:
	// the deletes of the last runs.
	w.finish()
	w.check()
	return w.errs, w.stats
}

// finish lets every cloud's fake finish what it was asked.
func (w *World) finish() {
	for _, c := range w.clouds {
		c.Finish()
	}
}

// duePending returns the indexes of deliveries due now (or all, if any).
func (w *World) duePending(any bool) []int {
	var out []int
	now := w.clock.Now()
	for i, d := range w.pending {
		if d.gc {
			continue
		}
		if any || !d.at.After(now) {
			out = append(out, i)
		}
	}
	return out
}

// tick does one thing: step a parked invocation, start a due delivery, or
// move time on to the next thing due.
func (w *World) tick() {
	w.stats.Steps++
	w.traceStep()
	for _, c := range w.clouds {
		c.Settle(w.clock.Now())
	}
	due := w.duePending(false)
	if !w.clock.Now().Before(w.nextGC) {
		w.nextGC = w.clock.Now().Add(gcInterval)
		w.start(delivery{gc: true})
		return
	}
	switch {
	case len(w.active) > 0 && (len(due) == 0 || w.rng.IntN(3) > 0):
		w.step(w.active[w.rng.IntN(len(w.active))])
	case len(due) > 0:
		i := due[w.rng.IntN(len(due))]
		d := w.pending[i]
		w.pending = slices.Delete(w.pending, i, i+1)
		w.start(d)
	default:
		// Nothing runs and nothing is due: time moves to the next
		// delivery or GC tick.
		next := w.nextGC
		for _, d := range w.pending {
			if d.at.Before(next) {
				next = d.at
			}
		}
		if next.After(w.clock.Now()) {
			w.clock.Set(next)
		}
	}
}

// start runs a delivery as a new invocation, parked at its first step.
func (w *World) start(d delivery) {
	w.nextID++
	w.tracef("  start invocation %d: %s", w.nextID, d)
	in := &inv{id: w.nextID, grant: make(chan bool), parked: make(chan struct{}), done: make(chan struct{}), gc: d.gc, key: d.key, pool: d.pool}
	w.stats.Invocations++
	if d.gc {
		// The run sees the uid set of the previous tick: stale by up to a
		// GC interval, far less than the grace period.
		fresh := w.liveUIDs()
		in.uids, w.lastUIDs = w.lastUIDs, fresh
		if in.uids == nil {
			in.uids = fresh
		}
		in.uids = maps.Clone(in.uids)
		if w.faults && w.shared.Float64() < 0.1 {
			// A deployment pointed at an empty or the wrong database, for
			// a run: every VM looks unclaimed. The guard must refuse.
			w.stats.EmptyDocumentSets++
			in.uids, in.noDocuments = map[string]proxy.Claim{}, true
		}
	}
	ctx := context.WithValue(context.Background(), invKey{}, in)
	go func() {
		defer close(in.done)
		if d.gc {
			w.stats.GCRuns++
			if r, _ := w.col.Run(ctx); r.Refused != "" {
				w.stats.Refused++
			}

			return
		}
		if d.pool != "" {
			w.stats.PoolRuns++
			w.pools.Reconcile(ctx, d.pool)
			return
		}
		w.rec.Reconcile(ctx, d.key, d.trigger)
	}()
	w.wait(in)
}

// step lets an invocation take one step, or crashes it there.
func (w *World) step(in *inv) {
	proceed := true
	if w.faults && w.rng.Float64() < 0.03 {
		proceed = false
		w.stats.Crashes++
		if in.claimed {
			w.stats.ClaimsCrashed++
		}
	}
	in.grant <- proceed
	w.wait(in)
}

// wait runs the invocation until it parks at its next step or finishes.
func (w *World) wait(in *inv) {
	select {
	case <-in.parked:
		if !slices.Contains(w.active, in) {
			w.active = append(w.active, in)
		}
	case <-in.done:
		w.active = slices.DeleteFunc(w.active, func(x *inv) bool { return x == in })
	}
}

// yield is every call's step point: the invocation parks until the
// scheduler lets it on; a crashed invocation does nothing more.
func (w *World) yield(ctx context.Context) error {
	in, _ := ctx.Value(invKey{}).(*inv)
	if in == nil {
		return nil
	}
	if in.crashed {
		return errCrash
	}
	w.traceYield(in)
	in.parked <- struct{}{}
	if !<-in.grant {
		in.crashed = true
		return errCrash
	}
	return nil
}

// settled reports whether every document is Ready or Failed (a tombstone
// counts as settled): a pool refilled late in the schedule has members
// still booting when the rest is quiet, whose boot (and its call-home) is
// on the clock, not among the deliveries.
func (w *World) settled() bool {
	ctx := context.Background()
	for _, key := range w.store.Keys() {
		if p, err := w.store.Get(ctx, key); err == nil && p.ClaimedBy == nil && !p.Status.Phase.Settled() {
			return false
		}
	}
	// A pool is at rest once it has its size of warm members, or, deleted,
	// none: one backing off after a failed member (its RefillAfter) or
	// booting its refill is on its way there.
	names, _ := w.store.PoolNames(ctx)
	for _, name := range names {
		pl, err := w.store.GetPool(ctx, name)
		if err != nil {
			continue
		}
		members, _ := w.store.Members(ctx, name)
		warm := 0
		for _, m := range members {
			if rules.Warm(m) {
				warm++
			}
		}
		if pl.DeleteRequestTime != nil && len(members) > 0 || pl.DeleteRequestTime == nil && warm != pl.Spec.Size {
			return false
		}
	}
	return true
}
