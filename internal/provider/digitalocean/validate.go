package digitalocean

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/egress-proxies/egress/internal/provider"
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
var metros = map[string][]string{
	"nyc": {"nyc1", "nyc3"},
	"sfo": {"sfo2", "sfo3"},
	"tor": {"tor1"},
	"ams": {"ams3"},
	"lon": {"lon1"},
	"fra": {"fra1"},
	"sgp": {"sgp1"},
	"blr": {"blr1"},
	"syd": {"syd1"},
}

// metroOf is the metro of each region.
var metroOf = func() map[string]string {
	m := map[string]string{}
	for metro, regions := range metros {
		for _, r := range regions {
			m[r] = metro
		}
	}
	return m
}()

// Regions returns every DigitalOcean region with its metro (the CLI
// lists them).
func Regions() map[string]string { return maps.Clone(metroOf) }

func regionList() string { return strings.Join(slices.Sorted(maps.Keys(metroOf)), ", ") }
func metroList() string  { return strings.Join(slices.Sorted(maps.Keys(metros)), ", ") }

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
	if len(pol.Sizes) == 0 {
		return fmt.Errorf("allows no size")
	}
	for _, s := range pol.Sizes {
		if !slugRE.MatchString(s) {
			return fmt.Errorf("size %q is not a size slug such as %s", s, DefaultSize)
		}
	}
	if !slices.Contains(pol.Sizes, DefaultSize) {
		return fmt.Errorf("does not allow %s, the size of a placement that names none", DefaultSize)
	}
	if len(pol.Images) == 0 {
		return fmt.Errorf("allows no image")
	}
	for _, im := range pol.Images {
		if !slugRE.MatchString(im) {
			return fmt.Errorf("image %q is not an image slug such as %s", im, DefaultImage)
		}
	}
	if !slices.Contains(pol.Images, DefaultImage) {
		return fmt.Errorf("does not allow %s, the image of a placement that names none", DefaultImage)
	}
	return nil
}

// allowed are the regions of a metro the policy allows.
func allowed(metro string, policy []string) []string {
	var out []string
	for _, r := range metros[metro] {
		if len(policy) == 0 || slices.Contains(policy, r) {
			out = append(out, r)
		}
	}
	return out
}

// Validator returns the rules of a placement on DigitalOcean under the
// operator's policy, which Check has accepted: the region is a metro with
// an allowed region, the zone one of its allowed regions, the size and
// image allowed (a placement that names none is held to the defaults
// Create uses), cloud-init within the user-data limit; and no warm pool,
// whose claims need a provider.Reconfigurer, which this provider is not.
func Validator(pol Policy) provider.Validator {
	return func(req provider.ValidateRequest) []provider.Violation {
		var out []provider.Violation
		add := func(field, reason, format string, args ...any) {
			out = append(out, provider.Violation{Field: field, Reason: reason, Description: fmt.Sprintf(format, args...)})
		}
		if req.Pool {
			add("provider", provider.ReasonProviderCannotReconfigure,
				"digitalocean cannot hand a running Droplet a new configuration (its user-data is fixed at create), so it cannot serve a warm pool, whose VMs are claimed that way; proxies on digitalocean get a new Droplet for a change instead")
		}
		pl := req.Placement
		_, metroOK := metros[pl.Region]
		switch {
		case pl.Region == "":
		case !metroOK && metroOf[pl.Region] != "":
			add("placement.region", provider.ReasonRegionInvalid, "%q is a DigitalOcean region: name its metro %q as the region and %q as the zone", pl.Region, metroOf[pl.Region], pl.Region)
		case !metroOK:
			add("placement.region", provider.ReasonRegionInvalid, "%q is not a DigitalOcean metro: want one of %s", pl.Region, metroList())
		case len(allowed(pl.Region, pol.Regions)) == 0:
			add("placement.region", provider.ReasonRegionNotAllowed, "%q has no region this platform allows: %s", pl.Region, strings.Join(pol.Regions, ", "))
		}
		if pl.Zone != "" {
			switch {
			case !metroOK || metroOf[pl.Zone] != pl.Region:
				add("placement.zone", provider.ReasonZoneNotInRegion, "%q is not a region of metro %q: want one of %s", pl.Zone, pl.Region, strings.Join(metros[pl.Region], ", "))
			case len(pol.Regions) > 0 && !slices.Contains(pol.Regions, pl.Zone):
				add("placement.zone", provider.ReasonZoneNotAllowed, "%q is not a region this platform allows: %s", pl.Zone, strings.Join(pol.Regions, ", "))
			}
		}
		switch size := cmp.Or(pl.MachineType, DefaultSize); {
		case !slugRE.MatchString(size):
			add("placement.machineType", provider.ReasonMachineTypeInvalid, "%q is not a size slug such as %s", size, DefaultSize)
		case !slices.Contains(pol.Sizes, size):
			add("placement.machineType", provider.ReasonMachineTypeNotAllowed, "%q is not a size this platform allows: %s", size, strings.Join(pol.Sizes, ", "))
		}
		switch im := cmp.Or(pl.Image, DefaultImage); {
		case !slugRE.MatchString(im):
			add("placement.image", provider.ReasonImageInvalid, "%q is not a DigitalOcean image slug such as %s", im, DefaultImage)
		case !slices.Contains(pol.Images, im):
			add("placement.image", provider.ReasonImageNotAllowed, "%q is not an image this platform allows: %s", im, strings.Join(pol.Images, ", "))
		}
		if n := len(req.CloudInit); n > MaxUserDataBytes {
			add("cloudInit", provider.ReasonCloudInitTooLarge, "is %d bytes, over the %d-byte limit of a Droplet's user-data", n, MaxUserDataBytes)
		}
		return out
	}
}
