package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
)

// A change of a proxy's configuration (a PATCH of its ranges, ports,
// bandwidth limit or access log, new credentials) is a new generation of
// its document. The VM learns it without being replaced where it can: the
// provider is a provider.Reconfigurer and the VM runs the default
// bootstrap, whose agent applies what Reconfigure hands it and reports the
// generation it then serves (provider.Instance.Generation). Elsewhere — a provider without
// Reconfigure, a spec that brings its own cloud-init — the VM is replaced
// by one made with the new configuration.
//
// Bookkeeping.SentGeneration is the generation the current VM was given:
// at its Create or by the last Reconfigure. A document whose generation
// differs has a change to hand over (changePending).

// sentGeneration is the generation of the configuration p's current VM was
// given. A Ready proxy whose VM was made before the reconciler recorded
// that (SentGeneration 0) was made with the generation its status
// observed: the reconciler of then wrote the document's generation there
// on every write, and there was no other. Elsewhere 0 stays 0: a VM claimed
// from a warm pool (Provisioning) has been given no configuration of its
// proxy yet.
func sentGeneration(p *proxy.Proxy) int64 {
	if s := p.Reconciler.SentGeneration; s != 0 || p.Status.Phase != proxy.PhaseReady {
		return s
	}
	return p.Status.ObservedGeneration
}

// changePending reports whether the document has a generation its VM was
// not given.
func (run *run) changePending() bool {
	p := run.doc
	return p.Status.ProviderID != "" && p.Generation != sentGeneration(p)
}

// reconfiguringPhase is the phase a proxy in phase is in while its VM
// takes a new configuration: a VM that served keeps its endpoint and is
// Reconfiguring; a VM that has not served yet (booting, or claimed from a
// warm pool) stays Provisioning.
func reconfiguringPhase(phase proxy.Phase) proxy.Phase {
	if phase == proxy.PhaseProvisioning {
		return proxy.PhaseProvisioning
	}
	return proxy.PhaseReconfiguring
}

// defaultBootstrap reports whether the proxy's VM runs the default
// bootstrap: the spec brings no cloud-init of its own.
func (run *run) defaultBootstrap() bool { return !run.doc.Spec.OwnCloudInit() }

// reconfigure hands the current VM the document's generation of the proxy
// engine's configuration, rendered with the document's credentials as they
// are now (a :rotateCredentials writes new ones with its generation), and
// records phase (reconfiguringPhase) with the generation sent. It does not
// wait: the VM's call-home, once it serves the generation, brings the run
// that records Ready; the sweep looks at one whose call-home was lost, and
// replaces one that does not serve it within ReconfigureTimeout.
//
// A proxy whose VM cannot be reconfigured (its provider is no
// Reconfigurer, or the spec brings its own cloud-init) gets a new VM with
// the new configuration instead: break before make, as a rotation, but
// counted neither as a rotation nor as a replacement. The API counted that
// VM against the namespace's NAMESPACE_CREATES_PER_HOUR, and held it to
// ROTATE_MIN_INTERVAL, when it took the change (rules.LiveReplaces is the
// same rule as this one's).
//
// Reconfigure is idempotent, so a duplicate run that calls it again
// changes nothing; a VM that is gone takes the path of a lost one
// (missing).
func (run *run) reconfigure(ctx context.Context, phase proxy.Phase) (outcome, error) {
	p := run.doc
	id := p.Status.ProviderID
	rc, ok := provider.AsReconfigurer(run.prov)
	if !ok || !run.defaultBootstrap() {
		why := "provider " + p.Spec.Provider + " cannot reconfigure a VM"
		if ok {
			why = "the spec's own cloud-init configures the VM"
		}
		return run.startReplacing(ctx, "ConfigurationChanged",
			fmt.Sprintf("Generation %d of the configuration needs a new instance (%s); replacing instance %s.", p.Generation, why, id), replaceChange)
	}
	_, _, engine, err := run.bootstrap(ctx, p.Generation)
	if err != nil {
		return run.bootstrapFailed(ctx, err)
	}
	if engine == nil && p.Reconciler.SentGeneration != 0 {
		// A reconciler that renders no configuration (no
		// Options.Bootstrap) gave the VM none, and has none to hand over:
		// the generation is served as it is. A VM claimed from a pool
		// (SentGeneration 0) is still relabelled below.
		next := run.next()
		next.Reconciler.SentGeneration = p.Generation
		if next.Status.Phase == proxy.PhaseReady {
			next.Status.ObservedGeneration = p.Generation
		}
		return done, run.write(ctx, next, false)
	}
	if p.Reconciler.LeaseHolder != run.holder {
		// The lease first, as before a create: a run that read the
		// document before another's write must not hand the VM an older
		// generation after a newer one, nor a VM the document no longer
		// names. Its write fails on the update time, and the run decides
		// again on what the document says now. A claim's transaction took
		// the lease already.
		if err := run.write(ctx, run.next(), true); err != nil {
			return done, err
		}
		p = run.doc
	}
	req := provider.ReconfigureRequest{UID: p.UID, Namespace: p.Namespace, ProxyName: p.Name, Engine: engine}
	err = rc.Reconfigure(ctx, id, req)
	switch {
	case errors.Is(err, provider.ErrNotFound):
		return run.missing(ctx)
	case err != nil:
		return run.providerError(ctx, "reconfiguring instance "+id, err)
	}
	retiring, err := run.reconfigureRetiring(ctx, rc, req)
	if err != nil {
		return run.providerError(ctx, "deleting the retiring instance "+p.Reconciler.Retiring, err)
	}
	now := run.r.clock.Now()
	next := run.next()
	next.Status.Phase = phase
	next.Status.Message = ""
	next.Reconciler.Retiring = retiring
	if retiring != "" {
		next.Reconciler.RetiringGeneration = p.Generation
	} else {
		next.Reconciler.RetiringGeneration = 0
	}
	next.Reconciler.SentGeneration = p.Generation
	next.Reconciler.NotFoundSince = time.Time{}
	next.Reconciler.Attempts = 0
	if next.Reconciler.ReconfigureStart.IsZero() {
		// A change on top of one not yet served keeps the first's start:
		// the timeout bounds how long the VM lags the document.
		next.Reconciler.ReconfigureStart = now
	}
	setReady(next, "False", "Reconfiguring", reconfiguringMessage(next), now)
	run.log.InfoContext(ctx, "instance reconfigured", slog.String("providerID", id),
		slog.Int64("generation", p.Generation), slog.String("phase", string(phase)))
	return done, run.write(ctx, next, false)
}

// reconfigureRetiring hands req, the generation the current VM was just
// given, to the VM a make-before-break rotation is retiring, if there is
// one that was not given it yet, and returns the Retiring VM there is
// then ("" when none is left). That VM serves its clients until the new
// one is Ready, so a change must reach it as it reaches the current one:
// new credentials above all, which a user makes because the old password
// leaked, and which must not keep working on the VM on its way out. One
// that cannot take the change (gone, or Reconfigure refused) is deleted
// at once rather than left serving the old configuration: a Delete the
// provider accepted completes by itself. A Delete refused is the error
// returned, and nothing is recorded: the run's retry hands the change to
// both VMs again.
func (run *run) reconfigureRetiring(ctx context.Context, rc provider.Reconfigurer, req provider.ReconfigureRequest) (string, error) {
	p := run.doc
	id := p.Reconciler.Retiring
	if id == "" || p.Reconciler.RetiringGeneration == p.Generation {
		return id, nil
	}
	err := rc.Reconfigure(ctx, id, req)
	switch {
	case err == nil:
		run.log.InfoContext(ctx, "retiring instance reconfigured", slog.String("providerID", id), slog.Int64("generation", p.Generation))
		return id, nil
	case errors.Is(err, provider.ErrNotFound):
		return "", nil
	}
	run.log.WarnContext(ctx, "the retiring instance cannot take the new configuration; deleting it now", slog.String("providerID", id),
		slog.Int64("generation", p.Generation), slog.Any("error", err))
	if derr := run.prov.Delete(ctx, id); derr != nil && !errors.Is(derr, provider.ErrNotFound) {
		return id, derr
	}
	run.log.InfoContext(ctx, "retired instance deleted", slog.String("providerID", id))
	return "", nil
}

// reconfiguringMessage is the Ready condition's message while p's VM takes
// generation SentGeneration.
func reconfiguringMessage(p *proxy.Proxy) string {
	msg := fmt.Sprintf("Instance %s is applying generation %d of the configuration.", p.Status.ProviderID, p.Reconciler.SentGeneration)
	if p.Status.Endpoint != "" {
		msg += " " + p.Status.Endpoint + " serves the previous one until then."
	}
	return msg
}

// reportsGeneration reports whether the VM was given a proxy engine's
// configuration to report the generation of: it runs the default
// bootstrap, and the reconciler renders one (Options.Bootstrap). A VM of a
// spec's own cloud-init, or of a reconciler that renders none, reports
// none, and Running is all that can be asked of it.
func (run *run) reportsGeneration() bool {
	return run.defaultBootstrap() && run.r.opts.Bootstrap != nil
}

// serves reports whether a running VM serves the document's generation,
// with no change pending: the condition for Ready.
//
//   - It reports that generation.
//   - It reports none it could (reportsGeneration false).
//   - The proxy is Ready: the VM was seen serving this generation, and a
//     report that lags (a restarted VM whose agent has not written yet)
//     does not unmake that.
//   - It reports 0 and its provider is no Reconfigurer: a provider from
//     before generations reports none, and its VMs were made with the
//     document's generation (SentGeneration), as before.
//
// A Reconfigurer's VM that reports another generation, 0 included, does
// not serve it yet.
func (run *run) serves(inst *provider.Instance) bool {
	p := run.doc
	switch {
	case inst.Generation == p.Generation, !run.reportsGeneration(), p.Status.Phase == proxy.PhaseReady:
		return true
	case inst.Generation == 0:
		_, reconfigures := provider.AsReconfigurer(run.prov)
		return !reconfigures
	}
	return false
}

// servesPending reports whether a running VM already serves a generation
// that is pending in the document: the VM applied a Reconfigure whose
// record was lost, or called home before it was written. A VM given no
// configuration of this proxy yet (SentGeneration 0: claimed from a pool)
// never does, whatever it reports.
func (run *run) servesPending(inst *provider.Instance) bool {
	p := run.doc
	return p.Reconciler.SentGeneration != 0 && run.reportsGeneration() && inst.Generation == p.Generation
}
