package aws

import (
	"context"
	"fmt"
	"strings"

	sdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/egress-proxies/egress/internal/provider"
)

// IPv6 egress from a prefix (CreateRequest.IPv6Prefix): EC2 delegates
// an IPv6 prefix, a /80 of the subnet's IPv6 range, to a network
// interface (Prefix delegation for Amazon EC2 network interfaces, in
// EC2's user guide: "The IPv6 prefix that you can specify is /80"), and
// only in a subnet with an IPv6 CIDR block. The prefix is not around the
// instance's own IPv6 address: the VM reads it from the instance
// metadata (network/interfaces/macs/MAC/ipv6-prefix), and Get reads it
// from the interface's ipv6PrefixSet.

// PrefixBits is the length of the IPv6 prefix EC2 delegates.
const PrefixBits = 80

// dualStackInterface is the primary interface of an instance that asks
// for an IPv6 prefix: in the zone's default subnet (where an instance
// without an interface of its own is launched), which must have an IPv6
// CIDR block; with one IPv6 address (the VM's default route and its
// address for single) and one delegated prefix; in the deployment's
// security group, by id, since an interface takes no group by name; and
// with a public IPv4 address, which the default subnet gives an instance
// launched without an interface. Both lookups are made at each such
// create, not kept: an operator who gives the subnet an IPv6 range sees
// the next create take it.
func (p *Provider) dualStackInterface(ctx context.Context, region, zone string, req provider.CreateRequest) (*types.InstanceNetworkInterfaceSpecification, error) {
	subnets, err := p.c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []types.Filter{
		{Name: sdk.String("availability-zone"), Values: []string{zone}},
		{Name: sdk.String("default-for-az"), Values: []string{"true"}},
	}}, inRegion(region))
	if err != nil {
		return nil, p.wrap("create", req.Name, err)
	}
	if len(subnets.Subnets) == 0 {
		return nil, provider.NewError(provider.KindPermanent, "create", req.Name,
			fmt.Errorf("spec.ipv6Egress needs an IPv6 prefix, which EC2 delegates in a subnet with an IPv6 CIDR block: %s has no default subnet to launch into", zone))
	}
	sn := subnets.Subnets[0]
	id := sdk.ToString(sn.SubnetId)
	if !hasIPv6(sn) {
		return nil, provider.NewError(provider.KindPermanent, "create", req.Name,
			fmt.Errorf("spec.ipv6Egress needs an IPv6 prefix, and EC2 delegates one (a /80) only in a subnet with an IPv6 CIDR block: subnet %s, the default subnet of %s, has none (give it one, making it dual-stack, or choose ipv6Egress single or off)", id, zone))
	}
	groups, err := p.c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{
		{Name: sdk.String("group-name"), Values: []string{p.cfg.SecurityGroup}},
		{Name: sdk.String("vpc-id"), Values: []string{sdk.ToString(sn.VpcId)}},
	}}, inRegion(region))
	if err != nil {
		return nil, p.wrap("create", req.Name, err)
	}
	if len(groups.SecurityGroups) == 0 || groups.SecurityGroups[0].GroupId == nil {
		return nil, provider.NewError(provider.KindPermanent, "create", req.Name,
			fmt.Errorf("security group %s is not in VPC %s of subnet %s (%s): the deployment's Terraform makes it in each allowed region's default VPC", p.cfg.SecurityGroup, sdk.ToString(sn.VpcId), id, zone))
	}
	return &types.InstanceNetworkInterfaceSpecification{
		DeviceIndex: sdk.Int32(0), SubnetId: sn.SubnetId, Groups: []string{*groups.SecurityGroups[0].GroupId},
		AssociatePublicIpAddress: sdk.Bool(true), DeleteOnTermination: sdk.Bool(true),
		Ipv6AddressCount: sdk.Int32(1), Ipv6PrefixCount: sdk.Int32(1),
	}, nil
}

// hasIPv6 says the subnet has an IPv6 CIDR block in use.
func hasIPv6(sn types.Subnet) bool {
	for _, a := range sn.Ipv6CidrBlockAssociationSet {
		if a.Ipv6CidrBlockState != nil && a.Ipv6CidrBlockState.State == types.SubnetCidrBlockStateCodeAssociated && strings.Contains(sdk.ToString(a.Ipv6CidrBlock), ":") {
			return true
		}
	}
	return false
}
