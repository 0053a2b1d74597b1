package hetzner_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/hetzner"
)

// TestHetznerPolicyCheck: the configuration's policy is itself checked,
// so a typo stops the start rather than refusing every request.
func TestHetznerPolicyCheck(t *testing.T) {
	ok := hetzner.Policy{ServerTypes: hetzner.DefaultAllowedServerTypes, Images: hetzner.DefaultAllowedImages}
	with := func(change func(*hetzner.Policy)) hetzner.Policy { p := ok; change(&p); return p }
	cases := map[string]struct {
		reason string
		pol    hetzner.Policy
		want   string
	}{
		"Defaults":       {reason: "the defaults are a valid policy", pol: ok},
		"Locations":      {reason: "locations by name", pol: with(func(p *hetzner.Policy) { p.Locations = []string{"fsn1", "ash"} })},
		"BadLocation":    {reason: "a region of another cloud", pol: with(func(p *hetzner.Policy) { p.Locations = []string{"us-central1"} }), want: `location "us-central1" is not a Hetzner location (ash, fsn1, hel1, hil, nbg1, sin)`},
		"NoDefaultType":  {reason: "Create's default must be allowed", pol: with(func(p *hetzner.Policy) { p.ServerTypes = []string{"cpx22"} }), want: "does not allow cx23, the server type of a placement that names none"},
		"BadType":        {reason: "a type's form", pol: with(func(p *hetzner.Policy) { p.ServerTypes = []string{"cx23", "CX33"} }), want: `server type "CX33" is not a server type name such as cx23`},
		"NoDefaultImage": {reason: "Create's default must be allowed", pol: with(func(p *hetzner.Policy) { p.Images = []string{"debian-12"} }), want: "does not allow debian-13, the image of a placement that names none"},
		"NoImages":       {reason: "an empty list allows nothing", pol: with(func(p *hetzner.Policy) { p.Images = nil }), want: "allows no image"},
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

// TestHetznerValidator: each rule of a placement on Hetzner, refused just
// outside it and taken just inside, and a warm pool refused.
func TestHetznerValidator(t *testing.T) {
	def := hetzner.Validator(hetzner.Policy{ServerTypes: hetzner.DefaultAllowedServerTypes, Images: hetzner.DefaultAllowedImages})
	germany := hetzner.Validator(hetzner.Policy{Locations: []string{"fsn1", "nbg1"}, ServerTypes: hetzner.DefaultAllowedServerTypes, Images: hetzner.DefaultAllowedImages})
	pl := func(region, zone, serverType, image string) provider.ValidateRequest {
		return provider.ValidateRequest{Placement: provider.Placement{Region: region, Zone: zone, MachineType: serverType, Image: image}}
	}
	cases := map[string]struct {
		reason   string
		validate provider.Validator
		req      provider.ValidateRequest
		want     []string // field:reason
	}{
		"Defaults":          {reason: "a network zone alone takes the defaults", validate: def, req: pl("eu-central", "", "", "")},
		"Location":          {reason: "a location of the zone", validate: def, req: pl("eu-central", "hel1", "cx33", "debian-12")},
		"GCERegion":         {reason: "another cloud's region", validate: def, req: pl("us-central1", "", "cpx22", ""), want: []string{"placement.region:REGION_INVALID"}},
		"LocationElsewhere": {reason: "a location of another zone", validate: def, req: pl("eu-central", "ash", "", ""), want: []string{"placement.zone:ZONE_NOT_IN_REGION"}},
		"ZoneNotAllowed":    {reason: "outside the operator's locations", validate: germany, req: pl("eu-central", "hel1", "", ""), want: []string{"placement.zone:ZONE_NOT_ALLOWED"}},
		"RegionNotAllowed":  {reason: "no allowed location there", validate: germany, req: pl("us-east", "", "cpx22", ""), want: []string{"placement.region:REGION_NOT_ALLOWED"}},
		"CXInTheUS":         {reason: "CX types are sold in the EU only", validate: def, req: pl("us-east", "", "", ""), want: []string{"placement.machineType:MACHINE_TYPE_NOT_IN_REGION"}},
		"CPXInTheUS":        {reason: "a CPX type is sold there", validate: def, req: pl("us-east", "ash", "cpx22", "")},
		"TypeNotAllowed":    {reason: "a big type", validate: def, req: pl("eu-central", "", "ccx63", ""), want: []string{"placement.machineType:MACHINE_TYPE_NOT_ALLOWED"}},
		"TypeForm":          {reason: "not a name", validate: def, req: pl("eu-central", "", "CX_23", ""), want: []string{"placement.machineType:MACHINE_TYPE_INVALID"}},
		"GCEImage":          {reason: "another cloud's image", validate: def, req: pl("eu-central", "", "", "projects/debian-cloud/global/images/family/debian-13"), want: []string{"placement.image:IMAGE_INVALID"}},
		"ImageNotAllowed":   {reason: "an image the policy does not hold", validate: def, req: pl("eu-central", "", "", "ubuntu-24.04"), want: []string{"placement.image:IMAGE_NOT_ALLOWED"}},
		"CloudInitTooLarge": {reason: "over Hetzner's user-data", validate: def, req: provider.ValidateRequest{Placement: provider.Placement{Region: "eu-central"}, CloudInit: strings.Repeat("x", hetzner.MaxUserDataBytes+1)}, want: []string{"cloudInit:CLOUD_INIT_TOO_LARGE"}},
		"CloudInitAtLimit":  {reason: "at the limit", validate: def, req: provider.ValidateRequest{Placement: provider.Placement{Region: "eu-central"}, CloudInit: strings.Repeat("x", hetzner.MaxUserDataBytes)}},
		"Pool":              {reason: "a warm pool needs Reconfigure", validate: def, req: provider.ValidateRequest{Placement: provider.Placement{Region: "eu-central"}, Pool: true}, want: []string{"provider:PROVIDER_CANNOT_RECONFIGURE"}},
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

// TestHetznerCannotReconfigure: the provider is no Reconfigurer, which is
// why its validator refuses pools; the two must not drift apart.
func TestHetznerCannotReconfigure(t *testing.T) {
	var p provider.Provider = &hetzner.Provider{}
	if _, ok := provider.AsReconfigurer(p); ok {
		t.Fatal("the hetzner provider is a Reconfigurer: its validator must stop refusing warm pools")
	}
}
