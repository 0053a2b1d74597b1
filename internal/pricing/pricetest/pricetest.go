// Package pricetest holds a fake of a cloud's price API to what the
// cloud's owner published: the types its SDK is generated from.
package pricetest

import (
	"bytes"
	"encoding/json"
	"fmt"

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
