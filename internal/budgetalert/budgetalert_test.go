package budgetalert

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/spend"
	"github.com/egress-proxies/egress/internal/store/storefake"
	"github.com/egress-proxies/egress/internal/tenancy"
)

func TestReached(t *testing.T) {
	const budget = 200 * pricing.Nano // 200.00
	rec := func(month, budget string, notified ...int) *tenancy.BudgetAlerts {
		return &tenancy.BudgetAlerts{Month: month, Budget: budget, Notified: notified}
	}
	cases := map[string]struct {
		reason string
		rec    *tenancy.BudgetAlerts
		spent  int64
		want   []int
	}{
		"below":           {"79.99% reaches nothing.", nil, 159_990_000_000, nil},
		"at 80":           {"Exactly 80% reaches 80.", nil, 160 * pricing.Nano, []int{80}},
		"between":         {"99% reaches 80 only.", nil, 198 * pricing.Nano, []int{80}},
		"at 100":          {"The whole budget reaches both.", nil, budget, []int{80, 100}},
		"over":            {"Past the budget reaches both.", nil, 250 * pricing.Nano, []int{80, 100}},
		"80 told":         {"A threshold told this month is not again.", rec("2026-12", "200.00 EUR", 80), budget, []int{100}},
		"both told":       {"Nothing is left once both were told.", rec("2026-12", "200.00 EUR", 80, 100), 300 * pricing.Nano, nil},
		"last month told": {"Last month's are no excuse this month.", rec("2026-11", "200.00 EUR", 80, 100), budget, []int{80, 100}},
		"budget changed":  {"A budget an admin changed starts afresh.", rec("2026-12", "100.00 EUR", 80), 170 * pricing.Nano, []int{80}},
		"zero budget":     {"A budget of nothing is reached by nothing.", nil, 0, nil},
	}
	for name, tc := range cases {
		b := int64(budget)
		if name == "zero budget" {
			b = 0
		}
		if diff := cmp.Diff(tc.want, Reached(tc.rec, "2026-12", "200.00 EUR", tc.spent, b)); diff != "" {
			t.Errorf("%s: %s (-want +got):\n%s", name, tc.reason, diff)
		}
	}
}

// line is what the test reads of a logged line.
type line struct {
	Message     string   `json:"msg"`
	Namespace   string   `json:"namespace"`
	Month       string   `json:"month"`
	Threshold   string   `json:"threshold"`
	MonthToDate string   `json:"monthToDate"`
	Forecast    string   `json:"forecast"`
	Budget      string   `json:"budget"`
	Owners      []string `json:"owners"`
}

// listCounter counts the lists of a namespace's proxies: the sums.
type listCounter struct {
	*storefake.Store
	lists int
}

func (l *listCounter) ListSealed(ctx context.Context, namespace string, pageSize int, pageToken string) ([]*proxy.Proxy, string, error) {
	l.lists++
	return l.Store.ListSealed(ctx, namespace, pageSize, pageToken)
}

// TestToldOncePerMonth: against the store's fake, a namespace's month
// crossing 80% and then 100% of its budget is told once for each, at the
// tick that sees it, however many ticks follow; a new month tells again;
// a namespace without a budget is never summed.
func TestToldOncePerMonth(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	st := storefake.New(clock.NewFake(start))
	usd := func(n int64) pricing.Money { return pricing.Money{Currency: "USD", Nanos: n} }
	// A VM at 0.01 USD an hour against 5.00 USD: 80% after 400 hours,
	// 100% after 500.
	key := pricing.Key{Provider: "mock", Region: "r1", MachineType: "small"}
	catalog := spend.StaticCatalog{key: {Provider: "mock", Region: "r1", MachineType: "small", VMPerHour: usd(10_000_000),
		IPv4PerHour: usd(0), EgressPerGB: usd(0), EgressUnitBytes: 1 << 30}}
	for _, ns := range []*tenancy.Namespace{
		{Name: "team", Members: map[string]tenancy.Role{"owner@example.com": tenancy.Owner, "dev@example.com": tenancy.Editor},
			Budget: &tenancy.Budget{Monthly: "5.00", Currency: "USD"}},
		{Name: "free", Members: map[string]tenancy.Role{"owner@example.com": tenancy.Owner}},
	} {
		if _, err := st.CreateNamespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
		p := &proxy.Proxy{Namespace: ns.Name, Name: "p", CreateTime: start.Add(-24 * time.Hour),
			Spec: proxy.Spec{Provider: "mock", Placement: proxy.Placement{Region: "r1", MachineType: "small"}}}
		if _, err := st.Create(ctx, p, 10); err != nil {
			t.Fatal(err)
		}
	}
	var logs bytes.Buffer
	counted := &listCounter{Store: st}
	c := Checker{Store: counted, Costs: spend.Costs{Catalog: catalog, Rates: pricing.Rates{Currency: "USD"}},
		Log: slog.New(slog.NewJSONHandler(&logs, nil))}

	type tick struct {
		Hours  int // after the month's start
		Told   int
		Lines  []line
		Alerts tenancy.BudgetAlerts
		Summed bool // the namespace's proxies were read
		Notes  string
	}
	told := func(threshold, mtd, forecast string) line {
		return line{Message: Message, Namespace: "team", Month: "2026-12", Threshold: threshold, MonthToDate: mtd,
			Forecast: forecast, Budget: "5.00 USD", Owners: []string{"owner@example.com"}}
	}
	at := func(h int) time.Time { return start.Add(time.Duration(h) * time.Hour) }
	want := []tick{
		{Hours: 100, Alerts: tenancy.BudgetAlerts{Month: "2026-12", Budget: "5.00 USD", CheckedAt: at(100)}, Summed: true, Notes: "20%: nothing told, the sum recorded"},
		{Hours: 100, Alerts: tenancy.BudgetAlerts{Month: "2026-12", Budget: "5.00 USD", CheckedAt: at(100)}, Notes: "within the interval: not summed again"},
		{Hours: 401, Told: 1, Lines: []line{told("80", "4.01 USD", "7.44 USD")},
			Alerts: tenancy.BudgetAlerts{Month: "2026-12", Budget: "5.00 USD", Notified: []int{80}, CheckedAt: at(401)}, Summed: true, Notes: "80% crossed"},
		{Hours: 450, Alerts: tenancy.BudgetAlerts{Month: "2026-12", Budget: "5.00 USD", Notified: []int{80}, CheckedAt: at(450)}, Summed: true, Notes: "still past 80%: not told again"},
		{Hours: 520, Told: 1, Lines: []line{told("100", "5.20 USD", "7.44 USD")},
			Alerts: tenancy.BudgetAlerts{Month: "2026-12", Budget: "5.00 USD", Notified: []int{80, 100}, CheckedAt: at(520)}, Summed: true, Notes: "100% crossed"},
		{Hours: 700, Alerts: tenancy.BudgetAlerts{Month: "2026-12", Budget: "5.00 USD", Notified: []int{80, 100}, CheckedAt: at(520)}, Notes: "both told: not summed at all"},
		{Hours: 744 + 600, Told: 2, Lines: []line{
			{Message: Message, Namespace: "team", Month: "2027-01", Threshold: "80", MonthToDate: "6.00 USD", Forecast: "7.44 USD", Budget: "5.00 USD", Owners: []string{"owner@example.com"}},
			{Message: Message, Namespace: "team", Month: "2027-01", Threshold: "100", MonthToDate: "6.00 USD", Forecast: "7.44 USD", Budget: "5.00 USD", Owners: []string{"owner@example.com"}}},
			Alerts: tenancy.BudgetAlerts{Month: "2027-01", Budget: "5.00 USD", Notified: []int{80, 100}, CheckedAt: at(744 + 600)}, Summed: true, Notes: "a new month, first seen past both"},
	}
	var got []tick
	for _, w := range want {
		logs.Reset()
		before := counted.lists
		namespaces, err := tenancy.All(ctx, counted)
		if err != nil {
			t.Fatal(err)
		}
		n := c.Run(ctx, namespaces, at(w.Hours))
		g := tick{Hours: w.Hours, Told: n, Summed: counted.lists > before, Notes: w.Notes}
		dec := json.NewDecoder(&logs)
		for dec.More() {
			var l line
			if err := dec.Decode(&l); err != nil {
				t.Fatal(err)
			}
			g.Lines = append(g.Lines, l)
		}
		ns, err := st.GetNamespace(ctx, "team")
		if err != nil {
			t.Fatal(err)
		}
		if ns.BudgetAlerts != nil {
			g.Alerts = *ns.BudgetAlerts
		}
		if free, _ := st.GetNamespace(ctx, "free"); free.BudgetAlerts != nil {
			t.Errorf("at %dh: the namespace without a budget has budget alerts %+v", w.Hours, *free.BudgetAlerts)
		}
		got = append(got, g)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
