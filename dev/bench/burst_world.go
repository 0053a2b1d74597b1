package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/egress-proxies/egress/internal/pacing"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/providerbench"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
	"github.com/egress-proxies/egress/internal/store/storefake"
)

// What the burst phase (burst.go) runs its function instances in: the
// world that delivers the store's events to them, boots the VMs they
// create and watches what each proxy shows its user; and the wrappers
// that time the budgets' updates and count the reads of quotas.

// timedBudgets times the budgets' updates.
type timedBudgets struct {
	pacing.Store
	w *burstWorld
}

func (t timedBudgets) Update(ctx context.Context, s pacing.Shard, change func(pacing.Counts) (pacing.Counts, bool)) error {
	began := time.Now()
	err := t.Store.Update(ctx, s, change)
	took := time.Since(began)
	t.w.mu.Lock()
	defer t.w.mu.Unlock()
	t.w.updates = append(t.w.updates, took)
	if errors.Is(err, pacing.ErrContended) {
		t.w.contended++
	}
	return err
}

// quotaCounter counts the reads of quotas its provider answered.
type quotaCounter struct {
	provider.Provider
	quotas provider.QuotaReader
	reads  *atomic.Int64
}

// Unwrap is the cloud's provider, for the optional interfaces beneath.
func (q quotaCounter) Unwrap() provider.Provider { return q.Provider }

func (q quotaCounter) Quotas(ctx context.Context, region string) (provider.Quotas, error) {
	got, err := q.quotas.Quotas(ctx, region)
	if err == nil {
		q.reads.Add(1)
	}
	return got, err
}

// burstWorld delivers a burst's events to its function instances, boots
// its VMs and watches what each proxy shows.
type burstWorld struct {
	ctx  context.Context
	docs *storefake.Store
	// instances are the function instances' reconcilers.
	instances []*reconcile.Reconciler
	runs      sync.WaitGroup

	mu   sync.Mutex
	rnd  *rand.Rand
	seen map[proxy.Key]*burstSeen
	// placed counts the proxies by the account placement put them in
	// (status.account as written with the intent to create).
	placed map[string]int
	// updates are the budgets' updates' times, contended those
	// that gave up on a contended shard.
	updates   []time.Duration
	contended int
	// quotaReads counts placement's reads of the accounts' quotas that
	// the cloud answered.
	quotaReads atomic.Int64
	// booting are the VMs created since the fake last settled, to call
	// home once it has.
	booting  []*proxy.Proxy
	want     int
	ready    int
	allReady chan struct{}
}

// burstSeen is what a proxy showed its user.
type burstSeen struct {
	ready  time.Time
	queued bool
	// shown is the first thing it showed that is neither its way to
	// Ready nor a queued wait.
	shown string
}

// onTheWay are the Ready condition's reasons of a proxy on its way to
// Ready at the floor (the phase it is in), and Queued: a wait, not an
// error.
var onTheWay = map[string]bool{string(proxy.PhaseCreating): true, "Provisioning": true, reconcile.ReasonQueued: true, "Ready": true}

// changed is the store's watcher: a written document's event, and what
// the write shows.
func (w *burstWorld) changed(c storefake.Change) {
	if c.New == nil {
		return
	}
	st := c.New.Status
	w.mu.Lock()
	seen := w.seen[c.Key]
	if seen == nil {
		seen = &burstSeen{}
		w.seen[c.Key] = seen
	}
	for _, cond := range st.Conditions {
		if cond.Type != "Ready" {
			continue
		}
		if cond.Reason == reconcile.ReasonQueued {
			seen.queued = true
		}
		if !onTheWay[cond.Reason] && seen.shown == "" {
			seen.shown = cond.Reason + ": " + cond.Message
		}
	}
	switch {
	case st.Phase == proxy.PhaseFailed && seen.shown == "":
		seen.shown = "Failed: " + st.Message
	case st.Message != "" && !strings.HasPrefix(st.Message, "queued: ") && seen.shown == "":
		seen.shown = st.Message
	}
	if st.Phase == proxy.PhaseReady && seen.ready.IsZero() {
		seen.ready = time.Now()
		if w.ready++; w.ready == w.want {
			close(w.allReady)
		}
	}
	if st.ProviderID != "" && (c.Old == nil || c.Old.Status.ProviderID == "") {
		w.booting = append(w.booting, c.New)
		w.placed[st.Account]++
	}
	w.mu.Unlock()
	w.deliver(c.Key, reconcile.Trigger{Reason: proxy.ReasonWritten})
}

// Publish is the reconcilers' requeue: a hand-off, delivered at once.
func (w *burstWorld) Publish(_ context.Context, msg proxy.ReconcileMessage) error {
	key, err := proxy.ParseKey(msg.Document)
	if err != nil {
		return err
	}
	w.deliver(key, reconcile.TriggerOf(msg))
	return nil
}

// deliver runs a reconcile of key on a function instance drawn at
// random, with the reconciler of the proxy's account; nothing once the
// burst is over.
func (w *burstWorld) deliver(key proxy.Key, t reconcile.Trigger) {
	if w.ctx.Err() != nil {
		return
	}
	w.mu.Lock()
	rec := w.instances[w.rnd.IntN(len(w.instances))]
	w.mu.Unlock()
	w.runs.Go(func() {
		if err := rec.Reconcile(w.ctx, key, t); err != nil && !errors.Is(err, context.Canceled) {
			w.mu.Lock()
			if s := w.seen[key]; s != nil && s.shown == "" {
				// The store failed the run: Eventarc would deliver it
				// again; the in-memory store never fails, so this is a
				// bug of the bench, shown as an error.
				s.shown = "run failed: " + err.Error()
			}
			w.mu.Unlock()
		}
	})
}

// boot settles the fake every burstBoot, which runs the VMs created
// since, and then delivers each one's call-home, as its startup script's
// publish would once it serves.
func (w *burstWorld) boot(fake providerbench.BurstFake) {
	t := time.NewTicker(burstBoot)
	defer t.Stop()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-t.C:
		}
		w.mu.Lock()
		booting := w.booting
		w.booting = nil
		w.mu.Unlock()
		if len(booting) == 0 {
			continue
		}
		fake.Boot()
		for _, p := range booting {
			w.deliver(p.Key(), reconcile.Trigger{Reason: proxy.ReasonReady, UID: p.UID})
		}
	}
}
