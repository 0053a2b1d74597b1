package aws

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	sdk "github.com/aws/aws-sdk-go-v2/aws"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/pricing/types"

	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

// PricesSource names where AWS's prices are read.
const PricesSource = "aws Price List GetProducts"

// PriceListRegion is where the Price List Query API is served (it has
// endpoints in us-east-1, eu-central-1 and ap-south-1, each answering
// for every region).
const PriceListRegion = "us-east-1"

// TransferUnitBytes is AWS's GB of data transfer: 2^30 bytes (AWS's
// billing glossary counts a GB of transfer as 1,073,741,824 bytes).
const TransferUnitBytes = 1 << 30

// Prices reads AWS's prices from the Price List Query API's GetProducts,
// a call per question, each answered with PriceList items (a product and
// its terms, as JSON in a string):
//
//   - the VM: service AmazonEC2, TERM_MATCH on instanceType, regionCode,
//     operatingSystem Linux, tenancy Shared, preInstalledSw NA and
//     capacitystatus Used; its OnDemand price a Hrs in USD;
//   - the public IPv4 address: service AmazonVPC in the region, the
//     product whose usagetype ends PublicIPv4:InUseAddress (an address in
//     use is billed by the hour since February 2024);
//   - egress: service AWSDataTransfer from the region, transferType AWS
//     Outbound; the first paid tier's price a GB (the tiers beyond 10 TB
//     a month are cheaper: the price is the upper bound of a proxy's).
//
// A region's IPv4 and egress prices are read once for all its keys.
type Prices struct {
	Client *awspricing.Client
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
		unknown := func(format string, a ...any) error {
			return &pricing.UnknownError{Key: k, Reason: fmt.Sprintf(format, a...)}
		}
		if k.Provider != Type {
			errs[i] = unknown("not an aws placement")
			continue
		}
		reg, ok := regions[k.Region]
		if !ok {
			ipv4, err := p.onDemand(ctx, "AmazonVPC", "Hrs", func(a map[string]string) bool {
				return strings.HasSuffix(a["usagetype"], "PublicIPv4:InUseAddress")
			}, "regionCode", k.Region)
			if err == nil {
				reg.ipv4 = ipv4
				reg.egress, err = p.onDemand(ctx, "AWSDataTransfer", "GB", nil, "fromRegionCode", k.Region, "transferType", "AWS Outbound")
			}
			reg.err = err
			regions[k.Region] = reg
		}
		if reg.err != nil {
			if u, ok := reg.err.(*pricing.UnknownError); ok {
				errs[i] = unknown("%s", u.Reason)
				continue
			}
			return nil, nil, reg.err
		}
		vm, err := p.onDemand(ctx, "AmazonEC2", "Hrs", nil, "instanceType", k.MachineType, "regionCode", k.Region,
			"operatingSystem", "Linux", "tenancy", "Shared", "preInstalledSw", "NA", "capacitystatus", "Used")
		if u, ok := err.(*pricing.UnknownError); ok {
			errs[i] = unknown("%s", u.Reason)
			continue
		} else if err != nil {
			return nil, nil, err
		}
		prices[i] = pricing.Price{Provider: Type, Region: k.Region, Zone: k.Zone, MachineType: k.MachineType,
			VMPerHour: vm, IPv4PerHour: reg.ipv4, EgressPerGB: reg.egress, EgressUnitBytes: TransferUnitBytes, Source: PricesSource}
	}
	return prices, errs, nil
}

// item is the part of a PriceList item the source reads.
type item struct {
	Product struct {
		Attributes map[string]string `json:"attributes"`
	} `json:"product"`
	Terms struct {
		OnDemand map[string]struct {
			PriceDimensions map[string]struct {
				Unit         string            `json:"unit"`
				BeginRange   string            `json:"beginRange"`
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

// onDemand is the one on-demand USD price a unit of the products of
// service that match the filters (pairs of field and value) and keep: the
// first paid range's (the lowest beginRange with a price above zero). No
// product, or products of different prices, is an *pricing.UnknownError
// naming the question; a failed call is the error of the whole read.
func (p Prices) onDemand(ctx context.Context, service, unit string, keep func(map[string]string) bool, filters ...string) (pricing.Money, error) {
	in := &awspricing.GetProductsInput{ServiceCode: sdk.String(service), FormatVersion: sdk.String("aws_v1")}
	var asked []string
	for i := 0; i+1 < len(filters); i += 2 {
		in.Filters = append(in.Filters, types.Filter{Type: types.FilterTypeTermMatch, Field: sdk.String(filters[i]), Value: sdk.String(filters[i+1])})
		asked = append(asked, filters[i]+"="+filters[i+1])
	}
	question := service + " " + strings.Join(asked, " ")
	var found []pricing.Money
	pages := awspricing.NewGetProductsPaginator(p.Client, in)
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return pricing.Money{}, fmt.Errorf("aws prices: GetProducts %s: %w", question, err)
		}
		for _, raw := range out.PriceList {
			var it item
			if err := json.Unmarshal([]byte(raw), &it); err != nil {
				return pricing.Money{}, fmt.Errorf("aws prices: GetProducts %s: a PriceList item is not a product: %w", question, err)
			}
			if keep != nil && !keep(it.Product.Attributes) {
				continue
			}
			m, ok, err := firstPaid(it, unit)
			if err != nil {
				return pricing.Money{}, &pricing.UnknownError{Reason: fmt.Sprintf("GetProducts %s: %v", question, err)}
			}
			if ok {
				found = append(found, m)
			}
		}
	}
	switch {
	case len(found) == 0:
		return pricing.Money{}, &pricing.UnknownError{Reason: fmt.Sprintf("GetProducts %s: no on-demand USD price a %s", question, unit)}
	case slices.ContainsFunc(found, func(m pricing.Money) bool { return m != found[0] }):
		return pricing.Money{}, &pricing.UnknownError{Reason: fmt.Sprintf("GetProducts %s: %d products of different prices", question, len(found))}
	}
	return found[0], nil
}

// firstPaid is the item's on-demand USD price a unit in its lowest range
// with a price above zero.
func firstPaid(it item, unit string) (pricing.Money, bool, error) {
	var best pricing.Money
	bestBegin := -1.0
	for _, term := range it.Terms.OnDemand {
		for _, d := range term.PriceDimensions {
			usd, ok := d.PricePerUnit["USD"]
			if !ok || d.Unit != unit {
				continue
			}
			m, err := pricing.ParseMoney(usd, "USD")
			if err != nil {
				return pricing.Money{}, false, fmt.Errorf("pricePerUnit.USD: %w", err)
			}
			begin, err := strconv.ParseFloat(d.BeginRange, 64)
			if err != nil {
				return pricing.Money{}, false, fmt.Errorf("beginRange %q is not a number", d.BeginRange)
			}
			if m.Nanos > 0 && (bestBegin < 0 || begin < bestBegin) {
				best, bestBegin = m, begin
			}
		}
	}
	return best, bestBegin >= 0, nil
}

// NewPricesClient is the SDK's Price List client over opts (its
// Endpoint, when set, replaces AWS's: a fake in tests).
func NewPricesClient(opts ClientOptions) *awspricing.Client {
	o := awspricing.Options{Region: PriceListRegion, Credentials: opts.Credentials, AppID: "egress-proxies"}
	if opts.Endpoint != "" {
		o.BaseEndpoint = sdk.String(opts.Endpoint)
	}
	if opts.HTTPClient != nil {
		o.HTTPClient = opts.HTTPClient
	}
	return awspricing.New(o)
}

// pricesFromEnv is the Plugin's Prices: the provider's federated role
// (which the aws module grants pricing:GetProducts), against
// AWS_PRICING_ENDPOINT when set.
func pricesFromEnv(env plugin.Env) pricing.Source {
	return pricesFunc(func(ctx context.Context, keys []pricing.Key) ([]pricing.Price, []error, error) {
		s := env.Settings
		var creds sdk.CredentialsProvider = localCredentials
		if role, audience := s.Get("AWS_ROLE_ARN"), s.Get("AWS_AUDIENCE"); role != "" {
			tokens, err := env.IDTokens(context.WithoutCancel(ctx), audience)
			if err != nil {
				return nil, nil, fmt.Errorf("aws prices: a source of Google ID tokens for AWS_AUDIENCE %q: %w", audience, err)
			}
			if creds, err = WebIdentity(Federation{RoleARN: role, SessionName: "egress-" + env.Deployment + "-prices", Tokens: tokens,
				Region: PriceListRegion, Endpoint: s.Get("AWS_STS_ENDPOINT")}); err != nil {
				return nil, nil, err
			}
		}
		return Prices{Client: NewPricesClient(ClientOptions{Credentials: creds, Endpoint: s.Get("AWS_PRICING_ENDPOINT")})}.Prices(ctx, keys)
	})
}

type pricesFunc func(ctx context.Context, keys []pricing.Key) ([]pricing.Price, []error, error)

func (f pricesFunc) Prices(ctx context.Context, keys []pricing.Key) ([]pricing.Price, []error, error) {
	return f(ctx, keys)
}

// pricedPlacements are the placements the operator allows: each allowed
// region with each allowed instance type, priced by region (EC2's
// on-demand prices are a region's).
func pricedPlacements(s plugin.Settings) []pricing.Key {
	pol := PolicyOf(s)
	types := pol.InstanceTypes
	if len(types) == 0 {
		types = DefaultAllowedInstanceTypes
	}
	return pricing.KeysOf(Type, pol.Regions, types)
}
