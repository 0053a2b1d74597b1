package gcp

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// TestEngineJSON: the metadata's configuration of a VM that rotates its
// IPv6 sources before Google said its range names the range's length,
// for the VM to find it; once the range is known, it names the range.
func TestEngineJSON(t *testing.T) {
	for _, tc := range []struct {
		name, mode, prefix string
		want               int
	}{
		{"PerConnectionAtCreate", vmconfig.IPv6EgressPerConnection, "", 96},
		{"RangeKnown", vmconfig.IPv6EgressPerSession, "2600:1900:4000:8d2f:0:5::/96", 0},
		{"Single", vmconfig.IPv6EgressSingle, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got vmconfig.Config
			if err := json.Unmarshal([]byte(engineJSON(&vmconfig.Config{IPv6Egress: tc.mode, IPv6Prefix: tc.prefix})), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.IPv6PrefixLength); diff != "" {
				t.Errorf("ipv6PrefixLength (-want +got):\n%s", diff)
			}
		})
	}
}
