package hetzner

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/egress-proxies/egress/internal/provider"
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
var networkZones = map[string][]string{
	"eu-central":   {"fsn1", "nbg1", "hel1"},
	"us-east":      {"ash"},
	"us-west":      {"hil"},
	"ap-southeast": {"sin"},
}

// euOnly are the server types Hetzner sells in eu-central only.
var euOnly = map[string]bool{"cx23": true, "cx33": true, "cx43": true, "cx53": true}

// networkZoneOf is the network zone of each location.
var networkZoneOf = func() map[string]string {
	m := map[string]string{}
	for z, locs := range networkZones {
		for _, l := range locs {
			m[l] = z
		}
	}
	return m
}()

// Locations returns every Hetzner location with its network zone (the
// CLI lists them).
func Locations() map[string]string { return maps.Clone(networkZoneOf) }

func locationList() string { return strings.Join(slices.Sorted(maps.Keys(networkZoneOf)), ", ") }
func zoneList() string     { return strings.Join(slices.Sorted(maps.Keys(networkZones)), ", ") }

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
	if len(pol.ServerTypes) == 0 {
		return fmt.Errorf("allows no server type")
	}
	for _, t := range pol.ServerTypes {
		if !nameRE.MatchString(t) {
			return fmt.Errorf("server type %q is not a server type name such as %s", t, DefaultServerType)
		}
	}
	if !slices.Contains(pol.ServerTypes, DefaultServerType) {
		return fmt.Errorf("does not allow %s, the server type of a placement that names none", DefaultServerType)
	}
	if len(pol.Images) == 0 {
		return fmt.Errorf("allows no image")
	}
	for _, im := range pol.Images {
		if !nameRE.MatchString(im) {
			return fmt.Errorf("image %q is not an image name such as %s", im, DefaultImage)
		}
	}
	if !slices.Contains(pol.Images, DefaultImage) {
		return fmt.Errorf("does not allow %s, the image of a placement that names none", DefaultImage)
	}
	return nil
}

// allowed are the locations of a network zone the policy allows.
func allowed(zone string, policy []string) []string {
	var out []string
	for _, l := range networkZones[zone] {
		if len(policy) == 0 || slices.Contains(policy, l) {
			out = append(out, l)
		}
	}
	return out
}

// Validator returns the rules of a placement on Hetzner under the
// operator's policy, which Check has accepted: the region is a network
// zone with an allowed location, the zone one of its allowed locations,
// the server type and image allowed (a placement that names none is held
// to the defaults Create uses), a server type sold there, cloud-init
// within the user-data limit; and no warm pool, whose claims need a
// provider.Reconfigurer, which this provider is not.
func Validator(pol Policy) provider.Validator {
	return func(req provider.ValidateRequest) []provider.Violation {
		var out []provider.Violation
		add := func(field, reason, format string, args ...any) {
			out = append(out, provider.Violation{Field: field, Reason: reason, Description: fmt.Sprintf(format, args...)})
		}
		if req.Pool {
			add("provider", provider.ReasonProviderCannotReconfigure,
				"hetzner cannot hand a running server a new configuration (its user-data is fixed at create), so it cannot serve a warm pool, whose VMs are claimed that way; proxies on hetzner get a new server for a change instead")
		}
		pl := req.Placement
		_, zoneOK := networkZones[pl.Region]
		switch {
		case pl.Region == "":
		case !zoneOK:
			add("placement.region", provider.ReasonRegionInvalid, "%q is not a Hetzner network zone: want one of %s", pl.Region, zoneList())
		case len(allowed(pl.Region, pol.Locations)) == 0:
			add("placement.region", provider.ReasonRegionNotAllowed, "%q has no location this platform allows: %s", pl.Region, strings.Join(pol.Locations, ", "))
		}
		if pl.Zone != "" {
			switch {
			case !zoneOK || networkZoneOf[pl.Zone] != pl.Region:
				add("placement.zone", provider.ReasonZoneNotInRegion, "%q is not a location of network zone %q: want one of %s", pl.Zone, pl.Region, strings.Join(networkZones[pl.Region], ", "))
			case len(pol.Locations) > 0 && !slices.Contains(pol.Locations, pl.Zone):
				add("placement.zone", provider.ReasonZoneNotAllowed, "%q is not a location this platform allows: %s", pl.Zone, strings.Join(pol.Locations, ", "))
			}
		}
		switch st := cmp.Or(pl.MachineType, DefaultServerType); {
		case !nameRE.MatchString(st):
			add("placement.machineType", provider.ReasonMachineTypeInvalid, "%q is not a server type name such as %s", st, DefaultServerType)
		case !slices.Contains(pol.ServerTypes, st):
			add("placement.machineType", provider.ReasonMachineTypeNotAllowed, "%q is not a server type this platform allows: %s", st, strings.Join(pol.ServerTypes, ", "))
		case zoneOK && euOnly[st] && pl.Region != "eu-central":
			add("placement.machineType", provider.ReasonMachineTypeNotInRegion, "%q is sold in eu-central only: name a CPX type such as cpx22 for %s", st, pl.Region)
		}
		switch im := cmp.Or(pl.Image, DefaultImage); {
		case !nameRE.MatchString(im):
			add("placement.image", provider.ReasonImageInvalid, "%q is not a Hetzner image name such as %s", im, DefaultImage)
		case !slices.Contains(pol.Images, im):
			add("placement.image", provider.ReasonImageNotAllowed, "%q is not an image this platform allows: %s", im, strings.Join(pol.Images, ", "))
		}
		if n := len(req.CloudInit); n > MaxUserDataBytes {
			add("cloudInit", provider.ReasonCloudInitTooLarge, "is %d bytes, over the %d-byte limit of a Hetzner server's user-data", n, MaxUserDataBytes)
		}
		return out
	}
}
