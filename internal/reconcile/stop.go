package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/tenancy"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// A namespace whose budget stops traffic at it (tenancy.StopTraffic) and
// whose month reached it is marked by the collector's tick
// (tenancy.Namespace.TrafficStopped), which then asks each of its proxies
// for a run (proxy.ReasonTrafficStop). Such a run hands the proxy's VM
// the namespace's stop, or its end, without a new VM and without a new
// generation — the spec did not change — by the door the VM's cloud has:
//
//   - a provider.Reconfigurer's VM (GCE, Azure, the mock) gets the
//     configuration it serves again, at the same generation, with
//     vmconfig.Config.TrafficStop set or left out; its agent applies it
//     as any change, and it reports the same generation;
//   - a provider.TrafficStopper's VM (the clouds read through the status
//     door) is told through its proxy port, by a request only the
//     functions can sign, and told again at each of the tick's requests
//     while the stop holds: its engine forgets an order when it restarts;
//   - a VM of a spec's own cloud-init runs no engine of ours, and one of
//     a provider with neither door cannot be told: the run logs that it
//     carries on.
//
// Bookkeeping.TrafficStop is what the current VM was given, and every
// configuration the reconciler renders for the proxy afterwards (a PATCH,
// new credentials, a replacement VM) carries it, so no change lifts a
// stop the namespace did not lift. The run acts only on a Ready proxy
// with no change pending; any other waits for the next tick's request.
// The stop names its month, and the engine lets it lapse when its clock
// leaves that month: the month's turn needs no run to reach the VMs.

// namespaceReader is the store's read of a namespace, which the stop's
// run needs: *store.Store and *storefake.Store have it.
type namespaceReader interface {
	GetNamespace(ctx context.Context, name string) (*tenancy.Namespace, error)
}

// wantedStop is the stop the namespace's record asks of its proxies now:
// nil when it has none, or one of another month.
func (run *run) wantedStop(ctx context.Context) (*proxy.TrafficStop, error) {
	nr, ok := run.r.store.(namespaceReader)
	if !ok {
		return nil, errors.New("the store reads no namespace, so no stop of its traffic")
	}
	ns, err := nr.GetNamespace(ctx, run.doc.Namespace)
	if errors.Is(err, tenancy.ErrNamespaceNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading namespace %s: %w", run.doc.Namespace, err)
	}
	month, _, _ := pricing.Month(run.r.clock.Now())
	if st := ns.TrafficStopped; st != nil && st.Month == month {
		return &proxy.TrafficStop{Month: st.Month, Reason: st.Reason}, nil
	}
	return nil, nil
}

// sameStop reports whether two stops hold in the same month (or both are
// none): a reason that reads differently is no new stop.
func sameStop(a, b *proxy.TrafficStop) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Month == b.Month
}

// engineStop is the configuration's form of a stop.
func engineStop(st *proxy.TrafficStop) *vmconfig.TrafficStop {
	if st == nil {
		return nil
	}
	return &vmconfig.TrafficStop{Month: st.Month, Reason: st.Reason}
}

// trafficStop hands the current VM the namespace's stop, or its end,
// when it differs from what the VM was given: see the top of this file.
func (run *run) trafficStop(ctx context.Context) (outcome, error) {
	want, err := run.wantedStop(ctx)
	if err != nil {
		return done, err
	}
	p := run.doc
	rc, reconfigures := provider.AsReconfigurer(run.prov)
	ts, stops := provider.AsTrafficStopper(run.prov)
	// A Reconfigurer's VM keeps the stop in the configuration it serves,
	// across restarts; a TrafficStopper's engine keeps an order in memory
	// only, and one that restarted (a reboot) carries again. So a stop
	// such a VM was given is given again at each of the tick's requests,
	// minutes apart: an engine that holds it takes the order and serves
	// the same stop.
	again := want != nil && stops && !reconfigures
	if sameStop(want, p.Reconciler.TrafficStop) && !again {
		return done, nil
	}
	changed := !sameStop(want, p.Reconciler.TrafficStop)
	id := p.Status.ProviderID
	log := run.log.With(slog.String("providerID", id), slog.Any("trafficStop", want))
	if !run.defaultBootstrap() {
		log.WarnContext(ctx, "the spec's own cloud-init runs no engine of this deployment: its traffic is not stopped at the budget")
		return done, nil
	}
	if p.Reconciler.LeaseHolder != run.holder {
		// The lease first, as before a Reconfigure: a run that read the
		// document before another's write must not hand the VM an older
		// stop after a newer one.
		if err := run.write(ctx, run.next(), true); err != nil {
			return done, err
		}
		p = run.doc
	}
	switch {
	case reconfigures:
		_, _, engine, err := run.bootstrap(ctx, p.Generation)
		if err != nil {
			return run.bootstrapFailed(ctx, err)
		}
		if engine == nil {
			log.WarnContext(ctx, "the reconciler renders no engine configuration: the VM's traffic is not stopped at the budget")
			return done, run.write(ctx, run.next(), false)
		}
		engine.TrafficStop = engineStop(want)
		if err := rc.Reconfigure(ctx, id, provider.ReconfigureRequest{UID: p.UID, Namespace: p.Namespace, ProxyName: p.Name, Engine: engine}); err != nil {
			return run.stopNotHanded(ctx, log, err)
		}
	case stops:
		if err := ts.StopTraffic(ctx, id, engineStop(want)); err != nil {
			return run.stopNotHanded(ctx, log, err)
		}
	default:
		log.WarnContext(ctx, "provider "+p.Spec.Provider+" can tell its VMs no stop: their traffic is not stopped at the budget")
		return done, run.write(ctx, run.next(), false)
	}
	next := run.next()
	next.Reconciler.TrafficStop = want
	switch {
	case !changed:
		log.DebugContext(ctx, "the stop at the namespace's budget given again")
	case want != nil:
		log.InfoContext(ctx, "traffic stopped at the namespace's budget", slog.String("month", want.Month))
	default:
		log.InfoContext(ctx, "traffic carried again: the namespace's stop is lifted")
	}
	return done, run.write(ctx, next, false)
}

// stopNotHanded ends a run whose VM could not be handed the stop (it is
// gone, it does not answer, its cloud refused): the lease is let go and
// nothing else is written, so the proxy's phase and conditions say
// nothing of it; the collector's next tick asks again, and a VM that is
// gone is the sweep's and its events' to find.
func (run *run) stopNotHanded(ctx context.Context, log *slog.Logger, err error) (outcome, error) {
	log.WarnContext(ctx, "the budget's stop was not handed to the VM; the collector's next tick asks again", slog.Any("error", err))
	return done, run.write(ctx, run.next(), false)
}
