package imds

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// The paths IPv6Prefix reads, under /latest/meta-data/: the primary
// interface's MAC address, and the IPv6 prefixes delegated to the
// interface of a MAC, one a line.
const (
	PathMAC = "mac"
	// PathIPv6PrefixOf is a format of the MAC.
	PathIPv6PrefixOf = "network/interfaces/macs/%s/ipv6-prefix"
)

// ErrNoIPv6Prefix says the primary interface has no delegated IPv6
// prefix: the service has no ipv6-prefix path for it (404).
var ErrNoIPv6Prefix = errors.New("imds: the instance's primary interface has no delegated IPv6 prefix")

// IPv6Prefix gets a token and reads the IPv6 prefix delegated to the
// instance's primary interface (the mac path is its, eth0's), the first
// where the interface has several. EC2 delegates it apart from the
// instance's own IPv6 address, so no address on the VM says it: this is
// where the VM learns it.
func (c *Client) IPv6Prefix(ctx context.Context) (netip.Prefix, error) {
	token, err := c.Token(ctx)
	if err != nil {
		return netip.Prefix{}, err
	}
	mac, err := c.MetaData(ctx, token, PathMAC)
	if err != nil {
		return netip.Prefix{}, err
	}
	mac = strings.TrimSpace(mac)
	if mac == "" || strings.ContainsAny(mac, "/?#") {
		return netip.Prefix{}, fmt.Errorf("imds: the primary interface's MAC is %q", mac)
	}
	text, err := c.MetaData(ctx, token, fmt.Sprintf(PathIPv6PrefixOf, mac))
	var e *Error
	if errors.As(err, &e) && e.Status == http.StatusNotFound {
		return netip.Prefix{}, fmt.Errorf("%w (interface %s)", ErrNoIPv6Prefix, mac)
	}
	if err != nil {
		return netip.Prefix{}, err
	}
	p, err := FirstIPv6Prefix(text)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("imds: interface %s: %w", mac, err)
	}
	return p, nil
}

// FirstIPv6Prefix is the first prefix of an ipv6-prefix answer, one
// CIDR a line: an IPv6 prefix, masked.
func FirstIPv6Prefix(text string) (netip.Prefix, error) {
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		p, err := netip.ParsePrefix(line)
		if err != nil || !p.Addr().Is6() || p.Addr().Is4In6() || p != p.Masked() {
			return netip.Prefix{}, fmt.Errorf("the ipv6-prefix answer %q is not an IPv6 prefix", line)
		}
		return p, nil
	}
	return netip.Prefix{}, ErrNoIPv6Prefix
}
