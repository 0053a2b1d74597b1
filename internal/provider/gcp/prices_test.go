package gcp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	cloudbilling "google.golang.org/api/cloudbilling/v1"
	"google.golang.org/api/option"

	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/pricing/pricetest"
	"github.com/egress-proxies/egress/internal/provider/gcp/billingfake"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

func listSkus(t *testing.T, fake *billingfake.Server) []byte {
	t.Helper()
	resp, err := http.Get(fake.URL + "/v1/services/" + billingfake.ComputeService + "/skus?currencyCode=USD")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s", resp.Status, body)
	}
	return body
}

// TestBillingFakeHeldToGeneratedTypes: the fake's SKU list is the
// generated types' shape, and a planted wrong field (a unitPrice's nanos
// as text, a renamed tieredRates, serviceRegions as one string) fails the
// check.
func TestBillingFakeHeldToGeneratedTypes(t *testing.T) {
	fake := billingfake.New()
	t.Cleanup(fake.Close)
	body := listSkus(t, fake)
	if err := pricetest.HeldTo[cloudbilling.ListSkusResponse](body, "the SKU list (the Cloud Billing API's generated ListSkusResponse)"); err != nil {
		t.Fatal(err)
	}
	for name, plant := range map[string]func(string) string{
		"nanos as text":       func(s string) string { return strings.Replace(s, `"nanos":21811590`, `"nanos":"21811590"`, 1) },
		"tieredRates renamed": func(s string) string { return strings.Replace(s, `"tieredRates"`, `"tieredRate"`, 1) },
		"serviceRegions text": func(s string) string {
			return strings.Replace(s, `"serviceRegions":["us-central1","us-east1"]`, `"serviceRegions":"us-central1"`, 1)
		},
	} {
		planted := plant(string(body))
		if planted == string(body) {
			t.Fatalf("%s: the plant found nothing to change", name)
		}
		fake.SetBody(planted)
		if err := pricetest.HeldTo[cloudbilling.ListSkusResponse](listSkus(t, fake), "the SKU list (the Cloud Billing API's generated ListSkusResponse)"); err == nil {
			t.Errorf("%s: the planted answer passed", name)
		}
	}
}

func billingService(t *testing.T, fake *billingfake.Server) *cloudbilling.APIService {
	t.Helper()
	svc, err := cloudbilling.NewService(context.Background(), option.WithEndpoint(fake.URL+"/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// TestPrices: the E2 types' prices are their billed vCPUs and GiB at the
// region's SKUs, exact to the nano; an unpriced type and a region no SKU
// serves are unknown, saying why.
func TestPrices(t *testing.T) {
	fake := billingfake.New()
	t.Cleanup(fake.Close)
	keys := pricedPlacements(plugin.Settings{"GCP_ALLOWED_REGIONS": "us-central1,europe-west1", "GCP_ALLOWED_MACHINE_TYPES": "e2-micro,e2-medium"})
	keys = append(keys, pricing.Key{Provider: Type, Region: "us-central1", MachineType: "n2-standard-2"},
		pricing.Key{Provider: Type, Region: "mars1", MachineType: "e2-micro"})
	prices, errs, err := Prices{Service: billingService(t, fake)}.Prices(context.Background(), keys)
	if err != nil {
		t.Fatal(err)
	}
	usd := func(n int64) pricing.Money { return pricing.Money{Currency: "USD", Nanos: n} }
	price := func(region, typ string, vm, egress int64) pricing.Price {
		return pricing.Price{Provider: Type, Region: region, MachineType: typ, VMPerHour: usd(vm), IPv4PerHour: usd(5_000_000),
			EgressPerGB: usd(egress), EgressUnitBytes: 1 << 30, Source: PricesSource}
	}
	type seen struct {
		Prices  []pricing.Price
		Unknown []string
		Calls   int
	}
	got := seen{Prices: prices, Calls: fake.Calls()}
	for _, e := range errs {
		var u *pricing.UnknownError
		switch {
		case errors.As(e, &u):
			got.Unknown = append(got.Unknown, u.Reason)
		case e != nil:
			t.Errorf("not an UnknownError: %v", e)
		}
	}
	want := seen{
		Prices: []pricing.Price{
			// e2-micro: 0.25 × 0.02181159 + 1 × 0.00292353 = 0.0083764275.
			price("us-central1", "e2-micro", 8_376_428, 120_000_000),
			// e2-medium: 1 × 0.02181159 + 4 × 0.00292353.
			price("us-central1", "e2-medium", 21_811_590+4*2_923_530, 120_000_000),
			price("europe-west1", "e2-micro", 23_990_000/4+3_216_000, 120_000_000),
			price("europe-west1", "e2-medium", 23_990_000+4*3_216_000, 120_000_000),
			{}, {},
		},
		Unknown: []string{
			"machine type n2-standard-2 is not an E2 type the product prices (e2-medium, e2-micro, e2-small, e2-standard-2, e2-standard-4, e2-standard-8)",
			`no SKU "E2 Instance Core running in " serves mars1`,
		},
		Calls: 1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	fake.Fail(http.StatusInternalServerError)
	if _, _, err := (Prices{Service: billingService(t, fake)}).Prices(context.Background(), keys); err == nil || !strings.Contains(err.Error(), "services/6F81-5844-456A/skus") {
		t.Errorf("a failing catalog: %v; want an error naming the SKU list", err)
	}
}
