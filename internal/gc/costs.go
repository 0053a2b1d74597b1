package gc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/spend"
)

// DefaultCostRefreshLimit bounds the proxies whose cost one run asks for.
// At the default tick of 5 minutes, 200 a run is 2,400 proxies an hour
// (spend.Refresh): a fleet larger than that sees its costs grow older
// than an hour, oldest first refreshed, rather than a storm of
// invocations on the tick after a month turns.
const DefaultCostRefreshLimit = 200

// costsDue are the claims whose status.cost is to be computed again at
// now, oldest first (none first), at most limit: a settled proxy's
// (Ready, and neither a pool's member, whose cost the reconciler never
// writes, nor a claimed one) whose cost is spend.Refresh old, of another
// month, or not there at all. A proxy on its way is written by its own
// runs, which compute its cost as they go. The order is the cost's age,
// then the key: the same proxies in the same order, run after run.
func costsDue(claims map[string]proxy.Claim, now time.Time, limit int) []proxy.Key {
	type due struct {
		key  proxy.Key
		asOf time.Time
	}
	var all []due
	for _, c := range claims {
		if c.Phase != proxy.PhaseReady || c.Key.Pool != "" || c.Claimed {
			continue
		}
		if c.Cost == nil {
			all = append(all, due{key: c.Key})
			continue
		}
		if spend.Stale(c.Cost.Month, c.Cost.AsOf, now) {
			all = append(all, due{key: c.Key, asOf: c.Cost.AsOf})
		}
	}
	slices.SortFunc(all, func(a, b due) int {
		return cmp.Or(a.asOf.Compare(b.asOf), cmp.Compare(a.key.Path(), b.key.Path()))
	})
	keys := make([]proxy.Key, 0, min(limit, len(all)))
	for _, d := range all[:min(limit, len(all))] {
		keys = append(keys, d.key)
	}
	return keys
}

// refreshCosts asks the reconciler for the cost of the settled proxies
// whose status.cost is stale (costsDue), one request each
// (proxy.ReasonCost): each costs one read and one write of the proxy's
// document, and nothing of its cloud. It returns how many it asked for
// and how many it could not.
func (c *Collector) refreshCosts(ctx context.Context, now time.Time, claims map[string]proxy.Claim) (int, int, error) {
	if c.opts.CostCurrency == "" {
		return 0, 0, nil
	}
	keys := costsDue(claims, now, c.opts.CostRefreshLimit)
	if len(keys) == c.opts.CostRefreshLimit {
		c.log.WarnContext(ctx, "more proxies with a stale cost than a run asks for; the rest wait for the next runs",
			slog.Int("limit", c.opts.CostRefreshLimit))
	}
	var (
		mu     sync.Mutex
		errs   []error
		failed int
	)
	c.forEach(len(keys), func(i int) {
		err := c.requeuer.Publish(ctx, proxy.ReconcileMessage{Document: keys[i].Path(), Reason: proxy.ReasonCost})
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			failed++
			errs = append(errs, fmt.Errorf("asking for the cost of %s: %w", keys[i], err))
		}
	})
	return len(keys) - failed, failed, errors.Join(errs...)
}

// logCosts logs, once a run, each namespace's month as its live proxies'
// status.cost says it: one "namespace cost" line per namespace with the
// month so far and the forecast in the deployment's currency, which a
// log-based metric charts (deploy/terraform/metrics.tf). The run has read
// every document's cost with its claim already, so the lines cost no
// read. They are as fresh as the proxies' costs (spend.Refresh, which
// refreshCosts keeps), and leave out what the namespace's deleted proxies
// spent (the namespace's GET adds it); a proxy whose cost is unknown, not
// computed yet, or of another month or currency is counted in unknown,
// not in the sums. A warm pool's members are no namespace's.
func (c *Collector) logCosts(ctx context.Context, now time.Time, claims map[string]proxy.Claim) {
	if c.opts.CostCurrency == "" {
		return
	}
	for _, m := range namespaceMonths(claims, now, c.opts.CostCurrency) {
		c.log.InfoContext(ctx, "namespace cost", slog.String("namespace", m.Namespace), slog.String("month", m.Month),
			slog.String("currency", c.opts.CostCurrency), slog.Float64("monthToDate", units(m.MonthToDate)),
			slog.Float64("forecast", units(m.Forecast)), slog.Int("proxies", m.Proxies), slog.Int("unknown", m.Unknown))
	}
}

// namespaceMonth is one namespace's month, as logCosts logs it: sums in
// nanos of the deployment's currency.
type namespaceMonth struct {
	Namespace, Month      string
	MonthToDate, Forecast int64
	// Proxies are the proxies counted in the sums; Unknown those that
	// are not (see logCosts).
	Proxies, Unknown int
}

// namespaceMonths sums the claims' costs of now's month in currency by
// namespace, sorted by namespace.
func namespaceMonths(claims map[string]proxy.Claim, now time.Time, currency string) []namespaceMonth {
	month, _, _ := pricing.Month(now)
	sums := map[string]*namespaceMonth{}
	for _, c := range claims {
		ns := c.Key.Namespace
		if c.Key.Pool != "" || ns == "" {
			continue
		}
		s := sums[ns]
		if s == nil {
			s = &namespaceMonth{Namespace: ns, Month: month}
			sums[ns] = s
		}
		if c.Cost == nil || c.Cost.Month != month || c.Cost.Currency != currency || c.Cost.Unknown {
			s.Unknown++
			continue
		}
		s.Proxies++
		s.MonthToDate += c.Cost.MonthToDate
		s.Forecast += c.Cost.Forecast
	}
	out := make([]namespaceMonth, 0, len(sums))
	for _, ns := range slices.Sorted(maps.Keys(sums)) {
		out = append(out, *sums[ns])
	}
	return out
}

// units is nanos in whole units of their currency, as a chart reads them.
func units(nanos int64) float64 { return float64(nanos) / 1e9 }
