package agent_test

import (
	"github.com/egress-proxies/egress/internal/vm/agent"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"net/netip"
	"strings"
	"testing"
)

// TestFilter: the ruleset carries the configuration's port, sources,
// CONNECT ports and deny ranges, each canonical and in its family's set,
// the engine's user and the resolvers; a configuration it cannot read is
// refused, not half rendered.
func TestFilter(t *testing.T) {
	cfg := vmconfig.Config{Listen: ":3128", AllowedSourceRanges: []string{"127.0.0.1/32", "203.0.113.7/24", "2001:db8::1/32"},
		ConnectPorts: []int{8443, 443, 443}, DenyDestinations: []string{"10.0.0.0/8", "fc00::/7"}}
	got, err := agent.Filter(cfg, 998, []netip.Addr{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("fd20:ce::254")})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"delete table inet egress_proxy\n",
		"set allowed4 { type ipv4_addr; flags interval; auto-merge; elements = { 127.0.0.1/32, 203.0.113.0/24 } }",
		"set allowed6 { type ipv6_addr; flags interval; auto-merge; elements = { 2001:db8::/32 } }",
		"set resolvers4 { type ipv4_addr; flags interval; auto-merge; elements = { 169.254.169.254 } }",
		"set resolvers6 { type ipv6_addr; flags interval; auto-merge; elements = { fd20:ce::254 } }",
		"set blocked4 { type ipv4_addr; flags interval; auto-merge; elements = { 10.0.0.0/8 } }",
		"tcp dport { 3128 } ip saddr @allowed4 accept",
		"tcp dport { 3128 } drop",
		"meta skuid 998 jump proxy_egress",
		"tcp dport { 443, 8443 } accept",
		// Whatever the configuration's list, the IPv4-compatible range
		// (a way back into IPv4) is never a destination.
		"ip6 daddr ::/96 reject",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the filter lacks %q:\n%s", want, got)
		}
	}
	// SOCKS5 on: its port is admitted from the same sources, and dropped
	// from any other.
	cfg.Socks5Listen = ":1080"
	socks, err := agent.Filter(cfg, 998, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`tcp dport { 1080, 3128 } iifname "lo" accept`,
		"tcp dport { 1080, 3128 } ip saddr @allowed4 accept",
		"tcp dport { 1080, 3128 } ip6 saddr @allowed6 accept",
		"tcp dport { 1080, 3128 } drop",
	} {
		if !strings.Contains(socks, want) {
			t.Errorf("with socks5Listen the filter lacks %q:\n%s", want, socks)
		}
	}
	// The control plane's status access: its addresses reach the HTTP
	// port only, never SOCKS5's.
	cfg.Status = &vmconfig.StatusAccess{Sources: []string{"198.51.100.9/32", "2001:db8:5::/48"}}
	status, err := agent.Filter(cfg, 998, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"set status4 { type ipv4_addr; flags interval; auto-merge; elements = { 198.51.100.9/32 } }",
		"set status6 { type ipv6_addr; flags interval; auto-merge; elements = { 2001:db8:5::/48 } }",
		"tcp dport 3128 ip saddr @status4 accept",
		"tcp dport 3128 ip6 saddr @status6 accept",
	} {
		if !strings.Contains(status, want) {
			t.Errorf("with status sources the filter lacks %q:\n%s", want, status)
		}
	}
	if strings.Contains(status, "1080 ip saddr @status4") || !strings.Contains(socks, "set status4 { type ipv4_addr; flags interval; auto-merge; }\n") {
		t.Errorf("the status sources reach SOCKS5, or some are admitted without status access:\n%s", status)
	}
	for name, bad := range map[string]vmconfig.Config{
		"bad SOCKS5 port":  {Listen: ":3128", Socks5Listen: ":0", ConnectPorts: []int{443}},
		"no port":          {Listen: "3128", ConnectPorts: []int{443}},
		"bad range":        {Listen: ":3128", ConnectPorts: []int{443}, AllowedSourceRanges: []string{"10.0.0.1; flush ruleset"}},
		"no CONNECT":       {Listen: ":3128"},
		"bad status range": {Listen: ":3128", ConnectPorts: []int{443}, Status: &vmconfig.StatusAccess{Sources: []string{"1.2.3.4 }; flush ruleset"}}},
	} {
		if f, err := agent.Filter(bad, 998, nil); err == nil {
			t.Errorf("%s: rendered:\n%s", name, f)
		}
	}
}

func TestResolvers(t *testing.T) {
	got := agent.Resolvers(strings.NewReader("# comment\nnameserver 169.254.169.254\nsearch x\nnameserver fe80::1%eth0\nnameserver ::1\n"))
	if len(got) != 2 || got[0].String() != "169.254.169.254" || got[1].String() != "::1" {
		t.Errorf("resolvers %v, want 169.254.169.254 and ::1", got)
	}
}
