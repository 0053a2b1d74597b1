package gc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/egress-proxies/egress/internal/proxy"
)

// PoolLister is the part of a Store that names the warm pools. A Store
// that implements it (*store.Store, *storefake.Store) has every pool
// re-driven on each run, so a pool whose event was lost still refills,
// shrinks, deletes its tombstones and goes.
type PoolLister interface {
	PoolNames(ctx context.Context) ([]string, error)
}

// redrivePools asks for one reconcile of every pool: pools are few, and
// one message each costs less than deciding which need it.
func (c *Collector) redrivePools(ctx context.Context) (requeued int, err error) {
	l, ok := c.store.(PoolLister)
	if !ok {
		return 0, nil
	}
	names, err := l.PoolNames(ctx)
	if err != nil {
		c.log.ErrorContext(ctx, "cannot read the pools; none is re-driven this run", slog.Any("error", err))
		return 0, fmt.Errorf("%w: reading the pools: %w", ErrIncomplete, err)
	}
	var errs []error
	for _, name := range names {
		if err := c.requeuer.Publish(ctx, proxy.ReconcileMessage{Document: proxy.PoolPath(name), Reason: proxy.ReasonSweep}); err != nil {
			errs = append(errs, fmt.Errorf("re-driving %s: %w", proxy.PoolPath(name), err))
			continue
		}
		requeued++
	}
	return requeued, errors.Join(errs...)
}
