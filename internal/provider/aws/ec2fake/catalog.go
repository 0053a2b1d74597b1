package ec2fake

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"
)

// defaultRegions are the regions the fake serves and their availability
// zones (a region's zones are its name and a letter).
var defaultRegions = map[string][]string{
	"us-east-1":      {"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1e", "us-east-1f"},
	"us-west-2":      {"us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"},
	"eu-central-1":   {"eu-central-1a", "eu-central-1b", "eu-central-1c"},
	"eu-west-1":      {"eu-west-1a", "eu-west-1b", "eu-west-1c"},
	"ap-southeast-1": {"ap-southeast-1a", "ap-southeast-1b", "ap-southeast-1c"},
}

// DebianOwner is the account that publishes Debian's official AMIs
// (https://wiki.debian.org/Cloud/AmazonEC2Image).
const DebianOwner = "136693071363"

// instanceTypes are the types the fake knows, with their architecture.
var instanceTypes = map[string]string{
	"t3.nano": "x86_64", "t3.micro": "x86_64", "t3.small": "x86_64", "t3.medium": "x86_64",
	"t3a.micro": "x86_64", "t3a.small": "x86_64", "m5.large": "x86_64", "c5.large": "x86_64",
	"t4g.micro": "arm64", "t4g.small": "arm64",
}

// image is an AMI of a region.
type image struct {
	ID, Region, Owner, Name, Arch, Created string
}

// debianImages are Debian's official images in every region, two
// releases of each of Debian 13 and 12 for both architectures, and an
// image of another account that takes a Debian name: what a lookup by
// name alone would wrongly pick.
func debianImages(regions map[string][]string) []image {
	var out []image
	for _, region := range slices.Sorted(maps.Keys(regions)) {
		for _, v := range []struct{ name, created string }{
			{"debian-13-amd64-20251006-2257", "2025-10-06T10:31:00.000Z"},
			{"debian-13-amd64-20251117-2299", "2025-11-17T09:12:00.000Z"},
			{"debian-13-arm64-20251117-2299", "2025-11-17T09:12:00.000Z"},
			{"debian-12-amd64-20251006-2257", "2025-10-06T10:31:00.000Z"},
			{"debian-12-amd64-20251117-2299", "2025-11-17T09:12:00.000Z"},
			{"debian-12-arm64-20251117-2299", "2025-11-17T09:12:00.000Z"},
		} {
			arch := "x86_64"
			if strings.Contains(v.name, "arm64") {
				arch = "arm64"
			}
			out = append(out, image{ID: amiID(region, v.name), Region: region, Owner: DebianOwner, Name: v.name, Arch: arch, Created: v.created})
		}
		out = append(out, image{ID: amiID(region, "impostor"), Region: region, Owner: "999988887777", Name: "debian-13-amd64-29991231-9999",
			Arch: "x86_64", Created: "2026-11-30T00:00:00.000Z"})
	}
	return out
}

// amiID is an image's id, stable for a region and a name: AMI ids differ
// between regions, as EC2's do.
func amiID(region, name string) string {
	sum := sha256.Sum256([]byte(region + "/" + name))
	return "ami-" + hex.EncodeToString(sum[:])[:17]
}

// ImageID is the id of the image of that name in region, or "".
func (s *Server) ImageID(region, name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, im := range s.images {
		if im.Region == region && im.Name == name {
			return im.ID
		}
	}
	return ""
}

func (s *Server) imageByID(region, id string) (image, bool) {
	for _, im := range s.images {
		if im.Region == region && im.ID == id {
			return im, true
		}
	}
	return image{}, false
}

// describeAvailabilityZones answers the request's region's zones (the
// API reference's DescribeAvailabilityZones; filters zone-name, state,
// region-name, zone-type).
func (s *Server) describeAvailabilityZones(r *request) (any, error) {
	names := r.list("ZoneName")
	filters, err := r.filters("zone-name", "state", "region-name", "zone-type")
	if err != nil {
		return nil, err
	}
	out := &azResponse{}
	for i, z := range s.regions[r.region] {
		if len(names) > 0 && !slices.Contains(names, z) {
			continue
		}
		fields := map[string]string{"zone-name": z, "state": "available", "region-name": r.region, "zone-type": "availability-zone"}
		if !filters.match(fields, nil) {
			continue
		}
		out.Zones = append(out.Zones, azXML{ZoneName: z, ZoneID: zoneID(r.region, i), State: "available", RegionName: r.region,
			ZoneType: "availability-zone", GroupName: r.region, OptInStatus: "opt-in-not-required", NetworkBorderGroup: r.region})
	}
	return out, nil
}

// zoneID is an AZ's id, "use1-az1": the same physical zone in every
// account, unlike its name.
func zoneID(region string, i int) string {
	parts := strings.Split(region, "-")
	short := ""
	for _, p := range parts[:len(parts)-1] {
		short += p[:1]
	}
	return short + parts[len(parts)-1] + "-az" + string(rune('1'+i))
}

type azResponse struct {
	Meta
	Zones []azXML `xml:"availabilityZoneInfo>item"`
}

type azXML struct {
	ZoneName           string `xml:"zoneName"`
	ZoneID             string `xml:"zoneId"`
	State              string `xml:"zoneState"`
	RegionName         string `xml:"regionName"`
	ZoneType           string `xml:"zoneType"`
	GroupName          string `xml:"groupName"`
	OptInStatus        string `xml:"optInStatus"`
	NetworkBorderGroup string `xml:"networkBorderGroup"`
}

// describeImages answers the region's images of the owners asked for,
// by id or by filters (name with wildcards, architecture, state,
// owner-id, image-id), as the API reference's DescribeImages.
func (s *Server) describeImages(r *request) (any, error) {
	owners, ids := r.list("Owner"), r.list("ImageId")
	filters, err := r.filters("name", "architecture", "state", "owner-id", "image-id", "is-public")
	if err != nil {
		return nil, err
	}
	out := &imagesResponse{}
	for _, im := range s.images {
		if im.Region != r.region || (len(owners) > 0 && !slices.Contains(owners, im.Owner)) || (len(ids) > 0 && !slices.Contains(ids, im.ID)) {
			continue
		}
		fields := map[string]string{"name": im.Name, "architecture": im.Arch, "state": "available", "owner-id": im.Owner, "image-id": im.ID, "is-public": "true"}
		if !filters.match(fields, nil) {
			continue
		}
		out.Images = append(out.Images, imageXML{ID: im.ID, Location: im.Owner + "/" + im.Name, State: "available", Owner: im.Owner,
			Created: im.Created, Public: true, Arch: im.Arch, Type: "machine", Name: im.Name, RootDeviceType: "ebs", Virtualization: "hvm",
			Description: "Debian " + strings.Split(im.Name, "-")[1] + " (" + im.Name + ")"})
	}
	for _, id := range ids {
		if !slices.ContainsFunc(out.Images, func(x imageXML) bool { return x.ID == id }) && len(owners) == 0 {
			return nil, errorf("InvalidAMIID.NotFound", "The image id '[%s]' does not exist", id)
		}
	}
	return out, nil
}

type imagesResponse struct {
	Meta
	Images []imageXML `xml:"imagesSet>item"`
}

type imageXML struct {
	ID             string `xml:"imageId"`
	Location       string `xml:"imageLocation"`
	State          string `xml:"imageState"`
	Owner          string `xml:"imageOwnerId"`
	Created        string `xml:"creationDate"`
	Public         bool   `xml:"isPublic"`
	Arch           string `xml:"architecture"`
	Type           string `xml:"imageType"`
	Name           string `xml:"name"`
	RootDeviceType string `xml:"rootDeviceType"`
	Virtualization string `xml:"virtualizationType"`
	Description    string `xml:"description"`
}
