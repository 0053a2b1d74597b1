package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// The VM's routed IPv6 prefix (vmconfig.Config.IPv6Prefix) as sources:
// the cloud routes the whole prefix to the VM, but the VM's kernel holds
// one address of it at most, so the answers to any other address of it
// would be forwarded or dropped. One route in the local table, `local
// PREFIX dev lo`, makes every address of the prefix the VM's own for
// delivery, as an address on an interface would, without configuring one
// per connection; the engine binds them with IPV6_FREEBIND
// (internal/vm/engine's source.go), so the sysctl net.ipv6.ip_nonlocal_bind
// stays as it is. The VM's nftables filter matches the proxy user's
// packets by destination and port, never by source, so it needs no rule
// for the prefix (Filter is unchanged).
//
// The route is replaced at every apply (an idempotent `replace`), so
// every boot's apply puts it back; a prefix that a configuration no
// longer names loses its route once the new configuration serves, so
// the VM can reach those addresses again if they are another's.

// routeArgs are ip(8)'s arguments for prefix's local route.
func routeArgs(verb string, p netip.Prefix) []string {
	return []string{"-6", "route", verb, "local", p.String(), "dev", "lo"}
}

// routePrefix routes cfg's IPv6 prefix to the VM itself, if it has one.
func (a *Agent) routePrefix(ctx context.Context, cfg vmconfig.Config) error {
	p, err := vmconfig.CheckIPv6Egress(cfg.IPv6Prefix, cfg.IPv6Egress)
	if err != nil || !p.IsValid() {
		return err
	}
	if a.IP == nil {
		return fmt.Errorf("ipv6Prefix %s: this agent has no ip(8) to route it with", p)
	}
	if _, err := a.IP(ctx, routeArgs("replace", p)...); err != nil {
		return fmt.Errorf("routing ipv6Prefix %s to the VM: %w", p, err)
	}
	return nil
}

// withdrawPrefix removes the local route of the prefix the configuration
// text old named, when cfg does not name the same one. Best effort: a
// route left behind only keeps answers to that prefix on the VM.
func (a *Agent) withdrawPrefix(ctx context.Context, old []byte, cfg vmconfig.Config) {
	var prev struct {
		IPv6Prefix string `json:"ipv6Prefix"`
	}
	if json.Unmarshal(old, &prev) != nil || prev.IPv6Prefix == "" || a.IP == nil {
		return
	}
	was, err := vmconfig.CheckIPv6Egress(prev.IPv6Prefix, "")
	if err != nil {
		return
	}
	if now, _ := vmconfig.CheckIPv6Egress(cfg.IPv6Prefix, ""); now == was {
		return
	}
	if _, err := a.IP(ctx, routeArgs("del", was)...); err != nil {
		a.Log.Warn("the local route of an ipv6Prefix no longer served stays", slog.String("prefix", was.String()), slog.Any("error", err))
	}
}
