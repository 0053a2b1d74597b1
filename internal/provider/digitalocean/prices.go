package digitalocean

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/digitalocean/godo"

	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

// PricesSource names where DigitalOcean's prices are read.
const PricesSource = "digitalocean GET /v2/sizes"

// The prices /v2/sizes does not carry, from DigitalOcean's bandwidth
// billing page (docs.digitalocean.com/platform/billing/bandwidth): a
// Droplet's transfer allowance is in TB of 1,000 GiB, pooled across the
// account's Droplets, and outbound transfer beyond the pool is $0.01 a
// GiB. A Droplet's public IPv4 address is part of its price (a reserved
// IP assigned to a Droplet is free), so IPv4PerHour is zero.
const (
	transferTBBytes = 1000 << 30
	egressPerGiB    = "0.01"
	sizesCurrency   = "USD"
)

// Prices reads DigitalOcean's prices from GET /v2/sizes: each size's
// price_hourly (USD), its transfer allowance, and the regions it is sold
// in. godo reads price_hourly as a float64; it is written back as the
// shortest decimal that reads as the same float, which is the decimal
// the API wrote (five places).
type Prices struct {
	Client *godo.Client
}

// Prices is pricing.Source's.
func (p Prices) Prices(ctx context.Context, keys []pricing.Key) ([]pricing.Price, []error, error) {
	var sizes []godo.Size
	opt := &godo.ListOptions{PerPage: 200}
	for {
		page, resp, err := p.Client.Sizes.List(ctx, opt)
		if err != nil {
			return nil, nil, fmt.Errorf("digitalocean prices: GET /v2/sizes: %w", err)
		}
		sizes = append(sizes, page...)
		if resp == nil || resp.Links == nil || resp.Links.IsLastPage() {
			break
		}
		next, err := resp.Links.CurrentPage()
		if err != nil {
			return nil, nil, fmt.Errorf("digitalocean prices: GET /v2/sizes: the page links: %w", err)
		}
		opt.Page = next + 1
	}
	perGiB, _ := pricing.ParseMoney(egressPerGiB, sizesCurrency)
	prices, errs := make([]pricing.Price, len(keys)), make([]error, len(keys))
	for i, k := range keys {
		prices[i], errs[i] = priceOf(sizes, perGiB, k)
	}
	return prices, errs, nil
}

func priceOf(sizes []godo.Size, perGiB pricing.Money, k pricing.Key) (pricing.Price, error) {
	unknown := func(format string, a ...any) error {
		return &pricing.UnknownError{Key: k, Reason: fmt.Sprintf(format, a...)}
	}
	if k.Provider != Type {
		return pricing.Price{}, unknown("not a digitalocean placement")
	}
	i := slices.IndexFunc(sizes, func(z godo.Size) bool { return z.Slug == k.MachineType })
	if i < 0 {
		return pricing.Price{}, unknown("GET /v2/sizes lists no size %s", k.MachineType)
	}
	z := sizes[i]
	if k.Zone != "" && !slices.Contains(z.Regions, k.Zone) {
		return pricing.Price{}, unknown("size %s is not sold in %s", k.MachineType, k.Zone)
	}
	hour, err := pricing.ParseMoney(strconv.FormatFloat(z.PriceHourly, 'f', -1, 64), sizesCurrency)
	if err != nil || z.PriceHourly <= 0 {
		return pricing.Price{}, unknown("size %s: price_hourly %v is no price: %v", k.MachineType, z.PriceHourly, err)
	}
	included, err := pricing.ParseMoney(strconv.FormatFloat(z.Transfer, 'f', -1, 64), sizesCurrency)
	if err != nil {
		return pricing.Price{}, unknown("size %s: transfer %v is not a number of TB", k.MachineType, z.Transfer)
	}
	return pricing.Price{Provider: Type, Region: k.Region, Zone: k.Zone, MachineType: k.MachineType,
		VMPerHour: hour, IPv4PerHour: pricing.Money{Currency: sizesCurrency}, EgressPerGB: perGiB, EgressUnitBytes: 1 << 30,
		// transfer TB × 1000 GiB, exact: Money's nanos hold the decimal.
		IncludedEgressBytes: included.Times(transferTBBytes, pricing.Nano).Nanos,
		Source:              PricesSource}, nil
}

// pricesFromEnv is the Plugin's Prices: the provider's client, its token
// read when the prices are first read.
func pricesFromEnv(env plugin.Env) pricing.Source {
	return pricesFunc(func(ctx context.Context, keys []pricing.Key) ([]pricing.Price, []error, error) {
		s := env.Settings
		token := LocalToken
		if secret := s.Get("DIGITALOCEAN_TOKEN_SECRET"); secret != "" {
			var err error
			if token, err = env.ReadToken(ctx, "DIGITALOCEAN_TOKEN_SECRET", secret); err != nil {
				return nil, nil, fmt.Errorf("digitalocean prices: %w", err)
			}
		}
		c, err := NewClient(token, s.Get("DIGITALOCEAN_ENDPOINT"), nil)
		if err != nil {
			return nil, nil, err
		}
		return Prices{Client: c}.Prices(ctx, keys)
	})
}

type pricesFunc func(ctx context.Context, keys []pricing.Key) ([]pricing.Price, []error, error)

func (f pricesFunc) Prices(ctx context.Context, keys []pricing.Key) ([]pricing.Price, []error, error) {
	return f(ctx, keys)
}

// pricedPlacements are the placements the operator allows: each allowed
// region (every one when none is named) with each allowed size.
func pricedPlacements(s plugin.Settings) []pricing.Key {
	pol := PolicyOf(s)
	regions := pol.Regions
	if len(regions) == 0 {
		regions = slices.Sorted(maps.Keys(metroOf))
	}
	sizes := pol.Sizes
	if len(sizes) == 0 {
		sizes = DefaultAllowedSizes
	}
	var out []pricing.Key
	for _, r := range regions {
		for _, z := range sizes {
			out = append(out, pricing.Key{Provider: Type, Region: metroOf[r], Zone: r, MachineType: z})
		}
	}
	return out
}
