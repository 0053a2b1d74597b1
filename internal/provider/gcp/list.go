package gcp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"

	"github.com/egress-proxies/egress/internal/provider"
)

// ListByTag returns every managed instance of the project in one aggregated
// list over all zones, and every managed static address that no VM uses, as
// an instance of its own kind in state Terminated, so the garbage collector
// releases an address whose proxy is gone under its usual rules and grace.
// Both lists are filtered on the managed label and checked again here. A
// zone or region that could not be read fails the list: a resource missing
// from it must not look deleted.
//
// Of the managed ones it keeps this deployment's and those without a
// deployment label (made before the label, by this deployment or by the
// original operator), never another deployment's. That choice is made
// here rather than in Compute's filter, which can say "this value" but not
// "this value or no label at all" (a filter on labels.KEY=VALUE leaves out
// the resources without the key).
func (p *Provider) ListByTag(ctx context.Context) ([]provider.Instance, error) {
	filter := proto.String("labels." + provider.LabelManaged + "=" + provider.LabelManagedYes)
	var out []provider.Instance
	var unreachable []string

	it := p.c.Instances.AggregatedList(ctx, &computepb.AggregatedListInstancesRequest{Project: p.cfg.Project, Filter: filter})
	for {
		pair, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return nil, p.wrap("list", p.cfg.Project, err)
		}
		if w := pair.Value.GetWarning(); w.GetCode() == "UNREACHABLE" {
			unreachable = append(unreachable, pair.Key)
		}
		zone := strings.TrimPrefix(pair.Key, "zones/")
		for _, inst := range pair.Value.GetInstances() {
			if p.listed(inst.GetLabels()) {
				out = append(out, convert(instanceID(p.cfg.Project, zone, inst.GetName()), zone, inst))
			}
		}
	}
	if resp, ok := it.Response.(*computepb.InstanceAggregatedList); ok {
		unreachable = append(unreachable, resp.GetUnreachables()...)
	}

	ait := p.c.Addresses.AggregatedList(ctx, &computepb.AggregatedListAddressesRequest{Project: p.cfg.Project, Filter: filter})
	for {
		pair, err := ait.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return nil, p.wrap("list", p.cfg.Project, err)
		}
		if w := pair.Value.GetWarning(); w.GetCode() == "UNREACHABLE" {
			unreachable = append(unreachable, pair.Key)
		}
		region := strings.TrimPrefix(pair.Key, "regions/")
		for _, a := range pair.Value.GetAddresses() {
			if p.listed(a.GetLabels()) && len(a.GetUsers()) == 0 {
				out = append(out, convertAddress(addressID(p.cfg.Project, region, a.GetName()), a))
			}
		}
	}
	if resp, ok := ait.Response.(*computepb.AddressAggregatedList); ok {
		unreachable = append(unreachable, resp.GetUnreachables()...)
	}

	// The iterators can end early on a cancelled context without saying
	// so; a listing cut short must not pass for a complete one.
	if err := ctx.Err(); err != nil {
		return nil, provider.NewError(provider.KindTransient, "list", p.cfg.Project, err)
	}
	if len(unreachable) > 0 {
		slices.Sort(unreachable)
		return nil, provider.NewError(provider.KindTransient, "list", p.cfg.Project,
			fmt.Errorf("unreachable: %s; the listing would be incomplete", strings.Join(slices.Compact(unreachable), ", ")))
	}
	return out, nil
}

// listed reports whether a resource with these labels is ListByTag's:
// managed, and of this deployment or of none.
func (p *Provider) listed(labels map[string]string) bool {
	d, labelled := labels[provider.LabelDeployment]
	return labels[provider.LabelManaged] == provider.LabelManagedYes && (!labelled || d == p.cfg.Deployment)
}
