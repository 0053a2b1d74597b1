package dofake

import (
	"maps"
	"net/http"
	"regexp"
	"slices"
	"time"

	"github.com/digitalocean/godo"
)

// firewallNameRE is what a firewall's name must be (the description's
// pattern).
var firewallNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9\.-]+$`)

var firewallRoutes = []route{
	{http.MethodPost, "firewalls.create", path(`/firewalls`), func(s *Server, w *writer, r *http.Request, _ []string) {
		var req godo.FirewallRequest
		if !decode(w, r, &req) {
			return
		}
		if f := checkFirewall(req); f != nil {
			w.error(*f)
			return
		}
		fw := &godo.Firewall{ID: s.uuid(), Status: "succeeded", Created: s.now().Format(time.RFC3339), PendingChanges: []godo.PendingChange{}}
		setFirewall(fw, req)
		s.firewalls[fw.ID] = fw
		w.json(http.StatusAccepted, struct {
			Firewall *godo.Firewall `json:"firewall"`
		}{fw})
	}},
	{http.MethodGet, "firewalls.list", path(`/firewalls`), func(s *Server, w *writer, r *http.Request, _ []string) {
		var all []*godo.Firewall
		for _, id := range slices.Sorted(maps.Keys(s.firewalls)) {
			all = append(all, s.firewalls[id])
		}
		items, links, meta := page(s, r, all)
		w.json(http.StatusOK, struct {
			Firewalls []*godo.Firewall `json:"firewalls"`
			Links     *godo.Links      `json:"links"`
			Meta      *godo.Meta       `json:"meta"`
		}{items, links, meta})
	}},
	{http.MethodGet, "firewalls.get", path(`/firewalls/([-0-9a-f]+)`), func(s *Server, w *writer, r *http.Request, m []string) {
		fw, ok := s.firewalls[m[0]]
		if !ok {
			w.error(notFound())
			return
		}
		w.json(http.StatusOK, struct {
			Firewall *godo.Firewall `json:"firewall"`
		}{fw})
	}},
	{http.MethodPut, "firewalls.update", path(`/firewalls/([-0-9a-f]+)`), func(s *Server, w *writer, r *http.Request, m []string) {
		fw, ok := s.firewalls[m[0]]
		if !ok {
			w.error(notFound())
			return
		}
		var req godo.FirewallRequest
		if !decode(w, r, &req) {
			return
		}
		if f := checkFirewall(req); f != nil {
			w.error(*f)
			return
		}
		// A PUT replaces the whole firewall: rules, Droplets and tags.
		setFirewall(fw, req)
		w.json(http.StatusOK, struct {
			Firewall *godo.Firewall `json:"firewall"`
		}{fw})
	}},
	{http.MethodDelete, "firewalls.delete", path(`/firewalls/([-0-9a-f]+)`), func(s *Server, w *writer, r *http.Request, m []string) {
		if _, ok := s.firewalls[m[0]]; !ok {
			w.error(notFound())
			return
		}
		delete(s.firewalls, m[0])
		w.noContent()
	}},
}

// checkFirewall holds a firewall to the reference's rules: a name of its
// form, and a protocol and ports on every rule.
func checkFirewall(req godo.FirewallRequest) *Fault {
	fault := func(f Fault) *Fault { return &f }
	if !firewallNameRE.MatchString(req.Name) {
		return fault(badRequest("name: %q is not a valid firewall name", req.Name))
	}
	protocols := []string{"tcp", "udp", "icmp"}
	for _, r := range req.InboundRules {
		if !slices.Contains(protocols, r.Protocol) || r.PortRange == "" || r.Sources == nil {
			return fault(badRequest("inbound rule %+v: a protocol (tcp, udp, icmp), ports and sources are required", r))
		}
	}
	for _, r := range req.OutboundRules {
		if !slices.Contains(protocols, r.Protocol) || r.PortRange == "" || r.Destinations == nil {
			return fault(badRequest("outbound rule %+v: a protocol (tcp, udp, icmp), ports and destinations are required", r))
		}
	}
	for _, t := range req.Tags {
		if !tagRE.MatchString(t) {
			return fault(badRequest("tag %q is invalid", t))
		}
	}
	return nil
}

func setFirewall(fw *godo.Firewall, req godo.FirewallRequest) {
	fw.Name = req.Name
	fw.InboundRules, fw.OutboundRules = orEmpty(req.InboundRules), orEmpty(req.OutboundRules)
	fw.DropletIDs, fw.Tags = orEmpty(req.DropletIDs), orEmpty(req.Tags)
}

// uuid makes a firewall's id. Called with s.mu held.
func (s *Server) uuid() string {
	n := s.id()
	const hex = "0123456789abcdef"
	b := []byte("bb4b2611-3d72-467b-8602-280330ecd000")
	for i := len(b) - 1; n > 0 && i >= 0; i-- {
		if b[i] == '-' {
			continue
		}
		b[i] = hex[n%16]
		n /= 16
	}
	return string(b)
}

// Firewalls returns every firewall, by id.
func (s *Server) Firewalls() []godo.Firewall {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []godo.Firewall
	for _, id := range slices.Sorted(maps.Keys(s.firewalls)) {
		out = append(out, *s.firewalls[id])
	}
	return out
}

// Behind returns the names of the firewalls that apply to a Droplet: by
// its id, or by one of its tags, as DigitalOcean applies them.
func (s *Server) Behind(droplet int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.droplets[droplet]
	if !ok {
		return nil
	}
	var out []string
	for _, id := range slices.Sorted(maps.Keys(s.firewalls)) {
		fw := s.firewalls[id]
		if slices.Contains(fw.DropletIDs, droplet) || slices.ContainsFunc(fw.Tags, func(t string) bool { return slices.Contains(d.Tags, t) }) {
			out = append(out, fw.Name)
		}
	}
	return out
}
