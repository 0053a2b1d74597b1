package gcp

import (
	"context"

	"cloud.google.com/go/compute/apiv1/computepb"

	"github.com/egress-proxies/egress/internal/provider"
)

// Quotas reads the project's regional quotas in region from regions.get,
// whose Region.quotas holds each metric's limit and usage
// (https://cloud.google.com/compute/docs/reference/rest/v1/regions/get):
// CPUS, INSTANCES, and IN_USE_ADDRESSES as Addresses, since every proxy's
// VM holds an external IPv4 address, ephemeral or static. It is one
// call, of the permission compute.regions.get the zones of a region
// already take.
func (p *Provider) Quotas(ctx context.Context, region string) (provider.Quotas, error) {
	r, err := p.c.Regions.Get(ctx, &computepb.GetRegionRequest{Project: p.cfg.Project, Region: region})
	if err != nil {
		return provider.Quotas{}, p.wrap("quotas", region, err)
	}
	var q provider.Quotas
	for _, m := range r.GetQuotas() {
		v := provider.Quota{Limit: int(m.GetLimit()), Usage: int(m.GetUsage())}
		switch m.GetMetric() {
		case "CPUS":
			q.CPUs = v
		case "INSTANCES":
			q.Instances = v
		case "IN_USE_ADDRESSES":
			q.Addresses = v
		}
	}
	return q, nil
}

var _ provider.QuotaReader = (*Provider)(nil)
