package mock

import (
	"fmt"
	"strings"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
)

// Validate is the mock's own rules, registered beside its constructor: a
// region is a label, and a zone, when given, is one of the region's
// ("REGION-x"), as the local stack's examples name them. It takes any
// machine type, image and cloud-init, which it ignores.
func Validate(req provider.ValidateRequest) []provider.Violation {
	var out []provider.Violation
	pl := req.Placement
	if pl.Region != "" && !proxy.IsLabel(pl.Region) {
		out = append(out, provider.Violation{Field: "placement.region", Reason: provider.ReasonRegionInvalid,
			Description: fmt.Sprintf("%q is not a region name: lowercase letters, digits and '-'", pl.Region)})
	}
	if suffix, ok := strings.CutPrefix(pl.Zone, pl.Region+"-"); pl.Zone != "" && (!ok || !proxy.IsLabel(suffix)) {
		out = append(out, provider.Violation{Field: "placement.zone", Reason: provider.ReasonZoneNotInRegion,
			Description: fmt.Sprintf("zone %q is not in region %q: want %s-a, %s-b, …", pl.Zone, pl.Region, pl.Region, pl.Region)})
	}
	return out
}
