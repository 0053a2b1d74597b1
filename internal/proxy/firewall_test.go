package proxy_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/proxy"
)

// TestProxyPorts: PROXY_PORTS is read as a firewall rule's ports are
// written, a spec's port is open only inside it, and a spec without a port
// gets one that is.
func TestProxyPorts(t *testing.T) {
	cases := map[string]struct {
		reason      string
		entries     []string
		wantErr     bool
		open        []int32
		closed      []int32
		defaultPort int32
	}{
		"None":         {reason: "no list: 3128 alone, the firewall's default", open: []int32{3128}, closed: []int32{3129, 8080}, defaultPort: 3128},
		"PortAndRange": {reason: "a port and a range, bounds included", entries: []string{"3128", "8080-8090"}, open: []int32{3128, 8080, 8085, 8090}, closed: []int32{3127, 8079, 8091}, defaultPort: 3128},
		"Without3128":  {reason: "without 3128 a spec gets the first port opened", entries: []string{"8443", "8080"}, open: []int32{8443, 8080}, closed: []int32{3128}, defaultPort: 8443},
		"RangeFirst":   {reason: "a range's first port", entries: []string{"9000-9010"}, open: []int32{9000}, closed: []int32{3128}, defaultPort: 9000},
		"Backwards":    {reason: "a range that goes down", entries: []string{"8090-8080"}, wantErr: true},
		"TooHigh":      {reason: "past 65535", entries: []string{"65536"}, wantErr: true},
		"Zero":         {reason: "port 0", entries: []string{"0"}, wantErr: true},
		"Word":         {reason: "not a number", entries: []string{"http"}, wantErr: true},
		"OpenEnded":    {reason: "a range with no end", entries: []string{"8080-"}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var pol proxy.Policy
			if tc.entries != nil {
				ports, err := proxy.ParsePortRanges(tc.entries)
				if (err != nil) != tc.wantErr {
					t.Fatalf("%s\nParsePortRanges(%q): error %v, want an error: %v", tc.reason, tc.entries, err, tc.wantErr)
				}
				if tc.wantErr {
					return
				}
				pol.ProxyPorts = ports
			}
			type verdict struct {
				Open        map[int32]bool
				DefaultPort int32
			}
			want, got := verdict{Open: map[int32]bool{}, DefaultPort: tc.defaultPort}, verdict{Open: map[int32]bool{}, DefaultPort: pol.DefaultPort()}
			for _, p := range tc.open {
				want.Open[p], got.Open[p] = true, pol.PortOpen(p)
			}
			for _, p := range tc.closed {
				want.Open[p], got.Open[p] = false, pol.PortOpen(p)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
