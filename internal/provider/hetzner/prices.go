package hetzner

import (
	"context"
	"fmt"
	"slices"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

// PricesSource names where Hetzner's prices are read.
const PricesSource = "hetzner GET /v1/pricing"

// TrafficUnitBytes is Hetzner's "TB" of traffic: its included_traffic is
// a multiple of 2^40 bytes (20 TB is 21990232555520), and
// price_per_tb_traffic is the price of one such unit. A Price's egress is
// kept a TB at a time (EgressUnitBytes), so that Hetzner's price is kept
// exact rather than divided into a GB's.
const TrafficUnitBytes = 1 << 40

// Prices reads Hetzner's prices with one GET /v1/pricing, which carries
// the account's currency, each server type's net prices in each location
// (hourly, the traffic included a month and the price of a TB beyond) and
// each location's Primary IPv4 price. Net prices: Hetzner's gross adds the
// VAT of the account's country, which the bill shows apart.
type Prices struct {
	Client *hcloud.Client
}

// Prices is pricing.Source's.
func (p Prices) Prices(ctx context.Context, keys []pricing.Key) ([]pricing.Price, []error, error) {
	pr, _, err := p.Client.Pricing.Get(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("hetzner prices: GET /v1/pricing: %w", err)
	}
	return pricesOf(pr, keys)
}

func pricesOf(pr hcloud.Pricing, keys []pricing.Key) ([]pricing.Price, []error, error) {
	if pr.Currency == "" {
		return nil, nil, fmt.Errorf("hetzner prices: GET /v1/pricing names no currency")
	}
	ipv4 := map[string]string{}
	for _, ip := range pr.PrimaryIPs {
		if ip.Type == "ipv4" {
			for _, l := range ip.Pricings {
				ipv4[l.Location] = l.Hourly.Net
			}
		}
	}
	prices, errs := make([]pricing.Price, len(keys)), make([]error, len(keys))
	for i, k := range keys {
		prices[i], errs[i] = priceOf(pr, ipv4, k)
		if errs[i] != nil {
			prices[i] = pricing.Price{}
		}
	}
	return prices, errs, nil
}

func priceOf(pr hcloud.Pricing, ipv4 map[string]string, k pricing.Key) (pricing.Price, error) {
	unknown := func(format string, a ...any) error {
		return &pricing.UnknownError{Key: k, Reason: fmt.Sprintf(format, a...)}
	}
	if k.Provider != Type {
		return pricing.Price{}, unknown("not a hetzner placement")
	}
	if k.Zone == "" {
		// A placement that names no location is given one; the price is
		// the location's, known once it is placed.
		return pricing.Price{}, unknown("no location: Hetzner prices a server type per location")
	}
	if z := networkZoneOf[k.Zone]; z != k.Region {
		return pricing.Price{}, unknown("location %s is not of network zone %s", k.Zone, k.Region)
	}
	i := slices.IndexFunc(pr.ServerTypes, func(t hcloud.ServerTypePricing) bool {
		return t.ServerType != nil && t.ServerType.Name == k.MachineType
	})
	if i < 0 {
		return pricing.Price{}, unknown("GET /v1/pricing lists no server type %s", k.MachineType)
	}
	j := slices.IndexFunc(pr.ServerTypes[i].Pricings, func(l hcloud.ServerTypeLocationPricing) bool {
		return l.Location != nil && l.Location.Name == k.Zone
	})
	if j < 0 {
		return pricing.Price{}, unknown("server type %s has no price in %s (it is not sold there)", k.MachineType, k.Zone)
	}
	at := pr.ServerTypes[i].Pricings[j]
	out := pricing.Price{Provider: Type, Region: k.Region, Zone: k.Zone, MachineType: k.MachineType,
		EgressUnitBytes: TrafficUnitBytes, IncludedEgressBytes: int64(at.IncludedTraffic), Source: PricesSource}
	var err error
	if out.VMPerHour, err = pricing.ParseMoney(at.Hourly.Net, pr.Currency); err != nil {
		return pricing.Price{}, unknown("server type %s in %s: price_hourly.net: %v", k.MachineType, k.Zone, err)
	}
	if out.EgressPerGB, err = pricing.ParseMoney(at.PerTBTraffic.Net, pr.Currency); err != nil {
		return pricing.Price{}, unknown("server type %s in %s: price_per_tb_traffic.net: %v", k.MachineType, k.Zone, err)
	}
	// A server's IPv4 address is a Primary IP, billed apart since 2024.
	net, ok := ipv4[k.Zone]
	if !ok {
		return pricing.Price{}, unknown("GET /v1/pricing gives no ipv4 Primary IP price in %s", k.Zone)
	}
	if out.IPv4PerHour, err = pricing.ParseMoney(net, pr.Currency); err != nil {
		return pricing.Price{}, unknown("ipv4 Primary IP in %s: price_hourly.net: %v", k.Zone, err)
	}
	return out, nil
}

// pricesFromEnv is the Plugin's Prices: the same client as the
// provider's, its token read when the prices are first read.
func pricesFromEnv(env plugin.Env) pricing.Source {
	return pricesFunc(func(ctx context.Context, keys []pricing.Key) ([]pricing.Price, []error, error) {
		s := env.Settings
		token := LocalToken
		if secret := s.Get("HETZNER_TOKEN_SECRET"); secret != "" {
			var err error
			if token, err = env.ReadToken(ctx, "HETZNER_TOKEN_SECRET", secret); err != nil {
				return nil, nil, fmt.Errorf("hetzner prices: %w", err)
			}
		}
		return Prices{Client: NewClient(token, s.Get("HETZNER_ENDPOINT"), nil)}.Prices(ctx, keys)
	})
}

type pricesFunc func(ctx context.Context, keys []pricing.Key) ([]pricing.Price, []error, error)

func (f pricesFunc) Prices(ctx context.Context, keys []pricing.Key) ([]pricing.Price, []error, error) {
	return f(ctx, keys)
}

// pricedPlacements are the placements the operator allows: each allowed
// location (every one when none is named) with each allowed server type.
func pricedPlacements(s plugin.Settings) []pricing.Key {
	pol := PolicyOf(s)
	locs := pol.Locations
	if len(locs) == 0 {
		locs = slices.Sorted(func(yield func(string) bool) {
			for l := range networkZoneOf {
				if !yield(l) {
					return
				}
			}
		})
	}
	types := pol.ServerTypes
	if len(types) == 0 {
		types = DefaultAllowedServerTypes
	}
	var out []pricing.Key
	for _, l := range locs {
		for _, t := range types {
			if euOnly[t] && networkZoneOf[l] != "eu-central" {
				continue
			}
			out = append(out, pricing.Key{Provider: Type, Region: networkZoneOf[l], Zone: l, MachineType: t})
		}
	}
	return out
}
