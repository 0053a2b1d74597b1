// Package spend is what proxies and namespaces cost, from their documents
// and the prices the deployment last read (pricing.Catalog): a proxy's
// status.cost, a namespace's month, and the forecast a request would add
// to it, which a namespace's budget (tenancy.Budget) bounds.
//
// It reads prices only through the catalog, never a cloud's price API on
// a request's path, and converts currencies only at the deployment's own
// dated rates (COST_RATES): a price or a rate that cannot be had makes
// the cost "unknown", with the reason, and never a guess.
package spend

import (
	"context"
	"errors"
	"time"

	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/proxy"
)

// Refresh is how old a proxy's status.cost may grow before a write of its
// status computes it again: the cost moves by the second, and a document
// rewritten at every run for it would never settle.
const Refresh = time.Hour

// ErrNoCatalog is the reason of a cost when the process has no price
// catalog at all.
var ErrNoCatalog = errors.New("the deployment has no price catalog")

// Costs computes costs at the deployment's rates from its catalog. A nil
// Catalog makes every cost unknown, saying so.
type Costs struct {
	Catalog pricing.Catalog
	Rates   pricing.Rates
}

// Key is the price p is costed at: its cloud and placement, the zone its
// VM runs in where the placement names only a region.
func Key(p *proxy.Proxy) pricing.Key {
	zone := p.Spec.Placement.Zone
	if zone == "" {
		zone = p.Status.Zone
	}
	return pricing.Key{Provider: p.Spec.Provider, Region: p.Spec.Placement.Region, Zone: zone, MachineType: p.Spec.Placement.MachineType}
}

// UseOf is what p used, as its document tells it: from its creation to
// its deletion's request (its VM goes then), and its last traffic report.
func UseOf(p *proxy.Proxy) pricing.Use {
	u := pricing.Use{Since: p.CreateTime}
	if p.DeleteRequestTime != nil {
		u.Until = *p.DeleteRequestTime
	}
	if t := p.Status.Traffic; t != nil {
		u.Month, u.MonthBytes = t.Month, t.MonthBytes
	}
	return u
}

// Proxy is p's cost in the month of now, as of now.
func (c Costs) Proxy(ctx context.Context, p *proxy.Proxy, now time.Time) pricing.Cost {
	month, _, _ := pricing.Month(now)
	if c.Catalog == nil {
		return pricing.UnknownCost(month, now, c.Rates, ErrNoCatalog)
	}
	price, err := c.Catalog.Price(ctx, Key(p))
	if err != nil {
		return pricing.UnknownCost(month, now, c.Rates, err)
	}
	return pricing.MonthCost(price, UseOf(p), month, now, c.Rates)
}

// Due reports whether p's status.cost is to be computed again at now:
// it has none, it is of another month, or it is Refresh old.
func Due(p *proxy.Proxy, now time.Time) bool {
	c := p.Status.Cost
	return c == nil || Stale(c.Month, c.AsOf, now)
}

// Stale reports whether a cost of month, as of asOf, is to be computed
// again at now: it is of another month, or Refresh old. The reconciler
// asks it of a status it writes (Due), the collector of the costs it
// reads with every document's claim, to ask for a settled proxy's.
func Stale(month string, asOf, now time.Time) bool {
	current, _, _ := pricing.Month(now)
	return month != current || now.Sub(asOf) >= Refresh
}

// StaticCatalog is a catalog held in memory: the tests', and a
// deployment's before the store's is plugged in.
type StaticCatalog map[pricing.Key]pricing.Price

// Price is the price of key, or an *pricing.UnknownError.
func (s StaticCatalog) Price(_ context.Context, key pricing.Key) (pricing.Price, error) {
	if p, ok := s[key]; ok {
		return p, nil
	}
	// A price of the region serves a placement that names a zone.
	if p, ok := s[pricing.Key{Provider: key.Provider, Region: key.Region, MachineType: key.MachineType}]; ok && key.Zone != "" {
		return p, nil
	}
	return pricing.Price{}, &pricing.UnknownError{Key: key, Reason: "no price was read for it"}
}
