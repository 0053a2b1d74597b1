package client

import (
	"context"
	"fmt"
	"net/http"

	"github.com/egress-proxies/egress/internal/proxy"
)

// SpecPatch is a change of the fields a proxy takes live. A nil field
// stays as it is; DefaultConnectPorts sends connectPorts null, back to
// 443 and 80.
type SpecPatch struct {
	AllowedSourceRanges []string
	ConnectPorts        []int32
	DefaultConnectPorts bool
	// BandwidthLimit replaces the proxy's bandwidth limit ("100Mbit");
	// "" sends null, no limit.
	BandwidthLimit *string
	// TrafficQuota replaces the proxy's monthly traffic quota ("500GB");
	// "" sends null, no quota.
	TrafficQuota *string
	// AccessLog turns the proxy's access log on or off.
	AccessLog *bool
	// IPv6Egress changes how connections to IPv6 destinations pick their
	// source (spec.ipv6Egress); "" sends null, the provider's default.
	IPv6Egress *proxy.IPv6Egress
}

// UpdateProxy sends the change as a JSON merge patch and returns the
// proxy as changed: its generation counts the change, and the reconciler
// gives the VM the new configuration (Reconfigured says when it serves
// it).
func (c *Client) UpdateProxy(ctx context.Context, ns, name string, patch SpecPatch) (*proxy.Proxy, error) {
	spec := map[string]any{}
	if patch.AllowedSourceRanges != nil {
		spec["allowedSourceRanges"] = patch.AllowedSourceRanges
	}
	switch {
	case patch.DefaultConnectPorts:
		spec["connectPorts"] = nil
	case patch.ConnectPorts != nil:
		spec["connectPorts"] = patch.ConnectPorts
	}
	if b := patch.BandwidthLimit; b != nil {
		spec["bandwidthLimit"] = nil
		if *b != "" {
			spec["bandwidthLimit"] = *b
		}
	}
	if q := patch.TrafficQuota; q != nil {
		spec["trafficQuota"] = nil
		if *q != "" {
			spec["trafficQuota"] = *q
		}
	}
	if patch.AccessLog != nil {
		spec["accessLog"] = *patch.AccessLog
	}
	if m := patch.IPv6Egress; m != nil {
		spec["ipv6Egress"] = nil
		if *m != "" {
			spec["ipv6Egress"] = *m
		}
	}
	p := &proxy.Proxy{}
	if _, err := c.call(ctx, http.MethodPatch, proxyPath(ns, name), nil, mergePatch{"spec": spec}, p); err != nil {
		return nil, err
	}
	return p, nil
}

// RotateCredentials gives the proxy a new username and password, and
// returns it with them in status.proxyURL (for the namespace's members).
func (c *Client) RotateCredentials(ctx context.Context, ns, name string) (*proxy.Proxy, error) {
	p := &proxy.Proxy{}
	if _, err := c.call(ctx, http.MethodPost, proxyPath(ns, name)+":rotateCredentials", nil, nil, p); err != nil {
		return nil, err
	}
	return p, nil
}

// Reconfigured is over once the proxy is Ready serving generation (or a
// later one), and fails once it is Failed.
func Reconfigured(generation int64) Condition {
	return func(p *proxy.Proxy) (bool, error) {
		ready, err := Ready(p)
		if p == nil {
			return false, fmt.Errorf("the proxy was deleted while waiting for it to serve generation %d", generation)
		}
		return ready && p.Status.ObservedGeneration >= generation, err
	}
}
