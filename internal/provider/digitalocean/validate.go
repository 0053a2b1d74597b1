package digitalocean

import (
	"fmt"
	"maps"
	"regexp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/placement"
)

// The defaults of a placement. s-1vcpu-1gb is the smallest Basic
// (shared-vCPU, x86) size DigitalOcean sells in every region (1 vCPU,
// 1 GB, 1 TB of transfer a month): x86 because the proxy engine is built
// for linux/amd64 (make package), shared because a proxy is bound by the
// network, not the CPU.
const (
	DefaultSize  = "s-1vcpu-1gb"
	DefaultImage = "debian-13-x64"
	// MaxUserDataBytes is DigitalOcean's limit on a Droplet's user_data
	// ("A string containing 'user data' which may be used to configure
	// the Droplet on first boot … limited to 64 KiB in size").
	MaxUserDataBytes = 64 << 10
)

// The operator's defaults of Policy: the small Basic sizes, and the
// images the default bootstrap is proven on (Debian 13, the default, and
// Debian 12), by DigitalOcean's slugs.
var (
	DefaultAllowedSizes  = []string{DefaultSize, "s-1vcpu-2gb", "s-2vcpu-2gb"}
	DefaultAllowedImages = []string{DefaultImage, "debian-12-x64"}
)

// metros are DigitalOcean's metros and their regions that take new
// Droplets: a placement's region and its zones. (nyc2, sfo1, ams1 and
// ams2 take none; atl1 is left out until DigitalOcean's API description,
// whose region slugs are an enum, names it: testdata/README.md.)
var metros = placement.NewGroups("DigitalOcean", "metro", "region", map[string][]string{
	"nyc": {"nyc1", "nyc3"},
	"sfo": {"sfo2", "sfo3"},
	"tor": {"tor1"},
	"ams": {"ams3"},
	"lon": {"lon1"},
	"fra": {"fra1"},
	"sgp": {"sgp1"},
	"blr": {"blr1"},
	"syd": {"syd1"},
})

// metroOf is the metro of each region.
var metroOf = metros.RegionOf()

// Regions returns every DigitalOcean region with its metro (the CLI
// lists them).
func Regions() map[string]string { return maps.Clone(metroOf) }

func regionList() string { return metros.ZoneList() }
func metroList() string  { return metros.RegionList() }

// slugRE is the form of a size or image slug.
var slugRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$`)

// Policy is what the operator lets tenants ask of DigitalOcean
// (DIGITALOCEAN_ALLOWED_*). It is checked by Validator, in the API,
// before anything is stored.
type Policy struct {
	// Regions a placement may name or be given; empty allows every
	// region.
	Regions []string
	// Sizes a placement may name; it must hold DefaultSize.
	Sizes []string
	// Images a placement may name, by DigitalOcean's slugs; it must hold
	// DefaultImage.
	Images []string
}

// Check validates the policy itself, for the configuration: every entry
// of its form, and the defaults allowed. The error names the entry.
func (pol Policy) Check() error {
	for _, r := range pol.Regions {
		if _, ok := metroOf[r]; !ok {
			return fmt.Errorf("region %q is not a DigitalOcean region that takes new Droplets (%s)", r, regionList())
		}
	}
	return placement.Check(pol.lists())
}

// lists are the policy's lists of sizes and images, in DigitalOcean's words.
func (pol Policy) lists() (sizes, images placement.Names) {
	sizes = placement.Names{Field: placement.MachineType, Noun: "size", Default: DefaultSize, Allowed: pol.Sizes,
		Valid: slugRE.MatchString, Malformed: "is not a size slug such as " + DefaultSize}
	images = placement.Names{Field: placement.Image, Noun: "image", Default: DefaultImage, Allowed: pol.Images,
		Valid: slugRE.MatchString, Malformed: "is not a DigitalOcean image slug such as " + DefaultImage, MalformedEntry: "is not an image slug such as " + DefaultImage}
	return sizes, images
}

// Validator returns the rules of a placement on DigitalOcean under the
// operator's policy, which Check has accepted: the region is a metro with
// an allowed region, the zone one of its allowed regions, the size and
// image allowed (a placement that names none is held to the defaults
// Create uses), cloud-init within the user-data limit; and no warm pool,
// whose claims need a provider.Reconfigurer, which this provider is not.
func Validator(pol Policy) provider.Validator {
	sizes, images := pol.lists()
	return func(req provider.ValidateRequest) []provider.Violation {
		var v placement.Violations
		v.NoWarmPool(req, Type, "Droplet", "its user-data is fixed at create")
		pl := req.Placement
		if metro := metros.Of(pl.Region); metro != "" {
			// A region named where its metro goes: say which is which.
			v.Add("placement.region", provider.ReasonRegionInvalid, "%q is a DigitalOcean region: name its metro %q as the region and %q as the zone", pl.Region, metro, pl.Region)
		} else {
			v.CheckRegion(metros, pl.Region, pol.Regions)
		}
		v.CheckZone(metros, pl.Region, pl.Zone, pol.Regions)
		v.Choose(sizes, pl.MachineType)
		v.Choose(images, pl.Image)
		v.CloudInit(req.CloudInit, MaxUserDataBytes, "a Droplet's user-data")
		return v
	}
}
