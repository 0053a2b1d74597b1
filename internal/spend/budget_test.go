package spend_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/spend"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// TestAdmit holds the budget's rule to its answers: the month read
// outside the transaction is taken only while the namespace's count of
// creates is the one it was read at, what deleted proxies spent (as the
// transaction read it) counts, a forecast at the budget fits and one a
// nano over does not, and an unknown cost adds nothing.
func TestAdmit(t *testing.T) {
	const eur = int64(1_000_000_000)
	cost := func(forecast int64) pricing.Cost {
		return pricing.Cost{Month: "2026-12", Currency: "EUR", Forecast: pricing.Money{Currency: "EUR", Nanos: forecast}}
	}
	ns := func(creates int64, deleted int64) *tenancy.Namespace {
		return &tenancy.Namespace{Name: "team-b", ProxyCreates: creates, Budget: &tenancy.Budget{Monthly: "100.00", Currency: "EUR"},
			DeletedSpend: map[string]int64{"2026-12": deleted}}
	}
	over := func(forecast int64) error {
		return &spend.OverBudget{Namespace: "team-b", Month: "2026-12",
			Forecast: pricing.Money{Currency: "EUR", Nanos: forecast}, Budget: pricing.Money{Currency: "EUR", Nanos: 100 * eur}}
	}
	unknown := cost(0)
	unknown.Unknown = "no price was read for it"
	cases := []struct {
		reason string
		ns     *tenancy.Namespace
		read   *spend.Read
		add    pricing.Cost
		want   error
	}{
		{"no namespace: nothing to hold", nil, nil, cost(500 * eur), nil},
		{"no budget", &tenancy.Namespace{Name: "team-b", ProxyCreates: 3}, nil, cost(500 * eur), nil},
		{"a budget and no month read yet", ns(3, 0), nil, cost(10 * eur), &spend.Unread{Creates: 3}},
		{"a month read before a create that committed since", ns(4, 0), &spend.Read{Month: cost(40 * eur), Creates: 3}, cost(10 * eur), &spend.Unread{Creates: 4}},
		{"fits", ns(3, 0), &spend.Read{Month: cost(40 * eur), Creates: 3}, cost(10 * eur), nil},
		{"at the budget exactly: fits", ns(3, 0), &spend.Read{Month: cost(60 * eur), Creates: 3}, cost(40 * eur), nil},
		{"a nano over", ns(3, 1), &spend.Read{Month: cost(60 * eur), Creates: 3}, cost(40 * eur), over(100*eur + 1)},
		{"what deleted proxies spent counts", ns(3, 30*eur), &spend.Read{Month: cost(40 * eur), Creates: 3}, cost(40 * eur), over(110 * eur)},
		{"an unknown cost adds nothing", ns(3, 0), &spend.Read{Month: cost(90 * eur), Creates: 3}, unknown, nil},
	}
	for _, c := range cases {
		got := spend.Admit(c.ns, c.read, c.add)
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.reason, diff)
		}
	}
}
