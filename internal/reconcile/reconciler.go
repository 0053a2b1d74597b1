package reconcile

import (
	"context"
	cryptorand "crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/spend"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// Store is the part of the document store a run uses. *store.Store and
// *storefake.Store satisfy it.
type Store interface {
	Get(ctx context.Context, key proxy.Key) (*proxy.Proxy, error)
	// UpdateStatus writes p.Status and p.Reconciler if the document's
	// update time is still p.UpdateTime (else proxy.ErrConflict), and
	// returns the new update time.
	UpdateStatus(ctx context.Context, p *proxy.Proxy) (time.Time, error)
	// Delete removes the document if its update time is still updateTime,
	// adding spent (at most one) to its namespace's DeletedSpend in the
	// same transaction.
	Delete(ctx context.Context, key proxy.Key, updateTime time.Time, spent ...proxy.Spent) error
	// UpdateStatusCounted is UpdateStatus that also counts a VM caused at
	// at against the namespace's bound of perHour VMs in any hour, in the
	// same transaction: both are written or neither. Past the bound it
	// writes nothing and its error wraps a *proxy.RetryError
	// (proxy.ErrCreatesPerHour) saying when one more fits.
	UpdateStatusCounted(ctx context.Context, p *proxy.Proxy, at time.Time, perHour int) (time.Time, error)
}

// Providers hands out the provider of a spec's type in an account.
// *provider.Set satisfies it.
type Providers interface {
	Get(ctx context.Context, typ string) (provider.Provider, error)
	// Account is the provider of type typ in account id ("": the
	// deployment's default, Get's): the one every call about a VM of
	// that account goes to.
	Account(ctx context.Context, typ, id string) (provider.Provider, error)
}

// Requeuer asks for another run of a document. *queue.Publisher satisfies
// it.
type Requeuer interface {
	Publish(ctx context.Context, msg proxy.ReconcileMessage) error
}

// Secrets reads a Secret Manager version. An error with an IsPermanent
// method that reports true (a version that does not exist or may not be
// read; *secrets.Error has it) fails the proxy instead of being retried
// forever; any other is retried.
type Secrets interface {
	Access(ctx context.Context, version string) (string, error)
}

// permanent reports whether an error of Secrets or of the bootstrap says no
// retry can help.
func permanent(err error) bool {
	var p interface{ IsPermanent() bool }
	return errors.As(err, &p) && p.IsPermanent()
}

// BootstrapFunc renders the default bootstrap of a proxy (package
// bootstrap) from its spec, credentials and generation: the startup script
// its VM runs and the proxy engine's configuration it applies
// (CreateRequest.Engine, ReconfigureRequest.Engine), whose Generation is
// generation.
type BootstrapFunc func(spec proxy.Spec, creds proxy.Credentials, generation int64) (script string, engine *vmconfig.Config, err error)

// Defaults of Options.
const (
	DefaultWaitBudget         = time.Minute
	DefaultLeaseDuration      = 3 * time.Minute
	DefaultInitialBackoff     = 2 * time.Second
	DefaultMaxBackoff         = 10 * time.Second
	DefaultNotFoundGrace      = 30 * time.Second
	DefaultBootTimeout        = 10 * time.Minute
	DefaultReconfigureTimeout = 2 * time.Minute
	DefaultMaxBootFailures    = 3
	DefaultQuotaBackoff       = 2 * time.Minute
)

// GetsPerLifecycle is the fewest provider Gets a proxy's life takes: one
// when its VM calls home, one that finds the deleted VM gone. No Get looks
// at a booting VM on the way. The benchmark holds the local stack to it.
const GetsPerLifecycle = 2

// Options tune a Reconciler. A zero field takes its default.
type Options struct {
	// WaitBudget is how long one run may wait — for a VM on its way out,
	// or to retry a provider call — before it hands on to the next run.
	WaitBudget time.Duration
	// LeaseDuration is how long a lease keeps other runs off a document. It
	// must outlast a whole run (WaitBudget plus a few provider calls); a
	// lease whose run crashed expires and the sweep re-drives the document.
	LeaseDuration time.Duration
	// InitialBackoff and MaxBackoff bound the waits between tries.
	InitialBackoff, MaxBackoff time.Duration
	// NotFoundGrace is how long a VM may be missing from Get before it is
	// taken as lost: a VM just created may not be visible yet.
	NotFoundGrace time.Duration
	// BootTimeout is how long a VM may take from its creation to ready
	// before it is replaced.
	BootTimeout time.Duration
	// ReconfigureTimeout is how long a VM handed a new configuration
	// (provider.Reconfigurer) may take to report that it serves it before
	// it is replaced by a new VM with that configuration.
	ReconfigureTimeout time.Duration
	// MaxBootFailures is how many VMs in a row may fail to become ready
	// before the proxy is Failed.
	MaxBootFailures int
	// QuotaBackoff is how long a create refused by a quota, or by a lack of
	// capacity that another zone cannot help, waits before it is tried
	// again.
	QuotaBackoff time.Duration
	// CreatesPerHour is NAMESPACE_CREATES_PER_HOUR: the VMs a namespace
	// may cause in any hour. The reconciler counts against it the VMs no
	// request counted, its rotations by maxAge (a rotation over it waits);
	// zero counts none.
	CreatesPerHour int
	// Costs are the price catalog and the rates (COST_CURRENCY,
	// COST_RATES) each proxy's status.cost is computed from, once a
	// spend.Refresh on a write of its status; with no Catalog, no cost is
	// written.
	Costs spend.Costs
	// CloudInitSecretPrefix is CLOUD_INIT_SECRET_PREFIX: a document's
	// cloudInitSecret is read only when it is one of its own namespace's
	// secrets under it (proxy.Policy.NamespaceSecret), whatever wrote the
	// document. Empty leaves the refusal to Secrets (the composition
	// root's reads no secret without a prefix).
	CloudInitSecretPrefix string
	// Bootstrap renders the startup script of specs that bring no
	// cloud-init of their own. Nil sends none.
	Bootstrap BootstrapFunc
	// Accounts are the cloud accounts placement chooses among for a new
	// proxy (place.go); nil places every proxy in the default account.
	Accounts Accounts
	// QuotaTTL is how long placement uses an account's quotas as read
	// (DefaultQuotaTTL).
	QuotaTTL time.Duration
	// Rand draws the jitter; nil uses a random source.
	Rand *rand.Rand
	// Holders draws the runs' lease holders, the name a run writes in
	// the document while it holds the lease; nil draws them from
	// crypto/rand. A seeded source makes the documents' writes replay
	// (package sim's schedules, whose runs' holders changed from run to
	// run of the same seed).
	Holders *rand.Rand
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.WaitBudget, DefaultWaitBudget)
	def(&o.LeaseDuration, DefaultLeaseDuration)
	def(&o.InitialBackoff, DefaultInitialBackoff)
	def(&o.MaxBackoff, DefaultMaxBackoff)
	def(&o.NotFoundGrace, DefaultNotFoundGrace)
	def(&o.BootTimeout, DefaultBootTimeout)
	def(&o.ReconfigureTimeout, DefaultReconfigureTimeout)
	def(&o.QuotaBackoff, DefaultQuotaBackoff)
	def(&o.QuotaTTL, DefaultQuotaTTL)
	if o.MaxBootFailures <= 0 {
		o.MaxBootFailures = DefaultMaxBootFailures
	}
	if o.Rand == nil {
		o.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return o
}

// Reconciler runs reconciles. It is safe for concurrent use.
type Reconciler struct {
	store     Store
	providers Providers
	requeuer  Requeuer
	secrets   Secrets
	clock     clock.Clock
	log       *slog.Logger
	opts      Options
	jitter    *lockedRand
	holders   *lockedRand
	// quotas are the accounts' quotas placement read (place.go).
	quotas quotaCache
}

// New returns a Reconciler. secrets may be nil when no spec names a
// cloudInitSecret.
func New(store Store, providers Providers, requeuer Requeuer, secrets Secrets, clk clock.Clock, log *slog.Logger, opts Options) *Reconciler {
	opts = opts.withDefaults()
	r := &Reconciler{
		store: store, providers: providers, requeuer: requeuer, secrets: secrets,
		clock: clk, log: log, opts: opts, jitter: &lockedRand{r: opts.Rand},
	}
	if opts.Holders != nil {
		r.holders = &lockedRand{r: opts.Holders}
	}
	return r
}

// Trigger says why a run happens.
type Trigger struct {
	Reason proxy.Reason
	// UID, from a VM's call-home, is the uid of the proxy it serves; a
	// document of another uid gets nothing but the read.
	UID string
	// Handoff is the lease holder that asked for this run to take its lease
	// over.
	Handoff string
}

// TriggerOf is the trigger of a reconcile message.
func TriggerOf(m proxy.ReconcileMessage) Trigger {
	return Trigger{Reason: m.Reason, UID: m.UID, Handoff: m.Lease}
}

// Reconcile runs one reconcile of the document. It returns an error only
// when the run should be retried by redelivering its event: the store could
// not be read or written. Everything the provider says is handled here, with
// a retry, a hand-off, or a phase.
func (r *Reconciler) Reconcile(ctx context.Context, key proxy.Key, t Trigger) error {
	if t.Reason == "" {
		t.Reason = proxy.ReasonWritten
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.LeaseDuration-r.opts.LeaseDuration/4)
	defer cancel()
	run := &run{
		r:        r,
		key:      key,
		trigger:  t,
		holder:   r.newHolder(),
		deadline: r.clock.Now().Add(r.opts.WaitBudget),
		log:      r.log.With(slog.String("document", key.Path()), slog.String("reason", string(t.Reason))),
	}
	err := run.do(ctx)
	run.nudgePool(ctx)
	return err
}

// run is the state of one reconcile.
type run struct {
	r        *Reconciler
	key      proxy.Key
	trigger  Trigger
	holder   string
	deadline time.Time
	log      *slog.Logger

	doc    *proxy.Proxy // the document as last read or written
	waits  int          // waits so far, for the backoff
	writes int
	prov   provider.Provider
	// created is the providerID this run's Create returned, kept in case
	// the write that stores it loses to a deletion request.
	created string
	// deleteSent is set once this run's Delete of the VM succeeded.
	deleteSent bool
	// retryAfter is the wait the provider's cloud asked for before the
	// next call (a rate limit's), which the next backoff is at least.
	retryAfter time.Duration
	// turn says retryAfter is the account's budget's turn (its queue),
	// waited for exactly (sleep).
	turn bool
	// poll, once the run saw a VM that cannot call home booting, is how
	// often it asks it again (pollBoot): each wait is that long, and each
	// step looks at the VM as a requested run does.
	poll time.Duration
}

// maxRereads bounds how often one run reads a document that keeps changing
// under it; past that, the run stops and the writer's own event carries on.
const maxRereads = 8

// outcome is what a step leaves the run to do.
type outcome int

const (
	done outcome = iota // nothing more this run
	wait                // try again after a backoff: a VM on its way out, a provider call to retry
)

func (run *run) do(ctx context.Context) error {
	for rereads := 0; ; {
		if run.doc == nil {
			doc, err := run.r.store.Get(ctx, run.key)
			if errors.Is(err, proxy.ErrNotFound) {
				run.log.DebugContext(ctx, "document gone; nothing to do")
				return nil
			}
			if err != nil {
				return fmt.Errorf("reading %s: %w", run.key, err)
			}
			run.doc = doc
		}
		out, err := run.step(ctx)
		switch {
		case errors.Is(err, proxy.ErrConflict):
			// Someone wrote the document since we read it: decide again on
			// what it says now.
			if rereads++; rereads > maxRereads {
				run.log.InfoContext(ctx, "document keeps changing; leaving it to the events of its writers")
				return nil
			}
			run.doc = nil
			continue
		case errors.Is(err, proxy.ErrNotFound):
			run.log.InfoContext(ctx, "document deleted during the run; stopping")
			return nil
		case err != nil:
			return err
		}
		if out == done {
			return nil
		}
		if !run.sleep(ctx) {
			return run.handOff(ctx)
		}
	}
}

// step looks at the document (and, where it must, the VM) once and does
// the next thing: the table of the package doc.
func (run *run) step(ctx context.Context) (outcome, error) {
	p := run.doc
	if run.trigger.UID != "" && run.trigger.UID != p.UID {
		// A VM of a predecessor (the name deleted and made again), or a
		// forgery: the message meant a proxy that is not this one.
		run.log.InfoContext(ctx, "call-home for another uid; nothing to do", slog.String("uid", run.trigger.UID))
		return done, nil
	}
	if p.ClaimedBy != nil {
		// A pool's member whose VM a proxy claimed: the VM is not its own.
		return run.tombstone(ctx)
	}
	if p.DeleteRequestTime != nil {
		// Deletion goes first and ignores the lease: the user wants the VM
		// gone, and deleting is idempotent however many runs do it.
		return run.deleting(ctx)
	}
	if h := p.Reconciler.LeaseHolder; h != "" && h != run.holder && h != run.trigger.Handoff && run.r.clock.Now().Before(p.Reconciler.LeaseExpireTime) {
		run.log.DebugContext(ctx, "another run holds the lease; nothing to do", slog.String("holder", h))
		return done, nil
	}
	if now := run.r.clock.Now(); p.Status.ProviderID == "" && now.Before(p.Reconciler.NotBefore) {
		run.log.DebugContext(ctx, "a quota or a stockout refused the last create; waiting before the next", slog.Time("notBefore", p.Reconciler.NotBefore))
		return done, nil
	}
	requested := run.trigger.Reason.Requested() || run.poll > 0
	rotate := run.rotationDue()
	if run.trigger.Reason == proxy.ReasonCost && p.Status.Phase == proxy.PhaseReady && settled(p) && !rotate {
		// The collector asks for the cost of a proxy that has nothing
		// else to do: no event comes for it, so its status.cost would
		// stay as old as its last write. The write computes the cost
		// (it is due) and changes nothing else; no look at the VM, which
		// a drift or the sweep would have asked for instead.
		return done, run.write(ctx, run.next(), false)
	}
	switch p.Status.Phase {
	case proxy.PhaseFailed:
		// A permanent failure stays until the proxy is deleted; what may
		// be left to do is delete the VM it still names.
		if p.Status.ProviderID == "" {
			return done, nil
		}
	case proxy.PhaseReady, proxy.PhaseProvisioning, proxy.PhaseReconfiguring:
		if !requested && !rotate && !run.changePending() {
			// The event of a write: nothing here changes by itself soon. A
			// booting or reconfigured VM calls home when it serves, and the
			// sweep looks at one that does not. A new generation (a PATCH,
			// new credentials, a claimed VM) comes only as such an event.
			return done, nil
		}
	}
	prov, err := run.r.providers.Account(ctx, p.Spec.Provider, p.Status.Account)
	if err != nil {
		if p.Status.Phase == proxy.PhaseFailed {
			// Keep the reason it failed for; the sweep comes back for the VM.
			run.log.WarnContext(ctx, "provider not available; the failed proxy's instance waits", slog.String("providerID", p.Status.ProviderID), slog.Any("error", err))
			return done, nil
		}
		return run.fail(ctx, "ProviderUnavailable", fmt.Sprintf("provider %q is not available%s: %v", p.Spec.Provider, inAccount(p.Status.Account), err))
	}
	run.prov = prov
	switch {
	case p.Status.Phase == proxy.PhaseFailed:
		return run.failedVM(ctx)
	case rotate && (p.Status.Phase == proxy.PhaseReady || p.Status.Phase == proxy.PhaseProvisioning || p.Status.Phase == proxy.PhaseReconfiguring):
		return run.rotate(ctx)
	case p.Status.Phase == proxy.PhaseReplacing:
		return run.replacing(ctx)
	case p.Status.ProviderID == "":
		return run.createOrClaim(ctx)
	case !requested && run.changePending() && p.Reconciler.NotFoundSince.IsZero():
		// A write brought a generation the VM was not given (a PATCH, new
		// credentials, a claim cut short before its Reconfigure): hand it
		// over without a look at the VM first (the call-home brings that
		// look). Not to a VM the provider said was missing: the write
		// that noted it would bring this run again, and the next, each
		// taking and releasing the lease for nothing; the call-home or
		// the sweep looks.
		return run.reconfigure(ctx, reconfiguringPhase(p.Status.Phase))
	case run.trigger.Reason == proxy.ReasonTrafficStop && p.Status.Phase == proxy.PhaseReady && !run.changePending():
		// The namespace's stop at its budget, or its end (stop.go): no
		// look at the VM, whose phase does not change.
		return run.trafficStop(ctx)
	default:
		return run.observe(ctx)
	}
}

// newHolder names a run in the lease.
func (r *Reconciler) newHolder() string {
	var b [8]byte
	if r.holders != nil {
		binary.BigEndian.PutUint64(b[:], r.holders.uint64())
	} else {
		_, _ = cryptorand.Read(b[:])
	}
	return hex.EncodeToString(b[:])
}

// inAccount names an account other than the default in a message.
func inAccount(id string) string {
	if id == "" {
		return ""
	}
	return fmt.Sprintf(" in account %q", id)
}
