package computefake

import (
	"fmt"
	"path"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// IPv6: a network interface of stack type IPV4_IPV6 with an
// ipv6AccessConfigs entry of type DIRECT_IPV6 gets an external IPv6
// address, the first of a /96 of its subnet's range
// (https://cloud.google.com/compute/docs/ip-addresses/configure-ipv6-address),
// which only a dual-stack subnet with external IPv6 access
// (stackType IPV4_IPV6, ipv6AccessType EXTERNAL) has, and only a
// custom-mode network has such a subnet. The fake keeps no subnets of its
// own: a test declares the dual-stack ones (SetDualStack), and an insert
// that asks for IPv6 elsewhere is refused in its HTTP answer with 400
// invalid. Compute's wording of that refusal is not documented; the
// fake's names the field and the subnet.

// SetDualStack declares subnetwork of region a dual-stack subnet with
// external IPv6, where instances may ask for an external IPv6 address.
func (s *Server) SetDualStack(region, subnetwork string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dualStack[region+"/"+subnetwork] = true
}

// stackFault is the refusal of an instance whose interfaces ask for IPv6
// where they cannot have it, or nil. Called with s.mu held.
func (s *Server) stackFault(inst *computepb.Instance, zone string) *Fault {
	for i, ni := range inst.GetNetworkInterfaces() {
		field := fmt.Sprintf("resource.networkInterfaces[%d]", i)
		v6 := ni.GetIpv6AccessConfigs()
		switch stack := ni.GetStackType(); {
		case stack != "" && stack != "IPV4_ONLY" && stack != "IPV4_IPV6":
			f := invalid("Invalid value for field '%s.stackType': '%s'.", field, stack)
			return &f
		case stack != "IPV4_IPV6" && len(v6) > 0:
			f := invalid("Invalid value for field '%s.ipv6AccessConfigs': an IPv6 access config needs stackType IPV4_IPV6.", field)
			return &f
		case stack == "IPV4_IPV6" && !s.dualStack[regionOf(zone)+"/"+path.Base(ni.GetSubnetwork())]:
			f := invalid("Invalid value for field '%s.stackType': 'IPV4_IPV6'. Subnetwork '%s' of region '%s' is not dual-stack with external IPv6.",
				field, path.Base(ni.GetSubnetwork()), regionOf(zone))
			return &f
		}
		for j, ac := range v6 {
			if ac.GetType() != "DIRECT_IPV6" {
				f := invalid("Invalid value for field '%s.ipv6AccessConfigs[%d].type': '%s'.", field, j, ac.GetType())
				return &f
			}
		}
	}
	return nil
}

// assignIPv6 gives a starting instance's IPv6 access configs their
// address, from the documentation range (2001:db8::/32) as its IPv4 ones
// are from theirs, and says the interface's access type, as Compute
// does. Called with s.mu held.
func (s *Server) assignIPv6(inst *computepb.Instance) {
	for _, ni := range inst.GetNetworkInterfaces() {
		for _, ac := range ni.GetIpv6AccessConfigs() {
			if ac.GetExternalIpv6() == "" {
				ac.ExternalIpv6 = proto.String(fmt.Sprintf("2001:db8:4000:%x::", s.nextIP))
				ac.ExternalIpv6PrefixLength = proto.Int32(96)
				ni.Ipv6AccessType = proto.String("EXTERNAL")
			}
		}
	}
}
