package dofake

import (
	"maps"
	"net/http"
	"slices"
	"strconv"

	"github.com/digitalocean/godo"
)

var actionRoutes = []route{
	{http.MethodGet, "actions.get", path(`/actions/(\d+)`), func(s *Server, w *writer, r *http.Request, m []string) {
		id, _ := strconv.Atoi(m[0])
		a, ok := s.actions[id]
		if !ok {
			w.error(notFound())
			return
		}
		w.json(http.StatusOK, struct {
			Action wireAction `json:"action"`
		}{wireActionOf(a)})
	}},
	{http.MethodGet, "actions.list", path(`/actions`), func(s *Server, w *writer, r *http.Request, _ []string) {
		var all []wireAction
		for _, id := range slices.Sorted(maps.Keys(s.actions)) {
			all = append(all, wireActionOf(s.actions[id]))
		}
		items, links, meta := page(s, r, all)
		w.json(http.StatusOK, struct {
			Actions []wireAction `json:"actions"`
			Links   *godo.Links  `json:"links"`
			Meta    *godo.Meta   `json:"meta"`
		}{items, links, meta})
	}},
}

// action starts an in-progress action of typ on a resource. Called with
// s.mu held.
func (s *Server) action(typ, resourceType string, resource int, region string) *godo.Action {
	rg, _ := findRegion(region)
	a := &godo.Action{ID: s.id(), Status: "in-progress", Type: typ, StartedAt: &godo.Timestamp{Time: s.now()},
		ResourceID: resource, ResourceType: resourceType, Region: &rg, RegionSlug: region}
	s.actions[a.ID] = a
	return a
}

// Settle finishes everything in progress: every action completes, new
// Droplets are active, destroyed ones are gone, and the reserved IPs they
// held are unassigned.
func (s *Server) Settle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle()
}

// settle is Settle with s.mu held.
func (s *Server) settle() {
	now := &godo.Timestamp{Time: s.now()}
	for _, a := range s.actions {
		if a.Status == "in-progress" {
			a.Status, a.CompletedAt = "completed", now
		}
	}
	for id, d := range s.droplets {
		switch d.Status {
		case "new":
			d.Status = "active"
			s.running(id)
		case "archive":
			s.unserve(id)
			delete(s.droplets, id)
			for _, ip := range s.reservedIPs {
				if ip.droplet == id {
					ip.droplet = 0
				}
			}
		}
	}
}
