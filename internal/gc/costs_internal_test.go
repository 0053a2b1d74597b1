package gc

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/spend"
)

// TestCostsDue: which settled proxies' costs a run asks for, in which
// order, and how many at most.
func TestCostsDue(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	key := func(name string) proxy.Key { return proxy.Key{Namespace: "ns", Name: name} }
	claim := func(name string, phase proxy.Phase, cost *proxy.ClaimCost) proxy.Claim {
		return proxy.Claim{Key: key(name), Phase: phase, Cost: cost}
	}
	costAt := func(month string, asOf time.Time) *proxy.ClaimCost {
		return &proxy.ClaimCost{Month: month, Currency: "EUR", AsOf: asOf}
	}
	cases := map[string]struct {
		reason string
		claims []proxy.Claim
		limit  int
		want   []proxy.Key
	}{
		"FreshKept": {
			reason: "A cost younger than spend.Refresh, of this month, is left alone.",
			claims: []proxy.Claim{claim("fresh", proxy.PhaseReady, costAt("2026-12", now.Add(-spend.Refresh+time.Second)))},
			limit:  10,
		},
		"StaleAsked": {
			reason: "A cost spend.Refresh old is asked for.",
			claims: []proxy.Claim{claim("stale", proxy.PhaseReady, costAt("2026-12", now.Add(-spend.Refresh)))},
			limit:  10,
			want:   []proxy.Key{key("stale")},
		},
		"OtherMonthAsked": {
			reason: "A cost of last month is asked for, however young (the month turned a minute ago).",
			claims: []proxy.Claim{claim("november", proxy.PhaseReady, costAt("2026-11", now.Add(-time.Minute)))},
			limit:  10,
			want:   []proxy.Key{key("november")},
		},
		"NoneAsked": {
			reason: "A Ready proxy without a cost (Ready before costs were written) is asked for.",
			claims: []proxy.Claim{claim("none", proxy.PhaseReady, nil)},
			limit:  10,
			want:   []proxy.Key{key("none")},
		},
		"UnsettledLeft": {
			reason: "A proxy on its way, Failed or Deleting is not asked for: its own runs write its status, or it holds nothing more.",
			claims: []proxy.Claim{claim("creating", proxy.PhaseCreating, nil), claim("failed", proxy.PhaseFailed, nil),
				claim("deleting", proxy.PhaseDeleting, nil), claim("reconfiguring", proxy.PhaseReconfiguring, nil)},
			limit: 10,
		},
		"MembersLeft": {
			reason: "A pool's member has no cost of its own; a claimed member's VM is its proxy's.",
			claims: []proxy.Claim{{Key: proxy.Key{Pool: "warm", Name: "m-1"}, Phase: proxy.PhaseReady},
				{Key: key("tombstone"), Phase: proxy.PhaseReady, Claimed: true}},
			limit: 10,
		},
		"OldestFirstBounded": {
			reason: "Past the limit, the oldest costs go first (none before any), then by key; the rest wait for the next run.",
			claims: []proxy.Claim{
				claim("b-two-hours", proxy.PhaseReady, costAt("2026-12", now.Add(-2*time.Hour))),
				claim("a-two-hours", proxy.PhaseReady, costAt("2026-12", now.Add(-2*time.Hour))),
				claim("c-three-hours", proxy.PhaseReady, costAt("2026-12", now.Add(-3*time.Hour))),
				claim("d-none", proxy.PhaseReady, nil),
			},
			limit: 3,
			want:  []proxy.Key{key("d-none"), key("c-three-hours"), key("a-two-hours")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			claims := map[string]proxy.Claim{}
			for i, c := range tc.claims {
				claims[fmt.Sprintf("uid-%d", i)] = c
			}
			if diff := cmp.Diff(tc.want, costsDue(claims, now, tc.limit), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestNamespaceMonths: the collector's sums per namespace, from the
// costs its claims carry: this month's in the deployment's currency
// summed, every other cost counted as unknown.
func TestNamespaceMonths(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	cost := func(month, currency string, toDate, forecast int64, unknown bool) *proxy.ClaimCost {
		return &proxy.ClaimCost{Month: month, Currency: currency, AsOf: now, MonthToDate: toDate, Forecast: forecast, Unknown: unknown}
	}
	claims := map[string]proxy.Claim{
		"1": {Key: proxy.Key{Namespace: "team-b", Name: "a"}, Phase: proxy.PhaseReady, Cost: cost("2026-12", "EUR", 1_500_000_000, 7_000_000_000, false)},
		"2": {Key: proxy.Key{Namespace: "team-b", Name: "b"}, Phase: proxy.PhaseReady, Cost: cost("2026-12", "EUR", 250_000_000, 1_000_000_000, false)},
		"3": {Key: proxy.Key{Namespace: "team-b", Name: "c"}, Phase: proxy.PhaseReady, Cost: cost("2026-12", "EUR", 0, 0, true)},
		"4": {Key: proxy.Key{Namespace: "team-a", Name: "a"}, Phase: proxy.PhaseReady, Cost: cost("2026-11", "EUR", 9_000_000_000, 9_000_000_000, false)},
		"5": {Key: proxy.Key{Namespace: "team-a", Name: "b"}, Phase: proxy.PhaseReady, Cost: cost("2026-12", "USD", 1_000_000_000, 2_000_000_000, false)},
		"6": {Key: proxy.Key{Namespace: "team-a", Name: "c"}, Phase: proxy.PhasePending},
		"7": {Key: proxy.Key{Pool: "warm", Name: "m-1"}, Phase: proxy.PhaseReady, Cost: cost("2026-12", "EUR", 1, 1, false)},
	}
	want := []namespaceMonth{
		{Namespace: "team-a", Month: "2026-12", Unknown: 3},
		{Namespace: "team-b", Month: "2026-12", MonthToDate: 1_750_000_000, Forecast: 8_000_000_000, Proxies: 2, Unknown: 1},
	}
	if diff := cmp.Diff(want, namespaceMonths(claims, now, "EUR")); diff != "" {
		t.Errorf("namespace months (-want +got):\n%s", diff)
	}
}
