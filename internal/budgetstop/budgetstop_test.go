package budgetstop_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/budgetstop"
	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/spend"
	"github.com/egress-proxies/egress/internal/store/rules"
	"github.com/egress-proxies/egress/internal/store/storefake"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// requests records the runs a look asks for.
type requests struct {
	mu   sync.Mutex
	docs []string
}

func (r *requests) Publish(_ context.Context, m proxy.ReconcileMessage) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m.Reason != proxy.ReasonTrafficStop {
		return nil
	}
	r.docs = append(r.docs, m.Document)
	return nil
}

func (r *requests) taken() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.docs
	r.docs = nil
	return got
}

var monthStart = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// world is a store with namespace team-a, whose budget of 1.00 EUR stops
// traffic, and its proxy p1, made at the month's start, whose VM costs
// 0.10 EUR an hour (its month reaches the budget ten hours in), and p2,
// whose deletion was asked (its VM goes: no run is asked for it); and
// team-b, whose budget of the same refuses new proxies only.
type world struct {
	store *storefake.Store
	asked *requests
	look  *budgetstop.Look
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{store: storefake.New(clock.NewFake(monthStart)), asked: &requests{}}
	perHour, _ := pricing.ParseMoney("0.10", "EUR")
	w.look = &budgetstop.Look{Store: w.store, Requeuer: w.asked, Log: slog.New(slog.DiscardHandler),
		Costs: spend.Costs{Catalog: spend.StaticCatalog{{Provider: mock.Type, Region: "us-central1"}: {Provider: mock.Type, VMPerHour: perHour}},
			Rates: pricing.Rates{Currency: "EUR"}}}
	for ns, at := range map[string]tenancy.AtBudget{"team-a": tenancy.StopTraffic, "team-b": tenancy.RefuseNew} {
		if _, err := w.store.CreateNamespace(ctx, rules.NewNamespace(ns, nil, 20, 20, monthStart)); err != nil {
			t.Fatal(err)
		}
		w.budget(t, ns, at)
		for _, name := range []string{"p1", "p2"} {
			p := &proxy.Proxy{Namespace: ns, Name: name, UID: ns + "-" + name, Generation: 1, CreateTime: monthStart,
				Spec:   proxy.Spec{Provider: mock.Type, Placement: proxy.Placement{Region: "us-central1"}},
				Status: proxy.Status{Phase: proxy.PhaseReady}}
			if name == "p2" {
				// Asked to go at the start: it costs nothing this month.
				p.DeleteRequestTime = &monthStart
			}
			if _, err := w.store.Create(ctx, p, 20); err != nil {
				t.Fatal(err)
			}
		}
	}
	return w
}

// budget gives ns a budget of 1.00 EUR that does at at it.
func (w *world) budget(t *testing.T, ns string, at tenancy.AtBudget) {
	t.Helper()
	if _, err := w.store.UpdateNamespace(context.Background(), ns, func(n *tenancy.Namespace) error {
		n.Budget = &tenancy.Budget{Monthly: "1.00", Currency: "EUR", AtBudget: at}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// seen is what one look did and left.
type seen struct {
	Summary budgetstop.Summary
	// Stopped is team-a's record, and team-b's (never).
	Stopped, StoppedB *tenancy.TrafficStopped
	// Asked are the documents asked for a run.
	Asked []string
}

func (w *world) run(t *testing.T, now time.Time) seen {
	t.Helper()
	ctx := context.Background()
	namespaces, err := tenancy.All(ctx, w.store)
	if err != nil {
		t.Fatal(err)
	}
	s, err := w.look.Run(ctx, namespaces, now)
	if err != nil {
		t.Fatal(err)
	}
	a, err := w.store.GetNamespace(ctx, "team-a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := w.store.GetNamespace(ctx, "team-b")
	if err != nil {
		t.Fatal(err)
	}
	return seen{Summary: s, Stopped: a.TrafficStopped, StoppedB: b.TrafficStopped, Asked: w.asked.taken()}
}

// TestLook: the record of team-a's stop is written once its month so far
// (not its forecast) reaches the budget, kept while it holds, and cleared
// when its budget no longer stops traffic and when the month turns; each
// look with a stop, and the one that clears it, asks team-a's proxy for a
// run, never the one on its way out; team-b, whose budget refuses new
// proxies only, is never stopped nor asked.
func TestLook(t *testing.T) {
	w := newWorld(t)
	p1 := proxy.Key{Namespace: "team-a", Name: "p1"}.Path()
	in := func(d time.Duration) time.Time { return monthStart.Add(d) }
	stopOf := func(month, toDate string) *tenancy.TrafficStopped {
		return &tenancy.TrafficStopped{Month: month,
			Reason: "the namespace's month " + month + " is " + toDate + " EUR so far, at its monthly budget of 1.00 EUR, which stops traffic there"}
	}
	steps := []struct {
		reason string
		before func()
		at     time.Time
		want   seen
	}{
		{"half the budget spent, its forecast far over it: carrying", nil, in(5 * time.Hour),
			seen{Summary: budgetstop.Summary{Watched: 1}}},
		{"the budget spent: stopped, and the proxy asked", nil, in(10 * time.Hour),
			seen{Summary: budgetstop.Summary{Watched: 1, Stopped: 1, Changed: 1, Asked: 1}, Stopped: stopOf("2026-12", "1.00"), Asked: []string{p1}}},
		{"still stopped: no new record, the proxy asked again", nil, in(11 * time.Hour),
			seen{Summary: budgetstop.Summary{Watched: 1, Stopped: 1, Asked: 1}, Stopped: stopOf("2026-12", "1.00"), Asked: []string{p1}}},
		{"the budget refuses new proxies only now: the record cleared, the proxy asked once more", func() { w.budget(t, "team-a", tenancy.RefuseNew) }, in(12 * time.Hour),
			seen{Summary: budgetstop.Summary{Watched: 1, Changed: 1, Asked: 1}, Asked: []string{p1}}},
		{"no such budget and no record: not looked at", nil, in(13 * time.Hour),
			seen{}},
		{"the budget stops traffic again, spent since long", func() { w.budget(t, "team-a", tenancy.StopTraffic) }, in(30 * 24 * time.Hour),
			seen{Summary: budgetstop.Summary{Watched: 1, Stopped: 1, Changed: 1, Asked: 1}, Stopped: stopOf("2026-12", "72.00"), Asked: []string{p1}}},
		{"the month turned, and its first hour spends 0.10 EUR: the record cleared, the proxy asked once more", nil, in(31*24*time.Hour + time.Hour),
			seen{Summary: budgetstop.Summary{Watched: 1, Changed: 1, Asked: 1}, Asked: []string{p1}}},
	}
	for _, st := range steps {
		if st.before != nil {
			st.before()
		}
		if diff := cmp.Diff(st.want, w.run(t, st.at)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", st.reason, diff)
		}
	}
}

// TestLookCountsDeletedSpend: what the namespace's deleted proxies spent
// this month counts toward the budget, as the API's month does, and what
// they spent in another month does not: p2's document, deleted with 0.60
// EUR spent this month (and 90.00 the month before), and p1's 0.40 EUR
// stop the namespace four hours in.
func TestLookCountsDeletedSpend(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	p2 := proxy.Key{Namespace: "team-a", Name: "p2"}
	doc, err := w.store.Get(ctx, p2)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.store.Delete(ctx, p2, doc.UpdateTime, proxy.Spent{Month: "2026-12", Nanos: 600_000_000}, proxy.Spent{Month: "2026-11", Nanos: 90_000_000_000}); err != nil {
		t.Fatal(err)
	}
	got := w.run(t, monthStart.Add(4*time.Hour))
	want := seen{Summary: budgetstop.Summary{Watched: 1, Stopped: 1, Changed: 1, Asked: 1},
		Stopped: &tenancy.TrafficStopped{Month: "2026-12", Reason: "the namespace's month 2026-12 is 1.00 EUR so far, at its monthly budget of 1.00 EUR, which stops traffic there"},
		Asked:   []string{proxy.Key{Namespace: "team-a", Name: "p1"}.Path()}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestLookWithoutPrices: a look with no price catalog knows no month, so
// it says so and writes nothing.
func TestLookWithoutPrices(t *testing.T) {
	w := newWorld(t)
	w.look.Costs.Catalog = nil
	if _, err := w.look.Run(context.Background(), nil, monthStart.Add(20*time.Hour)); err == nil {
		t.Error("a look without a price catalog reported no error")
	}
	a, err := w.store.GetNamespace(context.Background(), "team-a")
	if err != nil {
		t.Fatal(err)
	}
	if a.TrafficStopped != nil || len(w.asked.taken()) != 0 {
		t.Errorf("a look without a price catalog wrote %+v or asked for runs", a.TrafficStopped)
	}
}
