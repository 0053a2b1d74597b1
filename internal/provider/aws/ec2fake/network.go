package ec2fake

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
)

// The network an instance is launched into: each region's default VPC,
// with one default subnet in each of its zones (as an account's default
// VPC has), DescribeSubnets; and security groups by name in it,
// DescribeSecurityGroups.
//
// IPv6: a default subnet has no IPv6 CIDR block until SetIPv6Subnet
// gives it a /64, as a default VPC has none until its owner adds one. A
// launch whose primary interface asks for IPv6 addresses
// (Ipv6AddressCount) or delegated prefixes (Ipv6PrefixCount) gets them
// from that /64: the addresses from its first /80, each prefix a /80 of
// its own after it (Prefix delegation for Amazon EC2 network interfaces,
// in EC2's user guide: "The IPv6 prefix that you can specify is /80"),
// which DescribeInstances lists in the interface's ipv6AddressesSet and
// ipv6PrefixSet. So the prefix is never around the instance's address,
// as on EC2, where the VM reads it from the instance metadata. In a
// subnet without an IPv6 block the launch is refused: EC2's code for
// that is not in its documentation; the fake answers
// InvalidParameterValue naming the subnet.
//
// Security groups: the deployment's Terraform makes its group in every
// region it allows, so the fake plays every group a request names by
// name as made, in the region's default VPC, with an id derived from the
// region and the name. An interface takes groups by id only: a launch
// that names an id DescribeSecurityGroups never answered is refused with
// InvalidGroup.NotFound.

// subnetBits is the length of a subnet's IPv6 CIDR block, and
// prefixBits that of a delegated prefix.
const (
	subnetBits = 64
	prefixBits = 80
)

// subnet is a zone's default subnet.
type subnet struct {
	ID, VPC, Zone, CIDR string
	// IPv6 is its IPv6 CIDR block, "" without one.
	IPv6 string
}

// derivedID is an EC2 id of prefix, stable for its parts.
func derivedID(prefix string, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p + "\x00"))
	}
	return prefix + hex.EncodeToString(h.Sum(nil))[:17]
}

// defaultSubnet is zone's default subnet in region.
func (s *Server) defaultSubnet(region, zone string) subnet {
	i := slices.Index(s.regions[region], zone)
	return subnet{ID: derivedID("subnet-", region, zone), VPC: derivedID("vpc-", region), Zone: zone,
		CIDR: fmt.Sprintf("172.31.%d.0/20", 16*max(i, 0)), IPv6: s.ipv6Subnets[zone]}
}

// subnetByID is the region's default subnet of that id.
func (s *Server) subnetByID(region, id string) (subnet, bool) {
	for _, zone := range s.regions[region] {
		if sn := s.defaultSubnet(region, zone); sn.ID == id {
			return sn, true
		}
	}
	return subnet{}, false
}

// SetIPv6Subnet gives the default subnet of zone an IPv6 CIDR block, a
// /64 of the documentation range, and returns it; again, it returns the
// one it gave.
func (s *Server) SetIPv6Subnet(zone string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.ipv6Subnets[zone]; ok {
		return c
	}
	c := fmt.Sprintf("2001:db8:ec2:%x::/%d", len(s.ipv6Subnets)+1, subnetBits)
	s.ipv6Subnets[zone] = c
	return c
}

// assignIPv6 gives an interface in sn n addresses of the subnet's first
// /80 and p prefixes, the /80s after it.
func (s *Server) assignIPv6(sn subnet, n, p int) (addrs, prefixes []string) {
	base := sn.IPv6[:len(sn.IPv6)-len("::/64")] // 2001:db8:ec2:N
	for range n {
		s.ipv6Given[sn.ID]++
		addrs = append(addrs, fmt.Sprintf("%s::%x", base, 0x100+s.ipv6Given[sn.ID]))
	}
	for range p {
		s.prefixesGiven[sn.ID]++
		prefixes = append(prefixes, fmt.Sprintf("%s:%x::/%d", base, s.prefixesGiven[sn.ID], prefixBits))
	}
	return addrs, prefixes
}

// describeSubnets answers the region's default subnets, by id or by
// filters (availability-zone, default-for-az, subnet-id, vpc-id).
func (s *Server) describeSubnets(r *request) (any, error) {
	ids := r.list("SubnetId")
	filters, err := r.filters("availability-zone", "default-for-az", "subnet-id", "vpc-id")
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if _, ok := s.subnetByID(r.region, id); !ok {
			return nil, errorf("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", id)
		}
	}
	out := &subnetsResponse{}
	for _, zone := range s.regions[r.region] {
		sn := s.defaultSubnet(r.region, zone)
		fields := map[string]string{"availability-zone": zone, "default-for-az": "true", "subnet-id": sn.ID, "vpc-id": sn.VPC}
		if (len(ids) > 0 && !slices.Contains(ids, sn.ID)) || !filters.match(fields, nil) {
			continue
		}
		x := subnetXML{ID: sn.ID, VPC: sn.VPC, Zone: zone, CIDR: sn.CIDR, State: "available", Default: true, MapPublicIP: true, OwnerID: OwnerID}
		if sn.IPv6 != "" {
			x.IPv6 = []subnetIPv6XML{{AssociationID: derivedID("subnet-cidr-assoc-", sn.ID), CIDR: sn.IPv6, State: cidrStateXML{State: "associated"}}}
		}
		out.Subnets = append(out.Subnets, x)
	}
	return out, nil
}

// describeSecurityGroups answers the groups named (GroupName.N, or the
// filter group-name, without wildcards), each in the region's default
// VPC; by id (GroupId.N), those answered before. A filter vpc-id of
// another VPC answers none.
func (s *Server) describeSecurityGroups(r *request) (any, error) {
	names, ids := r.list("GroupName"), r.list("GroupId")
	filters, err := r.filters("group-name", "group-id", "vpc-id")
	if err != nil {
		return nil, err
	}
	for _, f := range filters {
		if f.name == "group-name" {
			names = append(names, f.values...)
		}
	}
	for _, id := range ids {
		name, ok := s.groups[r.region+"/"+id]
		if !ok {
			return nil, errorf("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
		}
		names = append(names, name)
	}
	vpc := derivedID("vpc-", r.region)
	out := &securityGroupsResponse{}
	for _, name := range slices.Compact(slices.Sorted(slices.Values(names))) {
		id := derivedID("sg-", r.region, name)
		if !filters.match(map[string]string{"group-name": name, "group-id": id, "vpc-id": vpc}, nil) {
			continue
		}
		s.groups[r.region+"/"+id] = name
		out.Groups = append(out.Groups, securityGroupXML{ID: id, Name: name, VPC: vpc, OwnerID: OwnerID, Description: "security group " + name})
	}
	return out, nil
}

// launchInterface is what RunInstances's NetworkInterface.1 asks.
type launchInterface struct {
	subnet          subnet
	groups          []string // names
	noPublicIP      bool
	addrs, prefixes int
}

// networkInterface reads the launch's primary interface, if the
// request names one: one interface, device 0, in a default subnet of
// the region, with groups by id, and IPv6 only in a subnet with an IPv6
// block. EC2 takes no instance-level groups beside an interface.
func (s *Server) networkInterface(r *request, instanceGroups []string) (*launchInterface, error) {
	n := r.count("NetworkInterface", "DeviceIndex")
	if n == 0 {
		return nil, nil
	}
	if len(instanceGroups) > 0 {
		return nil, errorf("InvalidParameterCombination", "Network interfaces and an instance-level security groups may not be specified on the same request")
	}
	if n > 1 {
		return nil, errorf("InvalidParameterValue", "the fake launches with one network interface, not %d", n)
	}
	ni := r.sub("NetworkInterface", 1)
	dev, err := ni.integer("DeviceIndex", -1)
	if err != nil {
		return nil, err
	}
	if dev != 0 {
		return nil, errorf("InvalidParameterValue", "the fake launches with the primary interface only: DeviceIndex must be 0, not %d", dev)
	}
	id := ni.str("SubnetId")
	sn, ok := s.subnetByID(r.region, id)
	if !ok {
		return nil, errorf("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", id)
	}
	out := &launchInterface{subnet: sn, noPublicIP: ni.str("AssociatePublicIpAddress") == "false"}
	_ = ni.boolean("DeleteOnTermination") // the fake deletes nothing of an instance
	for _, g := range ni.list("SecurityGroupId") {
		name, ok := s.groups[r.region+"/"+g]
		if !ok {
			return nil, errorf("InvalidGroup.NotFound", "The security group '%s' does not exist in VPC '%s'", g, sn.VPC)
		}
		out.groups = append(out.groups, name)
	}
	if out.addrs, err = ni.integer("Ipv6AddressCount", 0); err != nil {
		return nil, err
	}
	if out.prefixes, err = ni.integer("Ipv6PrefixCount", 0); err != nil {
		return nil, err
	}
	switch {
	case out.addrs < 0 || out.prefixes < 0:
		return nil, errorf("InvalidParameterValue", "Ipv6AddressCount and Ipv6PrefixCount must not be negative")
	case (out.addrs > 0 || out.prefixes > 0) && sn.IPv6 == "":
		return nil, errorf("InvalidParameterValue", "Subnet %s has no IPv6 CIDR block: an interface in it can be given no IPv6 address or prefix", sn.ID)
	}
	return out, nil
}

// The XML of the answers, by the service model's locationNames.

type subnetsResponse struct {
	Meta
	Subnets []subnetXML `xml:"subnetSet>item"`
}

type subnetXML struct {
	ID          string          `xml:"subnetId"`
	VPC         string          `xml:"vpcId"`
	Zone        string          `xml:"availabilityZone"`
	CIDR        string          `xml:"cidrBlock"`
	State       string          `xml:"state"`
	Default     bool            `xml:"defaultForAz"`
	MapPublicIP bool            `xml:"mapPublicIpOnLaunch"`
	OwnerID     string          `xml:"ownerId"`
	IPv6        []subnetIPv6XML `xml:"ipv6CidrBlockAssociationSet>item"`
}

type subnetIPv6XML struct {
	AssociationID string       `xml:"associationId"`
	CIDR          string       `xml:"ipv6CidrBlock"`
	State         cidrStateXML `xml:"ipv6CidrBlockState"`
}

type cidrStateXML struct {
	State string `xml:"state"`
}

type securityGroupsResponse struct {
	Meta
	Groups []securityGroupXML `xml:"securityGroupInfo>item"`
}

type securityGroupXML struct {
	ID          string `xml:"groupId"`
	Name        string `xml:"groupName"`
	VPC         string `xml:"vpcId"`
	OwnerID     string `xml:"ownerId"`
	Description string `xml:"groupDescription"`
}
