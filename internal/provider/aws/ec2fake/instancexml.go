package ec2fake

import (
	"strconv"
	"strings"
)

// instanceXML is in as RunInstances and DescribeInstances answer it.
func (s *Server) instanceXML(in *Instance) instanceXML {
	out := instanceXML{
		ID: in.ID, ImageID: in.ImageID, State: stateXML{Code: stateCodes[in.State], Name: in.State}, Type: in.Type,
		LaunchTime: timestamp(in.LaunchTime), Placement: placementXML{AvailabilityZone: in.Zone, Tenancy: "default"},
		PrivateIP: in.PrivateIP, PublicIP: in.PublicIP, ClientToken: in.ClientToken, Tags: tagSet(in.Tags),
		Architecture: instanceTypes[in.Type], Subnet: in.Subnet, VPC: in.VPC,
	}
	if len(in.IPv6Addresses) > 0 {
		out.IPv6Address = in.IPv6Addresses[0]
	}
	if len(in.MetadataOptions) > 0 {
		hop, _ := strconv.Atoi(in.MetadataOptions["HttpPutResponseHopLimit"])
		out.MetadataOptions = &metadataOptionsXML{State: "applied", HTTPTokens: in.MetadataOptions["HttpTokens"], HopLimit: hop,
			HTTPEndpoint: in.MetadataOptions["HttpEndpoint"], Tags: in.MetadataOptions["InstanceMetadataTags"]}
	}
	if in.Interface != "" {
		ni := interfaceXML{ID: in.Interface, PrivateIP: in.PrivateIP, Status: "in-use", Subnet: in.Subnet, VPC: in.VPC,
			Attachment: attachmentXML{ID: "eni-attach-" + strings.TrimPrefix(in.Interface, "eni-"), DeviceIndex: 0, Status: "attached",
				AttachTime: timestamp(in.Created), DeleteOnTermination: true}}
		for _, a := range in.IPv6Addresses {
			ni.IPv6Addresses = append(ni.IPv6Addresses, ipv6AddressXML{Address: a})
		}
		for _, pfx := range in.IPv6Prefixes {
			ni.IPv6Prefixes = append(ni.IPv6Prefixes, ipv6PrefixXML{Prefix: pfx})
		}
		if in.PublicIP != "" {
			ni.Association = &interfaceAssociationXML{PublicIP: in.PublicIP, IPOwnerID: "amazon"}
			if in.AllocationID != "" {
				ni.Association.IPOwnerID = OwnerID
			}
		}
		out.Interfaces = append(out.Interfaces, ni)
	}
	for _, g := range in.SecurityGroups {
		out.Groups = append(out.Groups, groupXML{Name: g})
	}
	if in.State == "shutting-down" || in.State == "terminated" {
		out.StateReason = &stateReasonXML{Code: "Client.UserInitiatedShutdown", Message: "Client.UserInitiatedShutdown: User initiated shutdown"}
	}
	return out
}

// The XML of the answers, by the service model's locationNames.

type reservationResponse struct {
	Meta
	ReservationID string        `xml:"reservationId"`
	OwnerID       string        `xml:"ownerId"`
	Instances     []instanceXML `xml:"instancesSet>item"`
}

type describeInstancesResponse struct {
	Meta
	Reservations []reservationXML `xml:"reservationSet>item"`
	NextToken    string           `xml:"nextToken,omitempty"`
}

type reservationXML struct {
	ReservationID string        `xml:"reservationId"`
	OwnerID       string        `xml:"ownerId"`
	Instances     []instanceXML `xml:"instancesSet>item"`
}

type instanceXML struct {
	ID              string              `xml:"instanceId"`
	ImageID         string              `xml:"imageId"`
	State           stateXML            `xml:"instanceState"`
	Type            string              `xml:"instanceType"`
	LaunchTime      string              `xml:"launchTime"`
	Placement       placementXML        `xml:"placement"`
	PrivateIP       string              `xml:"privateIpAddress,omitempty"`
	PublicIP        string              `xml:"ipAddress,omitempty"`
	ClientToken     string              `xml:"clientToken,omitempty"`
	Groups          []groupXML          `xml:"groupSet>item"`
	StateReason     *stateReasonXML     `xml:"stateReason,omitempty"`
	Architecture    string              `xml:"architecture,omitempty"`
	Subnet          string              `xml:"subnetId,omitempty"`
	VPC             string              `xml:"vpcId,omitempty"`
	IPv6Address     string              `xml:"ipv6Address,omitempty"`
	Interfaces      []interfaceXML      `xml:"networkInterfaceSet>item"`
	Tags            []tagXML            `xml:"tagSet>item"`
	MetadataOptions *metadataOptionsXML `xml:"metadataOptions,omitempty"`
}

type interfaceXML struct {
	ID            string                   `xml:"networkInterfaceId"`
	PrivateIP     string                   `xml:"privateIpAddress"`
	Status        string                   `xml:"status"`
	Attachment    attachmentXML            `xml:"attachment"`
	Subnet        string                   `xml:"subnetId,omitempty"`
	VPC           string                   `xml:"vpcId,omitempty"`
	Association   *interfaceAssociationXML `xml:"association,omitempty"`
	IPv6Addresses []ipv6AddressXML         `xml:"ipv6AddressesSet>item,omitempty"`
	IPv6Prefixes  []ipv6PrefixXML          `xml:"ipv6PrefixSet>item,omitempty"`
}

type ipv6AddressXML struct {
	Address string `xml:"ipv6Address"`
}

type ipv6PrefixXML struct {
	Prefix string `xml:"ipv6Prefix"`
}

type attachmentXML struct {
	ID                  string `xml:"attachmentId"`
	DeviceIndex         int    `xml:"deviceIndex"`
	Status              string `xml:"status"`
	AttachTime          string `xml:"attachTime"`
	DeleteOnTermination bool   `xml:"deleteOnTermination"`
}

type interfaceAssociationXML struct {
	PublicIP  string `xml:"publicIp"`
	IPOwnerID string `xml:"ipOwnerId"`
}

type stateXML struct {
	Code int    `xml:"code"`
	Name string `xml:"name"`
}

type placementXML struct {
	AvailabilityZone string `xml:"availabilityZone"`
	Tenancy          string `xml:"tenancy"`
}

type groupXML struct {
	Name string `xml:"groupName"`
}

type stateReasonXML struct {
	Code    string `xml:"code"`
	Message string `xml:"message"`
}

type metadataOptionsXML struct {
	State        string `xml:"state"`
	HTTPTokens   string `xml:"httpTokens"`
	HopLimit     int    `xml:"httpPutResponseHopLimit"`
	HTTPEndpoint string `xml:"httpEndpoint"`
	Tags         string `xml:"instanceMetadataTags"`
}

type terminateResponse struct {
	Meta
	Changes []stateChangeXML `xml:"instancesSet>item"`
}

type stateChangeXML struct {
	InstanceID string   `xml:"instanceId"`
	Current    stateXML `xml:"currentState"`
	Previous   stateXML `xml:"previousState"`
}
