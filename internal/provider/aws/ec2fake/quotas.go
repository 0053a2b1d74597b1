package ec2fake

import (
	"slices"
	"strconv"
)

// Quotas are an account's EC2 quotas in each region that a proxy
// consumes. A zero limit is not enforced.
type Quotas struct {
	// Instances is the old count of running instances, which EC2 answers
	// InstanceLimitExceeded past ("You have requested more instances (%d)
	// than your current instance limit of %d allows"); accounts moved to
	// vCPU limits, below, but the code remains for some types and
	// accounts.
	Instances int
	// VCPUs is "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z)
	// instances", counted in vCPUs, that EC2 answers VcpuLimitExceeded
	// past (https://docs.aws.amazon.com/ec2/latest/instancetypes/ec2-instance-quotas.html).
	// Its value is in Service Quotas (L-1216C47A), an API the EC2 SDK does
	// not reach, and varies by account; the fake enforces none unless set.
	VCPUs int
	// ElasticIPs is the Elastic IP addresses an account may allocate in a
	// region, five by default ("By default, all AWS accounts have a quota
	// of five (5) Elastic IP addresses per Region",
	// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/elastic-ip-addresses-eip.html);
	// AllocateAddress past it answers AddressLimitExceeded, and
	// DescribeAccountAttributes reports it as vpc-max-elastic-ips and
	// max-elastic-ips.
	ElasticIPs int
}

// EC2Quotas are EC2's documented defaults that a test may set: the five
// Elastic IPs a region. EC2's instance and vCPU limits vary by account,
// and have none here.
var EC2Quotas = Quotas{ElasticIPs: 5}

// DefaultQuotas are a new fake's: none enforced, so the simulation and
// the local stack, which make more Static proxies in a region than EC2's
// five Elastic IPs, are not refused; a test of the quotas sets them
// (SetQuotas, EC2Quotas).
var DefaultQuotas = Quotas{}

// vcpus are the vCPUs of the instance types the fake sells, as
// https://aws.amazon.com/ec2/instance-types/ lists them: two for each.
var vcpus = map[string]int{
	"t3.nano": 2, "t3.micro": 2, "t3.small": 2, "t3.medium": 2,
	"t3a.micro": 2, "t3a.small": 2, "m5.large": 2, "c5.large": 2,
	"t4g.micro": 2, "t4g.small": 2,
}

// SetQuotas sets the account's quotas, the same in every region, each
// region counted on its own.
func (s *Server) SetQuotas(q Quotas) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.quotas = q
}

// SetInstanceLimit makes RunInstances answer InstanceLimitExceeded once
// a region has n instances pending or running; 0 is no limit.
func (s *Server) SetInstanceLimit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.quotas.Instances = n
}

// liveVCPUs is the vCPUs of a region's instances pending or running,
// which count toward the vCPU limit. Called with s.mu held.
func (s *Server) liveVCPUs(region string) int {
	n := 0
	for _, in := range s.instances {
		if in.Region == region && (in.State == "pending" || in.State == "running") {
			n += vcpus[in.Type]
		}
	}
	return n
}

// launchOverQuota is EC2's refusal of a launch of typ in region past a
// quota, or nil. The vCPU message is EC2's, with its limit ("You have
// requested more vCPU capacity than your current vCPU limit of 32 allows
// for the instance bucket that the specified instance type belongs to.
// Please visit http://aws.amazon.com/contact-us/ec2-request to request an
// adjustment to this limit."). Called with s.mu held.
func (s *Server) launchOverQuota(region, typ string) error {
	q := s.quotas
	switch {
	case q.Instances > 0 && s.live(region) >= q.Instances:
		return errorf("InstanceLimitExceeded", "You have requested more instances (%d) than your current instance limit of %d allows for the specified instance type.", s.live(region)+1, q.Instances)
	case q.VCPUs > 0 && s.liveVCPUs(region)+vcpus[typ] > q.VCPUs:
		return errorf("VcpuLimitExceeded", "You have requested more vCPU capacity than your current vCPU limit of %d allows for the instance bucket that the specified instance type belongs to. Please visit http://aws.amazon.com/contact-us/ec2-request to request an adjustment to this limit.", q.VCPUs)
	}
	return nil
}

// allocationOverQuota is EC2's refusal of an Elastic IP past the
// region's quota, or nil ("The maximum number of addresses has been
// reached.", as EC2 words AddressLimitExceeded). Called with s.mu held.
func (s *Server) allocationOverQuota(region string) error {
	if s.quotas.ElasticIPs == 0 || s.regionAddresses(region) < s.quotas.ElasticIPs {
		return nil
	}
	return errorf("AddressLimitExceeded", "The maximum number of addresses has been reached.")
}

// regionAddresses counts a region's Elastic IPs. Called with s.mu held.
func (s *Server) regionAddresses(region string) int {
	n := 0
	for _, a := range s.addresses {
		if a.Region == region {
			n++
		}
	}
	return n
}

// describeAccountAttributes answers the account's attributes, those of
// AttributeName.N or all (the API reference's DescribeAccountAttributes):
// vpc-max-elastic-ips and max-elastic-ips, the Elastic IP quota (EC2
// reports the same figure under both since EC2-Classic retired), which a
// fake that enforces none leaves out (EC2 always reports one: the fake's
// way to say it has none);
// max-instances, which EC2 documents as "no longer supported. The
// returned value does not reflect your actual vCPU limit", answered as
// the instance count limit, or 20, the figure EC2 answers for it (the
// fake's assumption); default-vpc, and vpc-max-security-groups-per-interface
// (5).
func (s *Server) describeAccountAttributes(r *request) (any, error) {
	maxInstances := s.quotas.Instances
	if maxInstances == 0 {
		maxInstances = 20
	}
	all := []struct{ name, value string }{
		{"vpc-max-security-groups-per-interface", "5"},
		{"max-instances", strconv.Itoa(maxInstances)},
		{"supported-platforms", "VPC"},
		{"default-vpc", s.defaultSubnet(r.region, s.regions[r.region][0]).VPC},
	}
	if s.quotas.ElasticIPs > 0 {
		all = append(all, []struct{ name, value string }{
			{"max-elastic-ips", strconv.Itoa(s.quotas.ElasticIPs)},
			{"vpc-max-elastic-ips", strconv.Itoa(s.quotas.ElasticIPs)},
		}...)
	}
	names := r.list("AttributeName")
	out := &accountAttributesResponse{}
	known := map[string]bool{"max-elastic-ips": true, "vpc-max-elastic-ips": true}
	for _, a := range all {
		known[a.name] = true
		if len(names) == 0 || slices.Contains(names, a.name) {
			out.Attributes = append(out.Attributes, accountAttributeXML{Name: a.name, Values: []attributeValueXML{{Value: a.value}}})
		}
	}
	for _, n := range names {
		if !known[n] {
			return nil, errorf("InvalidParameterValue", "Invalid value '%s' for AttributeName", n)
		}
	}
	return out, nil
}

type accountAttributesResponse struct {
	Meta
	Attributes []accountAttributeXML `xml:"accountAttributeSet>item"`
}

type accountAttributeXML struct {
	Name   string              `xml:"attributeName"`
	Values []attributeValueXML `xml:"attributeValueSet>item"`
}

type attributeValueXML struct {
	Value string `xml:"attributeValue"`
}
