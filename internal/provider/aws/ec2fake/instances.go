package ec2fake

import (
	"encoding/base64"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Instance is what the fake holds of an EC2 instance.
type Instance struct {
	ID, Region, Zone, ImageID, Type string
	// State is EC2's: pending, running, stopping, stopped,
	// shutting-down, terminated.
	State       string
	Tags        map[string]string
	ClientToken string
	Reservation string
	LaunchTime  time.Time
	// Created is when its primary interface was attached: its launch,
	// which LaunchTime is until the instance is stopped and started.
	Created        time.Time
	Interface      string
	PublicIP       string
	PrivateIP      string
	UserData       string // decoded
	SecurityGroups []string
	// MetadataOptions are the instance metadata options asked for at
	// launch (HttpTokens, HttpPutResponseHopLimit, HttpEndpoint,
	// InstanceMetadataTags), with EC2's defaults where the request named
	// none.
	MetadataOptions map[string]string
	// AllocationID is the Elastic IP associated with it, if any.
	AllocationID string
	// Subnet and VPC are where its primary interface is: the zone's
	// default subnet, or the one its launch named (network.go).
	Subnet, VPC string
	// NoPublicIP says its launch asked for no public IPv4 address
	// (AssociatePublicIpAddress false).
	NoPublicIP bool
	// IPv6Addresses are its primary interface's IPv6 addresses, and
	// IPv6Prefixes the prefixes delegated to it, each a /80
	// (Ipv6AddressCount and Ipv6PrefixCount at launch).
	IPv6Addresses, IPv6Prefixes []string
}

// tokenUse is what a ClientToken made: the instance, and a fingerprint
// of the request, to tell a retry from another request with the token.
type tokenUse struct {
	instance    string
	fingerprint string
}

// stateCodes are EC2's codes of the instance states.
var stateCodes = map[string]int{"pending": 0, "running": 16, "shutting-down": 32, "terminated": 48, "stopping": 64, "stopped": 80}

// MaxUserDataBytes is EC2's limit on user-data, before base64.
const MaxUserDataBytes = 16 << 10

// runInstances launches one instance, as the API reference's
// RunInstances: idempotent by ClientToken (the same token and the same
// parameters answer the instance the first call made, in its state of
// now; the same token with other parameters is
// IdempotentParameterMismatch), the tags of TagSpecifications set at
// launch, the zone's capacity, the type's offer and the account's
// limit checked first.
func (s *Server) runInstances(r *request) (any, error) {
	token := r.str("ClientToken")
	imageID, typ := r.str("ImageId"), r.str("InstanceType")
	zone := r.str("Placement.AvailabilityZone")
	userData := r.str("UserData")
	minCount, err := r.integer("MinCount", 0)
	if err != nil {
		return nil, err
	}
	maxCount, err := r.integer("MaxCount", 0)
	if err != nil {
		return nil, err
	}
	specs, err := r.tagSpecifications("instance", "volume", "network-interface")
	if err != nil {
		return nil, err
	}
	md := map[string]string{"HttpTokens": "optional", "HttpPutResponseHopLimit": "1", "HttpEndpoint": "enabled", "InstanceMetadataTags": "disabled"}
	for k := range md {
		if v := r.str("MetadataOptions." + k); v != "" {
			md[k] = v
		}
	}
	groups := append(r.list("SecurityGroup"), r.list("SecurityGroupId")...)
	iface, err := s.networkInterface(r, groups)
	if err != nil {
		return nil, err
	}

	fingerprint := fingerprintOf(r)
	if token != "" {
		if len(token) > 64 {
			return nil, errorf("InvalidParameterValue", "ClientToken is at most 64 ASCII characters")
		}
		if use, ok := s.tokens[r.region+"/"+token]; ok {
			if use.fingerprint != fingerprint {
				return nil, errorf("IdempotentParameterMismatch", "The client token you have provided is associated with a resource that is already deleted or has different parameters. Please use a different client token.")
			}
			in := s.instances[use.instance]
			return &reservationResponse{ReservationID: in.Reservation, OwnerID: OwnerID, Instances: []instanceXML{s.instanceXML(in)}}, nil
		}
	}
	switch {
	case imageID == "":
		return nil, errorf("MissingParameter", "The request must contain the parameter ImageId")
	case minCount != 1 || maxCount != 1:
		return nil, errorf("InvalidParameterValue", "the fake launches one instance a call: MinCount and MaxCount must be 1, not %d and %d", minCount, maxCount)
	}
	im, ok := s.imageByID(r.region, imageID)
	if !ok {
		return nil, errorf("InvalidAMIID.NotFound", "The image id '[%s]' does not exist", imageID)
	}
	if typ == "" {
		typ = "m1.small" // EC2's default, which the fake does not sell
	}
	arch, ok := instanceTypes[typ]
	switch {
	case !ok:
		return nil, errorf("InvalidParameterValue", "Invalid value '%s' for InstanceType.", typ)
	case arch != im.Arch:
		return nil, errorf("InvalidParameterValue", "The architecture '%s' of the specified instance type does not match the architecture '%s' of the specified AMI.", arch, im.Arch)
	}
	zones := s.regions[r.region]
	switch {
	case iface != nil && zone != "" && zone != iface.subnet.Zone:
		return nil, errorf("InvalidParameterValue", "Subnet %s is in %s, not in the requested availability zone %s", iface.subnet.ID, iface.subnet.Zone, zone)
	case iface != nil:
		zone = iface.subnet.Zone
	case zone == "":
		zone = zones[0]
	case !slices.Contains(zones, zone):
		return nil, errorf("InvalidParameterValue", "Invalid availability zone: [%s]", zone)
	}
	if userData != "" {
		raw, err := base64.StdEncoding.DecodeString(userData)
		if err != nil {
			return nil, errorf("InvalidParameterValue", "Invalid BASE64 encoding of user data.")
		}
		if len(raw) > MaxUserDataBytes {
			return nil, errorf("InvalidParameterValue", "User data is limited to %d bytes", MaxUserDataBytes)
		}
		userData = string(raw)
	}
	if hop, err := strconv.Atoi(md["HttpPutResponseHopLimit"]); err != nil || hop < 1 || hop > 64 {
		return nil, errorf("InvalidParameterValue", "HttpPutResponseHopLimit must be 1 to 64, not %q", md["HttpPutResponseHopLimit"])
	}
	switch {
	case s.noCapacity[zone]:
		return nil, errorf("InsufficientInstanceCapacity", "We currently do not have sufficient %s capacity in the Availability Zone you requested (%s). Our system will be working on provisioning additional capacity. You can currently get %s capacity by not specifying an Availability Zone in your request or choosing %s.",
			typ, zone, typ, strings.Join(slices.DeleteFunc(slices.Clone(zones), func(z string) bool { return z == zone || s.noCapacity[z] }), ", "))
	case s.unsupported[zone+"/"+typ]:
		return nil, errorf("Unsupported", "Your requested instance type (%s) is not supported in your requested Availability Zone (%s). Please retry your request by not specifying an Availability Zone or choosing %s.",
			typ, zone, strings.Join(slices.DeleteFunc(slices.Clone(zones), func(z string) bool { return z == zone }), ", "))
	}
	if err := s.launchOverQuota(r.region, typ); err != nil {
		return nil, err
	}

	in := &Instance{
		ID: s.newID("i-", 17), Region: r.region, Zone: zone, ImageID: imageID, Type: typ, State: "pending",
		Tags: specs["instance"], ClientToken: token, Reservation: s.newID("r-", 17), LaunchTime: s.clock().UTC().Truncate(time.Millisecond),
		Interface: s.newID("eni-", 17),
		PrivateIP: s.newIP("172.31"), UserData: userData, SecurityGroups: groups, MetadataOptions: md,
	}
	if in.Tags == nil {
		in.Tags = map[string]string{}
	}
	sn := s.defaultSubnet(r.region, zone)
	if iface != nil {
		sn, in.SecurityGroups, in.NoPublicIP = iface.subnet, iface.groups, iface.noPublicIP
		in.IPv6Addresses, in.IPv6Prefixes = s.assignIPv6(sn, iface.addrs, iface.prefixes)
	}
	in.Subnet, in.VPC = sn.ID, sn.VPC
	in.Created = in.LaunchTime
	s.instances[in.ID] = in
	s.order = append(s.order, in.ID)
	if token != "" {
		s.tokens[r.region+"/"+token] = tokenUse{instance: in.ID, fingerprint: fingerprint}
	}
	return &reservationResponse{ReservationID: in.Reservation, OwnerID: OwnerID, Instances: []instanceXML{s.instanceXML(in)}}, nil
}

// fingerprintOf is what a request with a ClientToken asks, but the
// token: two calls with one token and one fingerprint are one request.
func fingerprintOf(r *request) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(r.form)) {
		if k != "ClientToken" {
			parts = append(parts, k+"="+strings.Join(r.form[k], ","))
		}
	}
	return strings.Join(parts, "&")
}

// live counts a region's instances pending or running.
func (s *Server) live(region string) int {
	n := 0
	for _, in := range s.instances {
		if in.Region == region && (in.State == "pending" || in.State == "running") {
			n++
		}
	}
	return n
}

// newID is an EC2 id: the prefix and n hex digits.
func (s *Server) newID(prefix string, n int) string {
	s.seq++
	return prefix + fmt.Sprintf("%0*x", n, s.seq)
}

// newIP is an address of a /16: 172.31.x.y (private), 198.18.x.y
// (instances' public) or 198.19.x.y (Elastic IPs), from the benchmark
// range no host of the internet has.
func (s *Server) newIP(net16 string) string {
	s.nextIP++
	return fmt.Sprintf("%s.%d.%d", net16, (s.nextIP/250)%250, s.nextIP%250+1)
}

// idPattern is the form of an instance id.
var idPattern = regexp.MustCompile(`^i-[0-9a-f]{8}([0-9a-f]{9})?$`)

// describeInstances answers the region's instances by id or by filters,
// in pages (the API reference's DescribeInstances: MaxResults is 5 to
// 1000 and cannot go with InstanceIds; an unknown id fails the call with
// InvalidInstanceID.NotFound). Terminated instances are listed, as EC2
// lists them for about an hour.
func (s *Server) describeInstances(r *request) (any, error) {
	ids := r.list("InstanceId")
	filters, err := r.filters("instance-id", "instance-state-name", "instance-state-code", "tag:", "tag-key", "client-token",
		"availability-zone", "image-id", "instance-type", "reservation-id", "ip-address")
	if err != nil {
		return nil, err
	}
	maxResults, err := r.integer("MaxResults", 0)
	if err != nil {
		return nil, err
	}
	next := r.str("NextToken")
	switch {
	case maxResults != 0 && len(ids) > 0:
		return nil, errorf("InvalidParameterCombination", "The parameter instancesSet cannot be used with the parameter maxResults")
	case maxResults != 0 && (maxResults < 5 || maxResults > 1000):
		return nil, errorf("InvalidParameterValue", "Value ( %d ) for parameter maxResults is invalid. Expecting a value between 5 and 1000.", maxResults)
	}
	for _, id := range ids {
		if !idPattern.MatchString(id) {
			return nil, errorf("InvalidInstanceID.Malformed", "Invalid id: \"%s\"", id)
		}
		if in, ok := s.instances[id]; !ok || in.Region != r.region {
			return nil, errorf("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
		}
	}
	var match []*Instance
	for _, id := range s.order {
		in := s.instances[id]
		if in.Region != r.region || (len(ids) > 0 && !slices.Contains(ids, id)) {
			continue
		}
		fields := map[string]string{"instance-id": in.ID, "instance-state-name": in.State, "instance-state-code": strconv.Itoa(stateCodes[in.State]),
			"client-token": in.ClientToken, "availability-zone": in.Zone, "image-id": in.ImageID, "instance-type": in.Type,
			"reservation-id": in.Reservation, "ip-address": in.PublicIP}
		if filters.match(fields, in.Tags) {
			match = append(match, in)
		}
	}
	from := 0
	if next != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(next, "page-"))
		if err != nil || !strings.HasPrefix(next, "page-") || n < 0 || n > len(match) {
			return nil, errorf("InvalidParameterValue", "Invalid value '%s' for nextToken", next)
		}
		from = n
	}
	to := len(match)
	if maxResults > 0 {
		to = min(from+maxResults, len(match))
	}
	out := &describeInstancesResponse{}
	for _, in := range match[from:to] {
		out.Reservations = append(out.Reservations, reservationXML{ReservationID: in.Reservation, OwnerID: OwnerID, Instances: []instanceXML{s.instanceXML(in)}})
	}
	if to < len(match) {
		out.NextToken = "page-" + strconv.Itoa(to)
	}
	return out, nil
}

// terminateInstances moves the instances to shutting-down, as the API
// reference's TerminateInstances: idempotent (a terminated instance
// answers terminated again), and an unknown id fails the whole call.
func (s *Server) terminateInstances(r *request) (any, error) {
	ids := r.list("InstanceId")
	if len(ids) == 0 {
		return nil, errorf("MissingParameter", "The request must contain the parameter InstanceId")
	}
	for _, id := range ids {
		if !idPattern.MatchString(id) {
			return nil, errorf("InvalidInstanceID.Malformed", "Invalid id: \"%s\"", id)
		}
		if in, ok := s.instances[id]; !ok || in.Region != r.region {
			return nil, errorf("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
		}
	}
	out := &terminateResponse{}
	for _, id := range ids {
		in := s.instances[id]
		prev := in.State
		if in.State != "terminated" {
			in.State = "shutting-down"
		}
		out.Changes = append(out.Changes, stateChangeXML{InstanceID: id, Current: stateXML{Code: stateCodes[in.State], Name: in.State},
			Previous: stateXML{Code: stateCodes[prev], Name: prev}})
	}
	return out, nil
}
