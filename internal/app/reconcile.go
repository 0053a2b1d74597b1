package app

import (
	"context"
	"errors"
	"log/slog"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/egress-proxies/egress/internal/callhome"
	"github.com/egress-proxies/egress/internal/events"
	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/queue"
	"github.com/egress-proxies/egress/internal/reconcile"
)

// Reconcile runs one reconcile for an event of the Reconcile function:
// Firestore document events, reconcile requests on proxy-reconcile and the
// VMs' call-homes on proxy-callhome (queue.DecodeReconcileEvent). It
// returns an error, so that the event is delivered again, only when the
// run could not read or write the document; an event that cannot be read
// is logged and acknowledged, since a redelivery would be refused the same
// way.
func (a *App) Reconcile(ctx context.Context, e event.Event) error {
	ctx, inv := metering.Start(ctx, string(Reconcile))
	var (
		key     proxy.Key
		pool    string
		t       reconcile.Trigger
		outcome = metering.OK
	)
	defer func() {
		attrs := []slog.Attr{slog.String("trigger", string(t.Reason))}
		if key != (proxy.Key{}) {
			attrs = append(attrs, slog.String("document", key.Path()))
		}
		if pool != "" {
			attrs = append(attrs, slog.String("document", proxy.PoolPath(pool)))
		}
		inv.End(ctx, a.Log, outcome, attrs...)
	}()
	log := a.Log.With(slog.String("event", e.ID()), slog.String("type", e.Type()))
	if a.reconciler == nil {
		outcome = metering.Failed
		err := errors.New("this process does not serve Reconcile")
		log.ErrorContext(ctx, "Reconcile: not served here", slog.Any("error", err))
		return err
	}
	var err error
	switch {
	case events.IsDocumentEvent(e):
		t.Reason = proxy.ReasonWritten
		key, pool, err = events.Document(e)
	case e.Type() == queue.MessagePublishedType:
		var rm proxy.ReconcileMessage
		m, isCallHome, derr := queue.IsCallHome(e)
		switch {
		case derr != nil:
			err = derr
		case isCallHome:
			// A VM's: who sent it, and whether it may, first.
			key, rm, err = a.callhomes.Handle(ctx, m)
			if err != nil && !errors.Is(err, callhome.ErrRefused) {
				outcome = metering.Failed
				log.ErrorContext(ctx, "Reconcile: call-home not handled; it will be delivered again", slog.Any("error", err))
				return err
			}
			if err == nil && key == (proxy.Key{}) {
				// Access lines, written; the invocation line's trigger.
				t.Reason = proxy.Reason(queue.KindAccess)
				return nil
			}
		default:
			key, rm, err = queue.DecodeReconcileEvent(e)
			if err == nil && rm.Reason == proxy.ReasonAccessPull {
				t.Reason = rm.Reason
				return a.pullAccess(ctx, log, rm.AccessPull, &outcome)
			}
		}
		if err == nil {
			t = reconcile.TriggerOf(rm)
			pool, _ = rm.PoolName()
		}
	default:
		err = errors.New("Reconcile takes Firestore document events and messagePublished events on " + queue.ReconcileTopic + " and " + queue.CallHomeTopic)
	}
	if err != nil {
		outcome = metering.Ignored
		log.ErrorContext(ctx, "Reconcile: event ignored", slog.Any("error", err))
		return nil
	}
	if pool != "" {
		return a.reconcilePool(ctx, log, pool, &outcome)
	}
	if err := a.reconciler.Reconcile(ctx, key, t); err != nil {
		outcome = metering.Failed
		log.ErrorContext(ctx, "Reconcile: run failed; the event will be delivered again", slog.String("document", key.Path()), slog.Any("error", err))
		return err
	}
	return nil
}

// reconcilePool runs one reconcile of a warm pool (package pools), for an
// event of its document or a message naming it.
func (a *App) reconcilePool(ctx context.Context, log *slog.Logger, pool string, outcome *string) error {
	if err := a.pools.Reconcile(ctx, pool); err != nil {
		*outcome = metering.Failed
		log.ErrorContext(ctx, "Reconcile: pool run failed; the event will be delivered again", slog.String("document", proxy.PoolPath(pool)), slog.Any("error", err))
		return err
	}
	return nil
}

// pullAccess reads the access lines of the VMs read by pull that the
// collector's request names (package accesspull) into the log the
// call-homes' lines go to. Only a failure to read the cursors is worth
// a redelivery: one VM's failure is logged, and the next tick asks again.
func (a *App) pullAccess(ctx context.Context, log *slog.Logger, req *proxy.AccessPull, outcome *string) error {
	if a.puller == nil {
		*outcome = metering.Ignored
		log.WarnContext(ctx, "Reconcile: access lines asked for, but this process reads no VM's (no provider whose VMs are read by pull)")
		return nil
	}
	if req == nil {
		req = &proxy.AccessPull{}
	}
	if _, err := a.puller.Pull(ctx, *req); err != nil {
		*outcome = metering.Failed
		log.ErrorContext(ctx, "Reconcile: access lines not read; the request will be delivered again", slog.Any("error", err))
		return err
	}
	return nil
}
