// Package pricetest holds a fake of a cloud's price API to what the
// cloud's owner published: the types its SDK is generated from
// (HeldTo), or the sample answers its reference page shows where it
// publishes no type (ShapedLike).
package pricetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
)

// HeldTo decodes body strictly into a T, the type the cloud's owner
// publishes the answer as (hcloud-go's schema, Google's generated
// cloudbilling types), and writes the value back: a field T lacks, a
// value of another type, or a field the round trip drops or retypes is
// an error naming what (the answer and T, in words).
func HeldTo[T any](body []byte, what string) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var v T
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("%s: not the published type: %w", what, err)
	}
	again, _ := json.Marshal(v)
	var a, b any
	_ = json.Unmarshal(body, &a)
	_ = json.Unmarshal(again, &b)
	if diff := cmp.Diff(a, b); diff != "" {
		return fmt.Errorf("%s: does not round-trip through the published type (-fake +type):\n%s", what, diff)
	}
	return nil
}

// ShapedLike holds body to the shape of published, where the cloud's
// owner publishes sample answers rather than a type (Azure's Retail
// Prices reference page): published is a JSON array of such answers,
// and body, one answer, may carry only the fields the samples carry at
// each place, each of the JSON kind the samples give it (null only
// where a sample has null), every field that every sample carries there
// (the required ones), and a date (RFC 3339) where every sample has
// one. A field renamed, retyped, dropped or a date written otherwise is
// an error naming its place and what (the answer and the samples, in
// words).
func ShapedLike(published, body []byte, what string) error {
	var samples []any
	if err := json.Unmarshal(published, &samples); err != nil {
		return fmt.Errorf("%s: the published samples are not a JSON array: %w", what, err)
	}
	want := &shape{}
	for _, s := range samples {
		want.learn(s)
	}
	var got any
	if err := json.Unmarshal(body, &got); err != nil {
		return fmt.Errorf("%s: not JSON: %w", what, err)
	}
	var errs []string
	want.check(got, "$", &errs)
	if len(errs) > 0 {
		return fmt.Errorf("%s: not the published shape:\n%s", what, strings.Join(errs, "\n"))
	}
	return nil
}

// shape is what the samples carry at one place: the JSON kinds seen, an
// object's fields (and in how many of its instances each was), an
// array's elements, and whether its strings were all dates.
type shape struct {
	kinds       map[string]bool
	objects     int
	fields      map[string]*shape
	present     map[string]int
	elem        *shape
	strs, dates int
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	default:
		return "object"
	}
}

func isDate(s string) bool {
	_, err := time.Parse(time.RFC3339, s)
	return err == nil
}

func (s *shape) learn(v any) {
	if s.kinds == nil {
		s.kinds, s.fields, s.present = map[string]bool{}, map[string]*shape{}, map[string]int{}
	}
	s.kinds[kindOf(v)] = true
	switch v := v.(type) {
	case string:
		s.strs++
		if isDate(v) {
			s.dates++
		}
	case []any:
		if s.elem == nil {
			s.elem = &shape{}
		}
		for _, e := range v {
			s.elem.learn(e)
		}
	case map[string]any:
		s.objects++
		for k, f := range v {
			if s.fields[k] == nil {
				s.fields[k] = &shape{}
			}
			s.fields[k].learn(f)
			s.present[k]++
		}
	}
}

func (s *shape) check(v any, at string, errs *[]string) {
	kind := kindOf(v)
	if !s.kinds[kind] {
		*errs = append(*errs, fmt.Sprintf("%s is a %s; the samples have %s there", at, kind, strings.Join(slices.Sorted(maps.Keys(s.kinds)), " or ")))
		return
	}
	switch v := v.(type) {
	case string:
		if s.strs > 0 && s.dates == s.strs && !isDate(v) {
			*errs = append(*errs, fmt.Sprintf("%s is %q; the samples have an RFC 3339 date there", at, v))
		}
	case []any:
		for i, e := range v {
			if s.elem != nil {
				s.elem.check(e, fmt.Sprintf("%s[%d]", at, i), errs)
			}
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if s.fields[k] == nil {
				*errs = append(*errs, fmt.Sprintf("%s.%s is no field the samples carry", at, k))
				continue
			}
			s.fields[k].check(v[k], at+"."+k, errs)
		}
		for _, k := range slices.Sorted(maps.Keys(s.fields)) {
			if _, ok := v[k]; !ok && s.present[k] == s.objects {
				*errs = append(*errs, fmt.Sprintf("%s lacks %s, which every sample carries", at, k))
			}
		}
	}
}
