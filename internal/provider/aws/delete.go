package aws

import (
	"context"

	sdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/egress-proxies/egress/internal/provider"
)

// Delete terminates the instance, or releases the Elastic IP an Elastic
// IP's ID names. TerminateInstances is idempotent (a terminated
// instance answers terminated again), and what EC2 no longer knows is
// success; an Elastic IP an instance still holds is refused as
// transient, since the instance goes first.
func (p *Provider) Delete(ctx context.Context, providerID string) error {
	id, err := parseID(providerID)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return provider.NewError(provider.KindTransient, "delete", providerID, err)
	}
	if id.eip {
		_, err = p.c.ReleaseAddress(ctx, &ec2.ReleaseAddressInput{AllocationId: sdk.String(id.id)}, inRegion(id.region))
	} else {
		_, err = p.c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id.id}}, inRegion(id.region))
	}
	if classify(err) == provider.KindNotFound {
		return nil
	}
	return p.wrap("delete", providerID, err)
}
