package azure

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

// PricesSource names where Azure's prices are read.
const PricesSource = "azure Retail Prices GET /api/retail/prices"

// RetailPricesEndpoint is Azure's Retail Prices API: public, asked with
// no credential.
const RetailPricesEndpoint = "https://prices.azure.com"

// retailAPIVersion is the version asked for: the one Microsoft's
// reference page documents as current (its filter values are
// case-sensitive).
const retailAPIVersion = "2023-01-01-preview"

// TransferUnitBytes is the GB a proxy's egress is priced by: 10^9
// bytes. Microsoft's bandwidth pricing page and the API's unitOfMeasure
// ("1 GB") do not say whether a GB of transfer is 10^9 or 2^30 bytes;
// counting in the smaller unit gives the larger figure, so a proxy's
// traffic cost is an upper bound, as its tiers are.
const TransferUnitBytes = 1_000_000_000

// maxPages bounds the pages one question follows: each answers 100
// items, and the questions the source asks match a handful.
const maxPages = 20

// Prices reads Azure's prices from the Retail Prices API (USD, the
// API's own currency; its other currencies are "for your reference"),
// with no credential, asking for each:
//
//   - the VM: serviceName 'Virtual Machines', the location's
//     armRegionName, the size's armSkuName, priceType 'Consumption'
//     (pay as you go); of what it answers, the meter that is not Spot or
//     Low Priority (by its skuName and meterName), not Windows (by its
//     productName), of type Consumption (not DevTestConsumption) and a
//     "1 Hour" unit: Linux pay as you go, as the proxy runs Debian;
//   - the public IPv4 address: serviceName 'Virtual Network', productName
//     'IP Addresses', meterName 'Standard IPv4 Static Public IP' in the
//     location, an hour (the provider's address is a Standard static
//     one, billed whether or not the VM runs);
//   - egress: serviceName 'Bandwidth', productName 'Rtn Preference: MGN'
//     (routing over Microsoft's network, a public IP's default),
//     meterName 'Standard Data Transfer Out' from the location, the
//     first tier with a price above zero a GB. The tiers below it (the
//     first 100 GB a month) are free for the whole account, not each VM,
//     so they are not a proxy's IncludedEgressBytes: a proxy's traffic
//     is priced from its first byte, an upper bound, as the tiers beyond
//     10 TB a month are cheaper.
//
// A location's IPv4 and egress prices are asked once for all its keys.
// No item, or items of different prices, is an *pricing.UnknownError
// naming the question; a failed request is the error of the whole read.
type Prices struct {
	// Endpoint is the API's base URL (RetailPricesEndpoint, or a fake's).
	Endpoint string
	// Client is the HTTP client; nil is http.DefaultClient.
	Client *http.Client
}

// retailItem is the part of an item the source reads.
type retailItem struct {
	CurrencyCode     string      `json:"currencyCode"`
	TierMinimumUnits float64     `json:"tierMinimumUnits"`
	RetailPrice      json.Number `json:"retailPrice"`
	ArmRegionName    string      `json:"armRegionName"`
	MeterName        string      `json:"meterName"`
	ProductName      string      `json:"productName"`
	SkuName          string      `json:"skuName"`
	UnitOfMeasure    string      `json:"unitOfMeasure"`
	Type             string      `json:"type"`
	ArmSkuName       string      `json:"armSkuName"`
}

// Prices is pricing.Source's.
func (p Prices) Prices(ctx context.Context, keys []pricing.Key) ([]pricing.Price, []error, error) {
	type regional struct {
		ipv4, egress pricing.Money
		err          error
	}
	regions := map[string]regional{}
	prices, errs := make([]pricing.Price, len(keys)), make([]error, len(keys))
	for i, k := range keys {
		unknown := func(reason string) error { return &pricing.UnknownError{Key: k, Reason: reason} }
		if k.Provider != Type {
			errs[i] = unknown("not an azure placement")
			continue
		}
		reg, ok := regions[k.Region]
		if !ok {
			reg.ipv4, reg.err = p.price(ctx, isUnit("1 Hour"), "serviceName", "Virtual Network", "productName", "IP Addresses",
				"armRegionName", k.Region, "meterName", "Standard IPv4 Static Public IP", "priceType", "Consumption")
			if reg.err == nil {
				reg.egress, reg.err = p.price(ctx, isUnit("1 GB"), "serviceName", "Bandwidth", "productName", "Rtn Preference: MGN",
					"armRegionName", k.Region, "meterName", "Standard Data Transfer Out", "priceType", "Consumption")
			}
			regions[k.Region] = reg
		}
		if u, ok := reg.err.(*pricing.UnknownError); ok {
			errs[i] = unknown(u.Reason)
			continue
		} else if reg.err != nil {
			return nil, nil, reg.err
		}
		vm, err := p.price(ctx, linuxPayAsYouGo, "serviceName", "Virtual Machines", "armRegionName", k.Region,
			"armSkuName", k.MachineType, "priceType", "Consumption")
		if u, ok := err.(*pricing.UnknownError); ok {
			errs[i] = unknown(u.Reason)
			continue
		} else if err != nil {
			return nil, nil, err
		}
		prices[i] = pricing.Price{Provider: Type, Region: k.Region, Zone: k.Zone, MachineType: k.MachineType,
			VMPerHour: vm, IPv4PerHour: reg.ipv4, EgressPerGB: reg.egress, EgressUnitBytes: TransferUnitBytes, Source: PricesSource}
	}
	return prices, errs, nil
}

// isUnit keeps the consumption items of unit.
func isUnit(unit string) func(retailItem) bool {
	return func(it retailItem) bool { return it.Type == "Consumption" && it.UnitOfMeasure == unit }
}

// linuxPayAsYouGo keeps a VM size's Linux pay-as-you-go meter: the
// answer to a size's question also holds its Windows meter (productName
// "… Windows"), its Spot and Low Priority meters (skuName and meterName
// "… Spot", "… Low Priority") at the same priceType.
func linuxPayAsYouGo(it retailItem) bool {
	for _, name := range []string{it.SkuName, it.MeterName} {
		if strings.HasSuffix(name, " Spot") || strings.HasSuffix(name, " Low Priority") {
			return false
		}
	}
	return isUnit("1 Hour")(it) && !strings.HasSuffix(it.ProductName, " Windows")
}

// price is the one USD price a unit of the items that answer the filter
// (pairs of field and value) and keep: the lowest tier's with a price
// above zero.
func (p Prices) price(ctx context.Context, keep func(retailItem) bool, filter ...string) (pricing.Money, error) {
	var clauses []string
	for i := 0; i+1 < len(filter); i += 2 {
		clauses = append(clauses, filter[i]+" eq '"+filter[i+1]+"'")
	}
	question := strings.Join(clauses, " and ")
	items, err := p.items(ctx, question)
	if err != nil {
		return pricing.Money{}, err
	}
	var found []pricing.Money
	bestTier := -1.0
	for _, it := range items {
		if !keep(it) {
			continue
		}
		if it.CurrencyCode != "USD" {
			return pricing.Money{}, &pricing.UnknownError{Reason: fmt.Sprintf("%s: an item in %q, not USD", question, it.CurrencyCode)}
		}
		m, err := pricing.ParseMoney(it.RetailPrice.String(), "USD")
		if err != nil {
			return pricing.Money{}, &pricing.UnknownError{Reason: fmt.Sprintf("%s: retailPrice: %v", question, err)}
		}
		switch {
		case m.Nanos <= 0:
		case bestTier < 0 || it.TierMinimumUnits < bestTier:
			found, bestTier = []pricing.Money{m}, it.TierMinimumUnits
		case it.TierMinimumUnits == bestTier:
			found = append(found, m)
		}
	}
	switch {
	case len(found) == 0:
		return pricing.Money{}, &pricing.UnknownError{Reason: fmt.Sprintf("the Retail Prices API has no pay-as-you-go USD price for %s", question)}
	case slices.ContainsFunc(found, func(m pricing.Money) bool { return m != found[0] }):
		return pricing.Money{}, &pricing.UnknownError{Reason: fmt.Sprintf("the Retail Prices API has %d meters of different prices for %s", len(found), question)}
	}
	return found[0], nil
}

// items are the items that answer filter, every page of them.
func (p Prices) items(ctx context.Context, filter string) ([]retailItem, error) {
	client := p.Client
	if client == nil {
		client = http.DefaultClient
	}
	base, err := url.Parse(strings.TrimSuffix(p.Endpoint, "/") + "/api/retail/prices")
	if err != nil {
		return nil, fmt.Errorf("azure prices: endpoint %q: %w", p.Endpoint, err)
	}
	base.RawQuery = url.Values{"api-version": {retailAPIVersion}, "currencyCode": {"'USD'"}, "$filter": {filter}}.Encode()
	var out []retailItem
	next := base.String()
	for page := 0; next != ""; page++ {
		if page == maxPages {
			return nil, fmt.Errorf("azure prices: GET %s: more than %d pages", base, maxPages)
		}
		// The next page's link is absolute: follow it only to the host
		// asked, so an answer cannot send the functions elsewhere.
		u, err := url.Parse(next)
		if err != nil || u.Host != base.Host {
			return nil, fmt.Errorf("azure prices: GET %s: NextPageLink %q is not of %s", base, next, base.Host)
		}
		var body struct {
			Items        []retailItem `json:"Items"`
			NextPageLink *string      `json:"NextPageLink"`
		}
		if err := p.get(ctx, client, next, &body); err != nil {
			return nil, fmt.Errorf("azure prices: GET %s: %w", next, err)
		}
		out = append(out, body.Items...)
		next = ""
		if body.NextPageLink != nil {
			next = *body.NextPageLink
		}
	}
	return out, nil
}

func (p Prices) get(ctx context.Context, client *http.Client, u string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %.300s", resp.Status, body)
	}
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("the answer is not a page of prices: %w", err)
	}
	return nil
}

// pricesFromEnv is the Plugin's Prices: the Retail Prices API, which
// asks no credential, so the functions present none (no Azure identity
// is federated for it); AZURE_PRICES_ENDPOINT replaces Azure's when set.
func pricesFromEnv(env plugin.Env) pricing.Source {
	endpoint := RetailPricesEndpoint
	if e := env.Settings.Get("AZURE_PRICES_ENDPOINT"); e != "" {
		endpoint = e
	}
	return Prices{Endpoint: endpoint}
}

// pricedPlacements are the placements the operator allows: each allowed
// location with each allowed size, priced by location (a size's price
// is the location's, whichever zone).
func pricedPlacements(s plugin.Settings) []pricing.Key {
	pol := PolicyOf(s)
	types := pol.Sizes
	if len(types) == 0 {
		types = DefaultAllowedSizes
	}
	return pricing.KeysOf(Type, pol.Locations, types)
}
