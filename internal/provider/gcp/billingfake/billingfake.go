// Package billingfake is a fake of the part of Google's Cloud Billing
// Catalog API the gcp provider's price source reads: GET
// /v1/services/6F81-5844-456A/skus (Compute Engine's SKUs), paged, with
// currencyCode. Every answer is the API's own generated types
// (google.golang.org/api/cloudbilling/v1: ListSkusResponse, Sku), which
// a test of the gcp package decodes the fake's answer into strictly.
//
// Its SKUs are those a proxy on an E2 VM pays for, in two regions of two
// continents (USD): "E2 Instance Core running in Americas" (0.021811 an
// hour a vCPU) and "E2 Instance Ram running in Americas" (0.002923 an
// hour a GiB), as Google's Compute Engine pricing page gives them for
// us-central1, their EMEA counterparts (the fake's own, of that order),
// "External IP charge on a standard VM" (0.005 an hour), and premium
// tier internet egress from each continent to the same one, in tiers a
// GiB (0.12 for the first TiB, 0.11 to 10 TiB, 0.08 beyond).
package billingfake

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"

	cloudbilling "google.golang.org/api/cloudbilling/v1"

	"github.com/egress-proxies/egress/internal/pricing/pricetest"
)

// ComputeService is Compute Engine's service id in the catalog.
const ComputeService = "6F81-5844-456A"

func usd(units, nanos int64) *cloudbilling.Money {
	return &cloudbilling.Money{CurrencyCode: "USD", Units: units, Nanos: nanos}
}

// sku is one SKU of Compute Engine with its tiers (start amount, price).
func sku(id, description, group, unit, unitDescription string, regions []string, tiers ...[3]int64) *cloudbilling.Sku {
	expr := &cloudbilling.PricingExpression{UsageUnit: unit, UsageUnitDescription: unitDescription, BaseUnit: unit,
		BaseUnitDescription: unitDescription, BaseUnitConversionFactor: 1, DisplayQuantity: 1}
	for _, t := range tiers {
		expr.TieredRates = append(expr.TieredRates, &cloudbilling.TierRate{StartUsageAmount: float64(t[0]), UnitPrice: usd(t[1], t[2])})
	}
	return &cloudbilling.Sku{Name: "services/" + ComputeService + "/skus/" + id, SkuId: id, Description: description,
		Category:       &cloudbilling.Category{ServiceDisplayName: "Compute Engine", ResourceFamily: "Compute", ResourceGroup: group, UsageType: "OnDemand"},
		ServiceRegions: regions, ServiceProviderName: "Google",
		GeoTaxonomy: &cloudbilling.GeoTaxonomy{Type: "REGIONAL", Regions: regions},
		PricingInfo: []*cloudbilling.PricingInfo{{Summary: "", PricingExpression: expr, CurrencyConversionRate: 1,
			EffectiveTime: "2025-11-01T00:00:00Z"}}}
}

// SKUs are the fake's catalog.
func SKUs() []*cloudbilling.Sku {
	americas, emea := []string{"us-central1", "us-east1"}, []string{"europe-west1", "europe-west4"}
	return []*cloudbilling.Sku{
		sku("CF4E-A0C7-E3BF", "E2 Instance Core running in Americas", "CPU", "h", "hour", americas, [3]int64{0, 0, 21_811_590}),
		sku("F449-33EC-A5EF", "E2 Instance Ram running in Americas", "RAM", "GiBy.h", "gibibyte hour", americas, [3]int64{0, 0, 2_923_530}),
		sku("9FE0-8F60-A9F0", "E2 Instance Core running in EMEA", "CPU", "h", "hour", emea, [3]int64{0, 0, 23_990_000}),
		sku("1E6B-1B8E-C3A1", "E2 Instance Ram running in EMEA", "RAM", "GiBy.h", "gibibyte hour", emea, [3]int64{0, 0, 3_216_000}),
		sku("1E7D-CBB0-AF0C", "External IP charge on a standard VM", "IpAddress", "h", "hour", append(append([]string{}, americas...), emea...), [3]int64{0, 0, 5_000_000}),
		sku("9DE9-9092-B3BC", "Network Internet Data Transfer Out from Americas to Americas", "PremiumInternetEgress", "GiBy", "gibibyte", americas,
			[3]int64{0, 0, 120_000_000}, [3]int64{1024, 0, 110_000_000}, [3]int64{10240, 0, 80_000_000}),
		sku("F274-1692-F213", "Network Internet Data Transfer Out from EMEA to EMEA", "PremiumInternetEgress", "GiBy", "gibibyte", emea,
			[3]int64{0, 0, 120_000_000}, [3]int64{1024, 0, 110_000_000}, [3]int64{10240, 0, 80_000_000}),
	}
}

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	*httptest.Server
	pricetest.Levers
	mu   sync.Mutex
	skus []*cloudbilling.Sku
}

// New starts a fake serving SKUs.
func New() *Server {
	s := &Server{skus: SKUs()}
	s.Server = httptest.NewServer(s)
	return s
}

// ServeHTTP answers GET /v1/services/6F81-5844-456A/skus: pageSize (5000
// at most, the API's) SKUs from pageToken (an index), in USD (the fake
// converts to no other currency and refuses one).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if status := s.Failing(); status != 0 {
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": status, "message": "the fake fails as asked", "status": "INTERNAL"}})
		return
	}
	if r.Method != http.MethodGet || r.URL.Path != "/v1/services/"+ComputeService+"/skus" {
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": 404, "message": "no such service " + r.URL.Path, "status": "NOT_FOUND"}})
		return
	}
	if c := r.URL.Query().Get("currencyCode"); c != "" && c != "USD" {
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": 400, "message": "the fake prices in USD only", "status": "INVALID_ARGUMENT"}})
		return
	}
	if body := s.Answered(); body != "" {
		w.Write([]byte(body))
		return
	}
	start, _ := strconv.Atoi(r.URL.Query().Get("pageToken"))
	size, _ := strconv.Atoi(r.URL.Query().Get("pageSize"))
	if size <= 0 || size > 5000 {
		size = 5000
	}
	start = min(start, len(s.skus))
	end := min(start+size, len(s.skus))
	out := cloudbilling.ListSkusResponse{Skus: s.skus[start:end]}
	if end < len(s.skus) {
		out.NextPageToken = strconv.Itoa(end)
	}
	json.NewEncoder(w).Encode(out)
}
