package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// A configuration rendered at a create names the VM's IPv6 egress mode
// but not its prefix: the cloud assigns the prefix with the VM, after the
// user-data or the metadata was written. Where the cloud routes the
// prefix around the VM's own address (Hetzner's /64, Google's /96,
// DigitalOcean's /124), the configuration says the prefix's length
// (vmconfig.Config.IPv6PrefixLength) and the agent finds the prefix on
// the VM: its global IPv6 address, masked to that length. The control
// plane reads the same prefix from the cloud (status.ipv6Prefix) and
// names it in every configuration after.
//
// EC2 is the exception: the /80 it delegates to the VM's interface is
// apart from the VM's own IPv6 address, so nothing on the VM says it.
// There (Agent.IMDS set: the boot names EC2's metadata service) the agent
// reads it from the instance metadata instead, and the configuration's
// length, if it says one, must be the prefix's.

// withPrefix returns text with its ipv6Prefix filled in, when text's
// mode draws addresses from a prefix it does not name: from the instance
// metadata on EC2, from the VM's address where text says the prefix's
// length; text as it is otherwise.
func (a *Agent) withPrefix(ctx context.Context, text string) (string, error) {
	var c struct {
		Prefix string `json:"ipv6Prefix"`
		Mode   string `json:"ipv6Egress"`
		Length int    `json:"ipv6PrefixLength"`
	}
	if err := json.Unmarshal([]byte(text), &c); err != nil {
		return text, nil // engine.ReadConfig says what is wrong with it
	}
	if c.Prefix != "" || !vmconfig.RotatesIPv6(c.Mode) {
		return text, nil
	}
	var p netip.Prefix
	switch {
	case a.IMDS != nil:
		var err error
		if p, err = a.IMDS.IPv6Prefix(ctx); err != nil {
			return "", fmt.Errorf("ipv6Egress %s: the prefix delegated to the interface, from the instance metadata: %w", c.Mode, err)
		}
		if c.Length != 0 && p.Bits() != c.Length {
			return "", fmt.Errorf("ipv6Egress %s: the instance metadata's prefix %s is not the /%d the configuration says", c.Mode, p, c.Length)
		}
	case c.Length == 0:
		return text, nil
	default:
		var err error
		if p, err = a.prefixAroundAddress(ctx, c.Mode, c.Length); err != nil {
			return "", err
		}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &fields); err != nil {
		return text, nil
	}
	fields["ipv6Prefix"], _ = json.Marshal(p.String())
	b, err := json.Marshal(fields)
	return string(b), err
}

// prefixAroundAddress is the prefix of length bits around the VM's
// global IPv6 address, as ip(8) lists it.
func (a *Agent) prefixAroundAddress(ctx context.Context, mode string, bits int) (netip.Prefix, error) {
	if a.IP == nil {
		return netip.Prefix{}, fmt.Errorf("ipv6Egress %s: this agent has no ip(8) to find the VM's IPv6 address with", mode)
	}
	out, err := a.IP(ctx, "-6", "-j", "addr", "show", "scope", "global")
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("ipv6Egress %s: reading the VM's IPv6 addresses: %w", mode, err)
	}
	p, err := prefixAround(out, bits)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("ipv6Egress %s: %w", mode, err)
	}
	return p, nil
}

// prefixAround is the prefix of length bits around the first global,
// settled, non-temporary IPv6 address ip -6 -j addr printed (out); a
// unique local address (fc00::/7) is no cloud's routed prefix.
func prefixAround(out []byte, bits int) (netip.Prefix, error) {
	var links []struct {
		Name  string `json:"ifname"`
		Addrs []struct {
			Family     string `json:"family"`
			Local      string `json:"local"`
			Scope      string `json:"scope"`
			Temporary  bool   `json:"temporary"`
			Deprecated bool   `json:"deprecated"`
			Tentative  bool   `json:"tentative"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal(out, &links); err != nil {
		return netip.Prefix{}, fmt.Errorf("reading ip(8)'s addresses: %w", err)
	}
	for _, l := range links {
		for _, ai := range l.Addrs {
			addr, err := netip.ParseAddr(ai.Local)
			if ai.Family != "inet6" || ai.Scope != "global" || ai.Temporary || ai.Deprecated || ai.Tentative || err != nil || addr.IsPrivate() {
				continue
			}
			p, err := addr.Prefix(bits)
			if err != nil {
				return netip.Prefix{}, err
			}
			return p, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("the VM has no global IPv6 address to take its /%d prefix around (is IPv6 on in its network?)", bits)
}
