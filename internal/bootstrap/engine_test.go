package bootstrap_test

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/vm/engine"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

func TestEngineConfig(t *testing.T) {
	c := config()
	c.ConnectPorts = []int32{8443, 443, 8443}
	got, err := bootstrap.EngineConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	// The deny list is the engine's own, each range as the script
	// writes it (canonical: ::ffff:0.0.0.0/96).
	var deny []string
	for _, d := range vmconfig.DefaultDenyDestinations {
		deny = append(deny, netip.MustParsePrefix(d).String())
	}
	want := vmconfig.Config{
		Generation:          1,
		Listen:              ":3128",
		Users:               []vmconfig.User{{Name: creds.Username}},
		AllowedSourceRanges: append(slices.Clone(bootstrap.SelfTestSources), "203.0.113.0/24", "2001:db8::/32"),
		ConnectPorts:        []int{443, 8443},
		DenyDestinations:    deny,
		StatsListen:         "127.0.0.1:9901",
		AccessLog:           true,
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(vmconfig.User{}, "PasswordHash")); diff != "" {
		t.Errorf("the engine's configuration: -want +got:\n%s", diff)
	}
	if !vmconfig.Matches(got.Users[0].PasswordHash, creds.Password) {
		t.Errorf("the user's hash %q does not match the proxy's password", got.Users[0].PasswordHash)
	}
	text, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(text), creds.Password) {
		t.Errorf("the engine's configuration carries the password: %s", text)
	}
	if _, err := engine.ReadConfig(text); err != nil {
		t.Errorf("the engine does not load its configuration: %v", err)
	}
	c.Credentials.Password = "short"
	if _, err := bootstrap.EngineConfig(c); err == nil {
		t.Errorf("a password the script refuses was given to the engine")
	}
}

// TestWarmMember: a warm pool's VM (generation 0) is rendered as the
// reconciler renders a member, from its spec (proxy.PoolSpec.MemberSpec:
// no source range) and no credentials: its engine configuration has no
// user ("users":[], which the script and the engine read) and admits only
// the VM itself. At generation 1 and on, no credentials and no range are
// refused.
func TestWarmMember(t *testing.T) {
	c := bootstrap.ForProxy(proxy.PoolSpec{Provider: "gcp"}.MemberSpec(), proxy.Credentials{}, nil)
	if _, err := bootstrap.Render(c); err != nil {
		t.Errorf("Render refused a warm member: %v", err)
	}
	got, err := bootstrap.EngineConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(bootstrap.SelfTestSources, got.AllowedSourceRanges); diff != "" {
		t.Errorf("a warm member's allowed sources (-want +got):\n%s", diff)
	}
	text, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), `"generation":0,`) || !strings.Contains(string(text), `"users":[]`) {
		t.Errorf("a warm member's configuration %s: want generation 0 and \"users\":[]", text)
	}
	if _, err := engine.ReadConfig(text); err != nil {
		t.Errorf("the engine does not load a warm member's configuration: %v", err)
	}
	c.Generation = 1
	if _, err := bootstrap.EngineConfig(c); err == nil {
		t.Error("generation 1 without credentials was accepted")
	}
	c.Credentials = creds
	if _, err := bootstrap.EngineConfig(c); err == nil {
		t.Error("generation 1 without a source range was accepted")
	}
	c = config()
	c.Generation = -1
	if _, err := bootstrap.EngineConfig(c); err == nil {
		t.Error("a negative generation was accepted")
	}
}

// TestEngineConfigOfASpec: what a spec says of SOCKS5, IPv6 egress,
// bandwidth and the access log reaches the engine's configuration through ForProxy, as the
// reconciler renders it (and the image test, which renders through the
// same two functions): socks5Listen on its port, the limit in bits per
// second, accessLog written whatever it is, and the counters off both
// proxy ports.
func TestEngineConfigOfASpec(t *testing.T) {
	off := false
	base := proxy.Spec{Port: 3128, AllowedSourceRanges: []string{"203.0.113.0/24"}}
	type dataPlane struct {
		Listen, Socks5Listen, StatsListen string
		Socks5UDP                         bool
		IPv6Egress, IPv6Prefix            string
		BandwidthBitsPerSecond            int64
		TrafficQuotaBytes                 int64
		AccessLog                         bool
	}
	for name, tc := range map[string]struct {
		reason string
		spec   func(*proxy.Spec)
		prefix string // the VM's status.ipv6Prefix, known at a live change
		want   dataPlane
	}{
		"Defaults": {
			reason: "A spec that says nothing: no SOCKS5, no bound, the access log on.",
			spec:   func(*proxy.Spec) {},
			want:   dataPlane{Listen: ":3128", StatsListen: "127.0.0.1:9901", AccessLog: true},
		},
		"Socks5": {
			reason: "A socks5Port is the engine's second listener.",
			spec:   func(s *proxy.Spec) { s.Socks5Port = 1080 },
			want:   dataPlane{Listen: ":3128", Socks5Listen: ":1080", StatsListen: "127.0.0.1:9901", AccessLog: true},
		},
		"Socks5UDP": {
			reason: "socks5UDP carries UDP ASSOCIATE on the SOCKS5 listener's port.",
			spec:   func(s *proxy.Spec) { s.Socks5Port, s.Socks5UDP = 1080, true },
			want:   dataPlane{Listen: ":3128", Socks5Listen: ":1080", Socks5UDP: true, StatsListen: "127.0.0.1:9901", AccessLog: true},
		},
		"IPv6Single": {
			reason: "The mode reaches the engine; at a create the prefix is not known yet.",
			spec:   func(s *proxy.Spec) { s.IPv6Egress = proxy.IPv6Single },
			want:   dataPlane{Listen: ":3128", IPv6Egress: "single", StatsListen: "127.0.0.1:9901", AccessLog: true},
		},
		"IPv6PerConnectionWithPrefix": {
			reason: "At a live change the VM's prefix goes with the mode.",
			spec:   func(s *proxy.Spec) { s.IPv6Egress = proxy.IPv6PerConnection },
			prefix: "2001:db8:1:2::/64",
			want:   dataPlane{Listen: ":3128", IPv6Egress: "perConnection", IPv6Prefix: "2001:db8:1:2::/64", StatsListen: "127.0.0.1:9901", AccessLog: true},
		},
		"BandwidthInBits": {
			reason: "100Mbit is 100,000,000 bits per second.",
			spec:   func(s *proxy.Spec) { s.BandwidthLimit = "100Mbit" },
			want:   dataPlane{Listen: ":3128", StatsListen: "127.0.0.1:9901", BandwidthBitsPerSecond: 100_000_000, AccessLog: true},
		},
		"TrafficQuota": {
			reason: "500GB is 500,000,000,000 bytes a month.",
			spec:   func(s *proxy.Spec) { s.TrafficQuota = "500GB" },
			want:   dataPlane{Listen: ":3128", StatsListen: "127.0.0.1:9901", TrafficQuotaBytes: 500_000_000_000, AccessLog: true},
		},
		"AccessLogOff": {
			reason: "A tenant that must not keep the log gets accessLog false, written, not left out.",
			spec:   func(s *proxy.Spec) { s.AccessLog = &off },
			want:   dataPlane{Listen: ":3128", StatsListen: "127.0.0.1:9901"},
		},
		"StatsPortTaken": {
			reason: "The counters move off a port either proxy port holds.",
			spec:   func(s *proxy.Spec) { s.Port, s.Socks5Port = 9901, 9902 },
			want:   dataPlane{Listen: ":9901", Socks5Listen: ":9902", StatsListen: "127.0.0.1:9903", AccessLog: true},
		},
	} {
		t.Run(name, func(t *testing.T) {
			spec := base
			tc.spec(&spec)
			c := bootstrap.ForProxy(spec, creds, nil)
			c.Generation, c.IPv6Prefix = 1, tc.prefix
			got, err := bootstrap.EngineConfig(c)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, dataPlane{Listen: got.Listen, Socks5Listen: got.Socks5Listen, Socks5UDP: got.Socks5UDP, StatsListen: got.StatsListen, IPv6Egress: got.IPv6Egress, IPv6Prefix: got.IPv6Prefix,
				BandwidthBitsPerSecond: got.BandwidthBitsPerSecond, TrafficQuotaBytes: got.TrafficQuotaBytes, AccessLog: got.AccessLog}); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
			text, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(text), fmt.Sprintf(`"accessLog":%t`, tc.want.AccessLog)) {
				t.Errorf("accessLog is not written: %s", text)
			}
			if _, err := engine.ReadConfig(text); err != nil {
				t.Errorf("the engine does not load the configuration: %v", err)
			}
		})
	}
	for name, c := range map[string]bootstrap.Config{
		"Socks5OnTheHTTPPort": {Socks5Port: 3128},
		"Socks5PortTooHigh":   {Socks5Port: 65536},
		"UDPWithoutSocks5":    {Socks5UDP: true},
		"BandwidthInBytes":    {BandwidthLimit: "100MB"},
		"BandwidthTooLow":     {BandwidthLimit: "10Kbit"},
		"QuotaInBits":         {TrafficQuota: "500Gbit"},
		"QuotaTooLow":         {TrafficQuota: "0MB"},
		"IPv6EgressUnknown":   {IPv6Egress: "random"},
		"IPv6PrefixIsIPv4":    {IPv6Egress: proxy.IPv6PerConnection, IPv6Prefix: "203.0.113.0/24"},
		"IPv6PrefixNotANet":   {IPv6Egress: proxy.IPv6PerConnection, IPv6Prefix: "2001:db8::1/64"},
		"IPv6PrefixNoLength":  {IPv6Egress: proxy.IPv6PerConnection, IPv6Prefix: "2001:db8::"},
	} {
		cfg := config()
		cfg.Socks5Port, cfg.Socks5UDP, cfg.BandwidthLimit, cfg.TrafficQuota = c.Socks5Port, c.Socks5UDP, c.BandwidthLimit, c.TrafficQuota
		cfg.IPv6Egress, cfg.IPv6Prefix = c.IPv6Egress, c.IPv6Prefix
		if _, err := bootstrap.EngineConfig(cfg); err == nil {
			t.Errorf("%s: EngineConfig took it", name)
		}
		if _, err := bootstrap.Render(cfg); err == nil {
			t.Errorf("%s: Render took it", name)
		}
	}
}
