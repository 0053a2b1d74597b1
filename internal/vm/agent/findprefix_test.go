package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/vm/engine"
	"github.com/egress-proxies/egress/internal/vm/imds"
	"github.com/egress-proxies/egress/internal/vm/imds/imdsmock"
)

// ipAddrs is what `ip -6 -j addr show scope global` prints, shortened to
// the fields prefixAround reads.
const ipAddrs = `[{"ifname":"eth0","addr_info":[
 {"family":"inet6","local":"fd00::5","prefixlen":64,"scope":"global"},
 {"family":"inet6","local":"2a01:4f8:c17:1::1","prefixlen":64,"scope":"global","temporary":true},
 {"family":"inet6","local":"2a01:4f8:c17:2::1","prefixlen":64,"scope":"global","tentative":true},
 {"family":"inet6","local":"2604:a880:400:d1::7d:4001","prefixlen":64,"scope":"global"}]}]`

// TestPrefixAround: the VM's first settled global address that no cloud
// keeps private, to the cloud's length: a Droplet's link is a /64, its
// own block the /124 around its address.
func TestPrefixAround(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		bits      int
		want      string
		err       bool
	}{
		{name: "A124Block", out: ipAddrs, bits: 124, want: "2604:a880:400:d1::7d:4000/124"},
		{name: "ServersSlash64", out: `[{"ifname":"eth0","addr_info":[{"family":"inet6","local":"2a01:4f8:c17:b8f::1","scope":"global"}]}]`, bits: 64, want: "2a01:4f8:c17:b8f::/64"},
		{name: "DualStackRange", out: `[{"ifname":"ens4","addr_info":[{"family":"inet6","local":"2600:1900:4000:8d2f:0:5::","scope":"global"}]}]`, bits: 96, want: "2600:1900:4000:8d2f:0:5::/96"},
		{name: "OnlyPrivate", out: `[{"ifname":"eth0","addr_info":[{"family":"inet6","local":"fd00::5","scope":"global"}]}]`, bits: 64, err: true},
		{name: "None", out: `[]`, bits: 64, err: true},
		{name: "NotJSON", out: `eth0: <UP>`, bits: 64, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := prefixAround([]byte(tc.out), tc.bits)
			if (err != nil) != tc.err {
				t.Fatalf("prefixAround: %v, want an error %t", err, tc.err)
			}
			if err == nil {
				if diff := cmp.Diff(tc.want, p.String()); diff != "" {
					t.Errorf("prefix (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestWithPrefix: a configuration made at a create, rotating without a
// prefix, gets the one around the VM's address, which the engine then
// reads; any other is served as it came, and a VM with no address to
// find it around fails with why.
func TestWithPrefix(t *testing.T) {
	base := `{"listen":":3128","users":[],"connectPorts":[443],"allowedSourceRanges":["0.0.0.0/0"],"ipv6Egress":%s%s}`
	for _, tc := range []struct {
		name, mode, extra string
		out               string
		wantPrefix        string
		calls             int
		err               bool
	}{
		{name: "CreateWithA124Block", mode: "perConnection", extra: `,"ipv6PrefixLength":124`, out: ipAddrs, wantPrefix: "2604:a880:400:d1::7d:4000/124", calls: 1},
		{name: "PerSession", mode: "perSession", extra: `,"ipv6PrefixLength":64`, out: `[{"ifname":"eth0","addr_info":[{"family":"inet6","local":"2a01:4f8:c17:b8f::1","scope":"global"}]}]`, wantPrefix: "2a01:4f8:c17:b8f::/64", calls: 1},
		{name: "PrefixNamed", mode: "perConnection", extra: `,"ipv6Prefix":"2001:db8:7:1::/64","ipv6PrefixLength":64`, out: ipAddrs, wantPrefix: "2001:db8:7:1::/64"},
		{name: "Single", mode: "single", extra: `,"ipv6PrefixLength":64`, out: ipAddrs},
		{name: "NoLength", mode: "perConnection", out: ipAddrs, err: true},
		{name: "NoAddress", mode: "perConnection", extra: `,"ipv6PrefixLength":64`, out: `[]`, calls: 1, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			a := &Agent{IP: func(_ context.Context, args ...string) ([]byte, error) {
				calls++
				return []byte(tc.out), nil
			}}
			mode, _ := json.Marshal(tc.mode)
			text, err := a.withPrefix(context.Background(), fmt.Sprintf(base, mode, tc.extra))
			if err == nil {
				// What the engine then reads, as Apply gives it.
				cfg, rerr := engine.ReadConfig([]byte(text))
				err = rerr
				if err == nil {
					if diff := cmp.Diff(tc.wantPrefix, cfg.IPv6Prefix); diff != "" {
						t.Errorf("the engine's ipv6Prefix (-want +got):\n%s", diff)
					}
				}
			}
			if (err != nil) != tc.err {
				t.Fatalf("withPrefix then engine.ReadConfig: %v, want an error %t", err, tc.err)
			}
			if calls != tc.calls {
				t.Errorf("ip(8) ran %d times, want %d", calls, tc.calls)
			}
		})
	}
}

// TestWithPrefixFromIMDS: on EC2 (the agent has the boot's IMDS) a
// configuration that rotates IPv6 sources and names no prefix gets the
// /80 EC2 delegated, read from AWS's metadata mock with an IMDSv2 token,
// not the /80 around the VM's own address, which is another; a length
// the configuration says must be the prefix's; a configuration that
// names its prefix or does not rotate reads nothing. Without IMDS the
// prefix is the one around the address, as on the other clouds.
func TestWithPrefixFromIMDS(t *testing.T) {
	base, err := imdsmock.Start(context.Background(), t.TempDir(), EC2Instance)
	if err != nil {
		t.Fatal(err)
	}
	// The VM's own address, in the subnet's first /80, apart from the
	// delegated prefix.
	const own = `[{"ifname":"ens5","addr_info":[{"family":"inet6","local":"2a05:d014:9b2:7e00::1a2b","scope":"global"}]}]`
	cfg := `{"listen":":3128","users":[],"connectPorts":[443],"allowedSourceRanges":["0.0.0.0/0"],"ipv6Egress":%q%s}`
	type seen struct {
		Prefix      string
		PrefixReads int // GETs of the ipv6-prefix path
		IPCalls     int
		Err         bool
	}
	cases := map[string]struct {
		reason      string
		imds        bool
		mode, extra string
		want        seen
	}{
		"EC2": {reason: "the delegated /80, from the instance metadata", imds: true, mode: "perConnection", extra: `,"ipv6PrefixLength":80`,
			want: seen{Prefix: EC2Instance.IPv6Prefixes[0], PrefixReads: 1}},
		"EC2NoLength": {reason: "the metadata's prefix says its length", imds: true, mode: "perSession",
			want: seen{Prefix: EC2Instance.IPv6Prefixes[0], PrefixReads: 1}},
		"EC2OtherLength": {reason: "a length the prefix has not is refused", imds: true, mode: "perSession", extra: `,"ipv6PrefixLength":64`,
			want: seen{PrefixReads: 1, Err: true}},
		"EC2PrefixNamed": {reason: "a named prefix is kept: nothing read", imds: true, mode: "perConnection", extra: `,"ipv6Prefix":"2001:db8:7:1::/80","ipv6PrefixLength":80`,
			want: seen{Prefix: "2001:db8:7:1::/80"}},
		"EC2Single": {reason: "single draws from no prefix: nothing read", imds: true, mode: "single", extra: `,"ipv6PrefixLength":80`,
			want: seen{}},
		"AroundTheAddress": {reason: "no IMDS: the /80 around the VM's address", mode: "perConnection", extra: `,"ipv6PrefixLength":80`,
			want: seen{Prefix: "2a05:d014:9b2:7e00::/80", IPCalls: 1}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got seen
			a := &Agent{IP: func(context.Context, ...string) ([]byte, error) {
				got.IPCalls++
				return []byte(own), nil
			}}
			if tc.imds {
				a.IMDS = &imds.Client{Base: base, HTTP: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
					if strings.HasSuffix(r.URL.Path, "/ipv6-prefix") {
						got.PrefixReads++
					}
					return http.DefaultTransport.RoundTrip(r)
				})}}
			}
			text, err := a.withPrefix(context.Background(), fmt.Sprintf(cfg, tc.mode, tc.extra))
			if err == nil {
				c, rerr := engine.ReadConfig([]byte(text))
				if err = rerr; err == nil {
					got.Prefix = c.IPv6Prefix
				}
			}
			got.Err = err != nil
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (error: %v)\n(-want +got):\n%s", tc.reason, err, diff)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
