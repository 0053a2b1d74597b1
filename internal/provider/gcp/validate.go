package gcp

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/placement"
)

// MaxMetadataValueBytes is Compute Engine's limit on one metadata value,
// where a spec's cloud-init goes (user-data).
const MaxMetadataValueBytes = 256 << 10

// The operator's defaults of Policy: the small shared-core types, and the
// images the default bootstrap is proven on (make image-test boots both):
// Debian 13, the default, and Debian 12.
var (
	DefaultAllowedMachineTypes = []string{"e2-micro", "e2-small", "e2-medium"}
	DefaultAllowedImages       = []string{DefaultImage, "projects/debian-cloud/global/images/family/debian-12"}
)

// Policy is what the operator lets tenants ask of Compute Engine
// (internal/app reads it from GCP_ALLOWED_*). It is checked by Validator,
// in the API, before anything is stored.
type Policy struct {
	// Regions a placement may name; empty allows every region.
	Regions []string
	// MachineTypes a placement may name. A placement that names none gets
	// DefaultMachineType, which must be allowed too.
	MachineTypes []string
	// Images a placement may name: projects/P/global/images/NAME,
	// projects/P/global/images/family/FAMILY, or projects/P/global/images/*
	// for every image of project P. A placement that names none gets
	// DefaultImage, which must be allowed too.
	Images []string
	// StackType is GCP_STACK_TYPE: only a dual-stack VM (StackDual) gets
	// an IPv6 prefix, so a spec whose ipv6Egress needs one is refused
	// under any other ("", the default, is StackIPv4).
	StackType string
}

// IsName reports whether s is a GCE resource name: a lowercase letter,
// then up to 62 lowercase letters, digits or '-', not ending in '-'.
func IsName(s string) bool { return nameRE.MatchString(s) }

// image is an image reference split into its parts: the project, and the
// image name or family ("*" for every image of the project, in a policy).
type image struct {
	project, name string
	family        bool
}

// computeURL is the prefix of an image given as a full Compute API URL.
const computeURL = "https://www.googleapis.com/compute/v1/"

// parseImage reads projects/P/global/images/NAME or
// projects/P/global/images/family/FAMILY, optionally as a full Compute API
// URL; wildcard allows projects/P/global/images/* (a policy's form).
func parseImage(s string, wildcard bool) (image, bool) {
	parts := strings.Split(strings.TrimPrefix(s, computeURL), "/")
	if len(parts) < 5 || parts[0] != "projects" || !projectRE.MatchString(parts[1]) || parts[2] != "global" || parts[3] != "images" {
		return image{}, false
	}
	im := image{project: parts[1]}
	switch {
	case len(parts) == 5 && wildcard && parts[4] == "*":
		im.name = "*"
	case len(parts) == 5 && IsName(parts[4]):
		im.name = parts[4]
	case len(parts) == 6 && parts[4] == "family" && IsName(parts[5]):
		im.name, im.family = parts[5], true
	default:
		return image{}, false
	}
	return im, true
}

// allows reports whether the policy entry e admits image im.
func (e image) allows(im image) bool {
	return e.project == im.project && (e.name == "*" || (e.name == im.name && e.family == im.family))
}

// Check validates the policy itself, for the configuration: every entry
// of its form, and the provider's defaults allowed. The error names the
// entry.
func (pol Policy) Check() error {
	for _, r := range pol.Regions {
		if !regionRE.MatchString(r) {
			return fmt.Errorf("region %q is not a region name such as us-central1", r)
		}
	}
	if err := pol.machineTypes().Check(); err != nil {
		return err
	}
	if len(pol.Images) == 0 {
		return fmt.Errorf("allows no image")
	}
	for _, im := range pol.Images {
		if _, ok := parseImage(im, true); !ok {
			return fmt.Errorf("image %q is not projects/PROJECT/global/images/NAME, …/images/family/FAMILY or …/images/*", im)
		}
	}
	if !pol.allowsImage(mustImage(DefaultImage)) {
		return fmt.Errorf("does not allow %s, the image of a placement that names none", DefaultImage)
	}
	return nil
}

// machineTypes is the policy's list of machine types, in Compute
// Engine's words. Its images are not such a list: an entry may allow a
// whole project's (allowsImage).
func (pol Policy) machineTypes() placement.Names {
	return placement.Names{Field: placement.MachineType, Noun: "machine type", Default: DefaultMachineType, Allowed: pol.MachineTypes,
		Valid: IsName, Malformed: "is not a machine type name such as e2-micro", MalformedEntry: "is not a GCE name such as e2-micro"}
}

func mustImage(s string) image {
	im, ok := parseImage(s, false)
	if !ok {
		panic("gcp: not an image: " + s)
	}
	return im
}

func (pol Policy) allowsImage(im image) bool {
	for _, e := range pol.Images {
		if entry, ok := parseImage(e, true); ok && entry.allows(im) {
			return true
		}
	}
	return false
}

// Validator returns the rules of a placement on Compute Engine under the
// operator's policy, which Check has accepted: the region, zone,
// machine-type and image forms, what the policy allows of each (a
// placement that names no machine type or image is held to the defaults
// Create uses), and the metadata value limit on cloud-init.
func Validator(pol Policy) provider.Validator {
	machineTypes := pol.machineTypes()
	return func(req provider.ValidateRequest) []provider.Violation {
		var v placement.Violations
		if req.IPv6Prefix && pol.StackType != StackDual {
			v.Add("ipv6Egress", provider.ReasonProviderNoIPv6Prefix,
				"gcp gives a VM an IPv6 prefix (a /96) only on a dual-stack interface, and this platform's VMs are %s (GCP_STACK_TYPE): use single or off, or ask the operator for %s", cmp.Or(pol.StackType, StackIPv4), StackDual)
		}
		pl := req.Placement
		regionOK := regionRE.MatchString(pl.Region)
		switch {
		case pl.Region == "":
			// The API's neutral rules require one; nothing more to say.
		case !regionOK:
			v.Add("placement.region", provider.ReasonRegionInvalid, "%q is not a region name such as us-central1", pl.Region)
		case len(pol.Regions) > 0 && !slices.Contains(pol.Regions, pl.Region):
			v.Add("placement.region", provider.ReasonRegionNotAllowed, "%q is not a region this platform allows: %s", pl.Region, strings.Join(pol.Regions, ", "))
		}
		// The forms are ids.go's: a region (regionRE), a zone of it
		// (zoneRE, and regionOf), machine types and images as GCE names.
		if pl.Zone != "" && !(regionOK && zoneRE.MatchString(pl.Zone) && regionOf(pl.Zone) == pl.Region) {
			v.Add("placement.zone", provider.ReasonZoneNotInRegion, "zone %q is not in region %q: want %s-a, %s-b, …", pl.Zone, pl.Region, pl.Region, pl.Region)
		}
		v.Choose(machineTypes, pl.MachineType)
		name := cmp.Or(pl.Image, DefaultImage)
		if im, ok := parseImage(name, false); !ok {
			v.Add("placement.image", provider.ReasonImageInvalid, "%q is not an image: want projects/PROJECT/global/images/NAME or projects/PROJECT/global/images/family/FAMILY", name)
		} else if !pol.allowsImage(im) {
			v.Add("placement.image", provider.ReasonImageNotAllowed, "%q is not an image this platform allows: %s", name, strings.Join(pol.Images, ", "))
		}
		v.CloudInit(req.CloudInit, MaxMetadataValueBytes, "a Compute Engine metadata value")
		return v
	}
}
