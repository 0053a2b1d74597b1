package hetzner

import (
	"context"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"github.com/egress-proxies/egress/internal/provider"
)

// managedSelector selects what this product made, whatever its
// deployment: Hetzner's label selectors can say "this value" or "no such
// label" but not either, so the deployment is chosen here, as gcp does.
const managedSelector = provider.LabelManaged + "=" + provider.LabelManagedYes

// ListByTag returns every managed server of the project, and every
// managed Primary IP no server uses, as an instance of its own kind in
// state Terminated, so the garbage collector releases a Primary IP whose
// proxy is gone under its usual rules and grace. Of those it keeps this
// deployment's and the ones without a deployment label, never another
// deployment's. A page that cannot be read fails the list: a resource
// missing from it must not look deleted.
func (p *Provider) ListByTag(ctx context.Context) ([]provider.Instance, error) {
	servers, err := p.c.Server.AllWithOpts(ctx, hcloud.ServerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: managedSelector, PerPage: 50}})
	if err != nil {
		return nil, p.wrap("list", "servers", err)
	}
	ips, err := p.c.PrimaryIP.AllWithOpts(ctx, hcloud.PrimaryIPListOpts{ListOpts: hcloud.ListOpts{LabelSelector: managedSelector, PerPage: 50}})
	if err != nil {
		return nil, p.wrap("list", "primary IPs", err)
	}
	var out []provider.Instance
	for _, sv := range servers {
		if p.listed(sv.Labels) {
			out = append(out, convert(sv))
		}
	}
	for _, ip := range ips {
		if p.listed(ip.Labels) && ip.AssigneeID == 0 {
			out = append(out, convertPrimaryIP(ip))
		}
	}
	return out, nil
}

// listed reports whether a resource with these labels is ListByTag's:
// managed, and of this deployment or of none.
func (p *Provider) listed(labels map[string]string) bool {
	d, labelled := labels[provider.LabelDeployment]
	return labels[provider.LabelManaged] == provider.LabelManagedYes && (!labelled || d == p.cfg.Deployment)
}
