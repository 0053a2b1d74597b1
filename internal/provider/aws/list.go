package aws

import (
	"context"

	sdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/egress-proxies/egress/internal/provider"
)

// managed is the filter of what this product made, whatever its
// deployment: EC2's filters can say "this value" or "this key" but not
// "this value or no such key", so the deployment is chosen here, as gcp
// and hetzner do.
var managed = types.Filter{Name: sdk.String("tag:" + provider.LabelManaged), Values: []string{provider.LabelManagedYes}}

// live are the instance states ListByTag lists: a terminated instance
// stays in EC2's answers for a while, and is gone for the contract.
var live = types.Filter{Name: sdk.String("instance-state-name"), Values: []string{"pending", "running", "stopping", "stopped"}}

// ListByTag returns every managed instance of the allowed regions that
// is not gone, and every managed Elastic IP no instance holds, as an
// instance of its own kind in state Terminated, so the garbage collector
// releases an Elastic IP whose proxy is gone under its usual rules and
// grace. Of those it keeps this deployment's and the ones without a
// deployment tag, never another deployment's. A page or a region that
// cannot be read fails the list: a resource missing from it must not
// look deleted.
func (p *Provider) ListByTag(ctx context.Context) ([]provider.Instance, error) {
	if err := ctx.Err(); err != nil {
		return nil, provider.NewError(provider.KindTransient, "list", "", err)
	}
	var out []provider.Instance
	for _, region := range p.cfg.Regions {
		pages := ec2.NewDescribeInstancesPaginator(p.c, &ec2.DescribeInstancesInput{
			Filters: []types.Filter{managed, live}, MaxResults: sdk.Int32(p.cfg.PageSize),
		})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx, inRegion(region))
			if err != nil {
				return nil, p.wrap("list", "instances of "+region, err)
			}
			for _, r := range page.Reservations {
				for _, in := range r.Instances {
					if p.listed(in.Tags) && !gone(in.State) {
						out = append(out, convert(region, in))
					}
				}
			}
		}
		addrs, err := p.c.DescribeAddresses(ctx, &ec2.DescribeAddressesInput{Filters: []types.Filter{managed}}, inRegion(region))
		if err != nil {
			return nil, p.wrap("list", "elastic IPs of "+region, err)
		}
		for _, a := range addrs.Addresses {
			if in := convertAddress(region, a); p.listed(a.Tags) && in.State == provider.StateTerminated {
				out = append(out, in)
			}
		}
	}
	return out, nil
}

// listed reports whether a resource with these tags is ListByTag's:
// managed, and of this deployment or of none.
func (p *Provider) listed(tags []types.Tag) bool {
	d, tagged := lookupTag(tags, provider.LabelDeployment)
	return tagValue(tags, provider.LabelManaged) == provider.LabelManagedYes && (!tagged || d == p.cfg.Deployment)
}
