package hetzner

import (
	"testing"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/providertest"
)

// requestN is the i-th of distinct proxies.
func requestN(i int) provider.CreateRequest { return providertest.Distinct(request(), i) }

// TestQuota: a create past the project's server limit is Hetzner's 403
// resource_limit_exceeded, KindQuota; a deleted server is room again
// (providertest.RunQuota). Hetzner has no quota API, so the provider is
// no QuotaReader.
func TestQuota(t *testing.T) {
	providertest.RunQuota(t, func(t *testing.T, room int) providertest.QuotaTarget {
		e := newEnv(t)
		e.fake.SetServerLimit(room)
		if _, ok := provider.AsQuotaReader(e.p); ok {
			t.Error("the hetzner provider is a QuotaReader, but Hetzner has no API for a project's limits")
		}
		return providertest.QuotaTarget{Provider: e.p, Request: requestN, Settle: e.fake.Settle, Quota: "server limit"}
	})
}
