package placement

import (
	"maps"
	"slices"
	"strings"

	"github.com/egress-proxies/egress/internal/provider"
)

// Groups are a cloud's regions as a placement names them, each with the
// zones it groups, where the cloud's own unit is the zone: Hetzner's
// network zones of locations, DigitalOcean's metros of regions. The
// operator allows zones; a region is allowed while a zone of it is.
type Groups struct {
	// cloud is the cloud's name in the errors ("Hetzner"); region and
	// zone are what it calls the two ("network zone", "location").
	cloud, region, zone string
	zones               map[string][]string
	regionOf            map[string]string
}

// NewGroups makes the groups of zones, region by region, with the words
// the errors say them in: the cloud's name ("Hetzner"), what it calls a
// region ("network zone") and a zone ("location").
func NewGroups(cloud, region, zone string, zones map[string][]string) Groups {
	g := Groups{cloud: cloud, region: region, zone: zone, zones: zones, regionOf: map[string]string{}}
	for r, zs := range zones {
		for _, z := range zs {
			g.regionOf[z] = r
		}
	}
	return g
}

// RegionOf returns every zone with its region.
func (g Groups) RegionOf() map[string]string { return maps.Clone(g.regionOf) }

// Of is the region of zone, "" for no zone of the cloud's.
func (g Groups) Of(zone string) string { return g.regionOf[zone] }

// Has reports whether region is one of the cloud's.
func (g Groups) Has(region string) bool { _, ok := g.zones[region]; return ok }

// ZoneList and RegionList are the cloud's zones and regions, sorted, as
// the errors list them.
func (g Groups) ZoneList() string   { return strings.Join(slices.Sorted(maps.Keys(g.regionOf)), ", ") }
func (g Groups) RegionList() string { return strings.Join(slices.Sorted(maps.Keys(g.zones)), ", ") }

// Allowed are the zones of region the policy allows (empty: all).
func (g Groups) Allowed(region string, policy []string) []string {
	var out []string
	for _, z := range g.zones[region] {
		if len(policy) == 0 || slices.Contains(policy, z) {
			out = append(out, z)
		}
	}
	return out
}

// CheckRegion holds a placement's region to the groups: one of the
// cloud's regions, with a zone the policy allows. An empty region is the
// API's to refuse.
func (v *Violations) CheckRegion(g Groups, region string, policy []string) {
	switch {
	case region == "":
	case !g.Has(region):
		v.Add("placement.region", provider.ReasonRegionInvalid, "%q is not %s %s %s: want one of %s", region, article(g.cloud), g.cloud, g.region, g.RegionList())
	case len(g.Allowed(region, policy)) == 0:
		v.Add("placement.region", provider.ReasonRegionNotAllowed, "%q has no %s this platform allows: %s", region, g.zone, strings.Join(policy, ", "))
	}
}

// CheckZone holds a placement's zone, when it names one, to its region's
// zones and to the policy.
func (v *Violations) CheckZone(g Groups, region, zone string, policy []string) {
	switch {
	case zone == "":
	case !g.Has(region) || g.regionOf[zone] != region:
		v.Add("placement.zone", provider.ReasonZoneNotInRegion, "%q is not %s %s of %s %q: want one of %s", zone, article(g.zone), g.zone, g.region, region, strings.Join(g.zones[region], ", "))
	case len(policy) > 0 && !slices.Contains(policy, zone):
		v.Add("placement.zone", provider.ReasonZoneNotAllowed, "%q is not %s %s this platform allows: %s", zone, article(g.zone), g.zone, strings.Join(policy, ", "))
	}
}
