package pricestore_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/emulators/emulatortest"
	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/pricing/pricestore"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

func newClient(t *testing.T) *firestore.Client {
	t.Helper()
	emulatortest.Firestore(t)
	client, err := firestore.NewClient(context.Background(), emulatortest.ProjectID(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return client
}

// source is a price source that prices every key it is asked at hour,
// but its unpriced machine type, and fails when fail is set; it counts
// its reads.
type source struct {
	hour  pricing.Money
	fail  error
	reads int
}

func (s *source) Prices(_ context.Context, keys []pricing.Key) ([]pricing.Price, []error, error) {
	s.reads++
	if s.fail != nil {
		return nil, nil, s.fail
	}
	prices, errs := make([]pricing.Price, len(keys)), make([]error, len(keys))
	for i, k := range keys {
		if k.MachineType == "unpriced" {
			errs[i] = &pricing.UnknownError{Key: k, Reason: "the cloud lists no unpriced"}
			continue
		}
		prices[i] = pricing.Price{Provider: k.Provider, Region: k.Region, Zone: k.Zone, MachineType: k.MachineType,
			VMPerHour: s.hour, EgressPerGB: s.hour, EgressUnitBytes: 1 << 30, Source: "test"}
	}
	return prices, errs, nil
}

// TestRefreshAndCatalog: a refresh writes a document per key (a price,
// or the reason there is none); the catalog reads them, a zone's price
// falling back to its region's; a tick within the day reads nothing; a
// failed read a day later keeps the last prices, logs the cloud and why,
// and is not tried again within the hour; a cloud with no source is
// unknown for ErrNoPrices's reason.
func TestRefreshAndCatalog(t *testing.T) {
	client := newClient(t)
	ctx := context.Background()
	usd := func(n int64) pricing.Money { return pricing.Money{Currency: "USD", Nanos: n} }
	src := &source{hour: usd(10_000_000)}
	keys := []pricing.Key{
		{Provider: "a", Region: "r1", Zone: "r1-a", MachineType: "small"},
		{Provider: "a", Region: "r2", MachineType: "small"},
		{Provider: "a", Region: "r1", Zone: "r1-a", MachineType: "unpriced"},
	}
	var logs bytes.Buffer
	r := pricestore.NewRefresher(client, []pricestore.Cloud{{Type: "a", Source: src, Keys: keys}, {Type: "b"}},
		slog.New(slog.NewJSONHandler(&logs, nil)))
	cat := pricestore.NewCatalog(client, "b")
	day := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)

	type step struct {
		Report pricestore.Report
		Reads  int
		Hour   map[string]string // the catalog's answer per asked key
	}
	asked := map[string]pricing.Key{
		"zone":         keys[0],
		"zoneOfRegion": {Provider: "a", Region: "r2", Zone: "r2-b", MachineType: "small"},
		"unpriced":     keys[2],
		"notAllowed":   {Provider: "a", Region: "r9", MachineType: "small"},
		"noSource":     {Provider: "b", Region: "x", MachineType: "y"},
		"badKey":       {Provider: "a", Region: "r/1", MachineType: "small"},
	}
	run := func(now time.Time) step {
		t.Helper()
		rep, _ := r.Refresh(ctx, now)
		got := step{Report: rep, Reads: src.reads, Hour: map[string]string{}}
		for name, k := range asked {
			p, err := cat.Price(ctx, k)
			var u *pricing.UnknownError
			switch {
			case err == nil:
				got.Hour[name] = p.VMPerHour.String() + " read " + p.ReadTime.UTC().Format(time.DateTime)
			case errors.As(err, &u):
				got.Hour[name] = "unknown: " + u.Reason
			default:
				t.Fatalf("%s: %v", name, err)
			}
		}
		return got
	}
	unknown := map[string]string{
		"unpriced":   "unknown: the cloud lists no unpriced",
		"notAllowed": "unknown: no price was read for it: the placement is not among those the operator allows, or the daily refresh has not read its cloud yet",
		"noSource":   "unknown: cloud b: the cloud publishes no prices the product reads",
		"badKey":     `unknown: price key "a r/1  small": a part holds / or :, which a price document's id cannot`,
	}
	with := func(m map[string]string) map[string]string {
		for k, v := range unknown {
			m[k] = v
		}
		return m
	}
	noSource := pricestore.CloudReport{Type: "b", Skipped: "no price source"}
	first := "0.01 USD read 2026-12-07 03:00:00"
	want := []step{
		{Report: pricestore.Report{Clouds: []pricestore.CloudReport{{Type: "a", Read: true, Prices: 2, Unknown: 1}, noSource}}, Reads: 1,
			Hour: with(map[string]string{"zone": first, "zoneOfRegion": first})},
		{Report: pricestore.Report{Clouds: []pricestore.CloudReport{{Type: "a", Skipped: "read within the day"}, noSource}}, Reads: 1,
			Hour: with(map[string]string{"zone": first, "zoneOfRegion": first})},
		{Report: pricestore.Report{Clouds: []pricestore.CloudReport{{Type: "a", Read: true, Error: "the price API is down"}, noSource}}, Reads: 2,
			Hour: with(map[string]string{"zone": first, "zoneOfRegion": first})},
		{Report: pricestore.Report{Clouds: []pricestore.CloudReport{{Type: "a", Skipped: "failed within the hour"}, noSource}}, Reads: 2,
			Hour: with(map[string]string{"zone": first, "zoneOfRegion": first})},
		{Report: pricestore.Report{Clouds: []pricestore.CloudReport{{Type: "a", Read: true, Prices: 2, Unknown: 1}, noSource}}, Reads: 3,
			Hour: with(map[string]string{"zone": "0.02 USD read 2026-12-08 05:00:00", "zoneOfRegion": "0.02 USD read 2026-12-08 05:00:00"})},
	}
	var got []step
	got = append(got, run(day))
	got = append(got, run(day.Add(23*time.Hour)))
	src.fail = errors.New("the price API is down")
	got = append(got, run(day.Add(25*time.Hour)))
	got = append(got, run(day.Add(25*time.Hour+59*time.Minute)))
	src.fail, src.hour = nil, usd(20_000_000)
	got = append(got, run(day.Add(26*time.Hour)))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the refreshes (-want +got):\n%s", diff)
	}
	if n := strings.Count(logs.String(), `"msg":"prices: the cloud's prices could not be read; the last ones are kept","provider":"a"`); n != 1 {
		t.Errorf("%d failure lines naming the cloud; want 1:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), `"error":"the price API is down"`) {
		t.Errorf("the failure line does not say why:\n%s", logs.String())
	}
}

// TestRefreshCounts: a refresh of n keys reads the cloud's refresh
// document once and writes n prices and it; a tick within the day reads
// that document alone.
func TestRefreshCounts(t *testing.T) {
	client := newClient(t)
	keys := []pricing.Key{{Provider: "a", Region: "r1", MachineType: "s"}, {Provider: "a", Region: "r2", MachineType: "s"}, {Provider: "a", Region: "r3", MachineType: "s"}}
	r := pricestore.NewRefresher(client, []pricestore.Cloud{{Type: "a", Source: &source{hour: pricing.Money{Currency: "EUR", Nanos: 1}}, Keys: keys}}, slog.New(slog.DiscardHandler))
	now := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	usage := func(at time.Time) metering.Usage {
		ctx, inv := metering.Start(context.Background(), "Test")
		if _, err := r.Refresh(ctx, at); err != nil {
			t.Fatal(err)
		}
		return inv.Usage()
	}
	got := []metering.Usage{usage(now), usage(now.Add(time.Hour))}
	want := []metering.Usage{{FirestoreReads: 1, FirestoreWrites: 4}, {FirestoreReads: 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
}
