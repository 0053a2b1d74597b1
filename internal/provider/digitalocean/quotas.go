package digitalocean

import (
	"context"

	"github.com/digitalocean/godo"

	"github.com/egress-proxies/egress/internal/provider"
)

// Quotas reads the account's limits from GET /v2/account
// (https://docs.digitalocean.com/reference/api/digitalocean/#tag/Account):
// droplet_limit, "the total number of Droplets current user or team may
// have active at one time", and reserved_ip_limit. DigitalOcean reports
// no usage beside them, so usage is counted: the account's Droplets, in
// every region, since the limit is the account's and not a region's (a
// Droplet being destroyed, "archive", no longer counts, as the fake and
// the limit hold), and its reserved IPs. region is not needed for either.
func (p *Provider) Quotas(ctx context.Context, region string) (provider.Quotas, error) {
	acct, _, err := p.c.Account.Get(ctx)
	if err != nil {
		return provider.Quotas{}, p.wrap("quotas", region, err)
	}
	droplets, err := p.liveDroplets(ctx)
	if err != nil {
		return provider.Quotas{}, p.wrap("quotas", region, err)
	}
	_, resp, err := p.c.ReservedIPs.List(ctx, &godo.ListOptions{PerPage: 1})
	if err != nil {
		return provider.Quotas{}, p.wrap("quotas", region, err)
	}
	reserved := 0
	if resp != nil && resp.Meta != nil {
		reserved = resp.Meta.Total
	}
	return provider.Quotas{
		Instances: provider.Quota{Limit: acct.DropletLimit, Usage: droplets},
		Addresses: provider.Quota{Limit: acct.ReservedIPLimit, Usage: reserved},
	}, nil
}

// liveDroplets counts the account's Droplets that are not being
// destroyed.
func (p *Provider) liveDroplets(ctx context.Context) (int, error) {
	all, err := listAll(ctx, func(opt *godo.ListOptions) ([]godo.Droplet, *godo.Response, error) {
		return p.c.Droplets.List(ctx, opt)
	})
	n := 0
	for _, d := range all {
		if d.Status != "archive" {
			n++
		}
	}
	return n, err
}

var _ provider.QuotaReader = (*Provider)(nil)
