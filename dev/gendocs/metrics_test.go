package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/metering"
)

// TestTheInvocationLineShowsEveryCount: the metrics page's example of the
// invocation line carries every count metering.Usage logs, and no other,
// so a count added to the line is added to the page a dashboard's author
// reads.
func TestTheInvocationLineShowsEveryCount(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "reference", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), "```json\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/reference/metrics.md has no ```json block: the invocation line's example")
	}
	var line struct {
		Usage map[string]any `json:"usage"`
	}
	if err := json.Unmarshal([]byte(block), &line); err != nil {
		t.Fatalf("the example invocation line is not JSON: %v", err)
	}
	var got, want []string
	for k := range line.Usage {
		got = append(got, k)
	}
	ut := reflect.TypeOf(metering.Usage{})
	for i := range ut.NumField() {
		if tag, _, _ := strings.Cut(ut.Field(i).Tag.Get("json"), ","); tag != "" && tag != "-" {
			want = append(want, tag)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the example's usage counts (-metering.Usage +docs/reference/metrics.md):\n%s", diff)
	}
}
