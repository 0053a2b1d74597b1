package vmconfig

import (
	"fmt"
	"net/netip"
	"strings"
)

// The values of Config.IPv6Egress: how a connection to an IPv6
// destination picks its source address. IPv4 destinations always leave
// from the VM's IPv4 address.
const (
	// IPv6EgressOff (or "") and IPv6EgressSingle leave the source to the
	// kernel: the VM's one IPv6 address, if it has one (today's
	// behaviour). Off is the default of a VM without a prefix; the
	// engine treats both alike, and a session ID changes nothing but the
	// access line.
	IPv6EgressOff    = "off"
	IPv6EgressSingle = "single"
	// IPv6EgressPerConnection draws a fresh random address inside
	// IPv6Prefix for each connection.
	IPv6EgressPerConnection = "perConnection"
	// IPv6EgressPerSession gives a client that names a session
	// (USER-session-ID) the same address inside IPv6Prefix for every
	// connection of that session, and a plain USER perConnection's.
	IPv6EgressPerSession = "perSession"
)

// RotatesIPv6 says whether mode draws IPv6 sources from the VM's
// prefix (perConnection, perSession), and so needs one.
func RotatesIPv6(mode string) bool {
	return mode == IPv6EgressPerConnection || mode == IPv6EgressPerSession
}

// IPv6PrefixMaxBits is the longest IPv6Prefix accepted: a /124 holds 16
// addresses (DigitalOcean's block per Droplet), the smallest a cloud
// routes to a VM; a longer one would leave a rotating mode next to
// nothing to rotate through.
const IPv6PrefixMaxBits = 124

// CheckIPv6Egress checks Config.IPv6Prefix and IPv6Egress together and
// returns the prefix, masked (an address with its length, as some clouds
// report it, names its network), or the zero Prefix when there is none.
// A prefix must be an IPv6 one of length IPv6PrefixMaxBits or less, and a
// unicast one that a cloud can route (not loopback, link-local,
// multicast, unspecified, nor IPv4-mapped); perConnection and perSession
// need a prefix. The control plane checks a spec with it before it
// renders a configuration, and the engine checks every configuration it
// loads with it.
func CheckIPv6Egress(prefix, mode string) (netip.Prefix, error) {
	switch mode {
	case "", IPv6EgressOff, IPv6EgressSingle, IPv6EgressPerConnection, IPv6EgressPerSession:
	default:
		return netip.Prefix{}, fmt.Errorf("vmconfig: ipv6Egress %q is not one of off, single, perConnection, perSession", mode)
	}
	var p netip.Prefix
	if prefix != "" {
		var err error
		if p, err = netip.ParsePrefix(strings.TrimSpace(prefix)); err != nil {
			return netip.Prefix{}, fmt.Errorf("vmconfig: ipv6Prefix %q is not a CIDR: %w", prefix, err)
		}
		a := p.Addr()
		switch {
		case !a.Is6() || a.Is4In6():
			return netip.Prefix{}, fmt.Errorf("vmconfig: ipv6Prefix %q is not an IPv6 prefix", prefix)
		case a.Zone() != "":
			return netip.Prefix{}, fmt.Errorf("vmconfig: ipv6Prefix %q has a zone", prefix)
		case p.Bits() > IPv6PrefixMaxBits:
			return netip.Prefix{}, fmt.Errorf("vmconfig: ipv6Prefix %q is longer than /%d", prefix, IPv6PrefixMaxBits)
		}
		p = p.Masked()
		a = p.Addr()
		if a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsMulticast() || a.IsUnspecified() {
			return netip.Prefix{}, fmt.Errorf("vmconfig: ipv6Prefix %q is not a unicast prefix a cloud routes to a VM", prefix)
		}
	}
	if RotatesIPv6(mode) && !p.IsValid() {
		return netip.Prefix{}, fmt.Errorf("vmconfig: ipv6Egress %s needs an ipv6Prefix to draw addresses from, and there is none", mode)
	}
	return p, nil
}
