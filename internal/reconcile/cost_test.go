package reconcile_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/gc"
	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
	"github.com/egress-proxies/egress/internal/spend"
	"github.com/egress-proxies/egress/internal/store/rules"
)

// TestStatusShowsCost: a proxy's status.cost is written with its status
// from the catalog's price, and computed again only once it is
// spend.Refresh old: a run within the hour writes nothing for it, the
// first after it writes the new figure once, and the document settles.
//
// The mock's VM at 0.01 EUR an hour, made at start (2026-12-02 10:00
// UTC): its month's forecast is the 710 hours to 2027-01-01 00:00, 7.10
// EUR; two hours on, the month so far is 0.02 EUR.
func TestStatusShowsCost(t *testing.T) {
	w := pricedWorld(t)
	eur := func(nanos int64) pricing.Money { return pricing.Money{Currency: "EUR", Nanos: nanos} }
	type seen struct {
		Cost   pricing.Cost
		Writes int
	}
	cost := func(at time.Time, vm int64) pricing.Cost {
		return pricing.Cost{Month: "2026-12", Currency: "EUR", AsOf: at, VM: eur(vm), Address: eur(0), Traffic: eur(0),
			MonthToDate: eur(vm), Forecast: eur(7_100_000_000)}
	}
	look := func() seen {
		w.forget()
		w.reconcile(reconcile.Trigger{Reason: proxy.ReasonSweep})
		p := w.doc()
		if p.Status.Cost == nil {
			t.Fatal("no status.cost")
		}
		return seen{*p.Status.Cost, w.writes}
	}
	if diff := cmp.Diff(seen{cost(start, 0), 0}, look()); diff != "" {
		t.Errorf("Ready, within the hour of its first cost (-want +got):\n%s", diff)
	}
	w.clock.Advance(start.Add(2 * time.Hour).Sub(w.clock.Now()))
	if diff := cmp.Diff(seen{cost(start.Add(2*time.Hour), 20_000_000), 1}, look()); diff != "" {
		t.Errorf("two hours on (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(seen{cost(start.Add(2*time.Hour), 20_000_000), 0}, look()); diff != "" {
		t.Errorf("again at once (-want +got):\n%s", diff)
	}
}

// TestDeletedProxyStillCounts: what a proxy cost in the month stays in its
// namespace once its document goes (DeletedSpend), added in the
// transaction of the deletion: three hours at 0.01 EUR, 0.03 EUR.
func TestDeletedProxyStillCounts(t *testing.T) {
	price := pricing.Price{Provider: mock.Type, VMPerHour: pricing.Money{Currency: "EUR", Nanos: 10_000_000}}
	rates, err := pricing.ParseRates("EUR", "")
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, reconcile.Options{Costs: spend.Costs{Catalog: spend.StaticCatalog{{Provider: mock.Type}: price}, Rates: rates}})
	ctx := context.Background()
	if _, err := w.store.CreateNamespace(ctx, rules.NewNamespace(w.key.Namespace, nil, 0, 20, start)); err != nil {
		t.Fatal(err)
	}
	w.ready()
	w.clock.Advance(start.Add(3 * time.Hour).Sub(w.clock.Now()))
	w.requestDeletion()
	w.reconcile(reconcile.Trigger{})
	ns, err := w.store.GetNamespace(ctx, w.key.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int64{"2026-12": 30_000_000}, ns.DeletedSpend); diff != "" {
		t.Errorf("the namespace's deleted spend (-want +got):\n%s", diff)
	}
}

// gcProviders serves the collector the world's mock, its one type.
type gcProviders struct{ providers }

func (gcProviders) Types() []string { return []string{mock.Type} }

// TestCollectorRefreshesStaleCost: a settled Ready proxy has no write of
// its own to carry a new status.cost, so the collector's tick asks for it
// (proxy.ReasonCost) once it is spend.Refresh old or of another month, and
// the run that answers writes the cost alone: one write, no look at the
// VM. Within the hour the tick asks for nothing.
//
// The mock's VM at 0.01 EUR an hour from start (2026-12-02 10:00 UTC), as
// in TestStatusShowsCost; on 2027-01-01 at 00:30, January's month so far
// is half an hour, 0.005 EUR, and its forecast the 744 hours of January,
// 7.44 EUR.
func TestCollectorRefreshesStaleCost(t *testing.T) {
	w := pricedWorld(t)
	collector := gc.New(gcProviders{providers{w.mock}}, w.store, w.queue, w.clock, slog.New(slog.DiscardHandler), gc.Options{CostCurrency: "EUR"})
	eur := func(nanos int64) pricing.Money { return pricing.Money{Currency: "EUR", Nanos: nanos} }
	type seen struct {
		Asked  int // the tick's cost requests
		Writes int
		Gets   int // the provider's Gets of the VM
		Cost   pricing.Cost
	}
	tick := func(at time.Time) seen {
		t.Helper()
		w.clock.Advance(at.Sub(w.clock.Now()))
		w.forget()
		report, err := collector.Run(context.Background())
		if err != nil {
			t.Fatalf("gc run: %v", err)
		}
		w.deliver()
		return seen{report.Sweep.Costs, w.writes, w.calls()[mock.MethodGet], *w.doc().Status.Cost}
	}
	cases := []struct {
		name string
		at   time.Time
		want seen
	}{
		{"half an hour after its first cost", start.Add(30 * time.Minute),
			seen{0, 0, 0, pricing.Cost{Month: "2026-12", Currency: "EUR", AsOf: start, VM: eur(0), Address: eur(0), Traffic: eur(0), MonthToDate: eur(0), Forecast: eur(7_100_000_000)}}},
		{"two hours on", start.Add(2 * time.Hour),
			seen{1, 1, 0, pricing.Cost{Month: "2026-12", Currency: "EUR", AsOf: start.Add(2 * time.Hour), VM: eur(20_000_000), Address: eur(0), Traffic: eur(0),
				MonthToDate: eur(20_000_000), Forecast: eur(7_100_000_000)}}},
		{"the next tick", start.Add(2*time.Hour + 5*time.Minute),
			seen{0, 0, 0, pricing.Cost{Month: "2026-12", Currency: "EUR", AsOf: start.Add(2 * time.Hour), VM: eur(20_000_000), Address: eur(0), Traffic: eur(0),
				MonthToDate: eur(20_000_000), Forecast: eur(7_100_000_000)}}},
		{"the month turned", time.Date(2027, 1, 1, 0, 30, 0, 0, time.UTC),
			seen{1, 1, 0, pricing.Cost{Month: "2027-01", Currency: "EUR", AsOf: time.Date(2027, 1, 1, 0, 30, 0, 0, time.UTC), VM: eur(5_000_000), Address: eur(0), Traffic: eur(0),
				MonthToDate: eur(5_000_000), Forecast: eur(7_440_000_000)}}},
	}
	for _, c := range cases {
		if diff := cmp.Diff(c.want, tick(c.at)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

// pricedWorld is a world whose mock VM costs 0.01 EUR an hour, in a
// deployment that costs in EUR, with its proxy Ready.
func pricedWorld(t *testing.T) *world {
	t.Helper()
	price := pricing.Price{Provider: mock.Type, VMPerHour: pricing.Money{Currency: "EUR", Nanos: 10_000_000}}
	rates, err := pricing.ParseRates("EUR", "")
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, reconcile.Options{Costs: spend.Costs{Catalog: spend.StaticCatalog{{Provider: mock.Type}: price}, Rates: rates}})
	w.ready()
	return w
}
