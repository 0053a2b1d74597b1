package digitalocean

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/providertest"
)

// requestN is the i-th of distinct proxies.
func requestN(i int) provider.CreateRequest { return providertest.Distinct(request(), i) }

// TestQuota: a create past the account's Droplet limit is KindQuota
// naming the limit; a destroyed Droplet is room again
// (providertest.RunQuota).
func TestQuota(t *testing.T) {
	providertest.RunQuota(t, func(t *testing.T, room int) providertest.QuotaTarget {
		e := newEnv(t)
		e.fake.SetDropletLimit(room)
		return providertest.QuotaTarget{Provider: e.p, Request: requestN, Settle: e.fake.Settle, Quota: "droplet limit"}
	})
}

// TestQuotas: Quotas reads GET /v2/account's droplet_limit and
// reserved_ip_limit through godo, with the account's Droplets and
// reserved IPs counted, after creates, a delete, and once it is done.
func TestQuotas(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.fake.SetDropletLimit(25)
	e.fake.SetReservedIPLimit(4)
	var ids []string
	for i := range 3 {
		req := requestN(i)
		req.StaticIP = i == 0
		id, err := e.p.Create(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	e.fake.Settle()
	// A static proxy's address is reserved once its Droplet is active,
	// by the Get that finds it so.
	if _, err := e.p.Get(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	e.fake.Settle()
	read := func() provider.Quotas {
		q, err := e.p.Quotas(ctx, "nyc3")
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	afterCreates := read()
	if err := e.p.Delete(ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
	afterDelete := read()
	e.fake.Settle()
	settled := read()
	got := []provider.Quotas{afterCreates, afterDelete, settled}
	want := []provider.Quotas{
		{Instances: provider.Quota{Limit: 25, Usage: 3}, Addresses: provider.Quota{Limit: 4, Usage: 1}},
		// A destroyed Droplet ("archive") no longer counts toward the limit.
		{Instances: provider.Quota{Limit: 25, Usage: 2}, Addresses: provider.Quota{Limit: 4, Usage: 1}},
		{Instances: provider.Quota{Limit: 25, Usage: 2}, Addresses: provider.Quota{Limit: 4, Usage: 1}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Quotas after 3 creates (one static), a delete, and once it is done (-want +got):\n%s", diff)
	}
}
