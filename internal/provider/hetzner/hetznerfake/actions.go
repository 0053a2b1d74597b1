package hetznerfake

import (
	"maps"
	"net/http"
	"slices"
	"strconv"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

var actionRoutes = []route{
	{http.MethodGet, "actions.get", path(`/actions/(\d+)`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		s.polled()
		id, _ := strconv.ParseInt(m[0], 10, 64)
		a, ok := s.actions[id]
		if !ok {
			writeError(w, notFound("action", m[0]))
			return
		}
		writeJSON(w, http.StatusOK, schema.ActionGetResponse{Action: *a})
	}},
	{http.MethodGet, "actions.list", path(`/actions`), func(s *Server, w http.ResponseWriter, r *http.Request, _ []string) {
		s.polled()
		var all []schema.Action
		ids := r.URL.Query()["id"]
		for _, id := range slices.Sorted(maps.Keys(s.actions)) {
			if len(ids) == 0 || slices.Contains(ids, strconv.FormatInt(id, 10)) {
				all = append(all, *s.actions[id])
			}
		}
		items, meta := page(r, all)
		writeJSON(w, http.StatusOK, struct {
			Actions []schema.Action `json:"actions"`
			Meta    schema.Meta     `json:"meta"`
		}{orEmpty(items), meta})
	}},
}

// action starts a running action of command on a resource. Called with
// s.mu held.
func (s *Server) action(command, typ string, resource int64) *schema.Action {
	a := &schema.Action{ID: s.id(), Status: "running", Command: command, Started: s.now(),
		Resources: []schema.ActionResourceReference{{ID: resource, Type: typ}}}
	s.actions[a.ID] = a
	return a
}

// Settle finishes everything in progress: every running action
// succeeds, initializing and starting servers run, deleting ones go with
// their ephemeral Primary IPs (auto_delete), and their other Primary IPs
// stay, unassigned.
func (s *Server) Settle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle()
}

// settle is Settle with s.mu held.
func (s *Server) settle() {
	now := s.now()
	for _, a := range s.actions {
		if a.Status == "running" {
			a.Status, a.Progress, a.Finished = "success", 100, &now
		}
	}
	for id, sv := range s.servers {
		switch sv.Status {
		case "initializing", "starting":
			sv.Status = "running"
			s.running(id)
		case "deleting":
			s.unserve(id)
			delete(s.servers, id)
			delete(s.userData, id)
			for ipID, ip := range s.primaryIPs {
				if ip.AssigneeID == nil || *ip.AssigneeID != id {
					continue
				}
				if ip.AutoDelete {
					delete(s.primaryIPs, ipID)
				} else {
					ip.AssigneeID = nil
				}
			}
		}
	}
}

// SettleOnActionPoll makes every read of an action settle first, for a
// client that waits on one (hcloud's CLI polls each action it started
// until it is done).
func (s *Server) SettleOnActionPoll(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onPoll = nil
	if on {
		s.onPoll = s.settle
	}
}

// polled runs the SettleOnActionPoll hook. Called with s.mu held.
func (s *Server) polled() {
	if s.onPoll != nil {
		s.onPoll()
	}
}
