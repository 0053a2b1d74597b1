package azure

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/azure/azurefake"
	"github.com/egress-proxies/egress/internal/provider/providertest"
	"github.com/egress-proxies/egress/internal/provider/vmside/vmsidetest"
)

// newOnFake is the provider through the SDK's clients against azurefake,
// over plain HTTP with LocalToken, as the local stack runs it.
func newOnFake(t *testing.T) (*Provider, *azurefake.Server) {
	t.Helper()
	fake := azurefake.NewHTTP(testSubscription, "72f988bf-0000-4000-8000-0000000000b2")
	t.Cleanup(fake.Close)
	fake.AcceptToken(LocalToken)
	subnets := fake.SeedNetwork(testGroup, "westeurope")
	clients, err := NewClients(testSubscription, localCredential{}, fake.Endpoint(), nil)
	if err != nil {
		t.Fatal(err)
	}
	st := vmsidetest.NewStatuses()
	p, err := New(clients, Config{SubscriptionID: testSubscription, ResourceGroup: testGroup, Subnets: subnets,
		Renderer: vmsidetest.Renderer, Prober: st, PollEvery: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return p, fake
}

// requestN is the i-th of distinct proxies in westeurope (Standard_B1s,
// one vCPU each).
func requestN(i int) provider.CreateRequest { return providertest.Distinct(request(), i) }

// TestQuota: a VM past the location's Total Regional vCPUs is Azure's
// 409 QuotaExceeded, KindQuota naming the quota; a deleted VM's vCPUs are
// room again (providertest.RunQuota).
func TestQuota(t *testing.T) {
	providertest.RunQuota(t, func(t *testing.T, room int) providertest.QuotaTarget {
		p, fake := newOnFake(t)
		fake.SetQuotas("westeurope", azurefake.Quotas{Cores: room})
		return providertest.QuotaTarget{Provider: p, Request: requestN, Settle: fake.Settle, Quota: "Total Regional Cores quota"}
	})
}

// TestQuotaKinds: each quota a proxy meets in a location, driven through
// the SDK against azurefake, is KindQuota with Azure's code in its
// message, and the refused create left no VM.
func TestQuotaKinds(t *testing.T) {
	cases := map[string]struct {
		quotas azurefake.Quotas
		code   string
	}{
		"Cores":             {quotas: azurefake.Quotas{Cores: 1}, code: "QuotaExceeded"},
		"VirtualMachines":   {quotas: azurefake.Quotas{VirtualMachines: 1}, code: "QuotaExceeded"},
		"PublicIPAddresses": {quotas: azurefake.Quotas{PublicIPAddresses: 1}, code: "PublicIPCountLimitReached"},
	}
	type outcome struct {
		Kind      provider.Kind
		NamesCode bool
		VMs       int
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p, fake := newOnFake(t)
			fake.SetQuotas("westeurope", c.quotas)
			var err error
			for i := range 2 {
				_, err = p.Create(context.Background(), requestN(i))
			}
			got := outcome{Kind: provider.KindOf(err), NamesCode: err != nil && strings.Contains(err.Error(), c.code),
				VMs: len(fake.Inventory(testGroup)["virtualMachines"])}
			var pe *provider.Error
			if !errors.As(err, &pe) {
				t.Errorf("the create past the quota: %v, not a provider.Error", err)
			}
			if diff := cmp.Diff(outcome{Kind: provider.KindQuota, NamesCode: true, VMs: 1}, got); diff != "" {
				t.Errorf("the second proxy past %+v (-want +got):\n%s\n%v", c.quotas, diff, err)
			}
		})
	}
}

// TestQuotas: Quotas reads the usages of Microsoft.Compute and
// Microsoft.Network through the SDK, as azurefake holds them, after
// creates, a delete, and once it is done; a location with no quota set
// reports none.
func TestQuotas(t *testing.T) {
	p, fake := newOnFake(t)
	fake.SetQuotas("westeurope", azurefake.Quotas{Cores: 20, VirtualMachines: 25000, PublicIPAddresses: 60})
	got := providertest.QuotaReads(t, providertest.QuotaTarget{Provider: p, Request: requestN, Settle: fake.Settle}, "westeurope", 3)
	other, err := p.Quotas(context.Background(), "northeurope")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, other)
	want := []provider.Quotas{
		{Instances: provider.Quota{Limit: 25000, Usage: 3}, CPUs: provider.Quota{Limit: 20, Usage: 3}, Addresses: provider.Quota{Limit: 60, Usage: 3}},
		// A VM being deleted holds its quota until it is gone.
		{Instances: provider.Quota{Limit: 25000, Usage: 3}, CPUs: provider.Quota{Limit: 20, Usage: 3}, Addresses: provider.Quota{Limit: 60, Usage: 3}},
		// Its deleteOptions took its public IP along.
		{Instances: provider.Quota{Limit: 25000, Usage: 2}, CPUs: provider.Quota{Limit: 20, Usage: 2}, Addresses: provider.Quota{Limit: 60, Usage: 2}},
		{},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Quotas after 3 creates, a delete, once done, and of another location (-want +got):\n%s", diff)
	}
}
