package mock

import (
	"context"

	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

// PricesSource names where the mock's prices come from.
const PricesSource = "mock: a fixed price list"

// Unpriced is a machine type the mock publishes no price for: a test
// names it to see a proxy whose cost is unknown.
const Unpriced = "unpriced"

// The mock's fixed prices, the same in every region and for every
// machine type but Unpriced, in USD, of Google Cloud's order for an e2
// VM: a VM an hour, an IPv4 address an hour, a GB (10^9 bytes) of egress
// with 1 GB a month included (so the included traffic is seen in a sum).
var (
	PriceVMPerHour      = pricing.Money{Currency: "USD", Nanos: 10_000_000} // 0.01
	PriceIPv4PerHour    = pricing.Money{Currency: "USD", Nanos: 5_000_000}  // 0.005
	PriceEgressPerGB    = pricing.Money{Currency: "USD", Nanos: 90_000_000} // 0.09
	PriceIncludedEgress = int64(1_000_000_000)
)

// PricedRegions are the regions the refresh prices for the mock: the
// local stack's examples'.
var PricedRegions = []string{"us-central1", "europe-west1", "europe-west4"}

// Prices is the mock's price source: the fixed list, never unreachable.
type Prices struct{}

// Prices is pricing.Source's.
func (Prices) Prices(_ context.Context, keys []pricing.Key) ([]pricing.Price, []error, error) {
	prices, errs := make([]pricing.Price, len(keys)), make([]error, len(keys))
	for i, k := range keys {
		if k.Provider != Type || k.MachineType == Unpriced {
			errs[i] = &pricing.UnknownError{Key: k, Reason: "the mock's price list has no price for it"}
			continue
		}
		prices[i] = pricing.Price{Provider: Type, Region: k.Region, Zone: k.Zone, MachineType: k.MachineType,
			VMPerHour: PriceVMPerHour, IPv4PerHour: PriceIPv4PerHour, EgressPerGB: PriceEgressPerGB, EgressUnitBytes: 1_000_000_000,
			IncludedEgressBytes: PriceIncludedEgress, Source: PricesSource}
	}
	return prices, errs, nil
}

func pricedPlacements(plugin.Settings) []pricing.Key {
	var out []pricing.Key
	for _, r := range PricedRegions {
		out = append(out, pricing.Key{Provider: Type, Region: r})
	}
	return out
}
