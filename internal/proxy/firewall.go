package proxy

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"go4.org/netipx"
)

// PortRange is one port the firewall opens, or a range of them, as a
// Compute firewall rule's ports are written: "3128", "3128-3130".
type PortRange struct{ First, Last int32 }

func (r PortRange) String() string {
	if r.First == r.Last {
		return strconv.Itoa(int(r.First))
	}
	return fmt.Sprintf("%d-%d", r.First, r.Last)
}

// Contains reports whether port p is in the range.
func (r PortRange) Contains(p int32) bool { return r.First <= p && p <= r.Last }

// ParsePortRanges reads ports and ranges as a firewall rule's ports list
// holds them.
func ParsePortRanges(entries []string) ([]PortRange, error) {
	out := make([]PortRange, 0, len(entries))
	for _, e := range entries {
		first, last, isRange := strings.Cut(e, "-")
		if !isRange {
			last = first
		}
		a, errA := strconv.ParseInt(first, 10, 32)
		b, errB := strconv.ParseInt(last, 10, 32)
		if errA != nil || errB != nil || a < 1 || b > 65535 || a > b {
			return nil, fmt.Errorf("%q is neither a port (1-65535) nor a range of them such as 3128-3130", e)
		}
		out = append(out, PortRange{First: int32(a), Last: int32(b)})
	}
	return out, nil
}

// ParsePrefixes reads CIDRs, as a firewall rule's source ranges hold them.
func ParsePrefixes(entries []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(entries))
	for _, e := range entries {
		p, err := netip.ParsePrefix(e)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR such as 203.0.113.0/24", e)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// PortOpen reports whether the firewall opens port p: one of ProxyPorts,
// or DefaultPort when none is given.
func (pol Policy) PortOpen(p int32) bool {
	if len(pol.ProxyPorts) == 0 {
		return p == DefaultPort
	}
	for _, r := range pol.ProxyPorts {
		if r.Contains(p) {
			return true
		}
	}
	return false
}

// DefaultPort is the port of a spec that names none: DefaultPort when the
// firewall opens it, else the first port it opens, so that a spec without
// a port is one a client can reach.
func (pol Policy) DefaultPort() int32 {
	if pol.PortOpen(DefaultPort) {
		return DefaultPort
	}
	return pol.ProxyPorts[0].First
}

// portsText is ProxyPorts as PROXY_PORTS writes them.
func (pol Policy) portsText() string {
	if len(pol.ProxyPorts) == 0 {
		return strconv.Itoa(DefaultPort)
	}
	parts := make([]string, len(pol.ProxyPorts))
	for i, r := range pol.ProxyPorts {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// withinFirewall reports whether every address of p may pass the firewall:
// p lies inside the union of FirewallSourceRanges (two adjacent ranges
// cover what neither does alone), or there is no such list.
func (pol Policy) withinFirewall(p netip.Prefix) bool {
	if len(pol.FirewallSourceRanges) == 0 {
		return true
	}
	var b netipx.IPSetBuilder
	for _, r := range pol.FirewallSourceRanges {
		b.AddPrefix(r)
	}
	set, err := b.IPSet()
	return err == nil && set.ContainsPrefix(p.Masked())
}

// firewallText is FirewallSourceRanges as FIREWALL_SOURCE_RANGES writes
// them.
func (pol Policy) firewallText() string {
	parts := make([]string, len(pol.FirewallSourceRanges))
	for i, r := range pol.FirewallSourceRanges {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}
