package ec2fake

import (
	"maps"
	"slices"
	"sort"
	"time"
)

// Settle finishes what is in progress: pending instances run (with a
// public address, unless an Elastic IP is theirs), stopping ones stop,
// shutting-down ones are terminated and their Elastic IP disassociated.
func (s *Server) Settle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range s.order {
		in := s.instances[id]
		switch in.State {
		case "pending":
			in.State = "running"
			if in.PublicIP == "" && !in.NoPublicIP {
				in.PublicIP = s.publicIP(false)
			}
			s.serveAt(in)
		case "stopping":
			in.State = "stopped"
		case "shutting-down":
			s.terminated(in)
		}
	}
}

// SetState puts an instance into an EC2 state, as EC2 or someone with
// the console would (stopped, terminated, …). An instance shutting down
// only terminates, and a terminated one stays so, as in EC2: a state
// asked of them otherwise is ignored.
func (s *Server) SetState(id, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := stateCodes[state]; !ok {
		panic("ec2fake: no instance state " + state)
	}
	if in := s.instances[id]; in != nil && (in.State != "terminated" && (in.State != "shutting-down" || state == "terminated")) {
		if in.State == "stopped" && (state == "pending" || state == "running") {
			in.LaunchTime = s.clock().UTC().Truncate(time.Millisecond) // a start is a new launch time
		}
		in.State = state
		switch {
		case state == "terminated":
			s.terminated(in)
		case state == "stopping" || state == "stopped":
			s.unserve(in.ID)
		case state == "running" && in.PublicIP != "":
			s.serveAt(in)
		}
	}
}

// terminated ends an instance: no address, and its Elastic IP, if it
// had one, free again.
func (s *Server) terminated(in *Instance) {
	s.unserve(in.ID)
	in.State, in.PublicIP = "terminated", ""
	if a := s.addresses[in.AllocationID]; a != nil {
		a.InstanceID, a.AssociationID = "", ""
	}
	in.AllocationID = ""
}

// Put plants a running instance in region and zone with these tags, as
// another tool would make one; it returns its id.
func (s *Server) Put(region, zone string, tags map[string]string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := &Instance{ID: s.newID("i-", 17), Region: region, Zone: zone, ImageID: amiID(region, "debian-13-amd64-20251117-2299"), Type: "t3.micro",
		State: "running", Tags: maps.Clone(tags), Reservation: s.newID("r-", 17), LaunchTime: s.clock().UTC().Truncate(time.Millisecond),
		Interface: s.newID("eni-", 17),
		PrivateIP: s.newIP("172.31"), PublicIP: s.newIP("198.18"), MetadataOptions: map[string]string{}}
	sn := s.defaultSubnet(region, zone)
	in.Subnet, in.VPC = sn.ID, sn.VPC
	if in.Tags == nil {
		in.Tags = map[string]string{}
	}
	in.Created = in.LaunchTime
	s.instances[in.ID] = in
	s.order = append(s.order, in.ID)
	return in.ID
}

// Instances returns a copy of every instance, oldest first.
func (s *Server) Instances() []Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Instance
	for _, id := range s.order {
		in := *s.instances[id]
		in.Tags = maps.Clone(in.Tags)
		in.MetadataOptions = maps.Clone(in.MetadataOptions)
		in.SecurityGroups = slices.Clone(in.SecurityGroups)
		in.IPv6Prefixes = slices.Clone(in.IPv6Prefixes)
		in.IPv6Addresses = slices.Clone(in.IPv6Addresses)
		out = append(out, in)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].LaunchTime.Before(out[j].LaunchTime) })
	return out
}
