package pricing_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/pricing"
)

func money(t *testing.T, amount, currency string) pricing.Money {
	t.Helper()
	m, err := pricing.ParseMoney(amount, currency)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func date(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// The fixed fleet of TestCostOfAFixedFleet, in November 2026: 30 days,
// 720 hours, 2,592,000 seconds. The deployment shows costs in EUR and
// converts USD at 0.92 from 2026-11-01 (COST_RATES also names a rate from
// 2026-12-02, after the month: it must not be used).
const (
	fleetCurrency = "EUR"
	fleetRates    = "USD=0.92@2026-11-01,USD=0.95@2026-12-02"
	fleetMonth    = "2026-11"
)

// Hetzner (EUR): a cx22 in fsn1 at 0.0060 EUR an hour, no address apart,
// 20 TB of egress included a month, 1.00 EUR a TB beyond it (0.001 a GB).
// Its proxy lived the whole month and carried 23.5 TB in it.
//
//	VM:      720 h × 0.0060 EUR                         = 4.32 EUR
//	traffic: (23.5 TB − 20 TB) = 3,500 GB × 0.001 EUR   = 3.50 EUR
//	total                                                = 7.82 EUR
func hetzner(t *testing.T) pricing.Price {
	return pricing.Price{Provider: "hetzner", Region: "fsn1", MachineType: "cx22",
		VMPerHour: money(t, "0.0060", "EUR"), EgressPerGB: money(t, "0.001", "EUR"), EgressUnitBytes: 1_000_000_000,
		IncludedEgressBytes: 20_000_000_000_000}
}

// Google Cloud (USD): an e2-micro in europe-west1 at 0.0084 USD an hour,
// its Static address at 0.005 USD an hour, egress 0.12 USD a GiB (Google
// bills GiB: 2^30 bytes), none included. It lived the whole month and
// carried 10 GiB = 10,737,418,240 bytes.
//
//	VM:      720 h × 0.0084 USD = 6.048 USD × 0.92 = 5.56416 EUR
//	address: 720 h × 0.005 USD  = 3.600 USD × 0.92 = 3.31200 EUR
//	traffic: 10 GiB × 0.12 USD  = 1.200 USD × 0.92 = 1.10400 EUR
//	total                         10.848 USD         = 9.98016 EUR
func gcp(t *testing.T) pricing.Price {
	return pricing.Price{Provider: "gcp", Region: "europe-west1", MachineType: "e2-micro",
		VMPerHour: money(t, "0.0084", "USD"), IPv4PerHour: money(t, "0.005", "USD"),
		EgressPerGB: money(t, "0.12", "USD"), EgressUnitBytes: 1 << 30}
}

// A cloud whose VMs each include transfer, prorated by the VM's life, as
// DigitalOcean's Droplets do (USD; the package reads no provider's name,
// so the cloud is named for what it shows): a small-1 at 0.00893 USD an
// hour, 1,000 GB of transfer included a month (prorated: 500 GB for half
// a month), 0.01 USD a GB beyond. Its proxy was made in October and
// deleted on 2026-11-16 at 00:00 UTC: it lived 15 days, 360 hours, of the
// month, and carried 100 GB in them, within the 500 GB included.
//
//	VM:      360 h × 0.00893 USD = 3.2148 USD × 0.92 = 2.957616 EUR
//	traffic: 100 GB ≤ 500 GB included               = 0
//	total                                            = 2.957616 EUR
func prorated(t *testing.T) pricing.Price {
	return pricing.Price{Provider: "prorated", Region: "region-1", MachineType: "small-1",
		VMPerHour: money(t, "0.00893", "USD"), EgressPerGB: money(t, "0.01", "USD"), EgressUnitBytes: 1_000_000_000,
		IncludedEgressBytes: 1_000_000_000_000}
}

// The fleet's month, by hand: 7.82 + 9.98016 + 2.957616 = 20.757776 EUR,
// 20.76 EUR to the cent; the month is over, so its forecast is the same.
const (
	fleetMonthCents = 2076
	fleetMonthNanos = 20_757_776_000
)

// TestCostOfAFixedFleet: the month's cost of a fixed fleet of three clouds'
// proxies (one priced in EUR, two in USD), one Static with its address
// billed, one over Hetzner's included traffic, one that lived half the
// month, matches the figures computed by hand above, to the cent and to
// the nano.
func TestCostOfAFixedFleet(t *testing.T) {
	rates, err := pricing.ParseRates(fleetCurrency, fleetRates)
	if err != nil {
		t.Fatal(err)
	}
	monthEnd := date("2026-12-01T00:00:00Z")
	eur := func(nanos int64) pricing.Money { return pricing.Money{Currency: "EUR", Nanos: nanos} }
	cost := func(vm, address, traffic int64) pricing.Cost {
		sum := vm + address + traffic
		return pricing.Cost{Month: fleetMonth, Currency: "EUR", AsOf: monthEnd, VM: eur(vm), Address: eur(address), Traffic: eur(traffic),
			MonthToDate: eur(sum), Forecast: eur(sum)}
	}
	fleet := []struct {
		name  string
		price pricing.Price
		use   pricing.Use
		want  pricing.Cost
	}{
		{"hetzner", hetzner(t), pricing.Use{Since: date("2026-10-20T08:00:00Z"), Month: fleetMonth, MonthBytes: 23_500_000_000_000},
			cost(4_320_000_000, 0, 3_500_000_000)},
		{"gcp-static", gcp(t), pricing.Use{Since: date("2026-09-01T00:00:00Z"), Month: fleetMonth, MonthBytes: 10 << 30},
			cost(5_564_160_000, 3_312_000_000, 1_104_000_000)},
		{"prorated-half", prorated(t), pricing.Use{Since: date("2026-10-03T00:00:00Z"), Until: date("2026-11-16T00:00:00Z"), Month: fleetMonth, MonthBytes: 100_000_000_000},
			cost(2_957_616_000, 0, 0)},
	}
	var costs []pricing.Cost
	for _, p := range fleet {
		got := pricing.MonthCost(p.price, p.use, fleetMonth, monthEnd, rates)
		if diff := cmp.Diff(p.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", p.name, diff)
		}
		costs = append(costs, got)
	}
	sum, err := pricing.Sum(fleetMonth, "EUR", costs...)
	if err != nil {
		t.Fatal(err)
	}
	type total struct{ MonthToDate, Forecast, Cents int64 }
	want := total{fleetMonthNanos, fleetMonthNanos, fleetMonthCents}
	if diff := cmp.Diff(want, total{sum.MonthToDate.Nanos, sum.Forecast.Nanos, sum.MonthToDate.Cents()}); diff != "" {
		t.Errorf("the fleet's month (-want +got):\n%s", diff)
	}
}

// TestCostForecast: halfway through the month the month so far is half,
// and the forecast carries what runs to the month's end at today's rate.
//
// The Hetzner proxy on 2026-11-16 at 00:00 (360 h of 720), having carried
// 11.75 TB so far:
//
//	so far:   VM 360 h × 0.0060 = 2.16 EUR; included 20 TB × 360/720 = 10 TB,
//	          traffic (11.75 − 10) TB = 1,750 GB × 0.001 = 1.75 EUR; 3.91 EUR
//	forecast: VM 4.32 EUR; 11.75 TB × 720/360 = 23.5 TB, 3.50 EUR; 7.82 EUR
//
// A proxy made on 2026-11-16 at 00:00 on the same price has used nothing
// yet and is forecast 360 h × 0.0060 = 2.16 EUR (no traffic, no rate).
func TestCostForecast(t *testing.T) {
	rates, err := pricing.ParseRates("EUR", "")
	if err != nil {
		t.Fatal(err)
	}
	now := date("2026-11-16T00:00:00Z")
	eur := func(nanos int64) pricing.Money { return pricing.Money{Currency: "EUR", Nanos: nanos} }
	type figures struct{ MonthToDate, Forecast pricing.Money }
	for name, tc := range map[string]struct {
		use  pricing.Use
		want figures
	}{
		"running since before the month": {pricing.Use{Since: date("2026-10-20T08:00:00Z"), Month: fleetMonth, MonthBytes: 11_750_000_000_000},
			figures{eur(3_910_000_000), eur(7_820_000_000)}},
		"made now": {pricing.Use{Since: now}, figures{eur(0), eur(2_160_000_000)}},
		"a report of last month counts nothing": {pricing.Use{Since: date("2026-10-20T08:00:00Z"), Month: "2026-10", MonthBytes: 50_000_000_000_000},
			figures{eur(2_160_000_000), eur(4_320_000_000)}},
	} {
		c := pricing.MonthCost(hetzner(t), tc.use, fleetMonth, now, rates)
		if diff := cmp.Diff(tc.want, figures{c.MonthToDate, c.Forecast}); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

// TestCostWithoutARate: a price in a currency COST_RATES gives no rate
// for (or none dated by then) is unknown, saying which; a namespace's sum
// adds what is known and keeps the reason.
func TestCostWithoutARate(t *testing.T) {
	rates, err := pricing.ParseRates("EUR", "USD=0.92@2026-11-20")
	if err != nil {
		t.Fatal(err)
	}
	now := date("2026-11-16T00:00:00Z")
	use := pricing.Use{Since: date("2026-10-01T00:00:00Z")}
	costs := []pricing.Cost{
		pricing.MonthCost(gcp(t), use, fleetMonth, now, rates),
		pricing.MonthCost(hetzner(t), use, fleetMonth, now, rates),
	}
	sum, err := pricing.Sum(fleetMonth, "EUR", costs...)
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		GCPUnknown, SumUnknown string
		SumMonthToDate         int64
	}
	want := seen{
		GCPUnknown:     "gcp europe-west1 e2-micro: no rate from USD to EUR dated on or before 2026-11-16 in COST_RATES",
		SumUnknown:     "gcp europe-west1 e2-micro: no rate from USD to EUR dated on or before 2026-11-16 in COST_RATES",
		SumMonthToDate: 2_160_000_000,
	}
	if diff := cmp.Diff(want, seen{costs[0].Unknown, sum.Unknown, sum.MonthToDate.Nanos}); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestParseRates(t *testing.T) {
	for in, wantErr := range map[string]bool{
		"":                    false,
		"USD=0.92@2026-12-01": false,
		"USD=0.92@2026-12-01, GBP=1.17@2026-12-01": false,
		"USD=0.92":                                true,
		"USD=0.92@2026-13-01":                     true,
		"usd=0.92@2026-12-01":                     true,
		"EUR=1@2026-12-01":                        true,
		"USD=0@2026-12-01":                        true,
		"USD=0.92@2026-12-01,USD=0.93@2026-12-01": true,
	} {
		if _, err := pricing.ParseRates("EUR", in); (err != nil) != wantErr {
			t.Errorf("ParseRates(EUR, %q): error %v, want an error: %t", in, err, wantErr)
		}
	}
}
