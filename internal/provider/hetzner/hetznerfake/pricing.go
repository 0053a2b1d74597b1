package hetznerfake

import (
	"math/big"
	"net/http"
	"strings"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// The prices the fake publishes, in GET /v1/pricing's shape (Hetzner's
// API reference, "Pricing": currency, vat_rate, server_types[].prices[]
// per location with price_hourly and price_monthly as net and gross
// decimal strings, included_traffic in bytes and price_per_tb_traffic;
// primary_ips[] per type and location). The amounts are the fake's own,
// of Hetzner's order (a CX type in the EU for a few euros a month, 20 TiB
// included there and 1 TiB in the US and Singapore, 1 € a TB beyond in
// the EU); the shape is hcloud-go's schema.Pricing, which a test of the
// hetzner package decodes the fake's answer into strictly.
const (
	PricingCurrency = "EUR"
	PricingVATRate  = "19.00"
)

// tib is Hetzner's "TB" of traffic: included_traffic is a multiple of
// 2^40 bytes (20 TB is 21990232555520).
const tib = 1 << 40

// serverTypePrices are the net prices of each server type the catalog
// names: hourly and monthly, the traffic included a month and its price
// a TB beyond, the same in each location of a network zone.
var serverTypePrices = map[string]struct{ euHour, euMonth, otherHour, otherMonth string }{
	"cx23":  {"0.0048", "2.99", "", ""},
	"cx33":  {"0.0080", "4.99", "", ""},
	"cpx22": {"0.0096", "5.99", "0.0128", "7.99"},
	"cpx32": {"0.0176", "10.99", "0.0224", "13.99"},
}

// gross is net with the VAT rate added, to four decimals as Hetzner
// writes its amounts: a client that reads gross where it must read net
// is seen by it.
func gross(net string) string {
	r, _ := new(big.Rat).SetString(net)
	vat, _ := new(big.Rat).SetString("1.19")
	return r.Mul(r, vat).FloatString(4)
}

func price(net string) schema.Price { return schema.Price{Net: net, Gross: gross(net)} }

// Pricing is the fake's answer to GET /v1/pricing.
func Pricing() schema.Pricing {
	p := schema.Pricing{Currency: PricingCurrency, VATRate: PricingVATRate,
		Image:             schema.PricingImage{PricePerGBMonth: price("0.0119")},
		ServerBackup:      schema.PricingServerBackup{Percentage: "20.00"},
		Volume:            schema.PricingVolume{PricePerGBPerMonth: price("0.0440")},
		FloatingIPs:       []schema.PricingFloatingIPType{},
		LoadBalancerTypes: []schema.PricingLoadBalancerType{},
	}
	ipv4 := schema.PricingPrimaryIP{Type: "ipv4"}
	ipv6 := schema.PricingPrimaryIP{Type: "ipv6"}
	for _, l := range Locations {
		ipv4.Prices = append(ipv4.Prices, schema.PricingPrimaryIPTypePrice{Location: l.Name, PriceHourly: price("0.0008"), PriceMonthly: price("0.5000")})
		ipv6.Prices = append(ipv6.Prices, schema.PricingPrimaryIPTypePrice{Location: l.Name, PriceHourly: price("0.0000"), PriceMonthly: price("0.0000")})
	}
	p.PrimaryIPs = []schema.PricingPrimaryIP{ipv4, ipv6}
	// Hetzner lists both Floating IP types too; hcloud-go v2.52.0 sizes
	// its primary_ips by floating_ips' length (schema_gen.go,
	// primaryIPPricingFromSchema), so an answer without them panics it.
	for _, typ := range []string{"ipv4", "ipv6"} {
		f := schema.PricingFloatingIPType{Type: typ}
		for _, l := range Locations {
			f.Prices = append(f.Prices, schema.PricingFloatingIPTypePrice{Location: l.Name, PriceMonthly: price("3.0000")})
		}
		p.FloatingIPs = append(p.FloatingIPs, f)
	}
	for _, t := range ServerTypes {
		p.ServerTypes = append(p.ServerTypes, schema.PricingServerType{ID: t.ID, Name: t.Name, Prices: t.Prices})
	}
	return p
}

// serverTypePricesAt are a server type's prices in each of its
// locations, as both GET /v1/server_types and GET /v1/pricing give them.
func serverTypePricesAt(name string, locations []string) []schema.PricingServerTypePrice {
	pr := serverTypePrices[name]
	var out []schema.PricingServerTypePrice
	for _, l := range locations {
		hour, month, included, perTB := pr.euHour, pr.euMonth, uint64(20*tib), "1.0000"
		if loc, _ := location(l); loc.NetworkZone != "eu-central" {
			hour, month, included, perTB = pr.otherHour, pr.otherMonth, uint64(1*tib), "1.2000"
		}
		out = append(out, schema.PricingServerTypePrice{Location: l, PriceHourly: price(hour), PriceMonthly: price(month),
			IncludedTraffic: included, PricePerTBTraffic: price(perTB)})
	}
	return out
}

// SetPricingBody replaces the fake's next answers to GET /v1/pricing with
// body verbatim (a planted wrong field, a changed shape); "" restores the
// fake's own.
func (s *Server) SetPricingBody(body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pricingBody = body
}

var pricingRoutes = []route{
	{http.MethodGet, "pricing.get", path(`/pricing`), func(s *Server, w http.ResponseWriter, r *http.Request, _ []string) {
		// Called with s.mu held (ServeHTTP).
		if body := s.pricingBody; body != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = strings.NewReader(body).WriteTo(w)
			return
		}
		writeJSON(w, http.StatusOK, schema.PricingGetResponse{Pricing: Pricing()})
	}},
}
