package agent_test

import (
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/vm/agent"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
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
		"policy drop;",
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
		"UDP, no SOCKS5":   {Listen: ":3128", Socks5UDP: true, ConnectPorts: []int{443}},
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

// inputOS is what the input chain admits for the OS itself, the same
// whatever the configuration.
var inputOS = []string{
	"ct state established,related accept",
	"icmp type { destination-unreachable, time-exceeded, parameter-problem } accept",
	"icmpv6 type { destination-unreachable, packet-too-big, time-exceeded, parameter-problem } accept",
	"icmpv6 type { nd-router-solicit, nd-router-advert, nd-neighbor-solicit, nd-neighbor-advert, ind-neighbor-solicit, ind-neighbor-advert } ip6 hoplimit 255 accept",
	"icmpv6 type { mld-listener-query, mld-listener-report, mld-listener-done, mld2-listener-report } ip6 saddr fe80::/10 accept",
	"icmp type echo-request ip saddr @allowed4 limit rate 10/second burst 20 packets accept",
	"icmp type echo-request ip saddr @status4 limit rate 10/second burst 20 packets accept",
	"icmpv6 type echo-request ip6 saddr @allowed6 limit rate 10/second burst 20 packets accept",
	"icmpv6 type echo-request ip6 saddr @status6 limit rate 10/second burst 20 packets accept",
	"udp sport 67 udp dport 68 accept",
	"ip6 saddr fe80::/10 udp sport 547 udp dport 546 accept",
}

// TestFilterInput: the input chain's policy is drop, and it admits, in
// this order, loopback, the proxy's ports from the allowed sources (the
// HTTP port from the status sources too) whatever the connection's
// state, then answers to the VM's own connections and the ICMP and DHCP
// the OS needs, and nothing else: port 22 and every port besides the
// proxy's are closed whatever listens there and whatever the cloud's
// firewall lets through.
func TestFilterInput(t *testing.T) {
	base := vmconfig.Config{Listen: ":3128", AllowedSourceRanges: []string{"198.51.100.0/24", "2001:db8::/32"}, ConnectPorts: []int{443}}
	withSocks := base
	withSocks.Socks5Listen = ":1080"
	withStatus := withSocks
	withStatus.Status = &vmconfig.StatusAccess{Sources: []string{"192.0.2.9/32"}}
	sameSocks := base
	sameSocks.Socks5Listen = "0.0.0.0:3128"
	withUDP := withSocks
	withUDP.Socks5UDP = true
	rules := func(ports string, port int) []string {
		p := strconv.Itoa(port)
		return append([]string{
			"type filter hook input priority filter; policy drop;",
			`iifname "lo" accept`,
			"ct state invalid drop",
			"tcp dport { " + ports + " } ip saddr @allowed4 accept",
			"tcp dport { " + ports + " } ip6 saddr @allowed6 accept",
			"tcp dport " + p + " ip saddr @status4 accept",
			"tcp dport " + p + " ip6 saddr @status6 accept",
			"tcp dport { " + ports + " } drop",
		}, inputOS...)
	}
	cases := map[string]struct {
		reason string
		cfg    vmconfig.Config
		want   []string
	}{
		"HTTPOnly": {
			reason: "only the proxy port from the allowed sources, and what the OS needs",
			cfg:    base, want: rules("3128", 3128),
		},
		"SOCKS5": {
			reason: "the SOCKS5 port joins the proxy port, from the same sources",
			cfg:    withSocks, want: rules("1080, 3128", 3128),
		},
		"Status": {
			reason: "the status sources change the sets, not the rules: they reach the HTTP port only",
			cfg:    withStatus, want: rules("1080, 3128", 3128),
		},
		"SOCKS5OnTheSamePort": {
			reason: "one port named twice is one port",
			cfg:    sameSocks, want: rules("3128", 3128),
		},
		"SOCKS5UDP": {
			reason: "the UDP relay, on the SOCKS5 port's number, from the same sources as the TCP ports and dropped from any other",
			cfg:    withUDP,
			want: slices.Insert(rules("1080, 3128", 3128), 8,
				"udp dport 1080 ip saddr @allowed4 accept",
				"udp dport 1080 ip6 saddr @allowed6 accept",
				"udp dport 1080 drop"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := agent.Filter(tc.cfg, 998, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, chainRules(got, "input")); diff != "" {
				t.Errorf("%s\nthe input chain (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestFilterEgress: the engine's user reaches the resolvers on 53, never
// a denied range, and opens TCP connections on the CONNECT ports only;
// with socks5UDP its relay answers the allowed sources on the relay's
// port, and its datagrams go to any port of an address outside the deny
// sets (after them, so a denied address is rejected first).
func TestFilterEgress(t *testing.T) {
	base := vmconfig.Config{Listen: ":3128", Socks5Listen: ":1080", AllowedSourceRanges: []string{"198.51.100.0/24"}, ConnectPorts: []int{443, 80}}
	withUDP := base
	withUDP.Socks5UDP = true
	head := []string{
		"ct state established,related accept",
	}
	lists := []string{
		"ip daddr @resolvers4 meta l4proto { tcp, udp } th dport 53 accept",
		"ip6 daddr @resolvers6 meta l4proto { tcp, udp } th dport 53 accept",
		"ip daddr @blocked4 reject",
		"ip6 daddr @blocked6 reject",
		"ip6 daddr ::/96 reject",
	}
	tail := []string{
		"tcp dport { 80, 443 } accept",
		"meta l4proto tcp reject with tcp reset",
		"reject",
	}
	cases := map[string]struct {
		cfg  vmconfig.Config
		want []string
	}{
		"TCPOnly": {base, slices.Concat(head, lists, tail)},
		"SOCKS5UDP": {withUDP, slices.Concat(head, []string{
			"udp sport 1080 ip daddr @allowed4 accept",
			"udp sport 1080 ip6 daddr @allowed6 accept",
		}, lists, []string{"meta l4proto udp accept"}, tail)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := agent.Filter(tc.cfg, 998, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, chainRules(got, "proxy_egress")); diff != "" {
				t.Errorf("the egress chain (-want +got):\n%s", diff)
			}
		})
	}
}

// chainRules is the rules of one chain of a rendered ruleset, without
// comments and indentation.
func chainRules(ruleset, chain string) []string {
	var rules []string
	in := false
	for _, line := range strings.Split(ruleset, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "chain "+chain+" {":
			in = true
		case !in || line == "" || strings.HasPrefix(line, "#"):
		case line == "}":
			return rules
		default:
			rules = append(rules, line)
		}
	}
	return rules
}

// TestFilterLoads: nft itself takes each rendered ruleset, twice in a
// row as the agent swaps it (the table deleted and made again in one
// transaction), in a network namespace of the test's own, and lists the
// input chain with policy drop. It needs nft and unshare (util-linux);
// where either is missing it skips, except under CI, where
// scripts/install-deps.sh installs nftables.
func TestFilterLoads(t *testing.T) {
	nft, err := exec.LookPath("nft")
	if err != nil {
		nft = "/usr/sbin/nft"
	}
	_, errN := os.Stat(nft)
	unshare, errU := exec.LookPath("unshare")
	if errN != nil || errU != nil {
		msg := "nft (package nftables) or unshare (util-linux) is missing: the rendered rules were not loaded"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	// A network namespace of the test's own, so the host's rules are never
	// touched; without root, in a user namespace that maps the test's user
	// to root, which gives nft CAP_NET_ADMIN over that namespace alone.
	ns := []string{"--net"}
	if os.Geteuid() != 0 {
		ns = []string{"--user", "--map-root-user", "--net"}
	}
	for name, cfg := range map[string]vmconfig.Config{
		"Minimal": {Listen: ":3128", ConnectPorts: []int{443}},
		"Full": {Listen: ":3128", Socks5Listen: ":1080", AllowedSourceRanges: []string{"198.51.100.0/24", "2001:db8::/32"},
			ConnectPorts: []int{443, 8443}, DenyDestinations: vmconfig.DefaultDenyDestinations,
			Status: &vmconfig.StatusAccess{Sources: []string{"192.0.2.9/32", "2001:db8:5::/48"}}},
		"SOCKS5UDP": {Listen: ":3128", Socks5Listen: ":1080", Socks5UDP: true, AllowedSourceRanges: []string{"198.51.100.0/24", "2001:db8::/32"},
			ConnectPorts: []int{443}, DenyDestinations: vmconfig.DefaultDenyDestinations},
	} {
		t.Run(name, func(t *testing.T) {
			rules, err := agent.Filter(cfg, 998, []netip.Addr{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("fd20:ce::254")})
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), agent.FilterFile)
			if err := os.WriteFile(path, []byte(rules), 0o600); err != nil {
				t.Fatal(err)
			}
			script := `"$0" -f "$1" && "$0" -f "$1" && "$0" list chain inet egress_proxy input`
			out, err := exec.Command(unshare, append(ns, "sh", "-c", script, nft, path)...).CombinedOutput()
			if err != nil {
				t.Fatalf("nft does not take the ruleset twice: %v\n%s\n%s", err, out, rules)
			}
			if !strings.Contains(string(out), "policy drop;") {
				t.Errorf("the loaded input chain's policy is not drop:\n%s", out)
			}
		})
	}
}
