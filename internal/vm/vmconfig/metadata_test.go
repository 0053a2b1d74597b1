package vmconfig_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// TestRefusedGeneration: the generation an egress/error names, as the
// agent writes it; none for a reason about no configuration that loaded.
func TestRefusedGeneration(t *testing.T) {
	type read struct {
		Generation int64
		Named      bool
	}
	for reason, want := range map[string]read{
		"generation 7: the self-test failed; the configuration served before is served still": {7, true},
		"generation 0: the rendered nftables rules do not load":                               {0, true},
		"engine: reading the configuration: json: unknown field \"x\"":                        {},
		"the proxy engine did not start":                                                      {},
		"generation x: nonsense":                                                              {},
		"the generation 7: not at the start":                                                  {},
		"generation 99999999999999999999: too large":                                          {},
	} {
		g, ok := vmconfig.RefusedGeneration(reason)
		if diff := cmp.Diff(want, read{g, ok}); diff != "" {
			t.Errorf("RefusedGeneration(%q) (-want +got):\n%s", reason, diff)
		}
	}
}
