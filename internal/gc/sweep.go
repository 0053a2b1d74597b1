package gc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
)

// sweep re-drives the documents that have not progressed for longer than
// the threshold, one reconcile request each.
func (c *Collector) sweep(ctx context.Context, now time.Time) (SweepSummary, error) {
	var s SweepSummary
	keys, err := c.store.Stalled(ctx, now.Add(-c.opts.SweepThreshold), c.opts.SweepLimit)
	if err != nil {
		c.log.ErrorContext(ctx, "cannot read the stalled documents; none is re-driven this run", slog.Any("error", err))
		return s, fmt.Errorf("%w: reading the stalled documents: %w", ErrIncomplete, err)
	}
	s.Stalled = len(keys)
	if len(keys) == c.opts.SweepLimit {
		c.log.WarnContext(ctx, "more stalled documents than the sweep limit; the rest wait for the next runs",
			slog.Int("limit", c.opts.SweepLimit))
	}
	var (
		mu   sync.Mutex
		errs []error
	)
	c.forEach(len(keys), func(i int) {
		err := c.requeuer.Publish(ctx, proxy.ReconcileMessage{Document: keys[i].Path(), Reason: proxy.ReasonSweep})
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			s.Failed++
			errs = append(errs, fmt.Errorf("re-driving %s: %w", keys[i], err))
			c.log.ErrorContext(ctx, "cannot re-drive stalled document", slog.String("document", keys[i].Path()), slog.Any("error", err))
			return
		}
		s.Requeued++
		c.log.InfoContext(ctx, "re-driven stalled document", slog.String("document", keys[i].Path()))
	})
	return s, errors.Join(errs...)
}

// drift re-drives the Ready documents whose VM the listings show stopped,
// not running (a VM whose self-test failed after a reboot), or do not show
// at all, and those whose VM is due for rotation. Nothing else would:
// a settled document has no events and no progress time for the sweep, so
// a VM lost or stopped after its proxy was Ready would stay lost.
//
// A document is judged only against a complete listing of its own
// provider, since a missing listing would make every VM look lost: not
// when that provider could not be listed or is not configured, nor when
// its VM is one the provider does not list (provider.Scoped: a gcp VM of
// the project GCP_PROJECT named before), which is logged once per run
// per provider instead. A document that names no provider is judged only
// when every provider was listed.
func (c *Collector) drift(ctx context.Context, now time.Time, listings []listing, uids map[string]proxy.Claim) (int, int, error) {
	// By uid, the states of the VMs each account's listing shows, and the
	// same of every listing together, for a document that names no type.
	type where struct{ typ, account string }
	states := map[where]map[string]provider.InstanceState{}
	anywhere := map[string]provider.InstanceState{}
	listed := map[where]provider.Provider{}
	complete := true
	for _, l := range listings {
		if l.err != nil {
			complete = false
			continue
		}
		w := where{l.typ, l.account}
		listed[w] = l.provider
		states[w] = map[string]provider.InstanceState{}
		for _, inst := range l.instances {
			// Another deployment's VM is never this document's, even with
			// its uid; an unlabelled one may be (made before the label).
			if inst.UID != "" && (inst.Deployment == "" || inst.Deployment == c.opts.Deployment) {
				states[w][inst.UID] = inst.State
				anywhere[inst.UID] = inst.State
			}
		}
	}
	var keys []proxy.Key
	var reasons []proxy.Reason
	unlisted := map[string][]string{} // provider → providerIDs it does not list
	// In the order of the uids, not of the map: the same documents are
	// re-driven in the same order, run after run (and a simulated
	// schedule replays from its seed).
	for _, uid := range slices.Sorted(maps.Keys(uids)) {
		claim := uids[uid]
		if claim.Phase != proxy.PhaseReady || claim.Claimed {
			// A claimed member's VM is its proxy's, which the proxy's own
			// claim (its uid, once relabelled) stands for.
			continue
		}
		if claim.Provider == "" && !complete {
			continue
		}
		vms := anywhere
		if claim.Provider != "" {
			// Judged against its own account's listing only: the VM lives
			// there (status.account).
			w := where{claim.Provider, claim.Account}
			p, ok := listed[w]
			if !ok {
				continue
			}
			if claim.ProviderID != "" && !provider.Lists(p, claim.ProviderID) {
				unlisted[claim.Provider] = append(unlisted[claim.Provider], claim.ProviderID)
				continue
			}
			vms = states[w]
		}
		if state, ok := vms[uid]; !ok || state != provider.StateRunning {
			keys, reasons = append(keys, claim.Key), append(reasons, proxy.ReasonDrift)
		} else if proxy.RotationDue(claim.MaxAge, claim.RotateRequestTime, claim.BootStart, now, claim.RotationWaitUntil) {
			// Nothing else would look at a settled proxy whose VM reached
			// its maxAge (or, over its namespace's budget, the time its
			// rotation waited for), or whose rotate request's event was
			// lost.
			keys, reasons = append(keys, claim.Key), append(reasons, proxy.ReasonAge)
		}
	}
	for _, typ := range slices.Sorted(maps.Keys(unlisted)) {
		ids := unlisted[typ]
		slices.Sort(ids)
		c.log.ErrorContext(ctx, "proxies' VMs are outside what their provider lists; neither checked nor collected",
			slog.String("provider", typ), slog.Int("proxies", len(ids)), slog.String("example", ids[0]),
			slog.String("todo", "their VMs are served and deleted through their providerIDs; rotate each proxy to move it into what the provider lists (its project or regions setting), or set the provider's setting back"))
	}
	var (
		mu     sync.Mutex
		errs   []error
		failed int
	)
	c.forEach(len(keys), func(i int) {
		err := c.requeuer.Publish(ctx, proxy.ReconcileMessage{Document: keys[i].Path(), Reason: reasons[i]})
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			failed++
			errs = append(errs, fmt.Errorf("re-driving %s, whose VM is gone or stopped: %w", keys[i], err))
			return
		}
		c.log.WarnContext(ctx, "ready proxy's VM is gone, stopped or due for rotation; re-driven", slog.String("document", keys[i].Path()), slog.String("reason", string(reasons[i])))
	})
	return len(keys) - failed, failed, errors.Join(errs...)
}

// forEach calls fn(0)…fn(n-1) with at most Parallelism calls running at
// once, and returns when all have.
func (c *Collector) forEach(n int, fn func(i int)) {
	var g errgroup.Group
	g.SetLimit(c.opts.Parallelism)
	for i := range n {
		g.Go(func() error { fn(i); return nil })
	}
	g.Wait()
}
