package hetzner

import (
	"fmt"
	"maps"
	"regexp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/placement"
)

// The defaults of a placement. cx23 is the smallest shared-vCPU x86 type
// Hetzner sells (2 vCPU, 4 GB, 20 TB of traffic a month included): x86
// because the proxy engine is built for linux/amd64 (make package), shared
// because a proxy is bound by the network, not the CPU. It is sold in the
// EU locations only; a US or Singapore placement names a CPX type
// (cpx22), which the default policy allows too.
const (
	DefaultServerType = "cx23"
	DefaultImage      = "debian-13"
	// MaxUserDataBytes is Hetzner's limit on a server's user-data, where a
	// spec's cloud-init goes ("This field is limited to 32KiB").
	MaxUserDataBytes = 32 << 10
)

// The operator's defaults of Policy: the small shared types, and the
// images the default bootstrap is proven on (Debian 13, the default, and
// Debian 12).
var (
	DefaultAllowedServerTypes = []string{"cx23", "cx33", "cpx22"}
	DefaultAllowedImages      = []string{DefaultImage, "debian-12"}
)

// networkZones are Hetzner's network zones and their locations: a
// placement's region and its zones.
var networkZones = placement.NewGroups("Hetzner", "network zone", "location", map[string][]string{
	"eu-central":   {"fsn1", "nbg1", "hel1"},
	"us-east":      {"ash"},
	"us-west":      {"hil"},
	"ap-southeast": {"sin"},
})

// euOnly are the server types Hetzner sells in eu-central only.
var euOnly = map[string]bool{"cx23": true, "cx33": true, "cx43": true, "cx53": true}

// networkZoneOf is the network zone of each location.
var networkZoneOf = networkZones.RegionOf()

// Locations returns every Hetzner location with its network zone (the
// CLI lists them).
func Locations() map[string]string { return maps.Clone(networkZoneOf) }

func locationList() string { return networkZones.ZoneList() }
func zoneList() string     { return networkZones.RegionList() }

// nameRE is the form of a server type or image name.
var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$`)

// Policy is what the operator lets tenants ask of Hetzner (internal/app
// reads it from HETZNER_ALLOWED_*). It is checked by Validator, in the
// API, before anything is stored.
type Policy struct {
	// Locations a placement may name or be given; empty allows every
	// location.
	Locations []string
	// ServerTypes a placement may name; it must hold DefaultServerType.
	ServerTypes []string
	// Images a placement may name, by Hetzner's image names; it must hold
	// DefaultImage.
	Images []string
}

// Check validates the policy itself, for the configuration: every entry
// of its form, and the defaults allowed. The error names the entry.
func (pol Policy) Check() error {
	for _, l := range pol.Locations {
		if _, ok := networkZoneOf[l]; !ok {
			return fmt.Errorf("location %q is not a Hetzner location (%s)", l, locationList())
		}
	}
	return placement.Check(pol.lists())
}

// lists are the policy's lists of server types and images, in Hetzner's words.
func (pol Policy) lists() (serverTypes, images placement.Names) {
	serverTypes = placement.Names{Field: placement.MachineType, Noun: "server type", Default: DefaultServerType, Allowed: pol.ServerTypes,
		Valid: nameRE.MatchString, Malformed: "is not a server type name such as " + DefaultServerType}
	images = placement.Names{Field: placement.Image, Noun: "image", Default: DefaultImage, Allowed: pol.Images,
		Valid: nameRE.MatchString, Malformed: "is not a Hetzner image name such as " + DefaultImage, MalformedEntry: "is not an image name such as " + DefaultImage}
	return serverTypes, images
}

// Validator returns the rules of a placement on Hetzner under the
// operator's policy, which Check has accepted: the region is a network
// zone with an allowed location, the zone one of its allowed locations,
// the server type and image allowed (a placement that names none is held
// to the defaults Create uses), a server type sold there, cloud-init
// within the user-data limit; and no warm pool, whose claims need a
// provider.Reconfigurer, which this provider is not.
func Validator(pol Policy) provider.Validator {
	types, images := pol.lists()
	return func(req provider.ValidateRequest) []provider.Violation {
		var v placement.Violations
		v.NoWarmPool(req, Type, "server", "its user-data is fixed at create")
		pl := req.Placement
		v.CheckRegion(networkZones, pl.Region, pol.Locations)
		v.CheckZone(networkZones, pl.Region, pl.Zone, pol.Locations)
		if st, ok := v.Choose(types, pl.MachineType); ok && networkZones.Has(pl.Region) && euOnly[st] && pl.Region != "eu-central" {
			v.Add("placement.machineType", provider.ReasonMachineTypeNotInRegion, "%q is sold in eu-central only: name a CPX type such as cpx22 for %s", st, pl.Region)
		}
		v.Choose(images, pl.Image)
		v.CloudInit(req.CloudInit, MaxUserDataBytes, "a Hetzner server's user-data")
		return v
	}
}
