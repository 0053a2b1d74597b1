package placement_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/placement"
)

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

func types(allowed ...string) placement.Names {
	return placement.Names{Field: placement.MachineType, Noun: "machine type", Default: "small", Allowed: allowed,
		Valid: nameRE.MatchString, Malformed: "is not a type name such as small", MalformedEntry: "is not a name"}
}

// TestNamesCheck: the operator's list is refused empty, with an entry of
// another form, or without the default, each error naming the entry.
func TestNamesCheck(t *testing.T) {
	images := placement.Names{Field: placement.Image, Noun: "VM image", DefaultNoun: "image", Default: "deb", Valid: nameRE.MatchString, Malformed: "is not an image name"}
	cases := map[string]struct {
		reason string
		names  placement.Names
		want   string
	}{
		"Defaults":       {reason: "a list that holds its default", names: types("small", "large")},
		"Empty":          {reason: "an empty list allows nothing", names: types(), want: "allows no machine type"},
		"Form":           {reason: "an entry of another form, said as an entry", names: types("small", "Large"), want: `machine type "Large" is not a name`},
		"NoDefault":      {reason: "the default of a placement that names none must be allowed", names: types("large"), want: "does not allow small, the machine type of a placement that names none"},
		"FormAsMalform":  {reason: "no MalformedEntry: an entry is said as a placement's name", names: func() placement.Names { n := images; n.Allowed = []string{"Deb"}; return n }(), want: `VM image "Deb" is not an image name`},
		"DefaultNoun":    {reason: "the default's noun, where the cloud says it shorter", names: func() placement.Names { n := images; n.Allowed = []string{"ubuntu"}; return n }(), want: "does not allow deb, the image of a placement that names none"},
		"DefaultAllowed": {reason: "the default alone", names: func() placement.Names { n := images; n.Allowed = []string{"deb"}; return n }()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := fmt.Sprint(tc.names.Check())
			if tc.want == "" {
				tc.want = "<nil>"
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nCheck (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestChoose: a placement's name, or the default for none, is held to
// its form and then to the list; the cloud learns whether it passed.
func TestChoose(t *testing.T) {
	mt := types("small", "large")
	im := placement.Names{Field: placement.Image, Noun: "image", Default: "deb", Allowed: []string{"deb"}, Valid: nameRE.MatchString, Malformed: "is not an image name"}
	cases := map[string]struct {
		reason string
		names  placement.Names
		name   string
		want   placement.Violations
		chosen string
		ok     bool
	}{
		"Default":    {reason: "none names the default", names: mt, chosen: "small", ok: true},
		"Allowed":    {reason: "a name on the list", names: mt, name: "large", chosen: "large", ok: true},
		"Form":       {reason: "a name of another form", names: mt, name: "Big_1", chosen: "Big_1", want: placement.Violations{{Field: "placement.machineType", Reason: provider.ReasonMachineTypeInvalid, Description: `"Big_1" is not a type name such as small`}}},
		"NotAllowed": {reason: "a name off the list", names: mt, name: "huge", chosen: "huge", want: placement.Violations{{Field: "placement.machineType", Reason: provider.ReasonMachineTypeNotAllowed, Description: `"huge" is not a machine type this platform allows: small, large`}}},
		"AnImage":    {reason: "an image, with its article", names: im, name: "ubuntu", chosen: "ubuntu", want: placement.Violations{{Field: "placement.image", Reason: provider.ReasonImageNotAllowed, Description: `"ubuntu" is not an image this platform allows: deb`}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var v placement.Violations
			chosen, ok := v.Choose(tc.names, tc.name)
			if diff := cmp.Diff(tc.want, v); diff != "" {
				t.Errorf("%s\nviolations (-want +got):\n%s", tc.reason, diff)
			}
			if chosen != tc.chosen || ok != tc.ok {
				t.Errorf("%s\nChoose = %q, %v; want %q, %v", tc.reason, chosen, ok, tc.chosen, tc.ok)
			}
		})
	}
}

// TestGroups: a region is one of the cloud's with a zone the policy
// allows, and a zone one of its region's and allowed.
func TestGroups(t *testing.T) {
	g := placement.NewGroups("Acme", "metro", "site", map[string][]string{"north": {"n1", "n2"}, "east": {"e1"}})
	if diff := cmp.Diff(map[string]string{"n1": "north", "n2": "north", "e1": "east"}, g.RegionOf()); diff != "" {
		t.Errorf("RegionOf (-want +got):\n%s", diff)
	}
	if got, want := g.ZoneList()+" | "+g.RegionList(), "e1, n1, n2 | east, north"; got != want {
		t.Errorf("lists = %q, want %q", got, want)
	}
	cases := map[string]struct {
		reason       string
		region, zone string
		policy       []string
		want         []string // field:reason: description
	}{
		"Region":           {reason: "a region alone", region: "north"},
		"Zone":             {reason: "a zone of the region", region: "north", zone: "n2"},
		"NoRegion":         {reason: "no region (the API refuses it): the zone is of none", zone: "n1", want: []string{`placement.zone:ZONE_NOT_IN_REGION: "n1" is not a site of metro "": want one of `}},
		"RegionInvalid":    {reason: "not a region", region: "west", want: []string{`placement.region:REGION_INVALID: "west" is not an Acme metro: want one of east, north`}},
		"ZoneElsewhere":    {reason: "a zone of another region", region: "north", zone: "e1", want: []string{`placement.zone:ZONE_NOT_IN_REGION: "e1" is not a site of metro "north": want one of n1, n2`}},
		"RegionNotAllowed": {reason: "no zone of it allowed", region: "east", policy: []string{"n1"}, want: []string{`placement.region:REGION_NOT_ALLOWED: "east" has no site this platform allows: n1`}},
		"ZoneNotAllowed":   {reason: "its zone not allowed", region: "north", zone: "n2", policy: []string{"n1", "e1"}, want: []string{`placement.zone:ZONE_NOT_ALLOWED: "n2" is not a site this platform allows: n1, e1`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var v placement.Violations
			v.CheckRegion(g, tc.region, tc.policy)
			v.CheckZone(g, tc.region, tc.zone, tc.policy)
			var got []string
			for _, x := range v {
				got = append(got, x.Field+":"+x.Reason+": "+x.Description)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nviolations (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestRefusals: a warm pool is refused in the cloud's words, and a
// cloud-init over the limit, not one at it.
func TestRefusals(t *testing.T) {
	var v placement.Violations
	v.NoWarmPool(provider.ValidateRequest{}, "acme", "box", "why")
	v.CloudInit(strings.Repeat("x", 10), 10, "a box's user-data")
	if len(v) != 0 {
		t.Fatalf("no pool, at the limit: got %v, want none", v)
	}
	v.NoWarmPool(provider.ValidateRequest{Pool: true}, "acme", "box", "its user-data is fixed")
	v.CloudInit(strings.Repeat("x", 11), 10, "a box's user-data")
	want := placement.Violations{
		{Field: "provider", Reason: provider.ReasonProviderCannotReconfigure, Description: "acme cannot hand a running box a new configuration (its user-data is fixed), so it cannot serve a warm pool, whose VMs are claimed that way; proxies on acme get a new box for a change instead"},
		{Field: "cloudInit", Reason: provider.ReasonCloudInitTooLarge, Description: "is 11 bytes, over the 10-byte limit of a box's user-data"},
	}
	if diff := cmp.Diff(want, v); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}
