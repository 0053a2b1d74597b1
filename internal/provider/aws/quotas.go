package aws

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/egress-proxies/egress/internal/provider"
)

// Quotas reads the account's Elastic IP quota in region from
// DescribeAccountAttributes's vpc-max-elastic-ips, "the maximum number of
// Elastic IP addresses that you can allocate"
// (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeAccountAttributes.html),
// and counts the region's Elastic IPs (DescribeAddresses), which EC2
// reports nowhere else; Addresses is what a Static proxy consumes.
//
// Instances and CPUs stay unreported (Limit 0): EC2's instance limits are
// vCPUs per instance family, held by Service Quotas (quota L-1216C47A),
// an API of its own that the EC2 SDK does not reach, and
// DescribeAccountAttributes's max-instances "is no longer supported. The
// returned value does not reflect your actual vCPU limit". Placement
// reads those from the account's document.
func (p *Provider) Quotas(ctx context.Context, region string) (provider.Quotas, error) {
	attrs, err := p.c.DescribeAccountAttributes(ctx, &ec2.DescribeAccountAttributesInput{
		AttributeNames: []types.AccountAttributeName{"vpc-max-elastic-ips"},
	}, inRegion(region))
	if err != nil {
		return provider.Quotas{}, p.wrap("quotas", region, err)
	}
	limit := -1
	for _, a := range attrs.AccountAttributes {
		if a.AttributeName != nil && *a.AttributeName == "vpc-max-elastic-ips" && len(a.AttributeValues) == 1 && a.AttributeValues[0].AttributeValue != nil {
			limit, err = strconv.Atoi(*a.AttributeValues[0].AttributeValue)
			if err != nil {
				return provider.Quotas{}, provider.NewError(provider.KindTransient, "quotas", region, fmt.Errorf("vpc-max-elastic-ips is %q, not a number: %w", *a.AttributeValues[0].AttributeValue, err))
			}
		}
	}
	if limit < 0 {
		// EC2 always answers it; a fake that enforces no Elastic IP
		// quota does not: the quota is unreported.
		return provider.Quotas{}, nil
	}
	addrs, err := p.c.DescribeAddresses(ctx, &ec2.DescribeAddressesInput{}, inRegion(region))
	if err != nil {
		return provider.Quotas{}, p.wrap("quotas", region, err)
	}
	return provider.Quotas{Addresses: provider.Quota{Limit: limit, Usage: len(addrs.Addresses)}}, nil
}

var _ provider.QuotaReader = (*Provider)(nil)
