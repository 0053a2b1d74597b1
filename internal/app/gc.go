package app

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/egress-proxies/egress/internal/gc"
	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/queue"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// CollectGarbage runs one collection for a messagePublished event on
// proxy-gc (a Cloud Scheduler tick). The message body is irrelevant: every
// tick means "collect now". After the collection it refreshes the price
// catalog, which reads each cloud's prices at most once a day
// (refreshPrices), then looks at the namespaces' budgets (lookAtBudgets):
// neither fails the tick.
//
// It returns an error, so that Pub/Sub delivers the tick again, only when
// the run could not look at everything (gc.ErrIncomplete: a provider or the
// documents could not be read). A delete or requeue that failed is logged
// and the event acknowledged: the next tick, minutes away, retries it
// anyway, whereas a redelivered tick would re-run the whole collection at
// Pub/Sub's backoff for as long as one VM refuses to go — and a run is
// idempotent either way.
func (a *App) CollectGarbage(ctx context.Context, e event.Event) error {
	ctx, inv := metering.Start(ctx, string(CollectGarbage))
	outcome := metering.OK
	defer func() { inv.End(ctx, a.Log, outcome) }()
	log := a.Log.With(slog.String("event", e.ID()))
	if a.collector == nil {
		outcome = metering.Failed
		err := errors.New("this process does not serve CollectGarbage")
		log.ErrorContext(ctx, "CollectGarbage: not served here", slog.Any("error", err))
		return err
	}
	msg, err := queue.DecodeMessagePublished(e)
	if err != nil {
		// A redelivery would be refused the same way.
		outcome = metering.Ignored
		log.ErrorContext(ctx, "CollectGarbage: event ignored", slog.Any("error", err))
		return nil
	}
	log = log.With(slog.String("messageID", msg.Message.MessageID))
	_, err = a.collector.Run(ctx)
	now := time.Now()
	a.refreshPrices(ctx, log, now)
	a.lookAtBudgets(ctx, log, now)
	switch {
	case gc.Waiting(err):
		// A rate limit's turn is no failure: said as a wait, and the
		// tick delivered again lists once the turn comes.
		outcome = metering.Failed
		log.WarnContext(ctx, "CollectGarbage: a listing waits its turn under its account's rate limit; the tick will be delivered again", slog.Any("error", err))
		return err
	case errors.Is(err, gc.ErrIncomplete):
		outcome = metering.Failed
		log.ErrorContext(ctx, "CollectGarbage: run incomplete; the tick will be delivered again", slog.Any("error", err))
		return err
	case err != nil:
		log.ErrorContext(ctx, "CollectGarbage: run finished with failures; the next run retries them", slog.Any("error", err))
	}
	return nil
}

// lookAtBudgets, on a collector's tick, tells the budget thresholds the
// namespaces' months reached (budgetalert) and stops or lets go the
// traffic of those whose budget stops it (budgetstop), from one listing
// of the namespaces. A failure is logged and never fails the tick: the
// next tick, minutes away, looks again (the stops' requests are
// idempotent).
func (a *App) lookAtBudgets(ctx context.Context, log *slog.Logger, now time.Time) {
	if a.budgets == nil && a.budgetStop == nil {
		return
	}
	namespaces, err := tenancy.All(ctx, a.store)
	if err != nil {
		log.WarnContext(ctx, "CollectGarbage: the budgets were not looked at", slog.Any("error", err))
		return
	}
	if a.budgets != nil {
		a.budgets.Run(ctx, namespaces, now)
	}
	if a.budgetStop != nil {
		if _, err := a.budgetStop.Run(ctx, namespaces, now); err != nil {
			log.WarnContext(ctx, "CollectGarbage: the budgets that stop traffic were not looked at", slog.Any("error", err))
		}
	}
}
