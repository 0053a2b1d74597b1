package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/client"
	"github.com/egress-proxies/egress/internal/pricing"
)

// TestCostShown: a proxy's month in `proxies list` (so far/forecast, to
// the cent) and in `proxies get` and `namespaces get` (one line, apart),
// "unknown" with its reason, "-" where the deployment costs nothing.
func TestCostShown(t *testing.T) {
	eur := func(n int64) pricing.Money { return pricing.Money{Currency: "EUR", Nanos: n} }
	known := &pricing.Cost{Month: "2026-11", Currency: "EUR", VM: eur(2_160_000_000), Address: eur(0), Traffic: eur(1_750_000_000),
		MonthToDate: eur(3_910_000_000), Forecast: eur(7_820_000_000)}
	unknown := &pricing.Cost{Month: "2026-11", Currency: "EUR", Unknown: "no rate from USD to EUR"}
	type shown struct{ Column, Line string }
	for name, tc := range map[string]struct {
		cost *pricing.Cost
		want shown
	}{
		"known":   {known, shown{"3.91/7.82 EUR", "2026-11: 3.91 EUR so far, 7.82 EUR forecast (VM 2.16, address 0.00, traffic 1.75)"}},
		"unknown": {unknown, shown{"unknown", "2026-11: unknown (no rate from USD to EUR); known: 0.00 EUR so far, 0.00 EUR forecast"}},
		"none":    {nil, shown{"-", ""}},
	} {
		if diff := cmp.Diff(tc.want, shown{costColumn(tc.cost), monthLine(tc.cost)}); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

// TestNamespaceShowsItsStop: `namespaces get` of a namespace whose budget
// stopped its traffic says so, with the month and why; one that carries
// says nothing of traffic.
func TestNamespaceShowsItsStop(t *testing.T) {
	budget := &client.Budget{Monthly: "1.00", Currency: "EUR", AtBudget: "stopTraffic"}
	stopped := &client.TrafficStopped{Month: "2026-12", Reason: "the namespace's month 2026-12 is 1.00 EUR so far, at its monthly budget of 1.00 EUR, which stops traffic there"}
	for name, tc := range map[string]struct {
		ns   client.Namespace
		want []string
	}{
		"stopped": {client.Namespace{Name: "team-b", Budget: budget, TrafficStopped: stopped}, []string{
			"budget:   1.00 EUR a month, stopTraffic at it",
			"traffic:  stopped for 2026-12: the namespace's month 2026-12 is 1.00 EUR so far, at its monthly budget of 1.00 EUR, which stops traffic there"}},
		"carrying": {client.Namespace{Name: "team-b", Budget: budget}, []string{"budget:   1.00 EUR a month, stopTraffic at it"}},
	} {
		var out bytes.Buffer
		c := &cli{stdout: &out}
		if err := c.printNamespace(&tc.ns); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, line := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(line, "budget:") || strings.HasPrefix(line, "traffic:") {
				got = append(got, strings.TrimRight(line, " "))
			}
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s\n%s", name, diff, out.String())
		}
	}
}
