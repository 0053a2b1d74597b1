package hetzner

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/providertest"
)

// requestN is the i-th of distinct proxies.
func requestN(i int) provider.CreateRequest { return providertest.Distinct(request(), i) }

// TestQuota: a create past one of the project's limits, servers or
// Primary IPs (each server's IPv4 is one), is Hetzner's 403
// resource_limit_exceeded, KindQuota naming the limit; a deleted server
// (and the Primary IP that goes with it) is room again
// (providertest.RunQuota). Hetzner has no quota API, so the provider is
// no QuotaReader.
func TestQuota(t *testing.T) {
	cases := map[string]struct {
		set   func(e *env, room int)
		quota string
	}{
		"Servers": {func(e *env, room int) { e.fake.SetServerLimit(room) }, "server limit exceeded"},
		// A proxy's server takes two: its IPv4 and its IPv6.
		"PrimaryIPs": {func(e *env, room int) { e.fake.SetPrimaryIPLimit(2 * room) }, "Primary IP limit exceeded"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			providertest.RunQuota(t, func(t *testing.T, room int) providertest.QuotaTarget {
				e := newEnv(t)
				c.set(e, room)
				if _, ok := provider.AsQuotaReader(e.p); ok {
					t.Error("the hetzner provider is a QuotaReader, but Hetzner has no API for a project's limits")
				}
				return providertest.QuotaTarget{Provider: e.p, Request: requestN, Settle: e.fake.Settle, Quota: c.quota}
			})
		})
	}
}

// TestStaticProxyPrimaryIPLimit: a Static proxy's Primary IP, made by
// primary_ips.create before its server, meets the limit there: the
// second Static proxy past a limit of two (the first's IPv4 and IPv6) is
// KindQuota naming it, and leaves no server.
func TestStaticProxyPrimaryIPLimit(t *testing.T) {
	e := newEnv(t)
	e.fake.SetPrimaryIPLimit(2)
	var err error
	for i := range 2 {
		req := requestN(i)
		req.StaticIP = true
		_, err = e.p.Create(context.Background(), req)
	}
	type outcome struct {
		Kind       provider.Kind
		NamesLimit bool
		Servers    int
	}
	got := outcome{provider.KindOf(err), err != nil && strings.Contains(err.Error(), "Primary IP limit exceeded"), e.fake.Calls("servers.create")}
	if diff := cmp.Diff(outcome{provider.KindQuota, true, 1}, got); diff != "" {
		t.Errorf("the second Static proxy past the Primary IP limit (-want +got):\n%s\n%v", diff, err)
	}
}
