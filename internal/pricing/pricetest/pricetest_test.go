package pricetest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestShapedLike: an answer of the samples' fields and kinds passes; each
// way of differing from them fails, naming the place.
func TestShapedLike(t *testing.T) {
	samples := `[{"Items":[{"price":0.5,"at":"2020-08-01T00:00:00Z","term":"1 Year"},{"price":1,"at":"2021-04-01T00:00:00Z"}],"Next":"https://x/?skip=1"},
		{"Items":[],"Next":null}]`
	cases := map[string]struct {
		body string
		want string // a line of the error; "" passes
	}{
		"as the samples":      {`{"Items":[{"price":2,"at":"2025-01-01T00:00:00Z"}],"Next":null}`, ""},
		"an optional field":   {`{"Items":[{"price":2,"at":"2025-01-01T00:00:00Z","term":"3 Years"}],"Next":"n"}`, ""},
		"a field renamed":     {`{"Items":[{"Price":2,"at":"2025-01-01T00:00:00Z"}],"Next":null}`, "$.Items[0].Price is no field the samples carry"},
		"a required one gone": {`{"Items":[{"price":2}],"Next":null}`, "$.Items[0] lacks at, which every sample carries"},
		"a price as text":     {`{"Items":[{"price":"2","at":"2025-01-01T00:00:00Z"}],"Next":null}`, "$.Items[0].price is a string; the samples have number there"},
		"a date otherwise":    {`{"Items":[{"price":2,"at":"01/01/2025"}],"Next":null}`, `$.Items[0].at is "01/01/2025"; the samples have an RFC 3339 date there`},
		"null where none is":  {`{"Items":null,"Next":null}`, "$.Items is a null; the samples have array there"},
	}
	for name, tc := range cases {
		err := ShapedLike([]byte(samples), []byte(tc.body), "the answer")
		got := ""
		if err != nil {
			// The line naming the place the case differs at.
			for _, line := range strings.Split(err.Error(), "\n")[1:] {
				if got == "" || line == tc.want {
					got = line
				}
			}
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}
