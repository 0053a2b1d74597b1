package agent

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// Filter renders the VM's nftables rules for cfg: the kernel's wall beside
// the engine's own checks. proxyUID is the engine's system user, whose
// packets the egress chain matches; resolvers are the addresses of
// /etc/resolv.conf, which the engine may reach on port 53 only (on Compute
// Engine the resolver is the metadata server itself). Ingress is closed
// but for the proxy's ports from the allowed sources, the status from the
// control plane's, answers to the VM's own connections and the ICMP and
// DHCP the OS needs; with socks5UDP, the SOCKS5 UDP relay's port from the
// allowed sources, and the engine's datagrams to any port of an address
// the deny sets let through. The ruleset deletes and recreates its table
// in one transaction, so the filter is never absent, and conntrack keeps every
// established connection through the swap.
func Filter(cfg vmconfig.Config, proxyUID int, resolvers []netip.Addr) (string, error) {
	port, err := listenPort("listen", cfg.Listen)
	if err != nil {
		return "", err
	}
	// The ports clients reach: the proxy's, and SOCKS5's when it is on.
	listening := strconv.Itoa(port)
	if cfg.Socks5Listen != "" {
		socks, err := listenPort("socks5Listen", cfg.Socks5Listen)
		if err != nil {
			return "", err
		}
		if socks != port {
			listening = strconv.Itoa(min(port, socks)) + ", " + strconv.Itoa(max(port, socks))
		}
	}
	if len(cfg.ConnectPorts) == 0 {
		return "", fmt.Errorf("agent: connectPorts: none")
	}
	// SOCKS5 UDP ASSOCIATE: the engine's relay on the SOCKS5 port's
	// number, admitted from the allowed sources as the TCP ports are, and
	// the engine's datagrams to the internet under the same deny sets as
	// its connections.
	var udpIn, udpOut, udpOut2 string
	if cfg.Socks5UDP {
		if cfg.Socks5Listen == "" {
			return "", fmt.Errorf("agent: socks5UDP without socks5Listen")
		}
		relay, _ := listenPort("socks5Listen", cfg.Socks5Listen)
		udpIn = fmt.Sprintf(`		# The SOCKS5 UDP relay (socks5UDP) on the SOCKS5 port's number:
		# from the allowed sources only, whatever the state, as the TCP
		# ports.
		udp dport %[1]d ip saddr @allowed4 accept
		udp dport %[1]d ip6 saddr @allowed6 accept
		udp dport %[1]d drop
`, relay)
		udpOut = fmt.Sprintf(`		# SOCKS5 UDP (socks5UDP): the relay answers its clients, whatever
		# range they are in, even once conntrack has forgotten the flow...
		udp sport %[1]d ip daddr @allowed4 accept
		udp sport %[1]d ip6 daddr @allowed6 accept
`, relay)
		udpOut2 = `		# ...and the clients' datagrams go to any port of an address
		# outside the deny sets (connectPorts are TCP's).
		meta l4proto udp accept
`
	}
	allow4, allow6, err := families("allowedSourceRanges", cfg.AllowedSourceRanges)
	if err != nil {
		return "", err
	}
	deny4, deny6, err := families("denyDestinations", cfg.DenyDestinations)
	if err != nil {
		return "", err
	}
	var status4, status6 []string
	if cfg.Status != nil {
		if status4, status6, err = families("status.sources", cfg.Status.Sources); err != nil {
			return "", err
		}
	}
	var res4, res6 []string
	for _, a := range resolvers {
		if a.Unmap().Is4() {
			res4 = append(res4, a.Unmap().String())
		} else {
			res6 = append(res6, a.String())
		}
	}
	ports := make([]string, 0, len(cfg.ConnectPorts))
	for _, p := range slices.Compact(slices.Sorted(slices.Values(cfg.ConnectPorts))) {
		ports = append(ports, strconv.Itoa(p))
	}
	var b strings.Builder
	b.WriteString("# Rendered by the egress proxy's agent (internal/vm/agent) from its configuration.\n")
	b.WriteString("table inet egress_proxy\ndelete table inet egress_proxy\ntable inet egress_proxy {\n")
	set(&b, "allowed4", "ipv4_addr", allow4)
	set(&b, "allowed6", "ipv6_addr", allow6)
	set(&b, "status4", "ipv4_addr", status4)
	set(&b, "status6", "ipv6_addr", status6)
	set(&b, "resolvers4", "ipv4_addr", res4)
	set(&b, "resolvers6", "ipv6_addr", res6)
	set(&b, "blocked4", "ipv4_addr", deny4)
	set(&b, "blocked6", "ipv6_addr", deny6)
	fmt.Fprintf(&b, `	# Ingress. The policy is drop: what no rule here admits never reaches
	# a socket, so an sshd the image ships, or anything a package starts
	# later, is closed to the internet whatever the cloud firewall lets
	# through (a network's default-allow-ssh, a rule of the operator's).
	# Dropped, not rejected: a reset or an ICMP error would tell a scanner
	# the address is alive and which ports are not; silence tells it
	# nothing, and costs a client that should not be here only its timeout.
	chain input {
		type filter hook input priority filter; policy drop;
		# The VM to itself: the self-test, the engine's counters and
		# access log, the agent.
		iifname "lo" accept
		ct state invalid drop
		# The proxy's ports (HTTP, and SOCKS5 when it is on) by source,
		# whatever the connection's state, so a range removed from the
		# configuration loses its connections at the kernel as well as
		# in the engine: the allowed sources, and the control plane's
		# addresses on the HTTP port, where the engine answers them the
		# status only.
		tcp dport { %[1]s } ip saddr @allowed4 accept
		tcp dport { %[1]s } ip6 saddr @allowed6 accept
		tcp dport %[4]d ip saddr @status4 accept
		tcp dport %[4]d ip6 saddr @status6 accept
		tcp dport { %[1]s } drop
%[5]s		# Answers to the VM's own connections: the metadata server's,
		# DNS, the engine's downloads and its clients' destinations, the
		# call-home. Conntrack holds them across a swap of this table,
		# which is one transaction, so no answer meets a missing rule.
		ct state established,related accept
		# ICMP the OS needs (RFC 4890 §4.4.1 for ICMPv6): the errors
		# path MTU discovery and failing connections rely on; neighbour
		# and router discovery, which the kernel itself holds to hop
		# limit 255 (a packet from off the link arrives with less);
		# multicast listener queries from the link, without which a
		# snooping switch stops forwarding neighbour solicitations.
		icmp type { destination-unreachable, time-exceeded, parameter-problem } accept
		icmpv6 type { destination-unreachable, packet-too-big, time-exceeded, parameter-problem } accept
		icmpv6 type { nd-router-solicit, nd-router-advert, nd-neighbor-solicit, nd-neighbor-advert, ind-neighbor-solicit, ind-neighbor-advert } ip6 hoplimit 255 accept
		icmpv6 type { mld-listener-query, mld-listener-report, mld-listener-done, mld2-listener-report } ip6 saddr fe80::/10 accept
		# Echo (ping) only for those who have a use for it, the proxy's
		# clients and the control plane, and at a bounded rate: to anyone
		# else the VM is as silent as a closed port. (RFC 4890 keeps echo
		# for connectivity checks; these are the ones who check.)
		icmp type echo-request ip saddr @allowed4 limit rate 10/second burst 20 packets accept
		icmp type echo-request ip saddr @status4 limit rate 10/second burst 20 packets accept
		icmpv6 type echo-request ip6 saddr @allowed6 limit rate 10/second burst 20 packets accept
		icmpv6 type echo-request ip6 saddr @status6 limit rate 10/second burst 20 packets accept
		# DHCP, so a lease renews: a DHCPv4 server's answer may be a
		# broadcast, which conntrack never ties to the request; DHCPv6's
		# comes from the server's or relay's link-local address.
		udp sport 67 udp dport 68 accept
		ip6 saddr fe80::/10 udp sport 547 udp dport 546 accept
	}
	# Egress of the proxy's own user: answers to its clients, DNS to the
	# resolvers, its own counters on loopback, and new connections only to
	# public addresses on the allowed ports (and with socks5UDP, datagrams
	# to public addresses on any port). Never the metadata server, never
	# a private network.
	chain output {
		type filter hook output priority filter; policy accept;
		meta skuid %[2]d jump proxy_egress
	}
	chain proxy_egress {
		ct state established,related accept
%[6]s		ip daddr @resolvers4 meta l4proto { tcp, udp } th dport 53 accept
		ip6 daddr @resolvers6 meta l4proto { tcp, udp } th dport 53 accept
		ip daddr @blocked4 reject
		ip6 daddr @blocked6 reject
		# ::/96 (IPv4-compatible, with :: and ::1) whatever the list: a
		# configuration from before it joined the default list holds it too.
		ip6 daddr ::/96 reject
%[7]s		tcp dport { %[3]s } accept
		meta l4proto tcp reject with tcp reset
		reject
	}
}
`, listening, proxyUID, strings.Join(ports, ", "), port, udpIn, udpOut, udpOut2)
	return b.String(), nil
}

// listenPort reads the port of a listen address.
func listenPort(field, hostport string) (int, error) {
	_, portText, err := net.SplitHostPort(hostport)
	if err != nil {
		return 0, fmt.Errorf("agent: %s %q is not host:port: %w", field, hostport, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 {
		return 0, fmt.Errorf("agent: %s %q: the port is not 1-65535", field, hostport)
	}
	return port, nil
}

// families parses CIDRs and splits them by family, each in its canonical
// text: nothing but netip's output reaches the ruleset.
func families(field string, cidrs []string) (v4, v6 []string, err error) {
	for _, s := range cidrs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, nil, fmt.Errorf("agent: %s: %q is not a CIDR: %w", field, s, err)
		}
		p = p.Masked()
		if p.Addr().Is4() {
			v4 = append(v4, p.String())
		} else {
			v6 = append(v6, p.String())
		}
	}
	return v4, v6, nil
}

func set(b *strings.Builder, name, typ string, elements []string) {
	if len(elements) == 0 {
		fmt.Fprintf(b, "\tset %s { type %s; flags interval; auto-merge; }\n", name, typ)
		return
	}
	fmt.Fprintf(b, "\tset %s { type %s; flags interval; auto-merge; elements = { %s } }\n", name, typ, strings.Join(elements, ", "))
}

// Resolvers reads the nameserver addresses of a resolv.conf.
func Resolvers(r io.Reader) []netip.Addr {
	var out []netip.Addr
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "nameserver" {
			if a, err := netip.ParseAddr(f[1]); err == nil && a.Zone() == "" {
				out = append(out, a)
			}
		}
	}
	return out
}
