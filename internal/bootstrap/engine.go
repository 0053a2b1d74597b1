package bootstrap

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// SelfTestSources lead every EngineConfig's AllowedSourceRanges: the VM
// itself, whose startup script proves the proxy over loopback (the
// nftables input rule admits loopback for the same reason). The mock
// provider, which serves on the developer's own loopback, drops them so
// the spec's ranges alone decide there.
var SelfTestSources = []string{"127.0.0.1/32", "::1/128"}

// EngineConfig is the proxy engine's configuration for c: what the gcp
// provider sends as the egress-config metadata item and the mock provider
// runs on loopback. It carries the proxy's username and a salted hash of
// its password, never the password; each call salts afresh.
func EngineConfig(c Config) (vmconfig.Config, error) {
	r, err := c.check()
	if err != nil {
		return vmconfig.Config{}, err
	}
	// Never nil: the JSON says "users":[], which the startup script reads.
	users := []vmconfig.User{}
	if c.Credentials != (proxy.Credentials{}) {
		hash, err := vmconfig.NewPasswordHash(c.Credentials.Password)
		if err != nil {
			return vmconfig.Config{}, fmt.Errorf("bootstrap: %w", err)
		}
		users = append(users, vmconfig.User{Name: c.Credentials.Username, PasswordHash: hash})
	}
	ports := make([]int, len(r.ConnectPorts))
	for i, p := range r.ConnectPorts {
		ports[i] = int(p)
	}
	cfg := vmconfig.Config{
		Generation: c.Generation,
		Listen:     ":" + strconv.Itoa(int(c.Port)),
		Users:      users,
		// The VM itself, for the script's self-test; the nftables input
		// rule admits loopback for the same reason.
		AllowedSourceRanges:    slices.Concat(SelfTestSources, r.Allow4, r.Allow6),
		ConnectPorts:           ports,
		DenyDestinations:       slices.Concat(r.Deny4, r.Deny6),
		StatsListen:            "127.0.0.1:" + strconv.Itoa(r.StatsPort),
		BandwidthBitsPerSecond: r.BandwidthBPS,
		TrafficQuotaBytes:      r.TrafficQuotaBytes,
		AccessLog:              !c.AccessLogOff,
		IPv6Egress:             string(c.IPv6Egress),
		IPv6Prefix:             c.IPv6Prefix,
	}
	if r.Socks5Port != 0 {
		cfg.Socks5Listen = ":" + strconv.Itoa(int(r.Socks5Port))
		cfg.Socks5UDP = c.Socks5UDP
	}
	return cfg, nil
}
