package console_test

import (
	"context"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/spend"
	"github.com/egress-proxies/egress/internal/store/rules"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// TestMonthAtAGlance: a namespace's page shows its month as the API's GET
// answers it (its proxies' costs from the catalog, what its deleted
// proxies spent, the forecast's share of its budget) and what is unknown
// with why; the table and a proxy's status show each proxy's
// status.cost, or why it is unknown.
//
// Proxy p (us-central1, at 0.01 EUR an hour) was made on 2026-12-01 at
// 00:00 UTC; on 2026-12-11 at 00:00 it has run 240 hours, 2.40 EUR, and
// its forecast is December's 744 hours, 7.44 EUR. The namespace's
// deleted proxies spent 0.50 EUR: 2.90 EUR so far, 7.94 EUR forecast, 79%
// of a budget of 10.00 EUR. Proxy q, in a region without a price, is
// unknown.
func TestMonthAtAGlance(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	rates, err := pricing.ParseRates("EUR", "")
	if err != nil {
		t.Fatal(err)
	}
	eur := func(nanos int64) pricing.Money { return pricing.Money{Currency: "EUR", Nanos: nanos} }
	price := pricing.Price{Provider: mock.Type, Region: "us-central1", VMPerHour: eur(10_000_000)}
	e := newEnvAt(t, clk, func(o *httpapi.Options) {
		o.Costs = spend.Costs{Catalog: spend.StaticCatalog{{Provider: mock.Type, Region: "us-central1"}: price}, Rates: rates}
	})
	ctx := context.Background()
	team := rules.NewNamespace("team-b", map[string]tenancy.Role{viewer: tenancy.Viewer}, 0, 20, clk.Now())
	team.Budget = &tenancy.Budget{Monthly: "10.00", Currency: "EUR"}
	team.DeletedSpend = map[string]int64{"2026-12": 500_000_000}
	if _, err := e.store.CreateNamespace(ctx, team); err != nil {
		t.Fatal(err)
	}
	create := func(name, region string) *proxy.Proxy {
		p, err := e.store.CreateInNamespace(ctx, &proxy.Proxy{Namespace: "team-b", Name: name, UID: "uid-" + name, Generation: 1, CreateTime: clk.Now(),
			Spec:   proxy.Spec{Provider: mock.Type, Port: 3128, Placement: proxy.Placement{Region: region}, AllowedSourceRanges: []string{"203.0.113.0/24"}},
			Status: proxy.Status{Phase: proxy.PhasePending}}, func(*tenancy.Namespace) (tenancy.Limits, error) { return tenancy.Limits{Quota: 20}, nil })
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := create("p", "us-central1")
	clk.Advance(240 * time.Hour)
	now := clk.Now()
	q := create("q", "mars-north1")
	// p's status.cost as the reconciler wrote it an hour ago; q's unknown.
	p.Status.Cost = &pricing.Cost{Month: "2026-12", Currency: "EUR", AsOf: now.Add(-time.Hour), VM: eur(2_390_000_000), Address: eur(0), Traffic: eur(0),
		MonthToDate: eur(2_390_000_000), Forecast: eur(7_440_000_000)}
	unknown := spend.Costs{Catalog: spend.StaticCatalog{}, Rates: rates}.Proxy(ctx, q, now)
	q.Status.Cost = &unknown
	for _, x := range []*proxy.Proxy{p, q} {
		if _, err := e.store.UpdateStatus(ctx, x); err != nil {
			t.Fatal(err)
		}
	}

	type seen struct{ Month, PRow, QRow, PStatus, QStatus string }
	_, nsPage := e.send(viewer, "GET", "/console/namespaces/team-b", nil)
	_, rows := e.send(viewer, "GET", "/console/namespaces/team-b/rows", nil)
	_, pStatus := e.send(viewer, "GET", "/console/namespaces/team-b/proxies/p/status", nil)
	_, qStatus := e.send(viewer, "GET", "/console/namespaces/team-b/proxies/q/status", nil)
	got := seen{
		Month:   textOf(t, nsPage, `<dl class="facts" id="namespace-month">`, `</dl>`),
		PRow:    lastCell(t, rows, "/proxies/p\""),
		QRow:    lastCell(t, rows, "/proxies/q\""),
		PStatus: textOf(t, pStatus, `<dd id="proxy-cost">`, `</dd>`),
		QStatus: textOf(t, qStatus, `<dd id="proxy-cost">`, `</dd>`),
	}
	if !strings.Contains(unknown.Unknown, "mars-north1") {
		t.Fatalf("q's cost is not unknown for its region: %+v", unknown)
	}
	why := spaces.ReplaceAllString(unknown.Unknown, " ")
	want := seen{
		Month: "So far 2.90 EUR (VM 2.40, address 0.00, traffic 0.00, deleted proxies 0.50) " +
			"Forecast 7.94 EUR, if what runs now runs to the month's end " +
			"Budget 10.00 EUR a month: the forecast is 79% of it 79%; at the budget: refuseNew " +
			"Unknown unknown (" + why + "): the figures count only what is known " +
			"As of 2026-12-11 00:00 UTC; the page's figure, not refreshed with the table",
		PRow:    "2.39 / 7.44 EUR",
		QRow:    "unknown (" + why + ")",
		PStatus: "2026-12: 2.39 EUR so far, 7.44 EUR forecast (VM 2.39, address 0.00, traffic 0.00), as of 2026-12-10 23:00 UTC",
		QStatus: "2026-12: unknown (" + why + "), as of 2026-12-11 00:00 UTC",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the costs shown (-want +got):\n%s", diff)
	}
}

var (
	blocks = regexp.MustCompile(`</?(dl|dt|dd|td|tr|p)\b[^>]*>`)
	tags   = regexp.MustCompile(`<[^>]*>`)
	spaces = regexp.MustCompile(`\s+`)
)

// textOf is the text between the first from and the next to in page,
// as a reader sees it: a block's tags a space, the others dropped, and
// spaces collapsed.
func textOf(t *testing.T, page, from, to string) string {
	t.Helper()
	_, after, ok := strings.Cut(page, from)
	if !ok {
		t.Errorf("no %s in the page:\n%s", from, page)
		return ""
	}
	inner, _, _ := strings.Cut(after, to)
	inner = tags.ReplaceAllString(blocks.ReplaceAllString(inner, " "), "")
	return strings.TrimSpace(spaces.ReplaceAllString(html.UnescapeString(inner), " "))
}

// lastCell is the text of the last cell of the table row that holds
// marker.
func lastCell(t *testing.T, rows, marker string) string {
	t.Helper()
	_, after, ok := strings.Cut(rows, marker)
	if !ok {
		t.Errorf("no row with %s:\n%s", marker, rows)
		return ""
	}
	row, _, _ := strings.Cut(after, "</tr>")
	i := strings.LastIndex(row, "<td>")
	return textOf(t, row[i:], "<td>", "</td>")
}

// TestWhatAViewReads: the store's reads of each page and refresh, for a
// namespace of three proxies, in a deployment that costs proxies and in
// one that does not. The month is on the namespace's page alone, read
// with it (the namespace GET reads the namespace's proxies for it); no
// refresh reads it, and a proxy's status refresh reads the proxy alone,
// never its namespace's month.
func TestWhatAViewReads(t *testing.T) {
	rates, err := pricing.ParseRates("EUR", "")
	if err != nil {
		t.Fatal(err)
	}
	type reads struct{ Page, Rows, Status int }
	cases := map[string]struct {
		reason string
		costs  spend.Costs
		want   reads
	}{
		"Costed": {
			reason: "the page: the namespace GET (its document, and its 3 proxies for its month), the table (the namespace and its 3 proxies); a refresh as without costs",
			costs:  spend.Costs{Catalog: spend.StaticCatalog{}, Rates: rates}, want: reads{Page: 8, Rows: 4, Status: 2}},
		"NotCosted": {
			reason: "no catalog: the namespace GET reads its document alone",
			want:   reads{Page: 5, Rows: 4, Status: 2}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, func(o *httpapi.Options) { o.Costs = tc.costs })
			ctx := context.Background()
			for _, n := range []string{"q", "r"} {
				if _, err := e.store.CreateInNamespace(ctx, &proxy.Proxy{Namespace: "team-a", Name: n, UID: "uid-" + n, Generation: 1,
					Spec:   proxy.Spec{Provider: mock.Type, Port: 3128, Placement: proxy.Placement{Region: "us-central1"}, AllowedSourceRanges: []string{"203.0.113.0/24"}},
					Status: proxy.Status{Phase: proxy.PhasePending}}, func(*tenancy.Namespace) (tenancy.Limits, error) { return tenancy.Limits{Quota: 20}, nil }); err != nil {
					t.Fatal(err)
				}
			}
			count := func(path string) int {
				before, _ := e.store.Counts()
				if resp, page := e.send(viewer, "GET", path, nil); resp.StatusCode != 200 {
					t.Fatalf("GET %s: %d\n%s", path, resp.StatusCode, page)
				}
				after, _ := e.store.Counts()
				return after - before
			}
			got := reads{Page: count("/console/namespaces/team-a"), Rows: count("/console/namespaces/team-a/rows"), Status: count("/console/namespaces/team-a/proxies/p/status")}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestTrafficStoppedShows: a namespace whose budget stopped its traffic
// says so at the top of its page, with the month, the collector's reason
// and what lifts it; once the stop is lifted the page says nothing of it.
func TestTrafficStoppedShows(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 11, 0, 0, 0, 0, time.UTC))
	e := newEnvAt(t, clk)
	ctx := context.Background()
	team := rules.NewNamespace("team-s", map[string]tenancy.Role{viewer: tenancy.Viewer}, 0, 20, clk.Now())
	team.Budget = &tenancy.Budget{Monthly: "10.00", Currency: "EUR", AtBudget: tenancy.StopTraffic}
	if _, err := e.store.CreateNamespace(ctx, team); err != nil {
		t.Fatal(err)
	}
	stop := tenancy.StopFor(team.Budget, "2026-12", pricing.Money{Currency: "EUR", Nanos: 10_200_000_000})
	if stop == nil {
		t.Fatal("a month of 10.20 EUR at a budget of 10.00 EUR that stops traffic stops nothing")
	}
	setStop := func(s *tenancy.TrafficStopped) {
		t.Helper()
		if _, err := e.store.UpdateNamespace(ctx, "team-s", func(ns *tenancy.Namespace) error {
			ns.TrafficStopped = s
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	shown := func() string {
		_, page := e.send(viewer, "GET", "/console/namespaces/team-s", nil)
		if !strings.Contains(page, `id="traffic-stopped"`) {
			return ""
		}
		return textOf(t, page, `<p class="warn" id="traffic-stopped" role="status">`, `</p>`)
	}

	setStop(stop)
	stopped := shown()
	setStop(nil)
	lifted := shown()
	want := []string{
		"Traffic stopped for 2026-12. " + stop.Reason + ": its proxies refuse new connections (403 budget-exceeded) until 00:00 UTC on the month's first, or until a platform admin raises the budget.",
		"",
	}
	if diff := cmp.Diff(want, []string{stopped, lifted}); diff != "" {
		t.Errorf("the namespace page's stop, while stopped and once lifted (-want +got):\n%s", diff)
	}
}
