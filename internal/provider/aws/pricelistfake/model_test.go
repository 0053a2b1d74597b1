package pricelistfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The pricing service model Debian's awscli ships (botocore's data).
var modelPaths = []string{
	"/usr/lib/python3/dist-packages/awscli/botocore/data/pricing/2017-10-15/service-2.json",
	"/usr/lib/python3/dist-packages/botocore/data/pricing/2017-10-15/service-2.json",
}

type model struct {
	Metadata struct {
		Protocol     string `json:"protocol"`
		JSONVersion  string `json:"jsonVersion"`
		TargetPrefix string `json:"targetPrefix"`
	} `json:"metadata"`
	Operations map[string]struct {
		HTTP   struct{ Method, RequestURI string } `json:"http"`
		Input  struct{ Shape string }              `json:"input"`
		Output struct{ Shape string }              `json:"output"`
	} `json:"operations"`
	Shapes map[string]struct {
		Type     string   `json:"type"`
		Required []string `json:"required"`
		Enum     []string `json:"enum"`
		Members  map[string]struct {
			Shape string `json:"shape"`
		} `json:"members"`
		Member *struct {
			Shape     string `json:"shape"`
			JSONValue bool   `json:"jsonvalue"`
		} `json:"member"`
	} `json:"shapes"`
}

func loadModel(t *testing.T) *model {
	t.Helper()
	for _, p := range modelPaths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var m model
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		return &m
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("no pricing service model in %v: under CI Debian's awscli must be installed (scripts/install-deps.sh)", modelPaths)
	}
	t.Skipf("skipping: no pricing service model (Debian's awscli ships it)")
	return nil
}

// checkAgainst holds a JSON value to the model's shape: every member one
// the shape has, each of its type, the required ones present, enums
// among their values, and a jsonvalue list's items strings.
func (m *model) checkAgainst(shape string, v any, at string) error {
	s, ok := m.Shapes[shape]
	if !ok {
		return fmt.Errorf("%s: the model has no shape %s", at, shape)
	}
	switch s.Type {
	case "structure":
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %T is not a structure (%s)", at, v, shape)
		}
		for _, r := range s.Required {
			if _, ok := obj[r]; !ok {
				return fmt.Errorf("%s: required member %q of %s is missing", at, r, shape)
			}
		}
		for k, val := range obj {
			mem, ok := s.Members[k]
			if !ok {
				return fmt.Errorf("%s: %q is no member of %s", at, k, shape)
			}
			if err := m.checkAgainst(mem.Shape, val, at+"."+k); err != nil {
				return err
			}
		}
	case "list":
		arr, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: %T is not a list (%s)", at, v, shape)
		}
		for i, it := range arr {
			if s.Member.JSONValue {
				if _, ok := it.(string); !ok {
					return fmt.Errorf("%s[%d]: a jsonvalue item is a string of JSON, not %T", at, i, it)
				}
				continue
			}
			if err := m.checkAgainst(s.Member.Shape, it, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: %T is not a string (%s)", at, v, shape)
		}
		if len(s.Enum) > 0 && !slices.Contains(s.Enum, str) {
			return fmt.Errorf("%s: %q is none of %v", at, str, s.Enum)
		}
	case "integer":
		if _, ok := v.(float64); !ok {
			return fmt.Errorf("%s: %T is not an integer (%s)", at, v, shape)
		}
	}
	return nil
}

// heldToDocumentedShape decodes a PriceList item strictly into Product,
// the documented shape of a product and its terms, and writes it back:
// an unknown field, a field of another type, or one dropped in the round
// trip is an error.
func heldToDocumentedShape(item string) error {
	dec := json.NewDecoder(strings.NewReader(item))
	dec.DisallowUnknownFields()
	var p Product
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("a PriceList item is not the documented product shape: %w", err)
	}
	again, _ := json.Marshal(p)
	var a, b any
	_ = json.Unmarshal([]byte(item), &a)
	_ = json.Unmarshal(again, &b)
	if diff := cmp.Diff(a, b); diff != "" {
		return fmt.Errorf("a PriceList item does not round-trip through the documented shape (-item +shape):\n%s", diff)
	}
	return nil
}

func call(t *testing.T, s *Server, body string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/", bytes.NewReader([]byte(body)))
	req.Header.Set("X-Amz-Target", "AWSPriceListService.GetProducts")
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GetProducts: %s: %s", resp.Status, raw)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// check holds an answer to the model and each item to the documented
// shape.
func check(m *model, answer map[string]any) error {
	if err := m.checkAgainst(m.Operations["GetProducts"].Output.Shape, answer, "answer"); err != nil {
		return err
	}
	items, _ := answer["PriceList"].([]any)
	if len(items) == 0 {
		return fmt.Errorf("the answer lists no product")
	}
	for _, it := range items {
		if err := heldToDocumentedShape(it.(string)); err != nil {
			return err
		}
	}
	return nil
}

// TestHeldToThePricingModel: the operation is where the model says
// (POST /, JSON 1.1, target AWSPriceListService); the requests the
// source sends are GetProductsRequest; each answer is GetProductsResponse
// and each item the documented product shape; and a planted wrong field
// fails the check, in the answer and in an item.
func TestHeldToThePricingModel(t *testing.T) {
	m := loadModel(t)
	op := m.Operations["GetProducts"]
	got := []string{op.HTTP.Method, op.HTTP.RequestURI, m.Metadata.Protocol, m.Metadata.JSONVersion, m.Metadata.TargetPrefix}
	if diff := cmp.Diff([]string{"POST", "/", "json", "1.1", "AWSPriceListService"}, got); diff != "" {
		t.Fatalf("where the fake serves GetProducts (-fake +model):\n%s", diff)
	}
	// The fake reads requests strictly into Request: its fields must be
	// the model's input members, so that what the SDK sends and the fake
	// takes is the model's.
	var fields []string
	rt := reflect.TypeOf(Request{})
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		fields = append(fields, name)
	}
	var members []string
	for k := range m.Shapes[op.Input.Shape].Members {
		members = append(members, k)
	}
	slices.Sort(fields)
	slices.Sort(members)
	if diff := cmp.Diff(members, fields); diff != "" {
		t.Errorf("the fake's Request (-model +fake):\n%s", diff)
	}
	request := `{"ServiceCode":"AmazonEC2","FormatVersion":"aws_v1","MaxResults":1,"Filters":[{"Type":"TERM_MATCH","Field":"instanceType","Value":"t3.micro"},{"Type":"TERM_MATCH","Field":"regionCode","Value":"us-east-1"}]}`
	var req any
	_ = json.Unmarshal([]byte(request), &req)
	if err := m.checkAgainst(op.Input.Shape, req, "request"); err != nil {
		t.Fatal(err)
	}
	s := New()
	t.Cleanup(s.Close)
	answer := call(t, s, request)
	if err := check(m, answer); err != nil {
		t.Fatal(err)
	}
	if n := len(answer["PriceList"].([]any)); n != 1 {
		t.Errorf("%d products for one instance type in one region; want 1", n)
	}
	plants := map[string]func(map[string]any){
		"pricePerUnit renamed": func(it map[string]any) {
			for _, term := range it["terms"].(map[string]any)["OnDemand"].(map[string]any) {
				for _, d := range term.(map[string]any)["priceDimensions"].(map[string]any) {
					dim := d.(map[string]any)
					dim["price"] = dim["pricePerUnit"]
					delete(dim, "pricePerUnit")
				}
			}
		},
		"OnDemand as onDemand": func(it map[string]any) {
			terms := it["terms"].(map[string]any)
			terms["onDemand"] = terms["OnDemand"]
			delete(terms, "OnDemand")
		},
		"attributes as a list": func(it map[string]any) { it["product"].(map[string]any)["attributes"] = []any{"instanceType"} },
	}
	for name, plant := range plants {
		s.Tamper(plant)
		if err := check(m, call(t, s, request)); err == nil {
			t.Errorf("%s: the planted item passed", name)
		}
	}
	s.Tamper(nil)
	answer["PriceLists"] = answer["PriceList"]
	if err := check(m, answer); err == nil {
		t.Error("an answer member the model lacks passed")
	}
	var bad any
	_ = json.Unmarshal([]byte(`{"ServiceCode":"AmazonEC2","Filters":[{"Type":"EXACT","Field":"a","Value":"b"}]}`), &bad)
	if err := m.checkAgainst(op.Input.Shape, bad, "request"); err == nil {
		t.Error("a filter type the model's enum lacks passed")
	}
}
