package digitalocean_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/digitalocean"
)

// TestDigitalOceanPolicyCheck: the configuration's policy is itself
// checked, so a typo stops the start rather than refusing every request.
func TestDigitalOceanPolicyCheck(t *testing.T) {
	ok := digitalocean.Policy{Sizes: digitalocean.DefaultAllowedSizes, Images: digitalocean.DefaultAllowedImages}
	with := func(change func(*digitalocean.Policy)) digitalocean.Policy { p := ok; change(&p); return p }
	cases := map[string]struct {
		reason string
		pol    digitalocean.Policy
		want   string
	}{
		"Defaults":       {reason: "the defaults are a valid policy", pol: ok},
		"Regions":        {reason: "regions by slug", pol: with(func(p *digitalocean.Policy) { p.Regions = []string{"nyc3", "ams3"} })},
		"ClosedRegion":   {reason: "a region that takes no new Droplets", pol: with(func(p *digitalocean.Policy) { p.Regions = []string{"nyc2"} }), want: `region "nyc2" is not a DigitalOcean region that takes new Droplets (ams3, blr1, fra1, lon1, nyc1, nyc3, sfo2, sfo3, sgp1, syd1, tor1)`},
		"NoDefaultSize":  {reason: "Create's default must be allowed", pol: with(func(p *digitalocean.Policy) { p.Sizes = []string{"s-2vcpu-2gb"} }), want: "does not allow s-1vcpu-1gb, the size of a placement that names none"},
		"BadSize":        {reason: "a size's form", pol: with(func(p *digitalocean.Policy) { p.Sizes = []string{"s-1vcpu-1gb", "S_2"} }), want: `size "S_2" is not a size slug such as s-1vcpu-1gb`},
		"NoDefaultImage": {reason: "Create's default must be allowed", pol: with(func(p *digitalocean.Policy) { p.Images = []string{"debian-12-x64"} }), want: "does not allow debian-13-x64, the image of a placement that names none"},
		"NoImages":       {reason: "an empty list allows nothing", pol: with(func(p *digitalocean.Policy) { p.Images = nil }), want: "allows no image"},
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

// TestDigitalOceanValidator: each rule of a placement on DigitalOcean,
// refused just outside it and taken just inside, and a warm pool refused.
func TestDigitalOceanValidator(t *testing.T) {
	def := digitalocean.Validator(digitalocean.Policy{Sizes: digitalocean.DefaultAllowedSizes, Images: digitalocean.DefaultAllowedImages})
	newYork := digitalocean.Validator(digitalocean.Policy{Regions: []string{"nyc3"}, Sizes: digitalocean.DefaultAllowedSizes, Images: digitalocean.DefaultAllowedImages})
	pl := func(region, zone, size, image string) provider.ValidateRequest {
		return provider.ValidateRequest{Placement: provider.Placement{Region: region, Zone: zone, MachineType: size, Image: image}}
	}
	cases := map[string]struct {
		reason   string
		validate provider.Validator
		req      provider.ValidateRequest
		want     []string // field:reason
	}{
		"Defaults":          {reason: "a metro alone takes the defaults", validate: def, req: pl("nyc", "", "", "")},
		"Region":            {reason: "a region of the metro", validate: def, req: pl("ams", "ams3", "s-2vcpu-2gb", "debian-12-x64")},
		"RegionAsMetro":     {reason: "a region slug where the metro goes says which is which", validate: def, req: pl("nyc3", "", "", ""), want: []string{"placement.region:REGION_INVALID"}},
		"GCERegion":         {reason: "another cloud's region", validate: def, req: pl("us-central1", "", "", ""), want: []string{"placement.region:REGION_INVALID"}},
		"RegionElsewhere":   {reason: "a region of another metro", validate: def, req: pl("nyc", "ams3", "", ""), want: []string{"placement.zone:ZONE_NOT_IN_REGION"}},
		"ClosedRegion":      {reason: "a region that takes no new Droplets", validate: def, req: pl("nyc", "nyc2", "", ""), want: []string{"placement.zone:ZONE_NOT_IN_REGION"}},
		"ZoneNotAllowed":    {reason: "outside the operator's regions", validate: newYork, req: pl("nyc", "nyc1", "", ""), want: []string{"placement.zone:ZONE_NOT_ALLOWED"}},
		"MetroNotAllowed":   {reason: "no allowed region there", validate: newYork, req: pl("sfo", "", "", ""), want: []string{"placement.region:REGION_NOT_ALLOWED"}},
		"SizeNotAllowed":    {reason: "a big size", validate: def, req: pl("nyc", "", "c-32", ""), want: []string{"placement.machineType:MACHINE_TYPE_NOT_ALLOWED"}},
		"SizeForm":          {reason: "not a slug", validate: def, req: pl("nyc", "", "S 1", ""), want: []string{"placement.machineType:MACHINE_TYPE_INVALID"}},
		"HetznerImage":      {reason: "another cloud's image", validate: def, req: pl("nyc", "", "", "debian-13"), want: []string{"placement.image:IMAGE_NOT_ALLOWED"}},
		"GCEImage":          {reason: "a path is no slug", validate: def, req: pl("nyc", "", "", "projects/debian-cloud/global/images/family/debian-13"), want: []string{"placement.image:IMAGE_INVALID"}},
		"CloudInitTooLarge": {reason: "over a Droplet's user-data", validate: def, req: provider.ValidateRequest{Placement: provider.Placement{Region: "nyc"}, CloudInit: strings.Repeat("x", digitalocean.MaxUserDataBytes+1)}, want: []string{"cloudInit:CLOUD_INIT_TOO_LARGE"}},
		"CloudInitAtLimit":  {reason: "at the limit", validate: def, req: provider.ValidateRequest{Placement: provider.Placement{Region: "nyc"}, CloudInit: strings.Repeat("x", digitalocean.MaxUserDataBytes)}},
		"Pool":              {reason: "a warm pool needs Reconfigure", validate: def, req: provider.ValidateRequest{Placement: provider.Placement{Region: "nyc"}, Pool: true}, want: []string{"provider:PROVIDER_CANNOT_RECONFIGURE"}},
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

// TestDigitalOceanCannotReconfigure: the provider is no Reconfigurer,
// which is why its validator refuses pools; the two must not drift apart.
func TestDigitalOceanCannotReconfigure(t *testing.T) {
	var p provider.Provider = &digitalocean.Provider{}
	if _, ok := provider.AsReconfigurer(p); ok {
		t.Fatal("the digitalocean provider is a Reconfigurer: its validator must stop refusing warm pools")
	}
	if provider.PollInterval(p) != digitalocean.DefaultPollInterval {
		t.Errorf("the provider is not Polled at %v: its Droplets cannot call home", digitalocean.DefaultPollInterval)
	}
}

// TestFirewallCheck: the firewall's settings are checked at New, so a
// deployment cannot start its Droplets open to everything or unaskable.
func TestFirewallCheck(t *testing.T) {
	ok := digitalocean.Firewall{ProxyPorts: []string{"3128", "3129-3130"}, SourceRanges: []string{"0.0.0.0/0"}, StatusSourceRanges: []string{"198.51.100.7/32"}}
	with := func(change func(*digitalocean.Firewall)) digitalocean.Firewall { f := ok; change(&f); return f }
	cases := map[string]struct {
		fw   digitalocean.Firewall
		want string
	}{
		"OK":           {fw: ok, want: "<nil>"},
		"NoPort":       {fw: with(func(f *digitalocean.Firewall) { f.ProxyPorts = nil }), want: "opens no proxy port"},
		"BadPort":      {fw: with(func(f *digitalocean.Firewall) { f.ProxyPorts = []string{"70000"} }), want: `port "70000" is not a TCP port or range such as 3128 or 3128-3130`},
		"BackRange":    {fw: with(func(f *digitalocean.Firewall) { f.ProxyPorts = []string{"3130-3128"} }), want: `port "3130-3128" is not a TCP port or range such as 3128 or 3128-3130`},
		"NoSource":     {fw: with(func(f *digitalocean.Firewall) { f.SourceRanges = nil }), want: "admits no source range"},
		"NoStatus":     {fw: with(func(f *digitalocean.Firewall) { f.StatusSourceRanges = nil }), want: "admits no status source range (the functions' fixed egress): the control plane could not ask a Droplet whether it serves"},
		"BadCIDR":      {fw: with(func(f *digitalocean.Firewall) { f.SourceRanges = []string{"10.0.0.0/33"} }), want: `range "10.0.0.0/33" is not a CIDR`},
		"StatusNoCIDR": {fw: with(func(f *digitalocean.Firewall) { f.StatusSourceRanges = []string{"198.51.100.7"} }), want: `range "198.51.100.7" is not a CIDR`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, fmt.Sprint(tc.fw.Check())); diff != "" {
				t.Errorf("Check (-want +got):\n%s", diff)
			}
		})
	}
}
