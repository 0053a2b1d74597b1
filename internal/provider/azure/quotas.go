package azure

import (
	"context"

	"github.com/egress-proxies/egress/internal/provider"
)

// Quotas reads the subscription's quotas in location (a proxy's region)
// from the usages APIs, each entry a limit and its current value:
// Microsoft.Compute's "cores" (Total Regional vCPUs) and
// "virtualMachines"
// (https://learn.microsoft.com/en-us/rest/api/compute/usage/list), and
// Microsoft.Network's "PublicIPAddresses", every proxy's VM holding one
// (https://learn.microsoft.com/en-us/rest/api/virtualnetwork/usages/list).
// A family's own vCPU quota (standardBSFamily and the like) binds too,
// but it is the size's, and Quotas reports the region's.
//
// The usages are the subscription's, not the resource group's: their
// actions are granted at the subscription (deploy/terraform/azure's
// quotas role), the only ones there.
func (p *Provider) Quotas(ctx context.Context, location string) (provider.Quotas, error) {
	var q provider.Quotas
	compute := p.c.ComputeUsage.NewListPager(location, nil)
	for compute.More() {
		page, err := compute.NextPage(ctx)
		if err != nil {
			return provider.Quotas{}, p.wrap("quotas", location, err)
		}
		for _, u := range page.Value {
			if u == nil || u.Name == nil || u.Name.Value == nil || u.Limit == nil || u.CurrentValue == nil {
				continue
			}
			v := provider.Quota{Limit: int(*u.Limit), Usage: int(*u.CurrentValue)}
			switch *u.Name.Value {
			case "cores":
				q.CPUs = v
			case "virtualMachines":
				q.Instances = v
			}
		}
	}
	network := p.c.NetworkUsage.NewListPager(location, nil)
	for network.More() {
		page, err := network.NextPage(ctx)
		if err != nil {
			return provider.Quotas{}, p.wrap("quotas", location, err)
		}
		for _, u := range page.Value {
			if u != nil && u.Name != nil && u.Name.Value != nil && *u.Name.Value == "PublicIPAddresses" && u.Limit != nil && u.CurrentValue != nil {
				q.Addresses = provider.Quota{Limit: int(*u.Limit), Usage: int(*u.CurrentValue)}
			}
		}
	}
	return q, nil
}

var _ provider.QuotaReader = (*Provider)(nil)
