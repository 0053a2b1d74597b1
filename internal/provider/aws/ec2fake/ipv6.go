package ec2fake

import (
	"fmt"
	"slices"
)

// IPv6 prefixes: AssignIpv6Addresses with Ipv6PrefixCount delegates that
// many /80 prefixes of the interface's subnet's IPv6 range to an
// interface (Prefix delegation for Amazon EC2 network interfaces, in
// EC2's user guide: "The IPv6 prefix that you can specify is /80"), which
// DescribeInstances then lists in the interface's ipv6PrefixSet. Only a
// subnet with an IPv6 CIDR block has prefixes to give; the fake's
// default subnets have none until SetIPv6Subnet, as a default VPC has
// none until its owner adds one. EC2's code for that refusal is not in
// its documentation; the fake answers InvalidParameterValue naming the
// subnet's zone.

// SetIPv6Subnet gives the default subnet of zone an IPv6 range, from
// which interfaces there may be delegated prefixes.
func (s *Server) SetIPv6Subnet(zone string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ipv6Subnets[zone] = true
}

type assignIPv6Response struct {
	Meta
	Prefixes    []string `xml:"assignedIpv6PrefixSet>item"`
	InterfaceID string   `xml:"networkInterfaceId"`
}

// assignIPv6Addresses delegates Ipv6PrefixCount prefixes (documentation
// range, one /80 each) to the interface NetworkInterfaceId, in addition
// to those it has. The fake serves prefixes only, not addresses.
func (s *Server) assignIPv6Addresses(r *request) (any, error) {
	id := r.str("NetworkInterfaceId")
	n, err := r.integer("Ipv6PrefixCount", 0)
	if err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, errorf("InvalidParameterValue", "the fake delegates prefixes only: Ipv6PrefixCount must be at least 1, not %d", n)
	}
	i := slices.IndexFunc(s.order, func(iid string) bool {
		in := s.instances[iid]
		return in.Region == r.region && in.Interface == id && in.State != "terminated"
	})
	if id == "" || i < 0 {
		return nil, errorf("InvalidNetworkInterfaceID.NotFound", "The networkInterface ID '%s' does not exist", id)
	}
	in := s.instances[s.order[i]]
	if !s.ipv6Subnets[in.Zone] {
		return nil, errorf("InvalidParameterValue", "Network interface %s is in a subnet of %s without an IPv6 CIDR block: it cannot be delegated an IPv6 prefix", id, in.Zone)
	}
	var added []string
	for range n {
		s.nextPrefix++
		pfx := fmt.Sprintf("2001:db8:ec2:%x:%x::/80", s.nextPrefix>>16, s.nextPrefix&0xffff)
		in.IPv6Prefixes = append(in.IPv6Prefixes, pfx)
		added = append(added, pfx)
	}
	return &assignIPv6Response{Prefixes: added, InterfaceID: id}, nil
}
