package ec2fake

import (
	"maps"
	"slices"
	"time"
)

// Address is what the fake holds of an Elastic IP.
type Address struct {
	AllocationID, Region, PublicIP string
	// InstanceID and AssociationID are its association, if it has one.
	InstanceID, AssociationID string
	Tags                      map[string]string
	Allocated                 time.Time
}

// allocateAddress allocates an Elastic IP of the VPC domain with the
// tags of its TagSpecifications (the API reference's AllocateAddress;
// resource type elastic-ip).
func (s *Server) allocateAddress(r *request) (any, error) {
	if d := r.str("Domain"); d != "" && d != "vpc" {
		return nil, errorf("InvalidParameterValue", "Invalid value '%s' for domain: only vpc remains", d)
	}
	specs, err := r.tagSpecifications("elastic-ip")
	if err != nil {
		return nil, err
	}
	if err := s.allocationOverQuota(r.region); err != nil {
		return nil, err
	}
	a := &Address{AllocationID: s.newID("eipalloc-", 17), Region: r.region, PublicIP: s.publicIP(true), Tags: specs["elastic-ip"], Allocated: s.clock()}
	if a.Tags == nil {
		a.Tags = map[string]string{}
	}
	s.addresses[a.AllocationID] = a
	return &allocateResponse{PublicIP: a.PublicIP, AllocationID: a.AllocationID, Domain: "vpc", NetworkBorderGroup: r.region, PublicIPv4Pool: "amazon"}, nil
}

// address is the region's Elastic IP of an allocation id.
func (s *Server) address(region, id string) (*Address, error) {
	if id == "" {
		return nil, errorf("MissingParameter", "The request must contain the parameter AllocationId")
	}
	a, ok := s.addresses[id]
	if !ok || a.Region != region {
		return nil, errorf("InvalidAllocationID.NotFound", "The allocation ID '%s' does not exist", id)
	}
	return a, nil
}

// associateAddress puts an Elastic IP on a running instance, whose
// public address it becomes (the API reference's AssociateAddress: the
// instance must be running; an address on another instance moves only
// with AllowReassociation; on the same instance the call changes
// nothing and answers its association).
func (s *Server) associateAddress(r *request) (any, error) {
	a, err := s.address(r.region, r.str("AllocationId"))
	if err != nil {
		return nil, err
	}
	id, reassociate := r.str("InstanceId"), r.boolean("AllowReassociation")
	in, ok := s.instances[id]
	switch {
	case !ok || in.Region != r.region:
		return nil, errorf("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
	case in.State != "running":
		return nil, errorf("IncorrectInstanceState", "The instance '%s' is not in a valid state for this operation.", id)
	case a.InstanceID == id:
		return &associateResponse{AssociationID: a.AssociationID}, nil
	case a.InstanceID != "" && !reassociate:
		return nil, errorf("Resource.AlreadyAssociated", "resource %s is already associated with associate-id %s", a.AllocationID, a.AssociationID)
	}
	if prev := s.instances[a.InstanceID]; prev != nil {
		prev.AllocationID, prev.PublicIP = "", ""
		s.unserve(prev.ID)
	}
	if old := s.addresses[in.AllocationID]; old != nil {
		old.InstanceID, old.AssociationID = "", ""
	}
	a.InstanceID, a.AssociationID = id, s.newID("eipassoc-", 17)
	in.AllocationID, in.PublicIP = a.AllocationID, a.PublicIP
	s.serveAt(in)
	return &associateResponse{AssociationID: a.AssociationID}, nil
}

// disassociateAddress takes an Elastic IP off its instance.
func (s *Server) disassociateAddress(r *request) (any, error) {
	assoc := r.str("AssociationId")
	for _, a := range s.addresses {
		if a.Region == r.region && a.AssociationID == assoc && assoc != "" {
			if in := s.instances[a.InstanceID]; in != nil {
				in.AllocationID, in.PublicIP = "", ""
			}
			a.InstanceID, a.AssociationID = "", ""
			return &returnResponse{Return: true}, nil
		}
	}
	return nil, errorf("InvalidAssociationID.NotFound", "The association ID '%s' does not exist", assoc)
}

// describeAddresses answers the region's Elastic IPs by allocation id or
// by filters (the API reference's DescribeAddresses, which has no
// pages).
func (s *Server) describeAddresses(r *request) (any, error) {
	ids, ips := r.list("AllocationId"), r.list("PublicIp")
	filters, err := r.filters("allocation-id", "association-id", "domain", "instance-id", "public-ip", "tag:", "tag-key")
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if _, err := s.address(r.region, id); err != nil {
			return nil, err
		}
	}
	out := &addressesResponse{}
	for _, id := range slices.Sorted(maps.Keys(s.addresses)) {
		a := s.addresses[id]
		if a.Region != r.region || (len(ids) > 0 && !slices.Contains(ids, id)) || (len(ips) > 0 && !slices.Contains(ips, a.PublicIP)) {
			continue
		}
		fields := map[string]string{"allocation-id": a.AllocationID, "association-id": a.AssociationID, "domain": "vpc", "instance-id": a.InstanceID, "public-ip": a.PublicIP}
		if filters.match(fields, a.Tags) {
			out.Addresses = append(out.Addresses, addressXML{PublicIP: a.PublicIP, AllocationID: a.AllocationID, Domain: "vpc",
				InstanceID: a.InstanceID, AssociationID: a.AssociationID, Tags: tagSet(a.Tags), NetworkBorderGroup: a.Region, PublicIPv4Pool: "amazon"})
		}
	}
	return out, nil
}

// releaseAddress gives an Elastic IP back (the API reference's
// ReleaseAddress: an associated address is refused, as EC2 refuses one
// of a VPC, InvalidIPAddress.InUse).
func (s *Server) releaseAddress(r *request) (any, error) {
	a, err := s.address(r.region, r.str("AllocationId"))
	if err != nil {
		return nil, err
	}
	if a.InstanceID != "" {
		return nil, errorf("InvalidIPAddress.InUse", "Address %s is in use by instance %s.", a.PublicIP, a.InstanceID)
	}
	delete(s.addresses, a.AllocationID)
	return &returnResponse{Return: true}, nil
}

// PutAddress plants an unassociated Elastic IP with these tags, as
// another tool would allocate one; it returns its allocation id.
func (s *Server) PutAddress(region string, tags map[string]string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := &Address{AllocationID: s.newID("eipalloc-", 17), Region: region, PublicIP: s.newIP("198.19"), Tags: maps.Clone(tags), Allocated: s.clock()}
	if a.Tags == nil {
		a.Tags = map[string]string{}
	}
	s.addresses[a.AllocationID] = a
	return a.AllocationID
}

// Addresses returns a copy of every Elastic IP, by allocation id.
func (s *Server) Addresses() []Address {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Address
	for _, id := range slices.Sorted(maps.Keys(s.addresses)) {
		a := *s.addresses[id]
		a.Tags = maps.Clone(a.Tags)
		out = append(out, a)
	}
	return out
}

type allocateResponse struct {
	Meta
	PublicIP           string `xml:"publicIp"`
	AllocationID       string `xml:"allocationId"`
	PublicIPv4Pool     string `xml:"publicIpv4Pool"`
	NetworkBorderGroup string `xml:"networkBorderGroup"`
	Domain             string `xml:"domain"`
}

type associateResponse struct {
	Meta
	AssociationID string `xml:"associationId"`
}

// returnResponse is the answer of an action whose output the model
// leaves empty: EC2 writes <return>true</return>, which the model's
// output shape does not name (model_test.go allows it).
type returnResponse struct {
	Meta
	Return bool `xml:"return"`
}

type addressesResponse struct {
	Meta
	Addresses []addressXML `xml:"addressesSet>item"`
}

type addressXML struct {
	PublicIP           string   `xml:"publicIp"`
	AllocationID       string   `xml:"allocationId"`
	Domain             string   `xml:"domain"`
	InstanceID         string   `xml:"instanceId,omitempty"`
	AssociationID      string   `xml:"associationId,omitempty"`
	Tags               []tagXML `xml:"tagSet>item"`
	PublicIPv4Pool     string   `xml:"publicIpv4Pool"`
	NetworkBorderGroup string   `xml:"networkBorderGroup"`
}
