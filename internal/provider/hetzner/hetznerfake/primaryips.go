package hetznerfake

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"
)

// wirePrimaryIP is a Primary IP as the API sends it, with the datacenter
// older clients read (see wireServer).
type wirePrimaryIP struct {
	schema.PrimaryIP
	Datacenter schema.Datacenter `json:"datacenter"`
}

func wireIP(ip *schema.PrimaryIP) wirePrimaryIP {
	return wirePrimaryIP{PrimaryIP: *ip, Datacenter: datacenter(ip.Location)}
}

var primaryIPRoutes = []route{
	{http.MethodPost, "primary_ips.create", path(`/primary_ips`), (*Server).createPrimaryIP},
	{http.MethodGet, "primary_ips.list", path(`/primary_ips`), func(s *Server, w http.ResponseWriter, r *http.Request, _ []string) {
		q := r.URL.Query()
		sel, err := parseSelector(q.Get("label_selector"))
		if err != nil {
			writeError(w, invalidInput("%v", err))
			return
		}
		var all []wirePrimaryIP
		for _, id := range slices.Sorted(maps.Keys(s.primaryIPs)) {
			ip := s.primaryIPs[id]
			if sel.matches(ip.Labels) && (q.Get("name") == "" || ip.Name == q.Get("name")) && (q.Get("ip") == "" || ip.IP == q.Get("ip")) {
				all = append(all, wireIP(ip))
			}
		}
		items, meta := page(r, all)
		writeJSON(w, http.StatusOK, struct {
			PrimaryIPs []wirePrimaryIP `json:"primary_ips"`
			Meta       schema.Meta     `json:"meta"`
		}{orEmpty(items), meta})
	}},
	{http.MethodGet, "primary_ips.get", path(`/primary_ips/(\d+)`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		ip, ok := s.primaryIP(m[0])
		if !ok {
			writeError(w, notFound("primary_ip", m[0]))
			return
		}
		writeJSON(w, http.StatusOK, struct {
			PrimaryIP wirePrimaryIP `json:"primary_ip"`
		}{wireIP(ip)})
	}},
	{http.MethodDelete, "primary_ips.delete", path(`/primary_ips/(\d+)`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		ip, ok := s.primaryIP(m[0])
		switch {
		case !ok:
			writeError(w, notFound("primary_ip", m[0]))
		case ip.AssigneeID != nil:
			// "A Primary IP can only be deleted when it is not assigned":
			// the code is the fake's choice.
			writeError(w, Fault{Code: "primary_ip_assigned", Status: http.StatusConflict, Message: fmt.Sprintf("primary IP %d is assigned to server %d", ip.ID, *ip.AssigneeID)})
		default:
			delete(s.primaryIPs, ip.ID)
			w.WriteHeader(http.StatusNoContent)
		}
	}},
	{http.MethodPost, "primary_ips.unassign", path(`/primary_ips/(\d+)/actions/unassign`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		ip, ok := s.primaryIP(m[0])
		if !ok {
			writeError(w, notFound("primary_ip", m[0]))
			return
		}
		if ip.AssigneeID != nil {
			if sv, ok := s.servers[*ip.AssigneeID]; ok && sv.PublicNet.IPv4.ID == ip.ID {
				sv.PublicNet.IPv4 = schema.ServerPublicNetIPv4{}
			}
		}
		ip.AssigneeID = nil
		writeJSON(w, http.StatusCreated, schema.PrimaryIPActionUnassignResponse{Action: *s.action("unassign_primary_ip", "primary_ip", ip.ID)})
	}},
}

func (s *Server) primaryIP(id string) (*schema.PrimaryIP, bool) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return nil, false
	}
	ip, ok := s.primaryIPs[n]
	return ip, ok
}

// newPrimaryIP makes a Primary IP. Called with s.mu held.
func (s *Server) newPrimaryIP(name, typ, addr string, loc schema.Location, labels map[string]string, autoDelete bool) *schema.PrimaryIP {
	if labels == nil {
		labels = map[string]string{}
	}
	ip := &schema.PrimaryIP{ID: s.id(), Name: name, Type: typ, IP: addr, Labels: maps.Clone(labels), AssigneeType: "server",
		AutoDelete: autoDelete, Created: s.now(), Location: loc, DNSPtr: []schema.PrimaryIPDNSPTR{}}
	s.primaryIPs[ip.ID] = ip
	return ip
}

// createPrimaryIP makes a Primary IP on its own, unassigned (the
// provider's Static address), or assigned to a server.
func (s *Server) createPrimaryIP(w http.ResponseWriter, r *http.Request, _ []string) {
	var req schema.PrimaryIPCreateRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, Fault{Code: "json_error", Status: http.StatusBadRequest, Message: err.Error()})
		return
	}
	loc, ok := location(req.Location)
	switch {
	case req.Name == "":
		writeError(w, invalidInput("invalid input in field 'name': is required"))
		return
	case req.Type != "ipv4" && req.Type != "ipv6":
		writeError(w, invalidInput("invalid input in field 'type': want ipv4 or ipv6"))
		return
	case req.AssigneeID == nil && !ok:
		writeError(w, invalidInput("invalid input in field 'location': location %q not found (required without an assignee)", req.Location))
		return
	}
	labels := map[string]string{}
	if req.Labels != nil {
		if f := checkLabels(*req.Labels); f != nil {
			writeError(w, *f)
			return
		}
		labels = *req.Labels
	}
	for _, ip := range s.primaryIPs {
		if ip.Name == req.Name {
			writeError(w, Fault{Code: "uniqueness_error", Status: http.StatusConflict, Message: "primary IP name is already used"})
			return
		}
	}
	if s.primaryIPsFull() {
		writeError(w, LimitExceeded("Primary IP"))
		return
	}
	addr, served := s.nextAddress(true)
	if !served {
		s.nextStatic++
		addr = fmt.Sprintf("203.0.113.%d", s.nextStatic%250+1)
	}
	if req.Type == "ipv6" {
		addr = fmt.Sprintf("2001:db8:ff%02x::/64", s.nextStatic%250)
	}
	autoDelete := req.AutoDelete != nil && *req.AutoDelete
	ip := s.newPrimaryIP(req.Name, req.Type, addr, loc, labels, autoDelete)
	if req.AssigneeID != nil {
		ip.AssigneeID = req.AssigneeID
	}
	writeJSON(w, http.StatusCreated, struct {
		PrimaryIP wirePrimaryIP  `json:"primary_ip"`
		Action    *schema.Action `json:"action"`
	}{wireIP(ip), nil})
}

// PrimaryIPs returns every Primary IP, by id.
func (s *Server) PrimaryIPs() []schema.PrimaryIP {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []schema.PrimaryIP
	for _, id := range slices.Sorted(maps.Keys(s.primaryIPs)) {
		out = append(out, *s.primaryIPs[id])
	}
	return out
}
