// Package pricelistfake is a fake of AWS's Price List Query API
// (service pricing, GetProducts, AWS JSON 1.1 on POST / with
// X-Amz-Target: AWSPriceListService.GetProducts), for the aws provider's
// price source driven through the SDK (aws-sdk-go-v2/service/pricing).
//
// Its answers are held to two things AWS published: the request and the
// answer to the pricing service model (Debian's awscli's botocore data,
// pricing/2017-10-15/service-2.json: model_test.go), and each PriceList
// item, a JSON document in a string, to the documented shape of a
// product and its terms (Product, below; "Reading the price list file"
// and GetProducts' example in the Price List API reference), which the
// test decodes strictly.
//
// It serves the products it is given (Put), filtered by TERM_MATCH on
// ServiceCode and the product's attributes, as AWS does; the products of
// Catalog are a few EC2 instance types, the public IPv4 address and the
// outbound data transfer of two regions, at AWS's published on-demand
// Linux prices.
package pricelistfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
)

// Product is one PriceList item: a product and its terms, as AWS
// documents them (the fields a GetProducts item carries, each named as
// AWS names it).
type Product struct {
	Product         ProductInfo `json:"product"`
	ServiceCode     string      `json:"serviceCode"`
	Terms           Terms       `json:"terms"`
	Version         string      `json:"version"`
	PublicationDate string      `json:"publicationDate"`
}

// ProductInfo is a product: its family, SKU and attributes.
type ProductInfo struct {
	ProductFamily string            `json:"productFamily"`
	Attributes    map[string]string `json:"attributes"`
	SKU           string            `json:"sku"`
}

// Terms are a product's offers by kind: OnDemand (and Reserved, which
// the fake leaves out), each by offer term code.
type Terms struct {
	OnDemand map[string]Term `json:"OnDemand"`
	Reserved map[string]Term `json:"Reserved,omitempty"`
}

// Term is one offer: its price dimensions by rate code.
type Term struct {
	PriceDimensions map[string]PriceDimension `json:"priceDimensions"`
	SKU             string                    `json:"sku"`
	EffectiveDate   string                    `json:"effectiveDate"`
	OfferTermCode   string                    `json:"offerTermCode"`
	TermAttributes  map[string]string         `json:"termAttributes"`
}

// PriceDimension is a price: per unit ("Hrs", "GB"), in a range of use,
// in each currency ({"USD": "0.0104000000"}).
type PriceDimension struct {
	Unit         string            `json:"unit"`
	EndRange     string            `json:"endRange"`
	Description  string            `json:"description"`
	AppliesTo    []string          `json:"appliesTo"`
	RateCode     string            `json:"rateCode"`
	BeginRange   string            `json:"beginRange"`
	PricePerUnit map[string]string `json:"pricePerUnit"`
}

// OnDemand is a product of family with attributes (its service code
// their servicecode, as AWS's products carry it), priced by dims
// (each {unit, beginRange, endRange, usd}) on demand.
func OnDemand(sku, family string, attrs map[string]string, dims ...[4]string) Product {
	const term = "JRTCKXETXF"
	t := Term{PriceDimensions: map[string]PriceDimension{}, SKU: sku, EffectiveDate: "2025-11-01T00:00:00Z", OfferTermCode: term, TermAttributes: map[string]string{}}
	for i, d := range dims {
		rate := fmt.Sprintf("%s.%s.%s", sku, term, []string{"6YS6EN2CT7", "8EEUB22XNJ", "N9EW5UVVPA"}[i%3])
		t.PriceDimensions[rate] = PriceDimension{Unit: d[0], BeginRange: d[1], EndRange: d[2], Description: fmt.Sprintf("$%s per %s", d[3], d[0]),
			AppliesTo: []string{}, RateCode: rate, PricePerUnit: map[string]string{"USD": d[3]}}
	}
	return Product{Product: ProductInfo{ProductFamily: family, Attributes: attrs, SKU: sku}, ServiceCode: attrs["servicecode"],
		Terms: Terms{OnDemand: map[string]Term{sku + "." + term: t}}, Version: "20251101000000", PublicationDate: "2025-11-01T00:00:00Z"}
}

func instance(sku, region, typ, usd string) Product {
	return OnDemand(sku, "Compute Instance", map[string]string{"servicecode": "AmazonEC2", "instanceType": typ, "regionCode": region,
		"operatingSystem": "Linux", "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used", "licenseModel": "No License required",
		"usagetype": "BoxUsage:" + typ, "operation": "RunInstances"}, [4]string{"Hrs", "0", "Inf", usd})
}

// Catalog is the fake's products: AWS's published on-demand Linux prices
// of the default instance types in us-east-1 and eu-central-1
// (AmazonEC2), an in-use public IPv4 address (AmazonVPC, 0.005 USD an
// hour since February 2024) and outbound transfer to the internet in
// tiers (AWSDataTransfer, 0.09 USD a GB for the first 10 TB).
func Catalog() []Product {
	var out []Product
	for _, r := range []struct{ region, prefix, micro, small, aMicro, aSmall string }{
		{"us-east-1", "", "0.0104000000", "0.0208000000", "0.0094000000", "0.0188000000"},
		{"eu-central-1", "EUC1-", "0.0120000000", "0.0240000000", "0.0108000000", "0.0216000000"},
	} {
		out = append(out,
			instance("SKU"+r.region+"1", r.region, "t3.micro", r.micro),
			instance("SKU"+r.region+"2", r.region, "t3.small", r.small),
			instance("SKU"+r.region+"3", r.region, "t3a.micro", r.aMicro),
			instance("SKU"+r.region+"4", r.region, "t3a.small", r.aSmall),
			OnDemand("SKU"+r.region+"5", "IP Address", map[string]string{"servicecode": "AmazonVPC", "regionCode": r.region,
				"usagetype": r.prefix + "PublicIPv4:InUseAddress", "group": "VPCPublicIPv4Address", "groupDescription": "Hourly charge for In-use Public IPv4 Addresses"},
				[4]string{"Hrs", "0", "Inf", "0.0050000000"}),
			OnDemand("SKU"+r.region+"6", "Data Transfer", map[string]string{"servicecode": "AWSDataTransfer", "fromRegionCode": r.region,
				"transferType": "AWS Outbound", "toLocation": "External", "usagetype": r.prefix + "DataTransfer-Out-Bytes"},
				[4]string{"GB", "0", "10240", "0.0900000000"}, [4]string{"GB", "10240", "51200", "0.0850000000"}, [4]string{"GB", "51200", "Inf", "0.0700000000"}),
		)
	}
	return out
}

// Request is GetProducts' input as the service model names it.
type Request struct {
	ServiceCode   string   `json:"ServiceCode"`
	Filters       []Filter `json:"Filters,omitempty"`
	FormatVersion string   `json:"FormatVersion,omitempty"`
	NextToken     string   `json:"NextToken,omitempty"`
	MaxResults    *int     `json:"MaxResults,omitempty"`
}

// Filter is one TERM_MATCH.
type Filter struct {
	Type  string `json:"Type"`
	Field string `json:"Field"`
	Value string `json:"Value"`
}

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	products []Product
	// tamper changes each PriceList item's JSON (a planted wrong field).
	tamper func(item map[string]any)
	// fail answers every request with this status, when set.
	fail  int
	calls int
}

// New starts a fake serving Catalog.
func New() *Server {
	s := &Server{products: Catalog()}
	s.Server = httptest.NewServer(s)
	return s
}

// Put replaces the products served.
func (s *Server) Put(products []Product) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.products = products
}

// Tamper changes each item of the next answers as f says; nil stops it.
func (s *Server) Tamper(f func(item map[string]any)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tamper = f
}

// Fail answers every request with status (an InternalErrorException for
// a 500); 0 stops it.
func (s *Server) Fail(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = status
}

// Calls counts the GetProducts calls answered.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-ErrorType", typ)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
}

// ServeHTTP answers GetProducts: one page of at most MaxResults (100 by
// default, as AWS's) items, NextToken the index of the next.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Method != http.MethodPost || r.Header.Get("X-Amz-Target") != "AWSPriceListService.GetProducts" {
		writeError(w, http.StatusBadRequest, "UnknownOperationException", "the fake serves AWSPriceListService.GetProducts only")
		return
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		writeError(w, http.StatusForbidden, "MissingAuthenticationTokenException", "the request is not signed")
		return
	}
	if s.fail != 0 {
		writeError(w, s.fail, "InternalErrorException", "the fake fails as asked")
		return
	}
	var req Request
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "InvalidParameterException", "the request is not GetProductsRequest: "+err.Error())
		return
	}
	if req.ServiceCode == "" {
		writeError(w, http.StatusBadRequest, "InvalidParameterException", "ServiceCode is required")
		return
	}
	s.calls++
	var match []Product
	for _, p := range s.products {
		if p.ServiceCode != req.ServiceCode {
			continue
		}
		ok := true
		for _, f := range req.Filters {
			if f.Type != "TERM_MATCH" {
				writeError(w, http.StatusBadRequest, "InvalidParameterException", "filter type "+f.Type+" is not TERM_MATCH")
				return
			}
			if f.Field == "ServiceCode" {
				ok = ok && p.ServiceCode == f.Value
			} else {
				ok = ok && p.Product.Attributes[f.Field] == f.Value
			}
		}
		if ok {
			match = append(match, p)
		}
	}
	start, _ := strconv.Atoi(req.NextToken)
	size := 100
	if req.MaxResults != nil && *req.MaxResults > 0 {
		size = *req.MaxResults
	}
	start = min(start, len(match))
	end := min(start+size, len(match))
	out := struct {
		FormatVersion string   `json:"FormatVersion"`
		PriceList     []string `json:"PriceList"`
		NextToken     string   `json:"NextToken,omitempty"`
	}{FormatVersion: "aws_v1", PriceList: []string{}}
	for _, p := range match[start:end] {
		b, _ := json.Marshal(p)
		if s.tamper != nil {
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			s.tamper(m)
			b, _ = json.Marshal(m)
		}
		out.PriceList = append(out.PriceList, string(b))
	}
	if end < len(match) {
		out.NextToken = strconv.Itoa(end)
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	json.NewEncoder(w).Encode(out)
}
