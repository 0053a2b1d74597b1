package aws

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/placement"
)

// The defaults of a placement. t3.micro is the smallest x86 type EC2
// sells in every region (2 vCPU burstable, 1 GiB): x86 because the proxy
// engine is built for linux/amd64 (make package), so not t4g, which is
// Graviton; burstable because a proxy is bound by the network, not the
// CPU. The image is a Debian release, resolved per region to Debian's
// newest official AMI of it (resolveImage).
const (
	DefaultInstanceType = "t3.micro"
	DefaultImage        = "debian-13"
	// DebianOwner is the account that publishes Debian's official AMIs
	// (https://wiki.debian.org/Cloud/AmazonEC2Image): the only owner the
	// lookup of a release accepts.
	DebianOwner = "136693071363"
	// MaxUserDataBytes is EC2's limit on an instance's user-data, before
	// base64, where a spec's cloud-init goes.
	MaxUserDataBytes = 16 << 10
)

// debianReleases are the images a placement may name by release, and
// the name pattern of Debian's official amd64 AMIs of each.
var debianReleases = map[string]string{
	"debian-13": "debian-13-amd64-*",
	"debian-12": "debian-12-amd64-*",
}

func releaseList() string { return strings.Join(slices.Sorted(maps.Keys(debianReleases)), ", ") }

// The operator's defaults of Policy: the small burstable x86 types, and
// the releases the default bootstrap is proven on (Debian 13, the
// default, and Debian 12).
var (
	DefaultAllowedInstanceTypes = []string{"t3.micro", "t3.small", "t3a.micro", "t3a.small"}
	DefaultAllowedImages        = []string{DefaultImage, "debian-12"}
)

// Regions are AWS's commercial regions the CLI's help names, with where
// they are; an operator allows some of them (AWS_ALLOWED_REGIONS), and
// may allow any other region of the right form (a new one, an opt-in
// one).
var Regions = map[string]string{
	"us-east-1": "N. Virginia", "us-east-2": "Ohio", "us-west-1": "N. California", "us-west-2": "Oregon",
	"ca-central-1": "Canada", "sa-east-1": "São Paulo", "eu-west-1": "Ireland", "eu-west-2": "London",
	"eu-west-3": "Paris", "eu-central-1": "Frankfurt", "eu-north-1": "Stockholm", "eu-south-1": "Milan",
	"ap-south-1": "Mumbai", "ap-southeast-1": "Singapore", "ap-southeast-2": "Sydney", "ap-northeast-1": "Tokyo",
	"ap-northeast-2": "Seoul", "ap-northeast-3": "Osaka", "me-south-1": "Bahrain", "af-south-1": "Cape Town",
}

// typeRE is the form of an instance type (family.size); imageRE of an
// AMI id.
var (
	typeRE  = regexp.MustCompile(`^[a-z][a-z0-9-]*\.[a-z0-9-]+$`)
	amiIDRE = regexp.MustCompile(`^ami-[0-9a-f]{8}([0-9a-f]{9})?$`)
)

// Policy is what the operator lets tenants ask of EC2 (internal/app
// reads it from AWS_ALLOWED_*). It is checked by Validator, in the API,
// before anything is stored.
type Policy struct {
	// Regions a placement may name; at least one (ListByTag lists these).
	Regions []string
	// Zones a placement may name or be given; empty allows every zone of
	// the allowed regions.
	Zones []string
	// InstanceTypes a placement may name; it must hold
	// DefaultInstanceType.
	InstanceTypes []string
	// Images a placement may name: Debian releases (debian-13,
	// debian-12), which resolve to Debian's newest official AMI in the
	// region, or AMI ids, which are regional (an AMI id names one image
	// of one region); it must hold DefaultImage.
	Images []string
}

// Check validates the policy itself, for the configuration: every entry
// of its form, and the defaults allowed. The error names the entry.
func (pol Policy) Check() error {
	if len(pol.Regions) == 0 {
		return fmt.Errorf("allows no region: name at least one, such as us-east-1")
	}
	for _, r := range pol.Regions {
		if !regionPattern.MatchString(r) {
			return fmt.Errorf("region %q is not an AWS region name such as us-east-1", r)
		}
	}
	for _, z := range pol.Zones {
		switch r := regionOfZone(z); {
		case r == "":
			return fmt.Errorf("zone %q is not an availability zone name such as us-east-1a", z)
		case !slices.Contains(pol.Regions, r):
			return fmt.Errorf("zone %q is of region %s, which it does not allow", z, r)
		}
	}
	return placement.Check(pol.lists())
}

// lists are the policy's lists of instance types and images, in EC2's words.
func (pol Policy) lists() (instanceTypes, images placement.Names) {
	instanceTypes = placement.Names{Field: placement.MachineType, Noun: "instance type", Default: DefaultInstanceType, Allowed: pol.InstanceTypes,
		Valid: typeRE.MatchString, Malformed: "is not an EC2 instance type name such as " + DefaultInstanceType, MalformedEntry: "is not an instance type name such as " + DefaultInstanceType}
	images = placement.Names{Field: placement.Image, Noun: "image", Default: DefaultImage, Allowed: pol.Images,
		Valid:          func(im string) bool { return debianReleases[im] != "" || amiIDRE.MatchString(im) },
		Malformed:      "is neither a Debian release (" + releaseList() + ") nor an AMI id",
		MalformedEntry: "is neither a Debian release (" + releaseList() + ") nor an AMI id such as ami-0123456789abcdef0"}
	return instanceTypes, images
}

// Validator returns the rules of a placement on EC2 under the operator's
// policy, which Check has accepted: the region allowed, the zone one of
// its allowed zones, the instance type and image allowed (a placement
// that names none is held to the defaults Create uses), cloud-init
// within the user-data limit; and no warm pool, whose claims need a
// provider.Reconfigurer, which this provider is not.
func Validator(pol Policy) provider.Validator {
	types, images := pol.lists()
	return func(req provider.ValidateRequest) []provider.Violation {
		var v placement.Violations
		v.NoWarmPool(req, Type, "instance", "EC2 changes user-data only while an instance is stopped")
		pl := req.Placement
		switch {
		case pl.Region == "":
		case !regionPattern.MatchString(pl.Region):
			v.Add("placement.region", provider.ReasonRegionInvalid, "%q is not an AWS region name such as us-east-1", pl.Region)
		case !slices.Contains(pol.Regions, pl.Region):
			v.Add("placement.region", provider.ReasonRegionNotAllowed, "%q is not a region this platform allows: %s", pl.Region, strings.Join(pol.Regions, ", "))
		}
		if pl.Zone != "" {
			switch {
			case regionOfZone(pl.Zone) != pl.Region:
				v.Add("placement.zone", provider.ReasonZoneNotInRegion, "%q is not an availability zone of region %q: want the region's name and a letter, such as %sa", pl.Zone, pl.Region, pl.Region)
			case len(pol.Zones) > 0 && !slices.Contains(pol.Zones, pl.Zone):
				v.Add("placement.zone", provider.ReasonZoneNotAllowed, "%q is not an availability zone this platform allows: %s", pl.Zone, strings.Join(pol.Zones, ", "))
			}
		}
		v.Choose(types, pl.MachineType)
		v.Choose(images, pl.Image)
		v.CloudInit(req.CloudInit, MaxUserDataBytes, "an EC2 instance's user-data")
		return v
	}
}
