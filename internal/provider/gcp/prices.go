package gcp

import (
	"context"
	"fmt"
	"slices"
	"strings"

	cloudbilling "google.golang.org/api/cloudbilling/v1"
	"google.golang.org/api/option"

	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

// PricesSource names where Google Cloud's prices are read.
const PricesSource = "gcp Cloud Billing Catalog services/6F81-5844-456A/skus"

// computeService is Compute Engine's service in the catalog.
const computeService = "services/6F81-5844-456A"

// e2Shapes are the E2 machine types' billed vCPUs (in hundredths) and
// memory (GiB). The shared-core types bill a fraction of a vCPU: e2-micro
// 0.25, e2-small 0.5, e2-medium 1 ("Shared-core machine types ...
// fractional vCPU", Compute Engine's machine types page, E2 shared-core
// machine types: e2-micro 2 vCPUs at 12.5% = 0.25, e2-small at 25% = 0.5,
// e2-medium at 50% = 1), with 1, 2 and 4 GB of memory; the standard
// types bill every vCPU and 4 GB a vCPU.
var e2Shapes = map[string]struct{ centiCPU, memGiB int64 }{
	"e2-micro": {25, 1}, "e2-small": {50, 2}, "e2-medium": {100, 4},
	"e2-standard-2": {200, 8}, "e2-standard-4": {400, 16}, "e2-standard-8": {800, 32},
}

// Prices reads Google Cloud's prices from the Cloud Billing Catalog
// API's SKUs of Compute Engine (in USD), with the functions' identity:
//
//   - the VM: an E2 type is billed by the vCPU and the GiB of memory an
//     hour, in the region's SKUs "E2 Instance Core running in CONTINENT"
//     and "E2 Instance Ram running in CONTINENT" (the region among their
//     serviceRegions); its price is the sum over e2Shapes;
//   - the IPv4 address: "External IP charge on a standard VM" in the
//     region;
//   - egress: "Network Internet Data Transfer Out from CONTINENT to
//     CONTINENT" of the region (to the region's own continent), the
//     first paid tier a GiB (2^30 bytes); farther destinations cost more.
type Prices struct {
	Service *cloudbilling.APIService
}

// Prices is pricing.Source's.
func (p Prices) Prices(ctx context.Context, keys []pricing.Key) ([]pricing.Price, []error, error) {
	var skus []*cloudbilling.Sku
	err := p.Service.Services.Skus.List(computeService).CurrencyCode("USD").PageSize(5000).Pages(ctx, func(r *cloudbilling.ListSkusResponse) error {
		skus = append(skus, r.Skus...)
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("gcp prices: the Cloud Billing Catalog's %s/skus: %w", computeService, err)
	}
	prices, errs := make([]pricing.Price, len(keys)), make([]error, len(keys))
	for i, k := range keys {
		prices[i], errs[i] = priceOf(skus, k)
	}
	return prices, errs, nil
}

func priceOf(skus []*cloudbilling.Sku, k pricing.Key) (pricing.Price, error) {
	unknown := func(format string, a ...any) error {
		return &pricing.UnknownError{Key: k, Reason: fmt.Sprintf(format, a...)}
	}
	if k.Provider != Type {
		return pricing.Price{}, unknown("not a gcp placement")
	}
	shape, ok := e2Shapes[k.MachineType]
	if !ok {
		return pricing.Price{}, unknown("machine type %s is not an E2 type the product prices (%s)", k.MachineType, strings.Join(slices.Sorted(func(y func(string) bool) {
			for t := range e2Shapes {
				if !y(t) {
					return
				}
			}
		}), ", "))
	}
	find := func(prefix string) (*cloudbilling.Sku, error) {
		for _, s := range skus {
			if strings.HasPrefix(s.Description, prefix) && slices.Contains(s.ServiceRegions, k.Region) {
				return s, nil
			}
		}
		return nil, unknown("no SKU %q serves %s", prefix, k.Region)
	}
	core, err := find("E2 Instance Core running in ")
	if err != nil {
		return pricing.Price{}, err
	}
	continent := strings.TrimPrefix(core.Description, "E2 Instance Core running in ")
	ram, err := find("E2 Instance Ram running in " + continent)
	if err != nil {
		return pricing.Price{}, err
	}
	ip, err := find("External IP charge on a standard VM")
	if err != nil {
		return pricing.Price{}, err
	}
	egress, err := find("Network Internet Data Transfer Out from " + continent + " to " + continent)
	if err != nil {
		return pricing.Price{}, err
	}
	out := pricing.Price{Provider: Type, Region: k.Region, MachineType: k.MachineType, EgressUnitBytes: 1 << 30, Source: PricesSource}
	var coreHour, ramHour pricing.Money
	for _, c := range []struct {
		sku  *cloudbilling.Sku
		unit string
		into *pricing.Money
	}{{core, "h", &coreHour}, {ram, "GiBy.h", &ramHour}, {ip, "h", &out.IPv4PerHour}, {egress, "GiBy", &out.EgressPerGB}} {
		if *c.into, err = firstPaid(c.sku, c.unit); err != nil {
			return pricing.Price{}, unknown("SKU %s (%s): %v", c.sku.SkuId, c.sku.Description, err)
		}
	}
	out.VMPerHour, err = coreHour.Times(shape.centiCPU, 100).Add(ramHour.Times(shape.memGiB, 1))
	if err != nil {
		return pricing.Price{}, unknown("%v", err)
	}
	return out, nil
}

// firstPaid is the SKU's price a unit in its lowest tier with a price
// above zero, of its first pricing info (the current one).
func firstPaid(s *cloudbilling.Sku, unit string) (pricing.Money, error) {
	if len(s.PricingInfo) == 0 || s.PricingInfo[0].PricingExpression == nil {
		return pricing.Money{}, fmt.Errorf("no pricing expression")
	}
	expr := s.PricingInfo[0].PricingExpression
	if expr.UsageUnit != unit {
		return pricing.Money{}, fmt.Errorf("priced a %s, not a %s", expr.UsageUnit, unit)
	}
	for _, t := range expr.TieredRates {
		if t.UnitPrice == nil {
			continue
		}
		m := pricing.Money{Currency: t.UnitPrice.CurrencyCode, Nanos: t.UnitPrice.Units*pricing.Nano + t.UnitPrice.Nanos}
		if m.Nanos > 0 {
			if m.Currency == "" {
				return pricing.Money{}, fmt.Errorf("a tier's price names no currency")
			}
			return m, nil
		}
	}
	return pricing.Money{}, fmt.Errorf("no tier with a price")
}

// pricesFromEnv is the Plugin's Prices: the functions' own credentials
// (the Cloud Billing Catalog reads public prices), against
// GCP_BILLING_ENDPOINT without credentials when set.
func pricesFromEnv(env plugin.Env) pricing.Source {
	return pricesFunc(func(ctx context.Context, keys []pricing.Key) ([]pricing.Price, []error, error) {
		var opts []option.ClientOption
		if e := env.Settings.Get("GCP_BILLING_ENDPOINT"); e != "" {
			opts = append(opts, option.WithEndpoint(e), option.WithoutAuthentication())
		}
		svc, err := cloudbilling.NewService(ctx, opts...)
		if err != nil {
			return nil, nil, fmt.Errorf("gcp prices: a Cloud Billing client: %w", err)
		}
		return Prices{Service: svc}.Prices(ctx, keys)
	})
}

type pricesFunc func(ctx context.Context, keys []pricing.Key) ([]pricing.Price, []error, error)

func (f pricesFunc) Prices(ctx context.Context, keys []pricing.Key) ([]pricing.Price, []error, error) {
	return f(ctx, keys)
}

// pricedPlacements are the placements the operator allows: each allowed
// region with each allowed machine type, priced by region. With no
// region named (any region allowed) none is priced: name the regions in
// GCP_ALLOWED_REGIONS to have Google Cloud's prices read.
func pricedPlacements(s plugin.Settings) []pricing.Key {
	pol := PolicyOf(s)
	types := pol.MachineTypes
	if len(types) == 0 {
		types = DefaultAllowedMachineTypes
	}
	return pricing.KeysOf(Type, pol.Regions, types)
}
