package computefake

import (
	"fmt"
	"net/http"
	"slices"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// Regions, as regions.get answers them
// (https://cloud.google.com/compute/docs/reference/rest/v1/regions/get):
// the region and "a list of zones available in this region, in the form
// of resource URLs". The fake knows every region a test names, with zones
// -a, -b and -c unless SetZones says otherwise.

var regionRoutes = []route{
	{http.MethodGet, projectPath(`regions/([^/]+)`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		s.getRegion(w, m[0], m[1])
	}},
}

// SetZones sets the zones of a region.
func (s *Server) SetZones(region string, zones ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.regionZones[region] = slices.Clone(zones)
}

func (s *Server) getRegion(w http.ResponseWriter, project, region string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused(w, "regions.get") {
		return
	}
	zones, ok := s.regionZones[region]
	if !ok {
		zones = []string{region + "-a", region + "-b", region + "-c"}
	}
	r := &computepb.Region{
		Kind:     proto.String("compute#region"),
		Name:     proto.String(region),
		Status:   proto.String("UP"),
		SelfLink: proto.String(link(project, "regions", region)),
		Quotas:   s.regionQuotas(region),
	}
	for _, z := range zones {
		r.Zones = append(r.Zones, link(project, "zones", z))
	}
	if len(r.Zones) == 0 {
		writeError(w, Fault{Code: http.StatusNotFound, Reason: "notFound", Message: fmt.Sprintf("The resource 'projects/%s/regions/%s' was not found", project, region)})
		return
	}
	writeMessage(w, r)
}
