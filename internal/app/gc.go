package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/gc"
	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/queue"
)

// LoadGCOptions reads and validates the CollectGarbage configuration:
//
//	GC_GRACE_PERIOD     age under which an unclaimed VM is kept (default 10m, > 0)
//	GC_PARALLELISM      deletes and requeues in flight at once (default 16, ≥ 1)
//	GC_DRY_RUN          report what would be deleted, delete nothing (default false)
//	GC_SWEEP_THRESHOLD  time without progress before a document is re-driven (default 2m, > 0)
func LoadGCOptions(getenv Getenv) (gc.Options, error) {
	o := gc.Options{SweepLimit: gc.DefaultSweepLimit}
	var err error
	if o.GracePeriod, err = positiveDuration(getenv, "GC_GRACE_PERIOD", gc.DefaultGracePeriod); err != nil {
		return o, err
	}
	if o.SweepThreshold, err = positiveDuration(getenv, "GC_SWEEP_THRESHOLD", gc.DefaultSweepThreshold); err != nil {
		return o, err
	}
	o.Parallelism = gc.DefaultParallelism
	if v := getenv("GC_PARALLELISM"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return o, fmt.Errorf("config: GC_PARALLELISM=%q is not a whole number of at least 1", v)
		}
		o.Parallelism = n
	}
	if v := getenv("GC_DRY_RUN"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return o, fmt.Errorf("config: GC_DRY_RUN=%q is not a boolean: want true or false", v)
		}
		o.DryRun = b
	}
	return o, nil
}

// positiveDuration is Duration refusing zero, which is far likelier a slip
// than a wish: a zero grace period would let a run delete a VM mid-create,
// and a zero threshold re-drive every unsettled document on every run.
func positiveDuration(getenv Getenv, name string, def time.Duration) (time.Duration, error) {
	d, err := Duration(getenv, name, def)
	if err != nil {
		return 0, err
	}
	if d == 0 {
		return 0, fmt.Errorf("config: %s=%q must be longer than zero", name, getenv(name))
	}
	return d, nil
}

// CollectGarbage serves the CollectGarbage function: each messagePublished
// event on proxy-gc (a Cloud Scheduler tick) is one garbage-collection run.
type CollectGarbage struct {
	rt   *Runtime
	opts gc.Options

	once      sync.Once
	collector *gc.Collector
	err       error
}

// NewCollectGarbage validates the GC configuration of rt's environment. The
// clients are dialled on the first event, not here.
func NewCollectGarbage(rt *Runtime) (*CollectGarbage, error) {
	opts, err := LoadGCOptions(rt.Getenv)
	if err != nil {
		return nil, err
	}
	return &CollectGarbage{rt: rt, opts: opts}, nil
}

func (f *CollectGarbage) collectorFor(ctx context.Context) (*gc.Collector, error) {
	f.once.Do(func() {
		st, pub, err := f.rt.services(ctx)
		if err != nil {
			f.err = err
			return
		}
		f.collector = gc.New(f.rt.Providers, st, pub, clock.Real{}, f.rt.Log, f.opts)
	})
	return f.collector, f.err
}

// Handle runs one collection for a messagePublished event. The message body
// is irrelevant: every tick means "collect now".
//
// It returns an error, so that Pub/Sub delivers the tick again, only when
// the run could not look at everything (gc.ErrIncomplete: a provider or the
// documents could not be read). A delete or requeue that failed is logged
// and the event acknowledged: the next tick, minutes away, retries it
// anyway, whereas a redelivered tick would re-run the whole collection at
// Pub/Sub's backoff for as long as one VM refuses to go — and a run is
// idempotent either way.
func (f *CollectGarbage) Handle(ctx context.Context, e event.Event) error {
	ctx, inv := metering.Start(ctx, "CollectGarbage")
	outcome := metering.OK
	defer func() { inv.End(ctx, f.rt.Log, outcome) }()
	log := f.rt.Log.With(slog.String("event", e.ID()))
	msg, err := queue.DecodeMessagePublished(e)
	if err != nil {
		// A redelivery would be refused the same way.
		outcome = metering.Ignored
		log.ErrorContext(ctx, "CollectGarbage: event ignored", slog.Any("error", err))
		return nil
	}
	log = log.With(slog.String("messageID", msg.Message.MessageID))
	c, err := f.collectorFor(ctx)
	if err != nil {
		outcome = metering.Failed
		log.ErrorContext(ctx, "CollectGarbage: cannot reach the document store or the queue", slog.Any("error", err))
		return err
	}
	_, err = c.Run(ctx)
	switch {
	case errors.Is(err, gc.ErrIncomplete):
		outcome = metering.Failed
		log.ErrorContext(ctx, "CollectGarbage: run incomplete; the tick will be delivered again", slog.Any("error", err))
		return err
	case err != nil:
		log.ErrorContext(ctx, "CollectGarbage: run finished with failures; the next run retries them", slog.Any("error", err))
	}
	return nil
}
