package hetzner

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"

	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/pricing/pricetest"
	"github.com/egress-proxies/egress/internal/provider/hetzner/hetznerfake"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

func getPricing(t *testing.T, fake *hetznerfake.Server) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, fake.Endpoint()+"/pricing", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/pricing: %s: %s", resp.Status, body)
	}
	return body
}

// TestPricingFakeHeldToSchema: the fake's GET /v1/pricing is hcloud-go's
// schema, and a planted wrong field (price_hourly spelt as Hetzner does
// not) or a wrong type (included_traffic as a string) fails the check.
func TestPricingFakeHeldToSchema(t *testing.T) {
	fake := hetznerfake.New(testToken)
	t.Cleanup(fake.Close)
	body := getPricing(t, fake)
	if err := pricetest.HeldTo[schema.PricingGetResponse](body, "GET /v1/pricing (hcloud-go's schema.PricingGetResponse)"); err != nil {
		t.Fatal(err)
	}
	for name, plant := range map[string]func(string) string{
		"renamed field": func(s string) string { return strings.Replace(s, `"price_hourly"`, `"price_per_hour"`, 1) },
		"wrong type": func(s string) string {
			return strings.Replace(s, `"included_traffic":21990232555520`, `"included_traffic":"20 TB"`, 1)
		},
		"extra field": func(s string) string { return strings.Replace(s, `"currency":"EUR"`, `"currency":"EUR","tax":"0"`, 1) },
	} {
		planted := plant(string(body))
		if planted == string(body) {
			t.Fatalf("%s: the plant found nothing to change", name)
		}
		fake.SetPricingBody(planted)
		if err := pricetest.HeldTo[schema.PricingGetResponse](getPricing(t, fake), "GET /v1/pricing (hcloud-go's schema.PricingGetResponse)"); err == nil {
			t.Errorf("%s: the planted answer passed the schema check", name)
		}
	}
}

// TestPrices reads the fake's prices through the SDK for the placements
// the default policy allows in two locations, and a type not sold in one.
func TestPrices(t *testing.T) {
	fake := hetznerfake.New(testToken)
	t.Cleanup(fake.Close)
	src := Prices{Client: NewClient(testToken, fake.Endpoint(), nil)}
	keys := pricedPlacements(plugin.Settings{"HETZNER_ALLOWED_LOCATIONS": "fsn1,ash", "HETZNER_ALLOWED_SERVER_TYPES": "cx23,cpx22"})
	keys = append(keys, pricing.Key{Provider: Type, Region: "eu-central", Zone: "fsn1", MachineType: "cx99"},
		pricing.Key{Provider: Type, Region: "eu-central", MachineType: "cx23"})
	prices, errs, err := src.Prices(context.Background(), keys)
	if err != nil {
		t.Fatal(err)
	}
	eur := func(s string) pricing.Money { m, _ := pricing.ParseMoney(s, "EUR"); return m }
	price := func(zone, region, typ, hour string, includedTB int64, perTB string) pricing.Price {
		return pricing.Price{Provider: Type, Region: region, Zone: zone, MachineType: typ, VMPerHour: eur(hour), IPv4PerHour: eur("0.0008"),
			EgressPerGB: eur(perTB), EgressUnitBytes: 1 << 40, IncludedEgressBytes: includedTB << 40, Source: PricesSource}
	}
	want := []pricing.Price{
		price("fsn1", "eu-central", "cx23", "0.0048", 20, "1"),
		price("fsn1", "eu-central", "cpx22", "0.0096", 20, "1"),
		price("ash", "us-east", "cpx22", "0.0128", 1, "1.2"),
		{}, {},
	}
	if diff := cmp.Diff(want, prices); diff != "" {
		t.Errorf("prices (-want +got):\n%s", diff)
	}
	var unknown []string
	for _, e := range errs {
		var u *pricing.UnknownError
		if errors.As(e, &u) {
			unknown = append(unknown, u.Reason)
		} else if e != nil {
			t.Errorf("not an UnknownError: %v", e)
		}
	}
	wantUnknown := []string{"GET /v1/pricing lists no server type cx99", "no location: Hetzner prices a server type per location"}
	if diff := cmp.Diff(wantUnknown, unknown, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("unknown reasons (-want +got):\n%s", diff)
	}
}

// TestPricesUnreachable: a source that cannot be read is an error of the
// whole read, naming the call.
func TestPricesUnreachable(t *testing.T) {
	fake := hetznerfake.New(testToken)
	fake.Close()
	_, _, err := Prices{Client: NewClient(testToken, fake.Endpoint(), nil)}.Prices(context.Background(), []pricing.Key{{Provider: Type}})
	if err == nil || !strings.Contains(err.Error(), "GET /v1/pricing") {
		t.Fatalf("err = %v; want one naming GET /v1/pricing", err)
	}
}
