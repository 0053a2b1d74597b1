package digitalocean

import (
	"context"
	"log/slog"

	"github.com/digitalocean/godo"

	"github.com/egress-proxies/egress/internal/provider"
)

// ListByTag returns every Droplet tagged proxy-operator-managed:true;
// every reserved IP with a record that no Droplet holds, as an instance
// of its own kind in state Terminated, so the garbage collector releases
// a reserved IP whose proxy is gone under its usual rules and grace; and
// every residue (residue.go), a tag a crash left, in state Terminated
// too, so it deletes those under the same rules. Of those it keeps this
// deployment's and the ones without a deployment, never another
// deployment's. A page that cannot be read fails the list: a resource
// missing from it must not look deleted.
//
// A reserved IP that no Droplet holds and no record names is not listed:
// nothing says whose it is (the user's, or this deployment's after what
// the package doc's "What a crash can leave" calls the one window left
// open), so it is reported, one line each and their count, for a person
// to release.
func (p *Provider) ListByTag(ctx context.Context) ([]provider.Instance, error) {
	droplets, err := listAll(ctx, func(opt *godo.ListOptions) ([]godo.Droplet, *godo.Response, error) {
		return p.c.Droplets.ListByTag(ctx, ManagedTag, opt)
	})
	if err != nil {
		return nil, p.wrap("list", "droplets", err)
	}
	tags, err := p.tags(ctx)
	if err != nil {
		return nil, err
	}
	recs := recordsOf(tags)
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
	live := map[string]bool{}
	for _, d := range droplets {
		labels := Labels(d.Tags)
		if !p.listed(labels) {
			continue
		}
		in := convert(&d)
		live[in.UID] = true
		if d.Status == statusArchive {
			continue
		}
		if addr, ok := held[d.ID]; ok && labels[tagStaticIP] == "true" {
			in.IP, in.AddressID = addr, reservedIPID(addr)
		}
		out = append(out, in)
	}
	var unnamed []string
	for _, ip := range ips {
		rec, ok := recs.of(ip.IP)
		switch {
		case ip.Droplet != nil:
		case !ok:
			unnamed = append(unnamed, ip.IP)
		case rec.Deployment == "" || rec.Deployment == p.cfg.Deployment:
			out = append(out, convertReservedIP(&ip, &rec))
		}
	}
	for _, addr := range unnamed {
		p.cfg.Log.Warn("digitalocean reserved IP unassigned and without a record: kept, never collected",
			slog.String("address", addr),
			slog.String("rule", "a reserved IP is collected only by its record (a tag egress-reserved-ip:ADDRESS:…); this one has none, so it may be the account owner's, or this deployment's after its Droplet was destroyed by something other than this provider before its record was written"),
			slog.String("todo", "release it (DELETE /v2/reserved_ips/ADDRESS, or the control panel's Networking page) if it is no one's"))
	}
	if len(unnamed) > 0 {
		p.cfg.Log.Warn("digitalocean reserved IPs unassigned and without a record", slog.Int("count", len(unnamed)))
	}
	return append(out, p.residues(tags, ips, live)...), nil
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
