package azure

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/pricing/pricetest"
	"github.com/egress-proxies/egress/internal/provider/azure/retailpricesfake"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

// published are the sample answers of Microsoft's reference page of the
// Retail Prices API (testdata/retailprices-published.json says which).
func published(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/retailprices-published.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Source  string          `json:"source"`
		Answers json.RawMessage `json:"answers"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || doc.Source == "" {
		t.Fatalf("testdata/retailprices-published.json: %v (source %q)", err, doc.Source)
	}
	return doc.Answers
}

func retailGet(t *testing.T, fake *retailpricesfake.Server, filter string) []byte {
	t.Helper()
	q := url.Values{"api-version": {retailpricesfake.APIVersion}, "$filter": {filter}}
	resp, err := http.Get(fake.URL + "/api/retail/prices?" + q.Encode())
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

// TestRetailPricesFakeHeldToPublished: each answer of the fake the source
// asks for (a size's meters, a paged answer with a next page, the last
// page, an empty one) has the shape of Microsoft's published samples, and
// a planted wrong field (a price as text, a renamed field, a dropped
// field, a date written otherwise, a flag as text) fails the check.
func TestRetailPricesFakeHeldToPublished(t *testing.T) {
	fake := retailpricesfake.New()
	t.Cleanup(fake.Close)
	samples := published(t)
	const what = "the Retail Prices answer (Microsoft's reference page's samples)"
	vm := "serviceName eq 'Virtual Machines' and armRegionName eq 'westeurope' and armSkuName eq 'Standard_B1s' and priceType eq 'Consumption'"
	answers := map[string][]byte{"a size's meters": retailGet(t, fake, vm),
		"none": retailGet(t, fake, "armRegionName eq 'mars'")}
	fake.SetPageSize(4)
	answers["a page with a next"] = retailGet(t, fake, vm)
	answers["the last page"] = retailGet(t, fake, "armRegionName eq 'eastus' and meterName eq 'Standard IPv4 Static Public IP'")
	fake.SetPageSize(retailpricesfake.PageSize)
	for name, body := range answers {
		if err := pricetest.ShapedLike(samples, body, what); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	body := string(answers["a page with a next"])
	for name, plant := range map[string]func(string) string{
		"retailPrice as text": func(s string) string { return strings.Replace(s, `"retailPrice":0.0114`, `"retailPrice":"0.0114"`, 1) },
		"armSkuName renamed":  func(s string) string { return strings.Replace(s, `"armSkuName"`, `"armSKUName"`, 1) },
		"meterId dropped":     func(s string) string { return regexp.MustCompile(`"meterId":"[^"]*",`).ReplaceAllString(s, "") },
		"a date otherwise":    func(s string) string { return strings.Replace(s, `"2025-10-01T00:00:00Z"`, `"10/01/2025"`, 1) },
		"isPrimaryMeterRegion 1": func(s string) string {
			return strings.Replace(s, `"isPrimaryMeterRegion":true`, `"isPrimaryMeterRegion":1`, 1)
		},
		"NextPageLink as a list":  func(s string) string { return strings.Replace(s, `"NextPageLink":"`, `"NextPageLink":["`, 1) + `"]` },
		"Items in lower case":     func(s string) string { return strings.Replace(s, `"Items"`, `"items"`, 1) },
		"tierMinimumUnits a text": func(s string) string { return strings.Replace(s, `"tierMinimumUnits":0`, `"tierMinimumUnits":"0"`, 1) },
	} {
		planted := plant(body)
		if planted == body {
			t.Fatalf("%s: the plant found nothing to change", name)
		}
		fake.SetBody(planted)
		if err := pricetest.ShapedLike(samples, retailGet(t, fake, vm), what); err == nil {
			t.Errorf("%s: the planted answer passed", name)
		}
	}
}

// TestPrices: a size's price is its Linux pay-as-you-go meter (not its
// Windows, Spot, Low Priority, Dev/Test or reserved ones), the address
// the Standard static IPv4's and egress the first paid tier of
// routing over Microsoft's network, exact to the nano, however the
// answer is paged; a size or a location the API prices not is unknown,
// saying why; one question per location for the address and egress.
func TestPrices(t *testing.T) {
	fake := retailpricesfake.New()
	t.Cleanup(fake.Close)
	source := Plugin.Prices(plugin.Env{Settings: plugin.Settings{"AZURE_PRICES_ENDPOINT": fake.URL}})
	keys := pricedPlacements(plugin.Settings{"AZURE_LOCATIONS": "westeurope,eastus", "AZURE_VM_SIZES": "Standard_B1s,Standard_B2s"})
	keys = append(keys, pricing.Key{Provider: Type, Region: "westeurope", Zone: "westeurope-2", MachineType: "Standard_D2s_v5"},
		pricing.Key{Provider: Type, Region: "mars", MachineType: "Standard_B1s"},
		pricing.Key{Provider: "gcp", Region: "westeurope", MachineType: "Standard_B1s"})
	usd := func(n int64) pricing.Money { return pricing.Money{Currency: "USD", Nanos: n} }
	price := func(region, size string, vm int64) pricing.Price {
		return pricing.Price{Provider: Type, Region: region, MachineType: size, VMPerHour: usd(vm), IPv4PerHour: usd(5_000_000),
			EgressPerGB: usd(87_000_000), EgressUnitBytes: 1_000_000_000, Source: PricesSource}
	}
	type seen struct {
		Prices  []pricing.Price
		Unknown []string
		Calls   int
	}
	read := func(t *testing.T) seen {
		t.Helper()
		before := fake.Calls()
		prices, errs, err := source.Prices(context.Background(), keys)
		if err != nil {
			t.Fatal(err)
		}
		got := seen{Prices: prices, Calls: fake.Calls() - before}
		for _, e := range errs {
			var u *pricing.UnknownError
			switch {
			case errors.As(e, &u):
				got.Unknown = append(got.Unknown, u.Reason)
			case e != nil:
				t.Errorf("not an UnknownError: %v", e)
			}
		}
		return got
	}
	want := seen{
		Prices: []pricing.Price{
			price("westeurope", "Standard_B1s", 11_400_000),
			price("westeurope", "Standard_B2s", 45_600_000),
			price("eastus", "Standard_B1s", 10_400_000),
			price("eastus", "Standard_B2s", 41_600_000),
			{}, {}, {},
		},
		Unknown: []string{
			"the Retail Prices API has no pay-as-you-go USD price for serviceName eq 'Virtual Machines' and armRegionName eq 'westeurope' and armSkuName eq 'Standard_D2s_v5' and priceType eq 'Consumption'",
			"the Retail Prices API has no pay-as-you-go USD price for serviceName eq 'Virtual Network' and productName eq 'IP Addresses' and armRegionName eq 'mars' and meterName eq 'Standard IPv4 Static Public IP' and priceType eq 'Consumption'",
			"not an azure placement",
		},
		// westeurope: address, egress and three sizes; eastus: address,
		// egress and two sizes; mars: its address.
		Calls: 5 + 4 + 1,
	}
	if diff := cmp.Diff(want, read(t)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// A page of one item: the same prices, through every NextPageLink
	// (a size's question alone matches six meters, egress six).
	fake.SetPageSize(1)
	paged := read(t)
	if diff := cmp.Diff(want.Prices, paged.Prices); diff != "" {
		t.Errorf("paged one item a page (-want +got):\n%s", diff)
	}
	if paged.Calls <= want.Calls {
		t.Errorf("paged one item a page: %d requests, want more than %d", paged.Calls, want.Calls)
	}
	fake.SetPageSize(retailpricesfake.PageSize)

	// An answer that sends the source to another host is refused.
	fake.SetBody(`{"BillingCurrency":"USD","CustomerEntityId":"Default","CustomerEntityType":"Retail","Items":[],"NextPageLink":"https://elsewhere.example/api/retail/prices?$skip=100","Count":0}`)
	if _, _, err := source.Prices(context.Background(), keys[:1]); err == nil || !strings.Contains(err.Error(), `NextPageLink "https://elsewhere.example`) {
		t.Errorf("a NextPageLink to another host: %v; want an error naming it", err)
	}
	fake.SetBody("")
	fake.Fail(http.StatusInternalServerError)
	if _, _, err := source.Prices(context.Background(), keys); err == nil || !strings.Contains(err.Error(), "/api/retail/prices") {
		t.Errorf("a failing API: %v; want an error naming the API", err)
	}
}

// TestPricedPlacements: every allowed location with every allowed size
// (the default size when none is named); no location, none.
func TestPricedPlacements(t *testing.T) {
	cases := map[string]struct {
		settings plugin.Settings
		want     []pricing.Key
	}{
		"sizes named": {plugin.Settings{"AZURE_LOCATIONS": "westeurope,eastus", "AZURE_VM_SIZES": "Standard_B1s,Standard_B2s"}, []pricing.Key{
			{Provider: Type, Region: "westeurope", MachineType: "Standard_B1s"}, {Provider: Type, Region: "westeurope", MachineType: "Standard_B2s"},
			{Provider: Type, Region: "eastus", MachineType: "Standard_B1s"}, {Provider: Type, Region: "eastus", MachineType: "Standard_B2s"}}},
		"the default size": {plugin.Settings{"AZURE_LOCATIONS": "eastus"}, []pricing.Key{{Provider: Type, Region: "eastus", MachineType: DefaultSize}}},
		"no location":      {plugin.Settings{}, nil},
	}
	for name, tc := range cases {
		if diff := cmp.Diff(tc.want, pricedPlacements(tc.settings)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}
