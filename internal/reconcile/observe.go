package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
)

// observe reads the VM and moves the document to what it sees. Nothing
// here waits: a VM still booting is left to its call-home or the sweep,
// or, when it cannot call home, asked again (pollBoot).
func (run *run) observe(ctx context.Context) (outcome, error) {
	p := run.doc
	inst, err := run.prov.Get(ctx, p.Status.ProviderID)
	switch {
	case errors.Is(err, provider.ErrNotFound):
		return run.missing(ctx)
	case provider.CreateFailed(err):
		return run.createFailed(ctx, "creating instance "+p.Status.ProviderID, err)
	case err != nil:
		return run.providerError(ctx, "reading instance "+p.Status.ProviderID, err)
	}
	now := run.r.clock.Now()
	next := run.next()
	next.Reconciler.NotFoundSince = time.Time{}
	next.Status.State = string(inst.State)
	if inst.Zone != "" {
		next.Status.Zone = inst.Zone
	}
	if inst.AddressID != "" {
		next.Reconciler.AddressID = inst.AddressID
	}
	if t := inst.Traffic; t != nil {
		next.Status.Traffic = &proxy.Traffic{BytesIn: t.BytesIn, BytesOut: t.BytesOut, Connections: t.Connections, ReportTime: t.ReportTime,
			Month: t.Month, MonthBytes: t.MonthBytes}
	}
	running := inst.State == provider.StateRunning && inst.IP != ""
	switch {
	case inst.State == provider.StateStopped || inst.State == provider.StateTerminated:
		return run.replace(ctx, "Instance"+string(inst.State), fmt.Sprintf("Instance %s is %s; replacing it.", p.Status.ProviderID, inst.State))
	case run.changePending() && running && run.servesPending(inst):
		next.Reconciler.SentGeneration = p.Generation
		return run.ready(ctx, next, inst)
	case run.changePending():
		return run.reconfigure(ctx, reconfiguringPhase(p.Status.Phase))
	case running && run.serves(inst):
		return run.ready(ctx, next, inst)
	case inst.RefusedGeneration != 0 && inst.RefusedGeneration == p.Reconciler.SentGeneration:
		return run.refused(ctx, inst)
	case inst.BootError != "" && inst.RefusedGeneration == 0:
		return run.bootFailed(ctx, "BootFailed", fmt.Sprintf("Instance %s reported that it cannot serve: %s.", p.Status.ProviderID, inst.BootError))
	case p.Status.Phase == proxy.PhaseReconfiguring && now.Sub(p.Reconciler.ReconfigureStart) > run.r.opts.ReconfigureTimeout:
		// Not a boot failure: the VM served, and a new one with the
		// configuration it would not take is the way out.
		return run.replace(ctx, "ReconfigureTimeout", fmt.Sprintf("Instance %s did not serve generation %d of the configuration within %s; replacing it.",
			p.Status.ProviderID, p.Reconciler.SentGeneration, run.r.opts.ReconfigureTimeout))
	case p.Status.Phase == proxy.PhaseReconfiguring:
		// Still applying it: its call-home, or the sweep, comes back.
		return done, run.write(ctx, next, false)
	case now.Sub(run.bootStart(inst)) > run.r.opts.BootTimeout && (p.Reconciler.ReconfigureStart.IsZero() || now.Sub(p.Reconciler.ReconfigureStart) > run.r.opts.ReconfigureTimeout):
		// A booting VM handed a configuration (a live change, or a claim)
		// has ReconfigureTimeout from then to serve it too: a change that
		// comes late in a boot must not turn the boot into a failure, and
		// so into a new VM no request counted.
		return run.bootFailed(ctx, "BootTimeout", fmt.Sprintf("Instance %s was not ready within %s.", p.Status.ProviderID, run.r.opts.BootTimeout))
	default:
		next.Status.Phase = proxy.PhaseProvisioning
		setReady(next, "False", "Provisioning", "Instance "+p.Status.ProviderID+" is provisioning.", now)
		if err := run.write(ctx, next, false); err != nil {
			return done, err
		}
		return run.pollBoot(), nil
	}
}

// pollBoot is what a run does after it saw its VM booting: nothing, for a
// VM that calls home when it serves; for one that cannot
// (provider.Polled), look again after the provider's PollInterval, within
// the run's wait budget, and then hand on to the next run (a requeue), so
// that a Ready proxy waits at most about an interval for the reconciler.
func (run *run) pollBoot() outcome {
	if d := provider.PollInterval(run.prov); d > 0 {
		run.poll = d
		return wait
	}
	return done
}

// ready records a VM that serves the document's generation, which is
// then status.observedGeneration: the generation the proxy serves, not
// the last the reconciler read.
func (run *run) ready(ctx context.Context, next *proxy.Proxy, inst *provider.Instance) (outcome, error) {
	p := run.doc
	now := run.r.clock.Now()
	next.Status.Phase = proxy.PhaseReady
	next.Status.ObservedGeneration = p.Generation
	next.Reconciler.ReconfigureStart = time.Time{}
	next.Status.IP, next.Status.IPv6, next.Status.IPv6Prefix = inst.IP, inst.IPv6, inst.IPv6Prefix
	next.Status.Endpoint = net.JoinHostPort(inst.IP, strconv.Itoa(int(port(p.Spec))))
	if next.Status.RotationWaitUntil == nil {
		// A rotation waiting for the namespace's budget keeps saying why.
		next.Status.Message = ""
	}
	next.Reconciler.Attempts = 0
	next.Reconciler.BootFailures = 0
	msg := "Proxy is serving at " + next.Status.Endpoint
	if next.Status.Zone != "" {
		msg += " in zone " + next.Status.Zone
	}
	msg += "."
	if full := next.Reconciler.FullZones; len(full) > 0 {
		msg += " Out of capacity: " + strings.Join(full, ", ") + "."
		next.Reconciler.FullZones = nil
	}
	setReady(next, "True", "Ready", msg, now)
	if err := run.write(ctx, next, false); err != nil {
		return done, err
	}
	if err := run.retire(ctx, run.prov); err != nil {
		return done, err
	}
	switch p.Status.Phase {
	case proxy.PhaseReady:
	case proxy.PhaseReconfiguring:
		run.log.InfoContext(ctx, "proxy reconfigured", slog.String("endpoint", next.Status.Endpoint), slog.String("providerID", p.Status.ProviderID),
			slog.Int64("generation", p.Generation), slog.Float64("seconds", now.Sub(p.Reconciler.ReconfigureStart).Seconds()))
	default:
		// Since the proxy's creation is what its user waited; since the
		// VM's creation is what this boot took, replacements apart.
		run.log.InfoContext(ctx, "proxy ready", slog.String("endpoint", next.Status.Endpoint), slog.String("providerID", p.Status.ProviderID),
			slog.Float64("secondsSinceCreate", now.Sub(p.CreateTime).Seconds()),
			slog.Float64("secondsSinceBoot", now.Sub(run.bootStart(inst)).Seconds()))
	}
	return done, nil
}

// bootStart is when the current VM's boot began: as recorded when it was
// created, or, for a document from before the record, as the provider says.
func (run *run) bootStart(inst *provider.Instance) time.Time {
	if t := run.doc.Reconciler.BootStart; !t.IsZero() {
		return t
	}
	return inst.CreatedAt
}

// bootFailed counts a VM that did not become ready and replaces it; the
// MaxBootFailures-th fails the proxy, with the last lines of that VM's
// console in status.consoleTail (read before the VM goes), and fail
// deletes the VM.
func (run *run) bootFailed(ctx context.Context, reason, message string) (outcome, error) {
	p := run.doc
	failures := p.Reconciler.BootFailures + 1
	run.log.WarnContext(ctx, "instance did not become ready", slog.String("providerID", p.Status.ProviderID),
		slog.String("why", reason), slog.Int64("bootFailures", failures))
	if failures < int64(run.r.opts.MaxBootFailures) {
		next := run.next()
		next.Reconciler.BootFailures = failures
		run.doc = next
		return run.replace(ctx, reason, fmt.Sprintf("%s Replacing it (%d of %d boots failed).", message, failures, run.r.opts.MaxBootFailures))
	}
	msg := fmt.Sprintf("%s %d boots in a row failed; the proxy is not retried.", message, failures)
	tail := run.consoleTail(ctx)
	if len(tail) > 0 {
		msg += " The last lines of its serial console are in status.consoleTail (shown to editors and owners)."
	}
	next := run.next()
	next.Reconciler.BootFailures = failures
	next.Status.ConsoleTail = tail
	run.doc = next
	return run.fail(ctx, reason, msg)
}

// refused handles a VM that refused the generation it was handed (its
// agent could not serve it, put back the one it served before, and said
// so at once: Instance.RefusedGeneration). Nothing will change by itself:
// the agent does not try the same configuration again. So the proxy says
// why now, and acts now rather than at its reconfigure timeout: a VM that
// never served this proxy (a claimed warm VM, or one given a change while
// booting) is a boot that failed; one that served it is replaced by a VM
// made with the generation it refused, since until then it serves the
// previous one, the previous credentials and sources among it.
func (run *run) refused(ctx context.Context, inst *provider.Instance) (outcome, error) {
	p := run.doc
	why := strings.TrimPrefix(inst.BootError, fmt.Sprintf("generation %d: ", inst.RefusedGeneration))
	msg := fmt.Sprintf("Instance %s could not serve generation %d of the configuration (%s) and serves generation %d still.",
		p.Status.ProviderID, inst.RefusedGeneration, why, inst.Generation)
	if p.Status.Phase == proxy.PhaseProvisioning {
		return run.bootFailed(ctx, "ConfigurationRefused", msg)
	}
	return run.replace(ctx, "ConfigurationRefused", msg+" Replacing it with an instance made with that generation.")
}

// missing handles a Get that found no VM.
func (run *run) missing(ctx context.Context) (outcome, error) {
	p := run.doc
	now := run.r.clock.Now()
	if p.Status.Phase == proxy.PhaseReady || p.Status.Phase == proxy.PhaseReconfiguring {
		// It was seen running: its absence is no lag of a new VM.
		return run.replace(ctx, "InstanceLost", fmt.Sprintf("Instance %s no longer exists; replacing it.", p.Status.ProviderID))
	}
	since := p.Reconciler.NotFoundSince
	if since.IsZero() || now.Sub(since) < run.r.opts.NotFoundGrace {
		// A VM just created may not be visible yet: note when it went
		// missing, and let the next look (its call-home, the sweep) decide.
		next := run.next()
		if since.IsZero() {
			next.Reconciler.NotFoundSince = now
		}
		return done, run.write(ctx, next, false)
	}
	return run.replace(ctx, "InstanceLost", fmt.Sprintf("Instance %s no longer exists; replacing it.", p.Status.ProviderID))
}
