package azure

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/placement"
)

// The defaults of a placement. Standard_B1s is the smallest x86 size Azure
// sells in nearly every location (1 vCPU, 1 GiB, burstable): x86 because
// the proxy engine is built for linux/amd64 (make package), burstable
// because a proxy is bound by the network, not the CPU. The image is
// Debian 13's, by its URN PUBLISHER:OFFER:SKU:VERSION (Debian's own images
// in the Marketplace, Generation 2).
const (
	DefaultSize  = "Standard_B1s"
	DefaultImage = "Debian:debian-13:13-gen2:latest"
	// MaxUserDataBytes is the most user-data a VM can take, before its
	// base64: Azure takes at most 64 KiB of base64 in userData ("The
	// maximum size of the field is 64 KB", Azure's user data page) and
	// 65,535 bytes in customData, of which base64 is four bytes for three.
	MaxUserDataBytes = 65535 / 4 * 3
)

// The operator's defaults of Policy.
var (
	DefaultAllowedSizes  = []string{DefaultSize}
	DefaultAllowedImages = []string{DefaultImage}
)

// zonesOf are the availability zones of the locations that have them,
// from Microsoft's list of regions with availability zones (the Azure
// docs' "Azure regions with availability zone support", as read for this
// provider in 2025). A location not here is made without a zone: its VM
// is regional, and a capacity error there has no other zone to move to.
var zonesOf = func() map[string][]string {
	three := []string{"1", "2", "3"}
	m := map[string][]string{}
	for _, loc := range []string{
		"australiaeast", "brazilsouth", "canadacentral", "centralindia", "centralus", "eastasia",
		"eastus", "eastus2", "francecentral", "germanywestcentral", "israelcentral", "italynorth",
		"japaneast", "japanwest", "koreacentral", "mexicocentral", "newzealandnorth", "northeurope",
		"norwayeast", "polandcentral", "qatarcentral", "southafricanorth", "southcentralus",
		"southeastasia", "spaincentral", "swedencentral", "switzerlandnorth", "uaenorth", "uksouth",
		"westeurope", "westus2", "westus3",
	} {
		m[loc] = three
	}
	return m
}()

// Zones are the zones of location as placements name them
// (LOCATION-N, as Kubernetes on Azure labels its nodes), none for a
// location without zones.
func Zones(location string) []string {
	var out []string
	for _, z := range zonesOf[location] {
		out = append(out, location+"-"+z)
	}
	return out
}

// azureZone is the zone ARM takes ("1") of a placement's ("westeurope-1"),
// reporting false for a zone that is not location's.
func azureZone(location, zone string) (string, bool) {
	n, ok := strings.CutPrefix(zone, location+"-")
	return n, ok && slices.Contains(zonesOf[location], n)
}

var (
	locationRE = regexp.MustCompile(`^[a-z][a-z0-9]{1,40}$`)
	sizeRE     = regexp.MustCompile(`^(Standard|Basic)_[A-Za-z0-9_]{1,60}$`)
	// imageRE is a Marketplace image's URN: publisher, offer, SKU and a
	// version (latest, or numbers).
	imageRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}:[A-Za-z0-9][A-Za-z0-9._-]{0,63}:[A-Za-z0-9][A-Za-z0-9._-]{0,63}:(latest|[0-9]+(\.[0-9]+){0,3})$`)
)

// Policy is what the operator lets tenants ask of Azure (AZURE_LOCATIONS,
// AZURE_VM_SIZES, AZURE_IMAGES). It is checked by Validator, in the API,
// before anything is stored.
type Policy struct {
	// Locations a placement may name: required, since the collector
	// lists them and each has a subnet.
	Locations []string
	// Sizes a placement may name; it must hold DefaultSize.
	Sizes []string
	// Images a placement may name, by URN; it must hold DefaultImage.
	Images []string
}

// Check validates the policy itself, for the configuration: every entry
// of its form, and the defaults allowed. The error names the entry.
func (pol Policy) Check() error {
	if len(pol.Locations) == 0 {
		return fmt.Errorf("allows no location: name the Azure locations proxies may use, such as westeurope,eastus")
	}
	for _, l := range pol.Locations {
		if !locationRE.MatchString(l) {
			return fmt.Errorf("location %q is not an Azure location name (lower-case letters and digits, such as westeurope)", l)
		}
	}
	return placement.Check(pol.lists())
}

// lists are the policy's lists of VM sizes and images, in Azure's words.
func (pol Policy) lists() (sizes, images placement.Names) {
	sizes = placement.Names{Field: placement.MachineType, Noun: "VM size", DefaultNoun: "size", Default: DefaultSize, Allowed: pol.Sizes,
		Valid: sizeRE.MatchString, Malformed: "is not an Azure VM size such as " + DefaultSize, MalformedEntry: "is not an Azure size name such as " + DefaultSize}
	images = placement.Names{Field: placement.Image, Noun: "image", Default: DefaultImage, Allowed: pol.Images,
		Valid: imageRE.MatchString, Malformed: "is not a Marketplace image URN PUBLISHER:OFFER:SKU:VERSION such as " + DefaultImage}
	return sizes, images
}

// Validator returns the rules of a placement on Azure under the operator's
// policy, which Check has accepted: the region is an allowed location, the
// zone one of its availability zones (LOCATION-N), the size and image
// allowed (a placement that names none is held to the defaults Create
// uses), cloud-init within the user-data limit. Warm pools are served:
// their VMs are claimed by Reconfigure, which writes userData.
func Validator(pol Policy) provider.Validator {
	sizes, images := pol.lists()
	return func(req provider.ValidateRequest) []provider.Violation {
		var v placement.Violations
		pl := req.Placement
		switch {
		case pl.Region == "":
		case !locationRE.MatchString(pl.Region):
			v.Add("placement.region", provider.ReasonRegionInvalid, "%q is not an Azure location name (lower-case letters and digits, such as westeurope)", pl.Region)
		case !slices.Contains(pol.Locations, pl.Region):
			v.Add("placement.region", provider.ReasonRegionNotAllowed, "%q is not a location this platform allows: %s", pl.Region, strings.Join(pol.Locations, ", "))
		}
		if pl.Zone != "" {
			if _, ok := azureZone(pl.Region, pl.Zone); !ok {
				want := "none: the location has no availability zones on this platform; name no zone"
				if zs := Zones(pl.Region); len(zs) > 0 {
					want = "one of " + strings.Join(zs, ", ")
				}
				v.Add("placement.zone", provider.ReasonZoneNotInRegion, "%q is not an availability zone of %q: want %s", pl.Zone, pl.Region, want)
			}
		}
		v.Choose(sizes, pl.MachineType)
		v.Choose(images, pl.Image)
		v.CloudInit(req.CloudInit, MaxUserDataBytes, "an Azure VM's user data (64 KiB once base64-encoded)")
		return v
	}
}
