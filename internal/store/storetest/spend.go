package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store/rules"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// testDeletedSpend: a proxy's deletion adds what it spent to its
// namespace's deletedSpend for the month, in the deletion's transaction,
// by increments (two proxies of one month add up, another month keeps
// its own); a deletion with nothing spent adds no month; a budget a
// namespace update writes is read back whole. The namespace's count of
// creates (what a create's budget check holds its month read to) rises
// with each create and no deletion lowers it, where the count of
// proxies is back where it began.
func testDeletedSpend(t *testing.T, s Store) {
	ctx := context.Background()
	if _, err := s.CreateNamespace(ctx, rules.NewNamespace("team-s", nil, 0, 20, base)); err != nil {
		t.Fatal(err)
	}
	admit := func(ns *tenancy.Namespace) (tenancy.Limits, error) { return tenancy.Limits{Quota: ns.QuotaOr(20)}, nil }
	spent := map[string][]proxy.Spent{
		"a": {{Month: "2026-12", Nanos: 30_000_000}},
		"b": {{Month: "2026-12", Nanos: 12_000_000}},
		"c": {{Month: "2027-01", Nanos: 5}},
		"d": nil,
	}
	for _, name := range []string{"a", "b", "c", "d"} {
		p, err := s.CreateInNamespace(ctx, New("team-s", name), admit)
		if err != nil {
			t.Fatal(err)
		}
		d, err := s.RequestDeletion(ctx, p.Key(), base)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, p.Key(), d.UpdateTime, spent[name]...); err != nil {
			t.Fatal(err)
		}
	}
	budget := &tenancy.Budget{Monthly: "200.00", Currency: "EUR"}
	if _, err := s.UpdateNamespace(ctx, "team-s", func(ns *tenancy.Namespace) error { ns.Budget = budget; return nil }); err != nil {
		t.Fatal(err)
	}
	ns, err := s.GetNamespace(ctx, "team-s")
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		DeletedSpend map[string]int64
		Budget       *tenancy.Budget
		ProxyCount   int64
		ProxyCreates int64
	}
	want := seen{map[string]int64{"2026-12": 42_000_000, "2027-01": 5}, budget, 0, 4}
	if diff := cmp.Diff(want, seen{ns.DeletedSpend, ns.Budget, ns.ProxyCount, ns.ProxyCreates}); diff != "" {
		t.Errorf("the namespace after four deletions (-want +got):\n%s", diff)
	}
}

// testBudgetAlerts: the budget alerts a namespace update records are read
// back whole (the thresholds told, in order, and when the month was
// summed), and an update of something else (its members) keeps them.
func testBudgetAlerts(t *testing.T, s Store) {
	ctx := context.Background()
	if _, err := s.CreateNamespace(ctx, rules.NewNamespace("team-b", map[string]tenancy.Role{alice: tenancy.Owner}, 0, 20, base)); err != nil {
		t.Fatal(err)
	}
	alerts := &tenancy.BudgetAlerts{Month: "2026-12", Budget: "200.00 EUR", Notified: []int{80, 100}, CheckedAt: base.Add(time.Hour)}
	if _, err := s.UpdateNamespace(ctx, "team-b", func(ns *tenancy.Namespace) error { ns.BudgetAlerts = alerts; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateNamespace(ctx, "team-b", func(ns *tenancy.Namespace) error {
		ns.Members[bob] = tenancy.Viewer
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ns, err := s.GetNamespace(ctx, "team-b")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(alerts, ns.BudgetAlerts, cmpopts.EquateApproxTime(time.Millisecond)); diff != "" {
		t.Errorf("the budget alerts after a members update (-want +got):\n%s", diff)
	}
}
