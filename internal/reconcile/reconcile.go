// Package reconcile drives one proxy document towards its VM: it is the
// logic the Reconcile function runs for every event, and the simulation runs
// under faults.
//
// It is level-triggered. An event only says which document to look at; a
// run reads the document fresh, looks at the VM through the provider, and
// does the one next thing that closes the gap (DESIGN §4). What makes that
// safe under Eventarc's at-least-once, unordered delivery:
//
//   - Every write carries the update time the run read (an update-time
//     precondition). A run whose document changed under it reads again and
//     decides again; no write is lost or applied over a newer document.
//   - Status is written only when it changed, so the event of a run's own
//     write finds nothing to do and the chain ends (no write → event → write
//     loop).
//   - A run that is about to act (create, replace) or to wait for a VM takes
//     a lease in the document, in the same write that records its intent. A
//     concurrent or duplicate run sees the lease and stops after one read.
//   - "Check again soon" is a bounded wait inside the run, with capped
//     exponential backoff and jitter, because most VMs boot within it and a
//     wait costs no write, no event and no invocation. When the wait budget
//     runs out, the run hands its lease on through a message on
//     proxy-reconcile, whose run takes the lease over and goes on waiting
//     (Pub/Sub cannot delay a message, so the waiting stays in the runs).
//
// The package imports neither Firestore nor Compute: it sees the document
// through Store, the VM through provider.Provider, and time through an
// injected clock.
package reconcile

import (
	"context"
	cryptorand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
)

// Store is the part of the document store a run uses. *store.Store and
// *memstore.Store satisfy it.
type Store interface {
	Get(ctx context.Context, key proxy.Key) (*proxy.Proxy, error)
	// UpdateStatus writes p.Status and p.Reconciler if the document's
	// update time is still p.UpdateTime (else proxy.ErrConflict), and
	// returns the new update time.
	UpdateStatus(ctx context.Context, p *proxy.Proxy) (time.Time, error)
	// Delete removes the document if its update time is still updateTime.
	Delete(ctx context.Context, key proxy.Key, updateTime time.Time) error
}

// Providers hands out the provider of a spec's type. *provider.Set
// satisfies it.
type Providers interface {
	Get(ctx context.Context, typ string) (provider.Provider, error)
}

// Requeuer asks for another run of a document. *queue.Publisher satisfies
// it.
type Requeuer interface {
	Publish(ctx context.Context, msg proxy.ReconcileMessage) error
}

// Secrets reads a Secret Manager version. Errors should be classified with
// provider.NewError (KindPermanent for a version that does not exist or may
// not be read), so a bad reference fails the proxy instead of retrying
// forever.
type Secrets interface {
	Access(ctx context.Context, version string) (string, error)
}

// BootstrapFunc renders the default bootstrap of a proxy, the startup
// script its VM runs (package bootstrap), from its spec and credentials.
type BootstrapFunc func(spec proxy.Spec, creds proxy.Credentials) (string, error)

// Defaults of Options.
const (
	DefaultWaitBudget     = time.Minute
	DefaultLeaseDuration  = 3 * time.Minute
	DefaultInitialBackoff = 2 * time.Second
	DefaultMaxBackoff     = 10 * time.Second
	DefaultNotFoundGrace  = 30 * time.Second
)

// Options tune a Reconciler. A zero field takes its default.
type Options struct {
	// WaitBudget is how long one run may wait for a VM before it hands on
	// to the next run.
	WaitBudget time.Duration
	// LeaseDuration is how long a lease keeps other runs off a document. It
	// must outlast a whole run (WaitBudget plus a few provider calls); a
	// lease whose run crashed expires and the sweep re-drives the document.
	LeaseDuration time.Duration
	// InitialBackoff and MaxBackoff bound the waits between checks.
	InitialBackoff, MaxBackoff time.Duration
	// NotFoundGrace is how long a VM may be missing from Get before it is
	// taken as lost: a VM just created may not be visible yet.
	NotFoundGrace time.Duration
	// Bootstrap renders the startup script of specs that bring no
	// cloud-init of their own. Nil sends none.
	Bootstrap BootstrapFunc
	// Rand draws the jitter; nil uses a random source.
	Rand *rand.Rand
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
}

// New returns a Reconciler. secrets may be nil when no spec names a
// cloudInitSecret.
func New(store Store, providers Providers, requeuer Requeuer, secrets Secrets, clk clock.Clock, log *slog.Logger, opts Options) *Reconciler {
	opts = opts.withDefaults()
	return &Reconciler{
		store: store, providers: providers, requeuer: requeuer, secrets: secrets,
		clock: clk, log: log, opts: opts, jitter: &lockedRand{r: opts.Rand},
	}
}

// Trigger says why a run happens.
type Trigger struct {
	// Reason is logged: "written" for a Firestore event, the message's
	// reason for a Pub/Sub request.
	Reason string
	// Requested is true for a Pub/Sub request (a requeue, the sweep), false
	// for a document event. A settled document is re-examined only on a
	// request: its own events are the echoes of the write that settled it.
	Requested bool
	// Handoff is the lease holder that asked for this run to take its lease
	// over.
	Handoff string
}

// Reconcile runs one reconcile of the document. It returns an error only
// when the run should be retried by redelivering its event: the store could
// not be read or written. Everything the provider says is handled here, with
// waits, a hand-off, or a phase.
func (r *Reconciler) Reconcile(ctx context.Context, key proxy.Key, t Trigger) error {
	ctx, cancel := context.WithTimeout(ctx, r.opts.LeaseDuration-r.opts.LeaseDuration/4)
	defer cancel()
	run := &run{
		r:        r,
		key:      key,
		trigger:  t,
		holder:   newHolder(),
		deadline: r.clock.Now().Add(r.opts.WaitBudget),
		log:      r.log.With(slog.String("document", key.Path()), slog.String("reason", t.Reason)),
	}
	return run.do(ctx)
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
}

// maxRereads bounds how often one run reads a document that keeps changing
// under it; past that, the run stops and the writer's own event carries on.
const maxRereads = 8

// outcome is what a step leaves the run to do.
type outcome int

const (
	done outcome = iota // nothing more this run
	wait                // check again after a backoff
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

// step looks at the document and its VM once and does the next thing.
func (run *run) step(ctx context.Context) (outcome, error) {
	p := run.doc
	now := run.r.clock.Now()
	if p.DeleteRequestTime != nil {
		// Deletion goes first and ignores the lease: the user wants the VM
		// gone, and deleting is idempotent however many runs do it.
		return run.deleting(ctx)
	}
	if h := p.Reconciler.LeaseHolder; h != "" && h != run.holder && h != run.trigger.Handoff && now.Before(p.Reconciler.LeaseExpireTime) {
		run.log.DebugContext(ctx, "another run holds the lease; nothing to do", slog.String("holder", h))
		return done, nil
	}
	if p.Status.Phase == proxy.PhaseFailed {
		// A permanent failure stays until the proxy is deleted.
		return done, nil
	}
	if p.Status.Phase == proxy.PhaseReady && !run.trigger.Requested && p.Reconciler.LeaseHolder == "" {
		return done, nil
	}
	prov, err := run.r.providers.Get(ctx, p.Spec.Provider)
	if err != nil {
		return run.fail(ctx, "ProviderUnavailable", fmt.Sprintf("provider %q is not available: %v", p.Spec.Provider, err))
	}
	run.prov = prov
	if p.Status.ProviderID == "" {
		return run.create(ctx)
	}
	return run.observe(ctx)
}

// create records the intent, then asks the provider for the VM.
func (run *run) create(ctx context.Context) (outcome, error) {
	p := run.doc
	name := provider.NameFromUID(p.UID)
	phase := proxy.PhaseCreating
	if p.Status.Phase == proxy.PhaseReplacing {
		phase = proxy.PhaseReplacing
	}
	// The intent first: a run that crashes after Create leaves a document
	// that says a create was pending under this name, and the next run's
	// Create of the same name adopts the VM instead of making another.
	next := run.next()
	next.Status.Phase = phase
	if next.Reconciler.CreatePending != name {
		// On a retry the condition keeps saying why the last try failed.
		next.Reconciler.CreatePending = name
		setReady(next, "False", string(phase), "Creating instance "+name+".", run.r.clock.Now())
	}
	if next.Reconciler.Credentials.IsZero() {
		// Made with the first VM, in the write that records its create, and
		// kept for every VM after it: a client's configuration outlives a
		// replaced VM.
		creds, err := proxy.NewCredentials()
		if err != nil {
			return done, err
		}
		next.Reconciler.Credentials = creds
	}
	if err := run.write(ctx, next, true); err != nil {
		return done, err
	}

	req := provider.CreateRequest{
		Name:      name,
		UID:       p.UID,
		Namespace: p.Namespace,
		ProxyName: p.Name,
		Placement: provider.Placement(p.Spec.Placement),
		Port:      port(p.Spec),
	}
	var err error
	if req.CloudInit, req.StartupScript, err = run.bootstrap(ctx); err != nil {
		return run.providerError(ctx, "resolving the bootstrap", err)
	}
	id, err := run.prov.Create(ctx, req)
	if err != nil {
		return run.providerError(ctx, "creating instance "+name, err)
	}
	run.created = id
	run.log.InfoContext(ctx, "instance created", slog.String("providerID", id), slog.String("instance", name))
	next = run.next()
	next.Status.Phase = proxy.PhaseProvisioning
	next.Status.ProviderID = id
	next.Status.State = string(provider.StateProvisioning)
	next.Reconciler.CreatePending = ""
	next.Reconciler.Attempts = 0
	setReady(next, "False", "Provisioning", "Instance "+id+" is provisioning.", run.r.clock.Now())
	if err := run.write(ctx, next, true); err != nil {
		return done, err
	}
	return wait, nil
}

// observe reads the VM and moves the document to what it sees.
func (run *run) observe(ctx context.Context) (outcome, error) {
	p := run.doc
	now := run.r.clock.Now()
	inst, err := run.prov.Get(ctx, p.Status.ProviderID)
	switch {
	case errors.Is(err, provider.ErrNotFound):
		return run.missing(ctx, now)
	case err != nil:
		return run.providerError(ctx, "reading instance "+p.Status.ProviderID, err)
	}
	next := run.next()
	next.Reconciler.NotFoundSince = time.Time{}
	next.Status.State = string(inst.State)
	switch {
	case p.Status.Phase == proxy.PhaseReplacing:
		// The old VM is still on its way out and its name is wanted again:
		// delete it again (idempotent, and the provider skips a VM already
		// going) and keep what the condition says.
		c := readyCondition(p)
		return run.replace(ctx, c.Reason, c.Message)
	case inst.State == provider.StateStopped || inst.State == provider.StateTerminated:
		return run.replace(ctx, "Instance"+string(inst.State), fmt.Sprintf("Instance %s is %s; replacing it.", p.Status.ProviderID, inst.State))
	case inst.State == provider.StateRunning && inst.IP != "":
		next.Status.Phase = proxy.PhaseReady
		next.Status.IP = inst.IP
		next.Status.Endpoint = net.JoinHostPort(inst.IP, strconv.Itoa(int(port(p.Spec))))
		next.Status.Message = ""
		next.Reconciler.Attempts = 0
		setReady(next, "True", "Ready", "Proxy is serving at "+next.Status.Endpoint+".", now)
		if err := run.write(ctx, next, false); err != nil {
			return done, err
		}
		if p.Status.Phase != proxy.PhaseReady {
			run.log.InfoContext(ctx, "proxy ready", slog.String("endpoint", next.Status.Endpoint), slog.String("providerID", p.Status.ProviderID))
		}
		return done, nil
	default:
		next.Status.Phase = proxy.PhaseProvisioning
		setReady(next, "False", "Provisioning", "Instance "+p.Status.ProviderID+" is provisioning.", now)
		if err := run.write(ctx, next, true); err != nil {
			return done, err
		}
		return wait, nil
	}
}

// missing handles a Get that found no VM.
func (run *run) missing(ctx context.Context, now time.Time) (outcome, error) {
	p := run.doc
	if p.Status.Phase == proxy.PhaseReplacing {
		// The old VM is gone: make the new one.
		next := run.next()
		next.Status.ProviderID, next.Status.IP, next.Status.Endpoint, next.Status.State = "", "", "", ""
		run.doc = next
		return run.create(ctx)
	}
	since := p.Reconciler.NotFoundSince
	if p.Status.Phase == proxy.PhaseReady {
		// It was seen running: its absence is no lag of a new VM.
		return run.replace(ctx, "InstanceLost", fmt.Sprintf("Instance %s no longer exists; replacing it.", p.Status.ProviderID))
	}
	if since.IsZero() || now.Sub(since) < run.r.opts.NotFoundGrace {
		// A VM just created may not be visible yet; give it a moment.
		next := run.next()
		if since.IsZero() {
			next.Reconciler.NotFoundSince = now
		}
		if err := run.write(ctx, next, true); err != nil {
			return done, err
		}
		return wait, nil
	}
	return run.replace(ctx, "InstanceLost", fmt.Sprintf("Instance %s no longer exists; replacing it.", p.Status.ProviderID))
}

// replace starts the replacement of a VM that is gone or stopped: it counts
// the replacement once, deletes what is left and waits for the name to be
// free.
func (run *run) replace(ctx context.Context, reason, message string) (outcome, error) {
	p := run.doc
	now := run.r.clock.Now()
	next := run.next()
	next.Reconciler.NotFoundSince = time.Time{}
	if p.Status.Phase != proxy.PhaseReplacing {
		next.Reconciler.Replacements++
		run.log.WarnContext(ctx, "replacing instance", slog.String("providerID", p.Status.ProviderID), slog.String("why", reason),
			slog.Int64("replacements", next.Reconciler.Replacements))
	}
	next.Status.Phase = proxy.PhaseReplacing
	next.Status.IP, next.Status.Endpoint = "", ""
	setReady(next, "False", reason, message, now)
	if err := run.write(ctx, next, true); err != nil {
		return done, err
	}
	if err := run.prov.Delete(ctx, p.Status.ProviderID); err != nil {
		return run.providerError(ctx, "deleting instance "+p.Status.ProviderID, err)
	}
	return wait, nil
}

// deleting deletes the VM, then, once it is gone, the document.
func (run *run) deleting(ctx context.Context) (outcome, error) {
	p := run.doc
	id := p.Status.ProviderID
	if id == "" {
		id = run.created
	}
	if id != "" {
		prov, err := run.r.providers.Get(ctx, p.Spec.Provider)
		if err != nil {
			return run.deletionError(ctx, fmt.Errorf("provider %q is not available: %w", p.Spec.Provider, err))
		}
		// Delete first, since it is idempotent, then ask whether the VM is
		// gone: a VM that goes at once costs one Delete and one Get, and a
		// slow one one Delete per run and a Get per wait.
		if !run.deleteSent {
			if err := prov.Delete(ctx, id); err != nil && !errors.Is(err, provider.ErrNotFound) {
				return run.deletionError(ctx, fmt.Errorf("deleting instance %s: %w", id, err))
			}
			run.deleteSent = true
			run.log.InfoContext(ctx, "instance deletion requested", slog.String("providerID", id))
		}
		_, err = prov.Get(ctx, id)
		switch {
		case errors.Is(err, provider.ErrNotFound):
			// Gone: the document may go.
		case err != nil:
			return run.deletionError(ctx, fmt.Errorf("reading instance %s: %w", id, err))
		default:
			return wait, nil
		}
	}
	// With no providerID a VM may still be on its way from a Create in
	// flight; it carries this document's uid, which is about to be claimed
	// by nothing, so the garbage collector removes it after its grace.
	if err := run.r.store.Delete(ctx, run.key, p.UpdateTime); err != nil {
		return done, err
	}
	run.writes++
	run.log.InfoContext(ctx, "proxy deleted", slog.String("uid", p.UID))
	return done, nil
}

// deletionError reports a failed deletion step on the document and waits
// to try again: a deletion never fails for good, since the VM must go.
func (run *run) deletionError(ctx context.Context, err error) (outcome, error) {
	next := run.next()
	setReady(next, "False", "DeletionFailed", err.Error(), run.r.clock.Now())
	next.Status.Message = err.Error()
	run.log.WarnContext(ctx, "deletion step failed; retrying", slog.Any("error", err), slog.String("kind", string(provider.KindOf(err))))
	if err := run.write(ctx, next, false); err != nil {
		return done, err
	}
	return wait, nil
}

// providerError classifies a provider error: a permanent one fails the
// proxy with the provider's message; any other is retried after a backoff.
func (run *run) providerError(ctx context.Context, what string, err error) (outcome, error) {
	kind := provider.KindOf(err)
	msg := fmt.Sprintf("%s: %v", what, err)
	if !provider.Retryable(err) {
		return run.fail(ctx, "Provider"+string(kind), msg)
	}
	next := run.next()
	next.Reconciler.Attempts++
	next.Status.Message = msg
	setReady(next, "False", "Provider"+string(kind), msg, run.r.clock.Now())
	run.log.WarnContext(ctx, "provider call failed; retrying after a backoff", slog.String("kind", string(kind)), slog.Any("error", err))
	if err := run.write(ctx, next, true); err != nil {
		return done, err
	}
	return wait, nil
}

// fail settles the proxy in phase Failed.
func (run *run) fail(ctx context.Context, reason, msg string) (outcome, error) {
	next := run.next()
	next.Status.Phase = proxy.PhaseFailed
	next.Status.Message = msg
	setReady(next, "False", reason, msg, run.r.clock.Now())
	run.log.ErrorContext(ctx, "proxy failed", slog.String("reason", reason), slog.String("message", msg))
	if err := run.write(ctx, next, false); err != nil {
		return done, err
	}
	return done, nil
}

// bootstrap resolves what the VM boots with: the spec's own cloud-init
// (the secret it names, or the inline one) as user-data, or else the
// default startup script. A spec that brings its own cloud-init takes over
// the whole VM, so it gets no startup script beside it.
func (run *run) bootstrap(ctx context.Context) (cloudInit, startupScript string, err error) {
	s := run.doc.Spec
	switch {
	case s.CloudInitSecret != "":
		if run.r.secrets == nil {
			return "", "", provider.NewError(provider.KindPermanent, "access secret version", s.CloudInitSecret, errors.New("no Secret Manager client is configured"))
		}
		ud, err := run.r.secrets.Access(ctx, s.CloudInitSecret)
		return ud, "", err
	case s.CloudInit != "":
		return s.CloudInit, "", nil
	case run.r.opts.Bootstrap != nil:
		script, err := run.r.opts.Bootstrap(s, run.doc.Reconciler.Credentials)
		if err != nil {
			return "", "", provider.NewError(provider.KindPermanent, "render the startup script", "", err)
		}
		return "", script, nil
	}
	return "", "", nil
}

// next returns a copy of the document to change.
func (run *run) next() *proxy.Proxy {
	c := *run.doc
	c.Status.Conditions = append([]proxy.Condition(nil), run.doc.Status.Conditions...)
	return &c
}

// write stores next's status and bookkeeping if they differ from the
// document's in anything but the retry count. hold says whether the run
// goes on acting or waiting afterwards, and so holds the lease; otherwise
// the write releases it.
func (run *run) write(ctx context.Context, next *proxy.Proxy, hold bool) error {
	now := run.r.clock.Now()
	next.Status.ObservedGeneration = next.Generation
	if hold {
		next.Reconciler.LeaseHolder = run.holder
	} else {
		next.Reconciler.LeaseHolder, next.Reconciler.LeaseExpireTime = "", time.Time{}
	}
	if !changed(run.doc, next) {
		run.doc = next
		return nil
	}
	if hold {
		next.Reconciler.LeaseExpireTime = now.Add(run.r.opts.LeaseDuration)
	}
	if next.Status.Phase.Settled() {
		next.Reconciler.ProgressTime = time.Time{}
	} else {
		next.Reconciler.ProgressTime = now
	}
	ut, err := run.r.store.UpdateStatus(ctx, next)
	if err != nil {
		return err
	}
	run.writes++
	next.UpdateTime = ut
	run.doc = next
	return nil
}

// changed reports whether a write would change what the document says.
// The retry count, progress time and lease expiry ride along with other
// changes but do not make one: a retry that ends as the last one did costs
// no write.
func changed(old, next *proxy.Proxy) bool {
	a, b := old.Reconciler, next.Reconciler
	a.Attempts, b.Attempts = 0, 0
	a.ProgressTime, b.ProgressTime = time.Time{}, time.Time{}
	a.LeaseExpireTime, b.LeaseExpireTime = time.Time{}, time.Time{}
	return a != b || !equalStatus(old.Status, next.Status)
}

func equalStatus(a, b proxy.Status) bool {
	if len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		if !a.Conditions[i].LastTransitionTime.Equal(b.Conditions[i].LastTransitionTime) {
			return false
		}
		ca, cb := a.Conditions[i], b.Conditions[i]
		ca.LastTransitionTime, cb.LastTransitionTime = time.Time{}, time.Time{}
		if ca != cb {
			return false
		}
	}
	a.Conditions, b.Conditions = nil, nil
	return a.Phase == b.Phase && a.ProviderID == b.ProviderID && a.IP == b.IP && a.Endpoint == b.Endpoint &&
		a.State == b.State && a.ObservedGeneration == b.ObservedGeneration && a.Message == b.Message
}

// sleep waits the next backoff and reports whether the budget allowed it.
func (run *run) sleep(ctx context.Context) bool {
	d := backoff(run.r.opts.InitialBackoff, run.r.opts.MaxBackoff, run.waits+int(run.doc.Reconciler.Attempts), run.r.jitter.float())
	if run.r.clock.Now().Add(d).After(run.deadline) {
		return false
	}
	run.waits++
	if err := run.r.clock.Sleep(ctx, d); err != nil {
		return false
	}
	// Look at the document again only through the provider: the next
	// write's precondition tells if it changed meanwhile.
	return true
}

// handOff asks for the next run to take over when the wait budget is spent.
func (run *run) handOff(ctx context.Context) error {
	msg := proxy.ReconcileMessage{Document: run.key.Path(), Reason: "requeue"}
	if run.doc != nil && run.doc.Reconciler.LeaseHolder == run.holder {
		msg.Lease = run.holder
	}
	if err := run.r.requeuer.Publish(context.WithoutCancel(ctx), msg); err != nil {
		// Without the message nothing would wake the document before the
		// sweep; releasing the lease lets the event of that write do it.
		run.log.WarnContext(ctx, "cannot requeue; releasing the lease instead", slog.Any("error", err))
		if run.doc != nil && run.doc.Reconciler.LeaseHolder == run.holder {
			next := run.next()
			if werr := run.write(context.WithoutCancel(ctx), next, false); werr != nil && !errors.Is(werr, proxy.ErrConflict) {
				return fmt.Errorf("requeueing %s: %w; releasing its lease: %w", run.key, err, werr)
			}
		}
		return nil
	}
	run.log.InfoContext(ctx, "wait budget spent; handed on to the next run", slog.Int("waits", run.waits))
	return nil
}

// MinChecks is the fewest provider Gets a run makes to see running a VM
// that takes boot to get there: the Gets after each wait, with every wait
// at its longest. It is the floor the benchmark holds the measured Gets to.
func MinChecks(o Options, boot time.Duration) int {
	o = o.withDefaults()
	var waited time.Duration
	n := 0
	for waited < boot {
		waited += backoff(o.InitialBackoff, o.MaxBackoff, n, 1)
		n++
	}
	return max(n, 1)
}

// backoff is the capped exponential backoff with "equal jitter": half the
// step fixed, half random, so waits never collapse to zero and concurrent
// documents spread out.
func backoff(initial, max time.Duration, attempt int, jitter float64) time.Duration {
	d := initial
	for range attempt {
		if d >= max/2 {
			d = max
			break
		}
		d *= 2
	}
	d = min(d, max)
	return d/2 + time.Duration(jitter*float64(d/2))
}

// setReady sets the Ready condition; its transition time moves only when its
// status does, so a condition rewritten with the same status does not flap.
func setReady(p *proxy.Proxy, status, reason, message string, now time.Time) {
	c := proxy.Condition{Type: "Ready", Status: status, Reason: reason, Message: message, LastTransitionTime: now}
	for i, old := range p.Status.Conditions {
		if old.Type == c.Type {
			if old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
			p.Status.Conditions[i] = c
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, c)
}

func readyCondition(p *proxy.Proxy) proxy.Condition {
	for _, c := range p.Status.Conditions {
		if c.Type == "Ready" {
			return c
		}
	}
	return proxy.Condition{Type: "Ready"}
}

func port(s proxy.Spec) int32 {
	if s.Port == 0 {
		return proxy.DefaultPort
	}
	return s.Port
}

// newHolder names a run in the lease.
func newHolder() string {
	var b [8]byte
	_, _ = cryptorand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// lockedRand shares one seeded source between concurrent runs.
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (l *lockedRand) float() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Float64()
}
