package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/events"
	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/queue"
	"github.com/egress-proxies/egress/internal/reconcile"
	"github.com/egress-proxies/egress/internal/secrets"
)

// LoadReconcileOptions reads the Reconcile configuration:
//
//	RECONCILE_WAIT_BUDGET      how long one run waits for a VM before handing
//	                           on (default 1m; the function's timeout must
//	                           exceed it by the lease margin, Terraform sets 300s)
//	RECONCILE_INITIAL_BACKOFF  the first wait between two looks at a booting
//	                           VM (default 2s)
//	RECONCILE_MAX_BACKOFF      the longest such wait (default 10s, at least
//	                           the initial one)
//
// The backoffs trade provider Gets against the time from a VM running to
// its proxy showing Ready; `make bench` measures both.
func LoadReconcileOptions(getenv Getenv) (reconcile.Options, error) {
	var o reconcile.Options
	var err error
	if o.WaitBudget, err = positiveDuration(getenv, "RECONCILE_WAIT_BUDGET", reconcile.DefaultWaitBudget); err != nil {
		return o, err
	}
	if o.InitialBackoff, err = positiveDuration(getenv, "RECONCILE_INITIAL_BACKOFF", reconcile.DefaultInitialBackoff); err != nil {
		return o, err
	}
	if o.MaxBackoff, err = positiveDuration(getenv, "RECONCILE_MAX_BACKOFF", reconcile.DefaultMaxBackoff); err != nil {
		return o, err
	}
	if o.MaxBackoff < o.InitialBackoff {
		return o, fmt.Errorf("config: RECONCILE_MAX_BACKOFF=%s is shorter than RECONCILE_INITIAL_BACKOFF=%s", o.MaxBackoff, o.InitialBackoff)
	}
	// The lease must outlast a whole run: the budget plus the provider
	// calls around it.
	o.LeaseDuration = max(reconcile.DefaultLeaseDuration, o.WaitBudget+2*time.Minute)
	// A spec without user-data gets the default proxy.
	o.Bootstrap = func(s proxy.Spec, c proxy.Credentials) (string, error) {
		return bootstrap.Render(bootstrap.ForProxy(s, c))
	}
	return o, nil
}

// Reconcile serves the Reconcile function: Firestore document events and
// reconcile requests on proxy-reconcile.
type Reconcile struct {
	rt   *Runtime
	opts reconcile.Options

	once       sync.Once
	reconciler *reconcile.Reconciler
	err        error
}

// NewReconcile validates the Reconcile configuration of rt's environment.
// The clients are dialled on the first event.
func NewReconcile(rt *Runtime) (*Reconcile, error) {
	opts, err := LoadReconcileOptions(rt.Getenv)
	if err != nil {
		return nil, err
	}
	return &Reconcile{rt: rt, opts: opts}, nil
}

func (f *Reconcile) reconcilerFor(ctx context.Context) (*reconcile.Reconciler, error) {
	f.once.Do(func() {
		st, pub, err := f.rt.services(ctx)
		if err != nil {
			f.err = err
			return
		}
		f.reconciler = reconcile.New(st, f.rt.Providers, pub,
			lazySecrets{f.rt.Clients}, clock.Real{}, f.rt.Log, f.opts)
	})
	return f.reconciler, f.err
}

// Handle runs one reconcile for an event. It returns an error, so that the
// event is delivered again, only when the run could not read or write the
// document; an event that cannot be read is logged and acknowledged, since
// a redelivery would be refused the same way.
func (f *Reconcile) Handle(ctx context.Context, e event.Event) error {
	ctx, inv := metering.Start(ctx, "Reconcile")
	var (
		key     proxy.Key
		t       reconcile.Trigger
		outcome = metering.OK
	)
	defer func() {
		attrs := []slog.Attr{slog.String("trigger", t.Reason)}
		if key != (proxy.Key{}) {
			attrs = append(attrs, slog.String("document", key.Path()))
		}
		inv.End(ctx, f.rt.Log, outcome, attrs...)
	}()
	log := f.rt.Log.With(slog.String("event", e.ID()), slog.String("type", e.Type()))
	var err error
	switch {
	case events.IsDocumentEvent(e):
		t.Reason = "written"
		key, err = events.DocumentKey(e)
	case e.Type() == queue.MessagePublishedType:
		var msg queue.MessagePublishedData
		if msg, err = queue.DecodeMessagePublished(e); err == nil {
			var rm proxy.ReconcileMessage
			key, rm, err = queue.DecodeReconcileMessage(msg.Message)
			t = reconcile.Trigger{Reason: rm.Reason, Requested: true, Handoff: rm.Lease}
		}
	default:
		err = errors.New("Reconcile takes Firestore document events and messagePublished events on " + queue.ReconcileTopic)
	}
	if err != nil {
		outcome = metering.Ignored
		log.ErrorContext(ctx, "Reconcile: event ignored", slog.Any("error", err))
		return nil
	}
	r, err := f.reconcilerFor(ctx)
	if err != nil {
		outcome = metering.Failed
		log.ErrorContext(ctx, "Reconcile: cannot reach the document store or the queue", slog.Any("error", err))
		return err
	}
	if err := r.Reconcile(ctx, key, t); err != nil {
		outcome = metering.Failed
		log.ErrorContext(ctx, "Reconcile: run failed; the event will be delivered again", slog.String("document", key.Path()), slog.Any("error", err))
		return err
	}
	return nil
}

// lazySecrets dials Secret Manager on the first secret a spec names.
type lazySecrets struct{ clients *Clients }

func (l lazySecrets) Access(ctx context.Context, version string) (string, error) {
	c, err := l.clients.SecretManager(ctx)
	if err != nil {
		return "", err
	}
	return secrets.New(c).Access(ctx, version)
}
