// Package gc is the garbage collector that CollectGarbage runs on every
// Cloud Scheduler tick. It does these jobs in one run:
//
//   - Orphan collection: it deletes the VMs that no proxy document claims any
//     more, so that a lost delete, a crash between a Create and its status
//     write, or a document deleted by hand never leaks a VM for longer than a
//     few runs.
//   - The sweep: it re-drives the documents that stopped progressing (a lost
//     event, a reconcile that crashed), so a proxy is delayed but never
//     stranded.
//   - Costs: where the deployment costs proxies, it asks for the cost of
//     the settled proxies whose status.cost is an hour old or of another
//     month (costs.go), and logs each namespace's month as its proxies'
//     costs sum it, one "namespace cost" line each, which the dashboard
//     charts.
//
// It deletes only what its own deployment made (provider.LabelDeployment):
// a resource of another deployment sharing the project, or one without
// the label, is reported and kept. And it refuses to wipe a fleet: a run
// that would delete more than Options.MaxDeletes resources, or any
// resource while no proxy document exists at all (a deployment pointed at
// an empty or wrong database), deletes nothing and logs one "gc refused"
// line saying why and how many, which an alert reads.
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
	"slices"
	"time"

	"github.com/egress-proxies/egress/internal/account"
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
	// DefaultMaxDeletes is the most resources one run deletes; a run that
	// would delete more deletes none.
	DefaultMaxDeletes = 50
)

// ErrIncomplete marks an error after which the run could not look at
// everything it should have: a provider could not be listed, or the live
// uids or the stalled documents could not be read. A failed delete or
// requeue is not such an error: the run saw everything and says what it
// could not do.
var ErrIncomplete = errors.New("gc run incomplete")

// ErrWaiting marks, beside ErrIncomplete, a listing that waits its turn
// under its account's rate limit (provider.KindRateLimited): the run is
// incomplete, and nothing is wrong.
var ErrWaiting = errors.New("a listing waits its turn under the account's rate limit")

// Waiting reports whether err, as Run returns it, says only that
// listings wait their turn (ErrWaiting): no other error is among those
// it joins.
func Waiting(err error) bool {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return errors.Is(err, ErrWaiting)
	}
	for _, e := range j.Unwrap() {
		if !errors.Is(e, ErrWaiting) {
			return false
		}
	}
	return len(j.Unwrap()) > 0
}

// waiting is the error of a listing that waits its turn: ErrIncomplete
// and ErrWaiting both, over the provider's error.
type waiting struct {
	typ, account string
	err          error
}

func (w *waiting) Error() string {
	return fmt.Sprintf("%v: %v: listing the instances of provider %q%s: %v", ErrIncomplete, ErrWaiting, w.typ, inAccount(w.account), w.err)
}

func (w *waiting) Unwrap() error { return w.err }

func (w *waiting) Is(target error) bool { return target == ErrIncomplete || target == ErrWaiting }

// Providers hands out the configured providers. *provider.Set satisfies it.
type Providers interface {
	// Types returns the configured provider types: every type Get can
	// make. A type a document names beyond them cannot be listed.
	Types() []string
	// Get returns the provider of a type.
	Get(ctx context.Context, typ string) (provider.Provider, error)
	// Account returns the provider of a type in an account ("": Get's).
	Account(ctx context.Context, typ, id string) (provider.Provider, error)
}

// AccountLister reads the account documents (package account), whose
// providers the collector lists beside each type's default.
// *store.Store satisfies it.
type AccountLister interface {
	ListAccounts(ctx context.Context) ([]account.Account, error)
}

// Store is the part of the document store the collector reads.
// *store.Store satisfies it.
type Store interface {
	// LiveUIDs returns, by uid, every proxy document's key, phase,
	// provider type and providerID, read with a projection query (never
	// whole documents).
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
	// Deployment is this deployment's name (provider.LabelDeployment):
	// only resources labelled with it are ever deleted. Empty is
	// provider.DefaultDeployment.
	Deployment string
	// MaxDeletes is the most resources one run may delete; a run that
	// would delete more deletes none and says so ("gc refused").
	MaxDeletes int
	// AllowEmptyDatabase lets a run delete while no proxy document exists
	// at all. Off, such a run deletes nothing: an empty document set is
	// far likelier a wrong or empty database than a fleet of garbage.
	AllowEmptyDatabase bool
	// PulledTypes are the provider types whose VMs the control plane
	// reads by asking them (the status door): while one is configured, each
	// run asks once for their access lines to be read (askAccessPull),
	// even when none of their VMs runs, so that the cursors of VMs gone
	// are deleted.
	PulledTypes []string
	// CostCurrency is the deployment's currency (COST_RATES) where it
	// costs proxies (it has a price catalog): each run then asks for the
	// stale costs of settled proxies (refreshCosts) and logs each
	// namespace's month (logCosts). Empty: neither, as the reconciler
	// writes no cost that could grow stale.
	CostCurrency string
	// CostRefreshLimit bounds the proxies whose cost one run asks for.
	CostRefreshLimit int
	// Accounts are the account documents, each of whose providers is
	// listed beside its type's default; nil lists the defaults alone.
	Accounts AccountLister
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
	if o.Deployment == "" {
		o.Deployment = provider.DefaultDeployment
	}
	if o.MaxDeletes <= 0 {
		o.MaxDeletes = DefaultMaxDeletes
	}
	if o.CostRefreshLimit <= 0 {
		o.CostRefreshLimit = DefaultCostRefreshLimit
	}
	return o
}

// Summary is what one run did with one provider's instances. Every listed
// instance is counted in exactly one of Unowned, NoUID, Claimed, TooYoung
// and Orphaned; each orphan is then either Deleted, Failed or, in a dry
// run or a refused one, neither.
type Summary struct {
	Provider string
	// Account is the account listed: "" the type's default.
	Account string
	// Scanned is the number of instances ListByTag returned.
	Scanned int
	// Unowned instances are another deployment's, or carry no deployment
	// label: reported, never deleted.
	Unowned int
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
	// Refused is set when the run deleted nothing because it would have
	// deleted too much (Report.Refused says why).
	Refused bool
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
	// Pools is the number of warm pools re-driven (every one, each run).
	Pools int
	// AccessPull is the number of VMs read by pull that the run's one
	// request for their access lines names.
	AccessPull int
	// Costs is the number of settled proxies whose stale status.cost the
	// run asked for (refreshCosts); CostsFailed, those whose request could
	// not be published.
	Costs, CostsFailed int
}

// Report is the outcome of one run.
type Report struct {
	// Providers has one summary per configured provider, in Types order.
	Providers []Summary
	Sweep     SweepSummary
	// Refused says why the run deleted nothing, when it refused to.
	Refused string
	// Unconfigured are the provider types documents name that are not
	// configured: their resources were neither listed nor collected.
	Unconfigured []string
	// UnknownAccounts are the accounts ("TYPE/ID") documents name that
	// have no account document (or it names another type): their VMs were
	// neither listed nor checked for drift.
	UnknownAccounts []string
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
	account   string
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
	all := c.list(ctx)

	var errs []error
	// The listings of providers; an error of the accounts' read has no
	// provider, and no summary.
	listings := make([]listing, 0, len(all))
	for _, l := range all {
		if l.err != nil {
			errs = append(errs, l.err)
		}
		if l.typ != "" {
			listings = append(listings, l)
		}
	}
	report := Report{Providers: make([]Summary, len(listings))}
	for i, l := range listings {
		report.Providers[i] = Summary{Provider: l.typ, Account: l.account, Scanned: len(l.instances), DryRun: c.opts.DryRun}
	}

	uids, err := c.store.LiveUIDs(ctx)
	if err != nil {
		// Without the uid set every instance would look unclaimed: delete
		// nothing.
		errs = append(errs, fmt.Errorf("%w: reading the live uids: %w", ErrIncomplete, err))
		c.log.ErrorContext(ctx, "cannot read the live uids; no instance is collected this run", slog.Any("error", err))
	} else {
		report.Unconfigured = c.unconfigured(ctx, uids)
		report.UnknownAccounts = c.unknownAccounts(ctx, all, uids)
		var collectErr error
		report.Refused, collectErr = c.collect(ctx, now, listings, uids, report.Providers)
		errs = append(errs, collectErr)
	}

	var sweepErr error
	report.Sweep, sweepErr = c.sweep(ctx, now)
	errs = append(errs, sweepErr)
	var poolsErr error
	report.Sweep.Pools, poolsErr = c.redrivePools(ctx)
	errs = append(errs, poolsErr)
	var pullErr error
	report.Sweep.AccessPull, pullErr = c.askAccessPull(ctx, listings)
	errs = append(errs, pullErr)
	if err == nil {
		var driftErr error
		report.Sweep.Drifted, report.Sweep.DriftFailed, driftErr = c.drift(ctx, now, listings, uids)
		errs = append(errs, driftErr)
		var costErr error
		report.Sweep.Costs, report.Sweep.CostsFailed, costErr = c.refreshCosts(ctx, now, uids)
		errs = append(errs, costErr)
	}

	for _, s := range report.Providers {
		c.log.InfoContext(ctx, "gc summary",
			slog.String("provider", s.Provider),
			slog.String("account", s.Account),
			slog.Int("scanned", s.Scanned),
			slog.Int("unowned", s.Unowned),
			slog.Int("claimed", s.Claimed),
			slog.Int("tooYoung", s.TooYoung),
			slog.Int("noUID", s.NoUID),
			slog.Int("orphaned", s.Orphaned),
			slog.Int("deleted", s.Deleted),
			slog.Int("failed", s.Failed),
			slog.Bool("dryRun", s.DryRun),
			slog.Bool("refused", s.Refused),
			slog.String("deployment", c.opts.Deployment),
			slog.String("gracePeriod", c.opts.GracePeriod.String()))
	}
	if err == nil { // the live uids, and so the phases, were read
		c.logFleet(ctx, uids)
		c.logCosts(ctx, now, uids)
	}
	c.log.InfoContext(ctx, "sweep summary",
		slog.Int("stalled", report.Sweep.Stalled),
		slog.Int("drifted", report.Sweep.Drifted),
		slog.Int("requeued", report.Sweep.Requeued),
		slog.Int("failed", report.Sweep.Failed),
		slog.Int("accessPull", report.Sweep.AccessPull),
		slog.Int("costs", report.Sweep.Costs),
		slog.String("threshold", c.opts.SweepThreshold.String()))
	return report, errors.Join(errs...)
}

// logFleet logs how many proxy documents are in each phase, one "fleet"
// line per phase, which a log-based metric charts every tick
// (deploy/terraform/metrics.tf). The run has read every document's phase
// already, so the count costs no read. Every phase gets a line, the empty
// ones with 0, so that a chart shows a phase emptying as a 0 rather than a
// gap; a phase proxy.Phases does not know still gets its line, after them.
func (c *Collector) logFleet(ctx context.Context, uids map[string]proxy.Claim) {
	counts := map[proxy.Phase]int{}
	for _, claim := range uids {
		counts[claim.Phase]++
	}
	phases := slices.Clone(proxy.Phases)
	var unknown []proxy.Phase
	for ph := range counts {
		if !slices.Contains(phases, ph) {
			unknown = append(unknown, ph)
		}
	}
	slices.Sort(unknown)
	for _, ph := range append(phases, unknown...) {
		c.log.InfoContext(ctx, "fleet", slog.String("phase", string(ph)), slog.Int("proxies", counts[ph]))
	}
}
