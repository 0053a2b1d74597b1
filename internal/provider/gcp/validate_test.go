package gcp_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/gcp"
)

// TestGCPPolicyCheck: the configuration's policy is itself checked, so a
// typo stops the start rather than refusing every request.
func TestGCPPolicyCheck(t *testing.T) {
	ok := gcp.Policy{MachineTypes: gcp.DefaultAllowedMachineTypes, Images: gcp.DefaultAllowedImages}
	with := func(change func(*gcp.Policy)) gcp.Policy { p := ok; change(&p); return p }
	cases := map[string]struct {
		reason string
		pol    gcp.Policy
		want   string
	}{
		"Defaults":        {reason: "the defaults are a valid policy", pol: ok},
		"BadRegion":       {reason: "a region's form", pol: with(func(p *gcp.Policy) { p.Regions = []string{"US"} }), want: `region "US" is not a region name such as us-central1`},
		"BadMachineType":  {reason: "a machine type's form", pol: with(func(p *gcp.Policy) { p.MachineTypes = []string{"e2-micro", "E2"} }), want: `machine type "E2" is not a GCE name such as e2-micro`},
		"NoDefaultType":   {reason: "Create's default must be allowed", pol: with(func(p *gcp.Policy) { p.MachineTypes = []string{"e2-small"} }), want: "does not allow e2-micro, the machine type of a placement that names none"},
		"BadImage":        {reason: "an image's form", pol: with(func(p *gcp.Policy) { p.Images = []string{gcp.DefaultImage, "debian"} }), want: `image "debian" is not projects/PROJECT/global/images/NAME, …/images/family/FAMILY or …/images/*`},
		"NoDefaultImage":  {reason: "Create's default must be allowed", pol: with(func(p *gcp.Policy) { p.Images = []string{"projects/acme-images/global/images/*"} }), want: "does not allow " + gcp.DefaultImage + ", the image of a placement that names none"},
		"NoMachineTypes":  {reason: "an empty list allows nothing", pol: with(func(p *gcp.Policy) { p.MachineTypes = nil }), want: "allows no machine type"},
		"WildcardProject": {reason: "a wildcard of Debian's project", pol: with(func(p *gcp.Policy) { p.Images = []string{"projects/debian-cloud/global/images/*"} })},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := fmt.Sprint(tc.pol.Check())
			if tc.want == "" {
				tc.want = "<nil>"
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nCheck (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestValidator: each rule of a placement on Compute Engine, refused
// just outside it and taken just inside, under the default policy and a
// region allowlist.
func TestValidator(t *testing.T) {
	def := gcp.Validator(gcp.Policy{MachineTypes: gcp.DefaultAllowedMachineTypes, Images: gcp.DefaultAllowedImages})
	europe := gcp.Validator(gcp.Policy{Regions: []string{"europe-west4"}, MachineTypes: gcp.DefaultAllowedMachineTypes, Images: gcp.DefaultAllowedImages})
	dual := gcp.Validator(gcp.Policy{MachineTypes: gcp.DefaultAllowedMachineTypes, Images: gcp.DefaultAllowedImages, StackType: gcp.StackDual})
	v6 := provider.ValidateRequest{Placement: provider.Placement{Region: "us-central1"}, IPv6Prefix: true}
	pl := func(region, zone, machineType, image string) provider.ValidateRequest {
		return provider.ValidateRequest{Placement: provider.Placement{Region: region, Zone: zone, MachineType: machineType, Image: image}}
	}
	cases := map[string]struct {
		reason   string
		validate provider.Validator
		req      provider.ValidateRequest
		want     []string // field:reason
	}{
		"Defaults":           {reason: "a region alone takes the defaults", validate: def, req: pl("us-central1", "", "", "")},
		"RegionForm":         {reason: "not a region", validate: def, req: pl("uscentral", "", "", ""), want: []string{"placement.region:REGION_INVALID"}},
		"RegionNotAllowed":   {reason: "outside the allowlist", validate: europe, req: pl("us-central1", "", "", ""), want: []string{"placement.region:REGION_NOT_ALLOWED"}},
		"RegionAllowed":      {reason: "inside the allowlist", validate: europe, req: pl("europe-west4", "europe-west4-a", "", "")},
		"ZoneElsewhere":      {reason: "a zone of another region", validate: def, req: pl("us-central1", "us-east1-b", "", ""), want: []string{"placement.zone:ZONE_NOT_IN_REGION"}},
		"ZonePrefixOnly":     {reason: "us-central1-a is not in us-central", validate: def, req: pl("us-central", "us-central1-a", "", ""), want: []string{"placement.region:REGION_INVALID", "placement.zone:ZONE_NOT_IN_REGION"}},
		"MachineTypeBig":     {reason: "not allowed", validate: def, req: pl("us-central1", "", "n2-highmem-128", ""), want: []string{"placement.machineType:MACHINE_TYPE_NOT_ALLOWED"}},
		"MachineTypeForm":    {reason: "not a name", validate: def, req: pl("us-central1", "", "e2_micro", ""), want: []string{"placement.machineType:MACHINE_TYPE_INVALID"}},
		"MachineTypeSmall":   {reason: "allowed", validate: def, req: pl("us-central1", "", "e2-small", "")},
		"ImageForeign":       {reason: "another project's family", validate: def, req: pl("us-central1", "", "", "projects/evil-images/global/images/family/debian-12"), want: []string{"placement.image:IMAGE_NOT_ALLOWED"}},
		"ImageByName":        {reason: "an image, not the family", validate: def, req: pl("us-central1", "", "", "projects/debian-cloud/global/images/debian-12-bookworm-v20250101"), want: []string{"placement.image:IMAGE_NOT_ALLOWED"}},
		"ImageForm":          {reason: "not an image path", validate: def, req: pl("us-central1", "", "", "projects/debian-cloud/images/debian-12"), want: []string{"placement.image:IMAGE_INVALID"}},
		"ImageFamilyURL":     {reason: "the default family as a URL", validate: def, req: pl("us-central1", "", "", "https://www.googleapis.com/compute/v1/projects/debian-cloud/global/images/family/debian-12")},
		"CloudInitTooLarge":  {reason: "over a metadata value", validate: def, req: provider.ValidateRequest{Placement: provider.Placement{Region: "us-central1"}, CloudInit: strings.Repeat("x", gcp.MaxMetadataValueBytes+1)}, want: []string{"cloudInit:CLOUD_INIT_TOO_LARGE"}},
		"IPv6PrefixIPv4Only": {reason: "an IPv4-only VM gets no prefix: the egress that needs one is refused", validate: def, req: v6, want: []string{"ipv6Egress:PROVIDER_GIVES_NO_IPV6_PREFIX"}},
		"IPv6PrefixDual":     {reason: "a dual-stack VM's /96", validate: dual, req: v6},
		"CloudInitAtLimit":   {reason: "at the limit", validate: def, req: provider.ValidateRequest{Placement: provider.Placement{Region: "us-central1"}, CloudInit: strings.Repeat("x", gcp.MaxMetadataValueBytes)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, v := range tc.validate(tc.req) {
				if v.Description == "" {
					t.Errorf("%s has no description", v.Field)
				}
				got = append(got, v.Field+":"+v.Reason)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nviolations (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
