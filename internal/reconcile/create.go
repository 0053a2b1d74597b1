package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// create records the intent, asks the provider for the VM and records that
// it is provisioning. It does not wait for the VM: its call-home, or the
// sweep, brings the run that sees it ready; a VM that cannot call home
// (provider.Polled) is asked again by this run and the ones it hands on
// to (pollBoot).
func (run *run) create(ctx context.Context) (outcome, error) {
	p := run.doc
	if id := p.Reconciler.Retiring; id != "" {
		return run.retireFirst(ctx, id)
	}
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
	if next.Reconciler.CreatePending != name && phase == proxy.PhaseCreating {
		// A new attempt at a first VM chooses its account; the intent
		// below records it before the VM exists, so a retry of the
		// attempt, and every later call about its VM, goes to the same
		// account. A replacement stays in its account (its static
		// address lives there).
		id, err := run.place(ctx)
		switch {
		case noHeadroom(err):
			run.log.WarnContext(ctx, "no account has headroom; the sweep retries", slog.Any("error", err))
			return run.retryLater(ctx, next, "NoAccountHeadroom", "No account has room for the proxy; retrying in a few minutes: "+err.Error())
		case err != nil:
			return run.providerError(ctx, "placing the proxy", err)
		}
		if id != next.Status.Account {
			prov, err := run.r.providers.Account(ctx, p.Spec.Provider, id)
			if err != nil {
				return run.providerError(ctx, "placing the proxy"+inAccount(id), err)
			}
			run.prov = prov
			next.Status.Account = id
		}
	}
	if next.Reconciler.CreatePending != name {
		// A new attempt, with a request id of its own: the provider's
		// de-duplication (Compute ignores an id it has seen within the
		// hour) must never swallow it, while a retry of this attempt (a
		// crash, a 503) keeps the id and so can never make a second VM.
		next.Reconciler.CreatePending = name
		next.Reconciler.CreateRequestID = uuid.NewString()
		// On a retry the condition keeps saying why the last try failed.
		setReady(next, "False", string(phase), "Creating instance "+name+".", run.r.clock.Now())
	}
	if next.Reconciler.CreatePending != p.Reconciler.CreatePending || next.Reconciler.SentGeneration == 0 {
		// The attempt's VM is made with the generation of now: a retry of
		// it (which may adopt the VM the first try made) renders the same,
		// and a later generation is handed over once the VM is there. An
		// attempt recorded before generations were gets the document's.
		next.Reconciler.SentGeneration = p.Generation
	}
	if next.Reconciler.Credentials.IsZero() && !run.key.IsMember() {
		// Made with the first VM, in the write that records its create, and
		// kept for every VM after it: a client's configuration outlives a
		// replaced VM. A warm pool's member has none: its VM serves no one
		// until a proxy claims it and gives it the proxy's.
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
		Name:       name,
		UID:        p.UID,
		Namespace:  p.Namespace,
		ProxyName:  p.Name,
		Pool:       p.Pool,
		Placement:  provider.Placement(p.Spec.Placement),
		Port:       port(p.Spec),
		RequestID:  next.Reconciler.CreateRequestID,
		StaticIP:   p.Spec.IPPolicy == proxy.IPStatic,
		IPv6Prefix: p.Spec.IPv6Egress.NeedsPrefix(),
		AvoidZones: next.Reconciler.FullZones,
	}
	var err error
	if req.CloudInit, req.StartupScript, req.Engine, err = run.bootstrap(ctx, next.Reconciler.SentGeneration); err != nil {
		return run.bootstrapFailed(ctx, err)
	}
	id, err := run.prov.Create(ctx, req)
	if err != nil {
		return run.createFailed(ctx, "creating instance "+name, err)
	}
	run.created = id
	run.log.InfoContext(ctx, "instance created", slog.String("providerID", id), slog.String("instance", name))
	now := run.r.clock.Now()
	next = run.next()
	next.Status.Phase = proxy.PhaseProvisioning
	next.Status.ProviderID = id
	next.Status.State = string(provider.StateProvisioning)
	next.Status.Message = ""
	next.Reconciler.CreatePending, next.Reconciler.CreateRequestID = "", ""
	next.Reconciler.Attempts = 0
	next.Reconciler.NotFoundSince = time.Time{}
	next.Reconciler.BootStart = now
	next.Reconciler.ReconfigureStart = time.Time{}
	setReady(next, "False", "Provisioning", "Instance "+id+" is provisioning.", now)
	if err := run.write(ctx, next, false); err != nil {
		return done, err
	}
	// A VM that cannot call home is asked from now on: its boot takes
	// about a minute, and the sweep would come only minutes later.
	return run.pollBoot(), nil
}

// retireFirst deletes the VM a make-before-break rotation was retiring
// when a new VM is to be created instead of the one it claimed (that one
// was lost, or did not become ready), waits for it to go, forgets it, and
// then creates. The old VM may carry the very name the create uses (it
// was created under it), and a Create of that name would adopt it, with
// the configuration and credentials it was made with, only for it to be
// deleted again as the retiring VM once Ready. So this replacement
// breaks before it makes, as a rotation with no warm VM does.
func (run *run) retireFirst(ctx context.Context, id string) (outcome, error) {
	if err := run.takeLease(ctx); err != nil {
		return done, err
	}
	if err := run.prov.Delete(ctx, id); err != nil && !errors.Is(err, provider.ErrNotFound) {
		return run.providerError(ctx, "deleting the retiring instance "+id, err)
	}
	_, err := run.prov.Get(ctx, id)
	switch {
	case errors.Is(err, provider.ErrNotFound):
		run.log.InfoContext(ctx, "retiring instance deleted before its replacement is created", slog.String("providerID", id))
		next := run.next()
		next.Reconciler.Retiring, next.Reconciler.RetiringGeneration = "", 0
		if err := run.write(ctx, next, true); err != nil {
			return done, err
		}
		return run.create(ctx)
	case err != nil:
		return run.providerError(ctx, "reading the retiring instance "+id, err)
	}
	// Still going: wait with the lease, as for a VM being replaced.
	if err := run.write(ctx, run.next(), true); err != nil {
		return done, err
	}
	return wait, nil
}

// bootstrap resolves what the VM boots with: the spec's own cloud-init
// (the secret it names, or the inline one) as user-data, or else the
// default startup script and the proxy engine's configuration, of
// generation and the document's credentials as they are now. A spec that
// brings its own cloud-init takes over the whole VM, so it gets no startup
// script beside it.
func (run *run) bootstrap(ctx context.Context, generation int64) (cloudInit, startupScript string, engine *vmconfig.Config, err error) {
	s := run.doc.Spec
	switch {
	case s.CloudInitSecret != "":
		if run.r.secrets == nil {
			return "", "", nil, bootstrapError{fmt.Errorf("reading secret version %s: no Secret Manager client is configured", s.CloudInitSecret)}
		}
		// The API refuses another namespace's secret; a document that
		// came around it (or before the rule) is refused here too, before
		// the secret is read.
		if pol := (proxy.Policy{CloudInitSecretPrefix: run.r.opts.CloudInitSecretPrefix}); pol.CloudInitSecretPrefix != "" && !pol.NamespaceSecret(run.doc.Namespace, s.CloudInitSecret) {
			return "", "", nil, bootstrapError{fmt.Errorf("secret version %s is not one of namespace %s's secrets (%sNAME): it is not read", s.CloudInitSecret, run.doc.Namespace, pol.SecretPrefix(run.doc.Namespace))}
		}
		ud, err := run.r.secrets.Access(ctx, s.CloudInitSecret)
		return ud, "", nil, err
	case s.CloudInit != "":
		return s.CloudInit, "", nil, nil
	case run.r.opts.Bootstrap != nil:
		script, engine, err := run.r.opts.Bootstrap(s, run.doc.Reconciler.Credentials, generation)
		if err != nil {
			return "", "", nil, bootstrapError{fmt.Errorf("rendering the startup script: %w", err)}
		}
		if engine != nil && engine.IPv6Egress != "" {
			// The prefix the current VM reported: none yet at a create
			// (its cloud assigns it with the VM, and its agent finds it
			// on the interface), the VM's own at a live change.
			engine.IPv6Prefix = run.doc.Status.IPv6Prefix
		}
		if t := run.doc.Status.Traffic; engine != nil && engine.TrafficQuotaBytes > 0 && t != nil && t.Month != "" {
			// A new VM is no fresh quota: it starts from what the
			// proxy's VM before it last reported of the month.
			engine.TrafficCarried = &vmconfig.MonthCount{Month: t.Month, Bytes: t.MonthBytes}
		}
		if engine != nil {
			// What the VM before was given of its namespace's stop at
			// the budget (stop.go): no change lifts it.
			engine.TrafficStop = engineStop(run.doc.Reconciler.TrafficStop)
		}
		return "", script, engine, nil
	}
	return "", "", nil, nil
}

// bootstrapError is a bootstrap that can never be had as the spec asks.
type bootstrapError struct{ err error }

func (e bootstrapError) Error() string     { return e.err.Error() }
func (e bootstrapError) Unwrap() error     { return e.err }
func (e bootstrapError) IsPermanent() bool { return true }

// bootstrapFailed fails the proxy on a bootstrap that can never be had (a
// secret that does not exist or may not be read, a spec the script refuses)
// and retries one that may come (Secret Manager unavailable).
func (run *run) bootstrapFailed(ctx context.Context, err error) (outcome, error) {
	msg := "resolving the bootstrap: " + err.Error()
	if permanent(err) {
		return run.fail(ctx, "BootstrapUnavailable", msg)
	}
	next := run.next()
	next.Reconciler.Attempts++
	next.Status.Message = msg
	setReady(next, "False", "BootstrapUnavailable", msg, run.r.clock.Now())
	run.log.WarnContext(ctx, "bootstrap not available; retrying after a backoff", slog.Any("error", err))
	if err := run.write(ctx, next, true); err != nil {
		return done, err
	}
	return wait, nil
}

// createFailed handles a create that failed, whether Create said so or the
// provider found it later in the create's operation (a Get of the missing
// VM). Where Compute answered for good, the attempt is over and the next
// one gets a request id of its own; a VM with no answer (a 503, a lost
// response) is retried as the same attempt.
//
//   - Capacity: the zone is full. When the provider chooses the zone, the
//     next attempt goes at once to another zone of the region; when every
//     zone was full, or the spec names the zone, it is retried when the
//     sweep next looks, minutes later (QuotaBackoff), with the reason in
//     the status.
//   - Quota: retried the same way.
//   - Permanent (an image, a zone, a network that does not exist): Failed,
//     with the provider's message.
func (run *run) createFailed(ctx context.Context, what string, err error) (outcome, error) {
	p := run.doc
	msg := fmt.Sprintf("%s: %v", what, err)
	now := run.r.clock.Now()
	next := run.next()
	endAttempt := func() {
		next.Status.ProviderID, next.Status.IP, next.Status.IPv6, next.Status.IPv6Prefix, next.Status.Endpoint, next.Status.State = "", "", "", "", "", ""
		next.Reconciler.CreatePending, next.Reconciler.CreateRequestID = "", ""
		if next.Status.Phase != proxy.PhaseReplacing {
			next.Status.Phase = proxy.PhaseCreating
		}
	}
	switch provider.KindOf(err) {
	case provider.KindCapacity:
		endAttempt()
		zone := provider.FullZone(err)
		if zone != "" && p.Spec.Placement.Zone == "" {
			next.Reconciler.FullZones = append(slices.Clone(next.Reconciler.FullZones), zone)
			msg = fmt.Sprintf("Zone %s is out of capacity; trying another zone of %s.", zone, p.Spec.Placement.Region)
			next.Status.Message = msg
			setReady(next, "False", "ZoneOutOfCapacity", msg, now)
			run.log.WarnContext(ctx, "zone out of capacity; trying another", slog.String("zone", zone), slog.Any("error", err))
			if err := run.write(ctx, next, true); err != nil {
				return done, err
			}
			return run.create(ctx)
		}
		// Every zone of the region, or the one the spec names: a stockout
		// lasts minutes or hours, so wait for the sweep, and start over
		// from the first choice then.
		next.Reconciler.FullZones = nil
		run.log.WarnContext(ctx, "no capacity; the sweep retries", slog.Any("error", err))
		return run.retryLater(ctx, next, "OutOfCapacity", "Out of capacity; retrying in a few minutes: "+msg)
	case provider.KindQuota:
		endAttempt()
		run.log.WarnContext(ctx, "quota exceeded; the sweep retries", slog.Any("error", err))
		return run.retryLater(ctx, next, "QuotaExceeded", "Quota exceeded; retrying in a few minutes: "+msg)
	case provider.KindPermanent:
		return run.fail(ctx, "CreateFailed", msg)
	}
	return run.providerError(ctx, what, err)
}

// retryLater records why a create was refused and when the next may be
// tried (QuotaBackoff from now): until then the document's events do
// nothing, and the sweep brings the retry.
func (run *run) retryLater(ctx context.Context, next *proxy.Proxy, reason, msg string) (outcome, error) {
	now := run.r.clock.Now()
	next.Reconciler.NotBefore = now.Add(run.r.opts.QuotaBackoff)
	next.Status.Message = msg
	setReady(next, "False", reason, msg, now)
	return done, run.write(ctx, next, false)
}
