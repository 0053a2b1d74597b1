package gcp

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/gcp/computefake"
	"github.com/egress-proxies/egress/internal/provider/providertest"
)

// requestN is the i-th of distinct proxies in us-central1 (e2-small, two
// vCPUs each).
func requestN(i int) provider.CreateRequest { return providertest.Distinct(request(), i) }

// TestQuota: Compute fails an insert past the region's CPUS quota in its
// operation, which Get reads as KindQuota naming CPUS; a deleted VM's
// vCPUs are room again (providertest.RunQuota).
func TestQuota(t *testing.T) {
	providertest.RunQuota(t, func(t *testing.T, room int) providertest.QuotaTarget {
		p, fake := newProvider(t)
		fake.SetQuotas("us-central1", computefake.Quotas{CPUs: 2 * room})
		return providertest.QuotaTarget{Provider: p, Request: requestN, Settle: fake.Settle, Quota: "CPUS"}
	})
}

// TestQuotaKinds: each regional quota a proxy meets is KindQuota naming
// the metric, the instance's in Get once the insert's operation failed,
// the static address's in Create.
func TestQuotaKinds(t *testing.T) {
	cases := map[string]struct {
		quotas computefake.Quotas
		static bool
		metric string
	}{
		"CPUS":             {quotas: computefake.Quotas{CPUs: 3}, metric: "CPUS"},
		"INSTANCES":        {quotas: computefake.Quotas{Instances: 1}, metric: "INSTANCES"},
		"IN_USE_ADDRESSES": {quotas: computefake.Quotas{InUseAddresses: 1}, metric: "IN_USE_ADDRESSES"},
		"STATIC_ADDRESSES": {quotas: computefake.Quotas{StaticAddresses: 1}, static: true, metric: "STATIC_ADDRESSES"},
	}
	type outcome struct {
		Kind       provider.Kind
		Op         string
		NamesQuota bool
		Instances  int
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			p, fake := newProvider(t)
			fake.SetQuotas("us-central1", c.quotas)
			var err error
			for i := range 2 {
				req := requestN(i)
				req.StaticIP = c.static
				var id string
				if id, err = p.Create(ctx, req); err == nil {
					fake.Settle()
					_, err = p.Get(ctx, id)
				}
			}
			var pe *provider.Error
			got := outcome{Kind: provider.KindOf(err), NamesQuota: err != nil && strings.Contains(err.Error(), "Quota '"+c.metric+"' exceeded"), Instances: fake.Instances()}
			if errors.As(err, &pe) {
				got.Op = pe.Op
			}
			wantOp := "create"
			if c.static {
				wantOp = "reserve address"
			}
			if diff := cmp.Diff(outcome{Kind: provider.KindQuota, Op: wantOp, NamesQuota: true, Instances: 1}, got); diff != "" {
				t.Errorf("the second proxy past %s (-want +got):\n%s\n%v", c.metric, diff, err)
			}
		})
	}
}

// TestQuotas: Quotas reads regions.get's limits and usage as the fake
// holds them, after creates, a delete, and once it is done; a region
// with no quota set reports none.
func TestQuotas(t *testing.T) {
	p, fake := newProvider(t)
	fake.SetQuotas("us-central1", computefake.Quotas{CPUs: 24, Instances: 10, InUseAddresses: 8, StaticAddresses: 8})
	got := providertest.QuotaReads(t, providertest.QuotaTarget{Provider: p, Request: requestN, Settle: fake.Settle}, "us-central1", 3)
	other, err := p.Quotas(context.Background(), "europe-west4")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, other)
	want := []provider.Quotas{
		{Instances: provider.Quota{Limit: 10, Usage: 3}, CPUs: provider.Quota{Limit: 24, Usage: 6}, Addresses: provider.Quota{Limit: 8, Usage: 3}},
		// A VM stopping still holds its quota until it is gone.
		{Instances: provider.Quota{Limit: 10, Usage: 3}, CPUs: provider.Quota{Limit: 24, Usage: 6}, Addresses: provider.Quota{Limit: 8, Usage: 3}},
		{Instances: provider.Quota{Limit: 10, Usage: 2}, CPUs: provider.Quota{Limit: 24, Usage: 4}, Addresses: provider.Quota{Limit: 8, Usage: 2}},
		{},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Quotas after 3 creates, a delete, once gone, and of another region (-want +got):\n%s", diff)
	}
}
