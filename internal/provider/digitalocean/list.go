package digitalocean

import (
	"context"

	"github.com/digitalocean/godo"

	"github.com/egress-proxies/egress/internal/provider"
)

// ListByTag returns every Droplet tagged proxy-operator-managed:true, and
// every reserved IP with a record that no Droplet holds, as an instance
// of its own kind in state Terminated, so the garbage collector releases
// a reserved IP whose proxy is gone under its usual rules and grace. Of
// those it keeps this deployment's and the ones without a deployment
// tag, never another deployment's. A page that cannot be read fails the
// list: a resource missing from it must not look deleted.
func (p *Provider) ListByTag(ctx context.Context) ([]provider.Instance, error) {
	droplets, err := listAll(ctx, func(opt *godo.ListOptions) ([]godo.Droplet, *godo.Response, error) {
		return p.c.Droplets.ListByTag(ctx, ManagedTag, opt)
	})
	if err != nil {
		return nil, p.wrap("list", "droplets", err)
	}
	recs, err := p.records(ctx)
	if err != nil {
		return nil, err
	}
	ips, err := p.reservedIPs(ctx)
	if err != nil {
		return nil, err
	}
	held := map[int]string{}
	for _, ip := range ips {
		if ip.Droplet != nil {
			held[ip.Droplet.ID] = ip.IP
		}
	}
	var out []provider.Instance
	for _, d := range droplets {
		labels := Labels(d.Tags)
		if !p.listed(labels) || d.Status == statusArchive {
			continue
		}
		in := convert(&d)
		if addr, ok := held[d.ID]; ok && labels[tagStaticIP] == "true" {
			in.IP, in.AddressID = addr, reservedIPID(addr)
		}
		out = append(out, in)
	}
	for _, ip := range ips {
		rec, ok := recs.of(ip.IP)
		if ok && ip.Droplet == nil && (rec.Deployment == "" || rec.Deployment == p.cfg.Deployment) {
			out = append(out, convertReservedIP(&ip, &rec))
		}
	}
	return out, nil
}

// listed reports whether a Droplet with these labels is ListByTag's:
// managed, and of this deployment or of none.
func (p *Provider) listed(labels map[string]string) bool {
	d, labelled := labels[provider.LabelDeployment]
	return labels[provider.LabelManaged] == provider.LabelManagedYes && (!labelled || d == p.cfg.Deployment)
}

// listAll reads every page of a list, DigitalOcean's largest at a time.
func listAll[T any](ctx context.Context, page func(*godo.ListOptions) ([]T, *godo.Response, error)) ([]T, error) {
	var all []T
	opt := &godo.ListOptions{Page: 1, PerPage: perPage}
	for {
		items, resp, err := page(opt)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if resp == nil || resp.Links == nil || resp.Links.IsLastPage() || len(items) == 0 {
			return all, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		opt.Page = nextPage(resp, opt.Page)
	}
}
