// Package retailpricesfake is a fake of Azure's Retail Prices API (GET
// /api/retail/prices, api-version 2023-01-01-preview, no credential), for
// the azure provider's price source.
//
// Its answers are held to what Microsoft published of the API: the
// sample answers and the property table of the API's reference page
// ("Azure Retail Prices overview", learn.microsoft.com/rest/api/
// cost-management/retail-prices/azure-retail-prices), which a test of
// the azure package keeps in testdata and holds the fake's answer to
// field by field (pricetest.ShapedLike).
//
// It filters as the API does on the OData subset the source sends
// (clauses `field eq 'value'` joined by `and`, the fields the reference
// page lists as filterable, values compared case-sensitively as the
// 2023-01-01-preview version does, priceType standing for an item's
// type), answers 100 items a page with a NextPageLink that skips on, and
// refuses any other filter with 400. It prices in USD only (the API's
// own currency; the others are "for your reference") and leaves out the
// savingsPlan the preview version adds to meters a savings plan covers,
// which the source does not read.
//
// Its items are those a proxy on Azure pays for, in two locations: the
// Linux pay-as-you-go meter of a few B-series sizes beside the meters a
// careless filter would take instead (the size's Windows, Spot, Low
// Priority and Dev/Test meters and a one-year reservation), the Standard
// static public IPv4 address (0.005 an hour, Azure's public IP price)
// beside the Basic one, and internet egress in routing preference
// "Microsoft network" (Rtn Preference: MGN) in tiers a GB from 0 (the
// first 100 GB free, 0.087 on to 10 TB, 0.083 to 50 TB, 0.07 beyond)
// beside routing preference "Internet" and inter-region transfer. The VM
// figures are the fake's own, of the order Azure's price page gives.
package retailpricesfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"

	"github.com/egress-proxies/egress/internal/pricing/pricetest"
)

// APIVersion is the version the fake answers and the source asks for.
const APIVersion = "2023-01-01-preview"

// PageSize is how many items a page carries, as the API's.
const PageSize = 100

// Item is one meter's price, each field named as the reference page's
// samples name it.
type Item struct {
	CurrencyCode         string  `json:"currencyCode"`
	TierMinimumUnits     float64 `json:"tierMinimumUnits"`
	ReservationTerm      string  `json:"reservationTerm,omitempty"`
	RetailPrice          float64 `json:"retailPrice"`
	UnitPrice            float64 `json:"unitPrice"`
	ArmRegionName        string  `json:"armRegionName"`
	Location             string  `json:"location"`
	EffectiveStartDate   string  `json:"effectiveStartDate"`
	MeterID              string  `json:"meterId"`
	MeterName            string  `json:"meterName"`
	ProductID            string  `json:"productId"`
	SkuID                string  `json:"skuId"`
	ProductName          string  `json:"productName"`
	SkuName              string  `json:"skuName"`
	ServiceName          string  `json:"serviceName"`
	ServiceID            string  `json:"serviceId"`
	ServiceFamily        string  `json:"serviceFamily"`
	UnitOfMeasure        string  `json:"unitOfMeasure"`
	Type                 string  `json:"type"`
	IsPrimaryMeterRegion bool    `json:"isPrimaryMeterRegion"`
	ArmSkuName           string  `json:"armSkuName"`
}

// Page is one answer: a page of items and the link to the next, in the
// envelope the API answers with.
type Page struct {
	BillingCurrency    string  `json:"BillingCurrency"`
	CustomerEntityID   string  `json:"CustomerEntityId"`
	CustomerEntityType string  `json:"CustomerEntityType"`
	Items              []Item  `json:"Items"`
	NextPageLink       *string `json:"NextPageLink"`
	Count              int     `json:"Count"`
}

// locations are the fake's: ARM name and the API's location name.
var locations = [][2]string{{"westeurope", "EU West"}, {"eastus", "US East"}}

// sizes are the fake's B-series sizes: ARM name, meter name, and the
// Linux pay-as-you-go price an hour in each location (westeurope,
// eastus).
var sizes = []struct {
	arm, meter string
	linux      [2]float64
}{
	{"Standard_B1s", "B1s", [2]float64{0.0114, 0.0104}},
	{"Standard_B1ms", "B1ms", [2]float64{0.0228, 0.0207}},
	{"Standard_B2s", "B2s", [2]float64{0.0456, 0.0416}},
}

// Catalog is the fake's items.
func Catalog() []Item {
	var out []Item
	n := 0
	item := func(loc [2]string, service, family, product, sku, meter, unit, typ string, price float64) Item {
		n++
		return Item{CurrencyCode: "USD", RetailPrice: price, UnitPrice: price, ArmRegionName: loc[0], Location: loc[1],
			EffectiveStartDate: "2025-10-01T00:00:00Z", MeterID: fmt.Sprintf("00000000-0000-4000-8000-%012d", n),
			MeterName: meter, ProductID: "DZH318Z0" + strings.ToUpper(strconv.FormatInt(int64(1000+n), 36)),
			SkuID: fmt.Sprintf("DZH318Z0/%04d", n), ProductName: product, SkuName: sku, ServiceName: service,
			ServiceID: "DZH313Z7MMC8", ServiceFamily: family, UnitOfMeasure: unit, Type: typ, IsPrimaryMeterRegion: true}
	}
	for li, loc := range locations {
		for _, z := range sizes {
			vm := func(product, sku, typ string, price float64) Item {
				it := item(loc, "Virtual Machines", "Compute", product, sku, sku, "1 Hour", typ, price)
				it.ArmSkuName = z.arm
				return it
			}
			p := z.linux[li]
			reserved := vm("Virtual Machines BS Series", z.meter, "Reservation", p*8760*0.6)
			reserved.ReservationTerm, reserved.UnitOfMeasure = "1 Year", "1 Hour"
			out = append(out,
				vm("Virtual Machines BS Series Windows", z.meter, "Consumption", p*1.8),
				vm("Virtual Machines BS Series", z.meter+" Spot", "Consumption", p*0.2),
				vm("Virtual Machines BS Series", z.meter+" Low Priority", "Consumption", p*0.2),
				vm("Virtual Machines BS Series", z.meter, "DevTestConsumption", p),
				reserved,
				vm("Virtual Machines BS Series", z.meter, "Consumption", p),
			)
		}
		out = append(out,
			item(loc, "Virtual Network", "Networking", "IP Addresses", "Basic", "Basic IPv4 Static Public IP", "1 Hour", "Consumption", 0.0036),
			item(loc, "Virtual Network", "Networking", "IP Addresses", "Standard", "Standard IPv4 Static Public IP", "1 Hour", "Consumption", 0.005),
			item(loc, "Bandwidth", "Networking", "Rtn Preference: MGN", "Standard", "Standard Inter-Region Data Transfer", "1 GB", "Consumption", 0.02),
			item(loc, "Bandwidth", "Networking", "Rtn Preference: Internet", "Standard", "Standard Data Transfer Out", "1 GB", "Consumption", 0.08),
		)
		for _, tier := range [][2]float64{{0, 0}, {100, 0.087}, {10240, 0.083}, {51200, 0.07}} {
			it := item(loc, "Bandwidth", "Networking", "Rtn Preference: MGN", "Standard", "Standard Data Transfer Out", "1 GB", "Consumption", tier[1])
			it.TierMinimumUnits = tier[0]
			out = append(out, it)
		}
	}
	return out
}

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	*httptest.Server
	pricetest.Levers
	mu    sync.Mutex
	items []Item
	size  int
}

// New starts a fake serving Catalog.
func New() *Server {
	s := &Server{items: Catalog(), size: PageSize}
	s.Server = httptest.NewServer(s)
	return s
}

// SetPageSize answers n items a page instead of PageSize, so that a
// test follows NextPageLink through a short answer.
func (s *Server) SetPageSize(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.size = n
}

// filterable are the fields the reference page lists as filterable, by
// the name a filter gives them, with the item's value of each.
var filterable = map[string]func(Item) string{
	"armRegionName": func(i Item) string { return i.ArmRegionName },
	"location":      func(i Item) string { return i.Location },
	"meterId":       func(i Item) string { return i.MeterID },
	"meterName":     func(i Item) string { return i.MeterName },
	"productId":     func(i Item) string { return i.ProductID },
	"skuId":         func(i Item) string { return i.SkuID },
	"productName":   func(i Item) string { return i.ProductName },
	"skuName":       func(i Item) string { return i.SkuName },
	"serviceName":   func(i Item) string { return i.ServiceName },
	"serviceId":     func(i Item) string { return i.ServiceID },
	"serviceFamily": func(i Item) string { return i.ServiceFamily },
	"priceType":     func(i Item) string { return i.Type },
	"armSkuName":    func(i Item) string { return i.ArmSkuName },
}

// ParseFilter reads an OData filter of `field eq 'value'` clauses joined
// by ` and ` into its pairs, refusing a field the API does not filter
// on and any other operator.
func ParseFilter(filter string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(filter) == "" {
		return out, nil
	}
	for _, clause := range strings.Split(filter, " and ") {
		field, value, ok := strings.Cut(strings.TrimSpace(clause), " eq ")
		if !ok || len(value) < 2 || value[0] != '\'' || value[len(value)-1] != '\'' || strings.Contains(value[1:len(value)-1], "'") {
			return nil, fmt.Errorf("clause %q is not field eq 'value'", clause)
		}
		if filterable[field] == nil {
			return nil, fmt.Errorf("field %q is not one the API filters on", field)
		}
		out[field] = value[1 : len(value)-1]
	}
	return out, nil
}

// ServeHTTP answers GET /api/retail/prices.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fail := func(status int, format string, a ...any) {
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]any{"Error": map[string]any{"Code": http.StatusText(status), "Message": fmt.Sprintf(format, a...)}})
	}
	if status := s.Failing(); status != 0 {
		fail(status, "the fake fails as asked")
		return
	}
	q := r.URL.Query()
	switch {
	case r.Method != http.MethodGet || r.URL.Path != "/api/retail/prices":
		fail(http.StatusNotFound, "no such resource %s %s", r.Method, r.URL.Path)
		return
	case q.Get("api-version") != APIVersion:
		fail(http.StatusBadRequest, "the fake answers api-version %s, not %q", APIVersion, q.Get("api-version"))
		return
	case q.Get("currencyCode") != "" && q.Get("currencyCode") != "'USD'":
		fail(http.StatusBadRequest, "the fake prices in 'USD' only, not %s", q.Get("currencyCode"))
		return
	}
	filter, err := ParseFilter(q.Get("$filter"))
	if err != nil {
		fail(http.StatusBadRequest, "$filter: %v", err)
		return
	}
	skip, _ := strconv.Atoi(q.Get("$skip"))
	if body := s.Answered(); body != "" {
		w.Write([]byte(body))
		return
	}
	var match []Item
	for _, it := range s.items {
		ok := true
		for field, want := range filter {
			ok = ok && filterable[field](it) == want
		}
		if ok {
			match = append(match, it)
		}
	}
	skip = min(max(skip, 0), len(match))
	end := min(skip+s.size, len(match))
	page := Page{BillingCurrency: "USD", CustomerEntityID: "Default", CustomerEntityType: "Retail", Items: match[skip:end], Count: end - skip}
	if page.Items == nil {
		page.Items = []Item{}
	}
	if end < len(match) {
		// Absolute, as the API's: the source follows it as given.
		nq := r.URL.Query()
		nq.Set("$skip", strconv.Itoa(end))
		link := "http://" + r.Host + r.URL.Path + "?" + nq.Encode()
		page.NextPageLink = &link
	}
	json.NewEncoder(w).Encode(page)
}
