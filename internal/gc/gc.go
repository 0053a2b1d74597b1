// Package gc is the garbage collector that CollectGarbage runs on every
// Cloud Scheduler tick. It does two jobs in one run:
//
//   - Orphan collection: it deletes the VMs that no proxy document claims any
//     more, so that a lost delete, a crash between a Create and its status
//     write, or a document deleted by hand never leaks a VM for longer than a
//     few runs.
//   - The sweep: it re-drives the documents that stopped progressing (a lost
//     event, a reconcile that crashed), so a proxy is delayed but never
//     stranded.
//
// The package is pure logic. It sees the providers, the document store and
// the reconcile queue through the narrow interfaces below, imports neither
// Firestore nor Compute, and takes its time from an injected clock, so every
// rule is tested without an emulator or a cloud.
package gc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
)

// Defaults of Options.
const (
	// DefaultGracePeriod is how old an unclaimed instance must be before it
	// is deleted.
	DefaultGracePeriod = 10 * time.Minute
	// DefaultParallelism bounds the deletes (and requeues) in flight at once.
	DefaultParallelism = 16
	// DefaultSweepThreshold is how long a document may go without progress
	// before the sweep re-drives it.
	DefaultSweepThreshold = 2 * time.Minute
	// DefaultSweepLimit bounds the documents one run re-drives.
	DefaultSweepLimit = 1000
)

// ErrIncomplete marks an error after which the run could not look at
// everything it should have: a provider could not be listed, or the live
// uids or the stalled documents could not be read. A failed delete or
// requeue is not such an error: the run saw everything and says what it
// could not do.
var ErrIncomplete = errors.New("gc run incomplete")

// Providers hands out the configured providers. *provider.Set satisfies it.
type Providers interface {
	// Types returns the configured provider types.
	Types() []string
	// Get returns the provider of a type.
	Get(ctx context.Context, typ string) (provider.Provider, error)
}

// Store is the part of the document store the collector reads.
// *store.Store satisfies it.
type Store interface {
	// LiveUIDs returns, by uid, every proxy document's key and phase, read
	// with a projection query (never whole documents).
	LiveUIDs(ctx context.Context) (map[string]proxy.Claim, error)
	// Stalled returns up to limit documents that are not settled and whose
	// progress time is before `before`, oldest first.
	Stalled(ctx context.Context, before time.Time, limit int) ([]proxy.Key, error)
}

// Requeuer asks for a document to be reconciled, as the reconciler's own
// Requeuer does. *queue.Publisher satisfies it. A repeated request is
// harmless: the reconciler reads the document fresh and does what it says.
type Requeuer interface {
	Publish(ctx context.Context, msg proxy.ReconcileMessage) error
}

// Options tune a Collector. A zero field takes its default.
type Options struct {
	// GracePeriod is the age (by the instance's CreatedAt) under which an
	// unclaimed instance is kept.
	GracePeriod time.Duration
	// Parallelism bounds the provider deletes and the requeues in flight.
	Parallelism int
	// DryRun reports what would be deleted and deletes nothing. The sweep
	// still re-drives stalled documents: a reconcile request changes nothing
	// the reconciler would not do on its own.
	DryRun bool
	// SweepThreshold is how long a document may go without progress before
	// it is re-driven.
	SweepThreshold time.Duration
	// SweepLimit bounds the documents re-driven in one run; the rest, being
	// younger in their stall, are taken by the next runs.
	SweepLimit int
}

func (o Options) withDefaults() Options {
	if o.GracePeriod <= 0 {
		o.GracePeriod = DefaultGracePeriod
	}
	if o.Parallelism <= 0 {
		o.Parallelism = DefaultParallelism
	}
	if o.SweepThreshold <= 0 {
		o.SweepThreshold = DefaultSweepThreshold
	}
	if o.SweepLimit <= 0 {
		o.SweepLimit = DefaultSweepLimit
	}
	return o
}

// Summary is what one run did with one provider's instances. Every listed
// instance is counted in exactly one of Claimed, TooYoung, NoUID and
// Orphaned; each orphan is then either Deleted, Failed or, in a dry run,
// neither.
type Summary struct {
	Provider string
	// Scanned is the number of instances ListByTag returned.
	Scanned int
	// Claimed instances carry the uid of a live document.
	Claimed int
	// TooYoung instances are unclaimed but younger than the grace period
	// (or of unknown age).
	TooYoung int
	// NoUID instances carry no uid label: they are reported, never deleted.
	NoUID int
	// Orphaned instances are unclaimed and older than the grace period.
	Orphaned int
	Deleted  int
	Failed   int
	DryRun   bool
}

// SweepSummary is what one run's sweep did.
type SweepSummary struct {
	// Stalled is the number of documents found not progressing.
	Stalled  int
	Requeued int
	Failed   int
	// Drifted is the number of Ready documents re-driven because their VM
	// was missing from the listings or stopped; DriftFailed, those whose
	// request could not be published.
	Drifted, DriftFailed int
}

// Report is the outcome of one run.
type Report struct {
	// Providers has one summary per configured provider, in Types order.
	Providers []Summary
	Sweep     SweepSummary
}

// Collector runs garbage collection. It is safe for concurrent use, though
// two concurrent runs only do the same work twice.
type Collector struct {
	providers Providers
	store     Store
	requeuer  Requeuer
	clock     clock.Clock
	log       *slog.Logger
	opts      Options
}

// New returns a Collector.
func New(providers Providers, store Store, requeuer Requeuer, clk clock.Clock, log *slog.Logger, opts Options) *Collector {
	return &Collector{
		providers: providers,
		store:     store,
		requeuer:  requeuer,
		clock:     clk,
		log:       log,
		opts:      opts.withDefaults(),
	}
}

// listing is one provider's instances as ListByTag returned them.
type listing struct {
	typ       string
	provider  provider.Provider
	instances []provider.Instance
	err       error
}

// Run collects the orphans of every configured provider and sweeps the
// stalled documents. It logs one line per decision and one summary line per
// provider and for the sweep, and returns the report with the errors joined.
// An error wrapping ErrIncomplete means something could not be looked at;
// any other means a delete or requeue failed. A failure never stops the rest
// of the run, and running again is always safe: deletes and requeues are
// idempotent.
func (c *Collector) Run(ctx context.Context) (Report, error) {
	// One instant for the whole run, taken before anything is listed, so an
	// instance's age is never overstated by the time the listing took.
	now := c.clock.Now()

	// List every provider FIRST, and only then read the live uids. A VM is
	// created only for a document that already exists, so any instance in
	// these listings belongs to a document created before the listing
	// began; if that document still exists, the uid read below sees it.
	// Read the other way round, a document created (and its VM started)
	// between the two reads would look like an orphan's owner that does not
	// exist, and only the grace period would stand between its VM and a
	// delete.
	listings := c.list(ctx)

	var errs []error
	report := Report{Providers: make([]Summary, len(listings))}
	for i, l := range listings {
		report.Providers[i] = Summary{Provider: l.typ, Scanned: len(l.instances), DryRun: c.opts.DryRun}
		if l.err != nil {
			errs = append(errs, l.err)
		}
	}

	uids, err := c.store.LiveUIDs(ctx)
	if err != nil {
		// Without the uid set every instance would look unclaimed: delete
		// nothing.
		errs = append(errs, fmt.Errorf("%w: reading the live uids: %w", ErrIncomplete, err))
		c.log.ErrorContext(ctx, "cannot read the live uids; no instance is collected this run", slog.Any("error", err))
	} else {
		errs = append(errs, c.collect(ctx, now, listings, uids, report.Providers))
	}

	var sweepErr error
	report.Sweep, sweepErr = c.sweep(ctx, now)
	errs = append(errs, sweepErr)
	if err == nil {
		var driftErr error
		report.Sweep.Drifted, report.Sweep.DriftFailed, driftErr = c.drift(ctx, now, listings, uids)
		errs = append(errs, driftErr)
	}

	for _, s := range report.Providers {
		c.log.InfoContext(ctx, "gc summary",
			slog.String("provider", s.Provider),
			slog.Int("scanned", s.Scanned),
			slog.Int("claimed", s.Claimed),
			slog.Int("tooYoung", s.TooYoung),
			slog.Int("noUID", s.NoUID),
			slog.Int("orphaned", s.Orphaned),
			slog.Int("deleted", s.Deleted),
			slog.Int("failed", s.Failed),
			slog.Bool("dryRun", s.DryRun),
			slog.String("gracePeriod", c.opts.GracePeriod.String()))
	}
	c.log.InfoContext(ctx, "sweep summary",
		slog.Int("stalled", report.Sweep.Stalled),
		slog.Int("drifted", report.Sweep.Drifted),
		slog.Int("requeued", report.Sweep.Requeued),
		slog.Int("failed", report.Sweep.Failed),
		slog.String("threshold", c.opts.SweepThreshold.String()))
	return report, errors.Join(errs...)
}

// list calls ListByTag on every configured provider. A provider that cannot
// be made or listed is logged and its error kept; the others go on.
func (c *Collector) list(ctx context.Context) []listing {
	types := c.providers.Types()
	out := make([]listing, len(types))
	for i, typ := range types {
		out[i].typ = typ
		p, err := c.providers.Get(ctx, typ)
		if err == nil {
			out[i].provider = p
			out[i].instances, err = p.ListByTag(ctx)
		}
		if err != nil {
			out[i].instances = nil
			out[i].err = fmt.Errorf("%w: listing the instances of provider %q: %w", ErrIncomplete, typ, err)
			c.log.ErrorContext(ctx, "cannot list instances; none of this provider's is collected this run",
				slog.String("provider", typ), slog.Any("error", err))
		}
	}
	return out
}

// orphan is an instance to delete.
type orphan struct {
	summary *Summary
	p       provider.Provider
	inst    provider.Instance
}

// collect decides on every listed instance and deletes the orphans, with at
// most Parallelism deletes in flight across all providers. It fills in the
// summaries and returns the delete failures joined.
func (c *Collector) collect(ctx context.Context, now time.Time, listings []listing, uids map[string]proxy.Claim, summaries []Summary) error {
	var orphans []orphan
	for i, l := range listings {
		s := &summaries[i]
		for _, inst := range l.instances {
			if c.decide(ctx, now, s, inst, uids) {
				orphans = append(orphans, orphan{summary: s, p: l.provider, inst: inst})
			}
		}
	}
	if c.opts.DryRun {
		for _, o := range orphans {
			c.log.InfoContext(ctx, "would delete orphaned instance (dry run)", orphanAttrs(now, o)...)
		}
		return nil
	}

	var (
		mu   sync.Mutex
		errs []error
	)
	c.forEach(len(orphans), func(i int) {
		o := orphans[i]
		err := o.p.Delete(ctx, o.inst.ID)
		if errors.Is(err, provider.ErrNotFound) {
			// Delete is idempotent by contract; a provider that says
			// NotFound anyway means the VM is gone, which is the goal.
			err = nil
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			o.summary.Failed++
			errs = append(errs, fmt.Errorf("deleting orphaned instance %s (uid %s) of provider %q: %w", o.inst.ID, o.inst.UID, o.summary.Provider, err))
			c.log.ErrorContext(ctx, "cannot delete orphaned instance", append(orphanAttrs(now, o), slog.Any("error", err))...)
			return
		}
		o.summary.Deleted++
		c.log.InfoContext(ctx, "deleted orphaned instance", orphanAttrs(now, o)...)
	})
	return errors.Join(errs...)
}

// decide counts one instance in the summary and reports whether it is an
// orphan to delete.
//
// Only instances ListByTag returned are seen at all, and the provider
// contract is that it returns only those labelled
// LabelManaged=LabelManagedYes: that is the managed check, and an instance
// of another tool sharing the project is never even considered.
func (c *Collector) decide(ctx context.Context, now time.Time, s *Summary, inst provider.Instance, uids map[string]proxy.Claim) bool {
	switch {
	case inst.UID == "":
		// Without a uid nothing says whose it is; a person must look.
		s.NoUID++
		c.log.WarnContext(ctx, "managed instance has no uid label; kept, never collected",
			slog.String("provider", s.Provider), slog.String("providerID", inst.ID))
		return false
	case claimed(uids, inst.UID):
		s.Claimed++
		return false
	case inst.CreatedAt.IsZero():
		// An age we do not know is not an age past the grace period.
		s.TooYoung++
		c.log.WarnContext(ctx, "unclaimed instance has no creation time; kept",
			slog.String("provider", s.Provider), slog.String("providerID", inst.ID), slog.String("uid", inst.UID))
		return false
	case now.Sub(inst.CreatedAt) < c.opts.GracePeriod:
		// It may be the VM of a Create still in flight whose document was
		// deleted meanwhile, and a VM mid-create is not reliably deletable.
		// It is garbage all the same, and a run after the grace period
		// deletes it.
		s.TooYoung++
		c.log.InfoContext(ctx, "unclaimed instance is younger than the grace period; kept for now",
			slog.String("provider", s.Provider), slog.String("providerID", inst.ID), slog.String("uid", inst.UID),
			slog.String("age", now.Sub(inst.CreatedAt).String()))
		return false
	default:
		s.Orphaned++
		return true
	}
}

func claimed(uids map[string]proxy.Claim, uid string) bool {
	_, ok := uids[uid]
	return ok
}

func orphanAttrs(now time.Time, o orphan) []any {
	return []any{
		slog.String("provider", o.summary.Provider),
		slog.String("providerID", o.inst.ID),
		slog.String("uid", o.inst.UID),
		slog.String("age", now.Sub(o.inst.CreatedAt).String()),
	}
}

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
// at all, and those whose VM is past the spec's maxAge. Nothing else would: a settled document has no events
// and no progress time for the sweep, so a VM lost or stopped after its
// proxy was Ready would stay lost. It runs only when every provider was
// listed, since a missing listing would make every VM look lost.
func (c *Collector) drift(ctx context.Context, now time.Time, listings []listing, uids map[string]proxy.Claim) (int, int, error) {
	states := make(map[string]provider.InstanceState)
	for _, l := range listings {
		if l.err != nil {
			return 0, 0, nil
		}
		for _, inst := range l.instances {
			if inst.UID != "" {
				states[inst.UID] = inst.State
			}
		}
	}
	var keys []proxy.Key
	var reasons []proxy.Reason
	for uid, claim := range uids {
		if claim.Phase != proxy.PhaseReady {
			continue
		}
		if state, ok := states[uid]; !ok || state != provider.StateRunning {
			keys, reasons = append(keys, claim.Key), append(reasons, proxy.ReasonDrift)
		} else if proxy.RotationDue(claim.MaxAge, claim.BootStart, now) {
			// Nothing else would look at a settled proxy whose VM reached
			// its maxAge.
			keys, reasons = append(keys, claim.Key), append(reasons, proxy.ReasonAge)
		}
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
	sem := make(chan struct{}, c.opts.Parallelism)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(i)
		})
	}
	wg.Wait()
}
