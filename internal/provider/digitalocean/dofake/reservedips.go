package dofake

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"

	"github.com/digitalocean/godo"
)

// reservedIP is what the fake keeps of a reserved IP: its region and the
// Droplet it is assigned to (0 for none).
type reservedIP struct {
	ip      string
	region  string
	droplet int
}

func (s *Server) wireIP(ip *reservedIP) wireReservedIP {
	rg, _ := findRegion(ip.region)
	out := wireReservedIP{IP: ip.ip, Region: wireRegionOf(rg), ProjectID: "746c6152-2fa2-11ed-92d3-27aaa54e4988"}
	if d, ok := s.droplets[ip.droplet]; ok {
		wd := d.wire()
		out.Droplet = &wd
	}
	return out
}

var reservedIPRoutes = []route{
	{http.MethodPost, "reserved_ips.create", path(`/reserved_ips`), (*Server).createReservedIP},
	{http.MethodGet, "reserved_ips.list", path(`/reserved_ips`), func(s *Server, w *writer, r *http.Request, _ []string) {
		var all []wireReservedIP
		for _, key := range slices.Sorted(maps.Keys(s.reservedIPs)) {
			all = append(all, s.wireIP(s.reservedIPs[key]))
		}
		items, links, meta := page(s, r, all)
		w.json(http.StatusOK, struct {
			ReservedIPs []wireReservedIP `json:"reserved_ips"`
			Links       *godo.Links      `json:"links"`
			Meta        *godo.Meta       `json:"meta"`
		}{items, links, meta})
	}},
	{http.MethodGet, "reserved_ips.get", path(`/reserved_ips/([0-9.]+)`), func(s *Server, w *writer, r *http.Request, m []string) {
		ip, ok := s.reservedIPs[m[0]]
		if !ok {
			w.error(notFound())
			return
		}
		w.json(http.StatusOK, struct {
			ReservedIP wireReservedIP `json:"reserved_ip"`
		}{s.wireIP(ip)})
	}},
	{http.MethodDelete, "reserved_ips.delete", path(`/reserved_ips/([0-9.]+)`), func(s *Server, w *writer, r *http.Request, m []string) {
		if _, ok := s.reservedIPs[m[0]]; !ok {
			w.error(notFound())
			return
		}
		// Released, assigned or not: the reference names no refusal of
		// an assigned one (the provider never asks that).
		delete(s.reservedIPs, m[0])
		w.noContent()
	}},
	{http.MethodPost, "reserved_ips.actions", path(`/reserved_ips/([0-9.]+)/actions`), func(s *Server, w *writer, r *http.Request, m []string) {
		ip, ok := s.reservedIPs[m[0]]
		if !ok {
			w.error(notFound())
			return
		}
		var req struct {
			Type      string `json:"type"`
			DropletID int    `json:"droplet_id"`
		}
		if !decode(w, r, &req) {
			return
		}
		switch req.Type {
		case "assign":
			if f := s.checkAssign(ip, req.DropletID); f != nil {
				w.error(*f)
				return
			}
			ip.droplet = req.DropletID
			s.serveAt(s.droplets[req.DropletID], ip.ip)
		case "unassign":
			ip.droplet = 0
		default:
			w.error(unprocessable("Type %q is not assign or unassign", req.Type))
			return
		}
		a := s.action(req.Type+"_ip", "reserved_ip", 0, ip.region)
		w.json(http.StatusCreated, struct {
			Action wireAction `json:"action"`
		}{wireActionOf(a)})
	}},
	{http.MethodGet, "reserved_ips.action", path(`/reserved_ips/([0-9.]+)/actions/(\d+)`), func(s *Server, w *writer, r *http.Request, m []string) {
		id, _ := strconv.Atoi(m[1])
		a, ok := s.actions[id]
		if _, ipOK := s.reservedIPs[m[0]]; !ok || !ipOK {
			w.error(notFound())
			return
		}
		w.json(http.StatusOK, struct {
			Action wireAction `json:"action"`
		}{wireActionOf(a)})
	}},
}

// checkAssign says why ip cannot be assigned to the Droplet of id: it is
// not there, not active ("a reserved IP can only be assigned to an active
// Droplet" is the fake's reading of the reference's "Droplet must be
// active"), in another region, or ip is on another Droplet already.
// Called with s.mu held.
func (s *Server) checkAssign(ip *reservedIP, id int) *Fault {
	fault := func(f Fault) *Fault { return &f }
	d, ok := s.droplets[id]
	switch {
	case !ok || d.Status == "archive":
		return fault(notFound())
	case d.Status != "active":
		return fault(unprocessable("Droplet %d is not active", id))
	case d.Region.Slug != ip.region:
		return fault(unprocessable("The reserved IP is in %s and the Droplet in %s: they must be in the same region", ip.region, d.Region.Slug))
	case ip.droplet != 0 && ip.droplet != id:
		return fault(unprocessable("Reserved IP %s is already assigned to Droplet %d (pending event)", ip.ip, ip.droplet))
	}
	for _, other := range s.reservedIPs {
		if other != ip && other.droplet == id {
			return fault(unprocessable("Droplet %d already has a reserved IP", id))
		}
	}
	return nil
}

// createReservedIP reserves an address, in a region or onto a Droplet
// (and so in its region), as POST /v2/reserved_ips does.
func (s *Server) createReservedIP(w *writer, r *http.Request, _ []string) {
	var req godo.ReservedIPCreateRequest
	if !decode(w, r, &req) {
		return
	}
	ip := &reservedIP{region: req.Region}
	switch {
	case req.DropletID != 0 && req.Region != "":
		w.error(unprocessable("Give a droplet_id or a region, not both"))
		return
	case req.DropletID != 0:
		d, ok := s.droplets[req.DropletID]
		if !ok {
			w.error(notFound())
			return
		}
		ip.region = d.Region.Slug
		if f := s.checkAssign(ip, req.DropletID); f != nil {
			w.error(*f)
			return
		}
		ip.droplet = req.DropletID
	default:
		if rg, ok := findRegion(req.Region); !ok || !rg.Available {
			w.error(unprocessable("Region is invalid: %q", req.Region))
			return
		}
	}
	if s.reservedIPLimit > 0 && len(s.reservedIPs) >= s.reservedIPLimit {
		w.error(ReservedIPLimit(s.reservedIPLimit))
		return
	}
	addr, served := s.nextAddress(true)
	if !served {
		s.nextStatic++
		addr = fmt.Sprintf("203.0.113.%d", s.nextStatic%250+1)
	}
	ip.ip = addr
	s.reservedIPs[addr] = ip
	if ip.droplet != 0 {
		s.serveAt(s.droplets[ip.droplet], addr)
	}
	links := godo.Links{Actions: []godo.LinkAction{}}
	if ip.droplet != 0 {
		a := s.action("assign_ip", "reserved_ip", 0, ip.region)
		links.Actions = append(links.Actions, godo.LinkAction{ID: a.ID, Rel: "assign_ip", HREF: s.URL + "/v2/actions/" + strconv.Itoa(a.ID)})
	}
	w.json(http.StatusAccepted, struct {
		ReservedIP wireReservedIP `json:"reserved_ip"`
		Links      godo.Links     `json:"links"`
	}{s.wireIP(ip), links})
}

// ReservedIP is a reserved IP as a test reads it.
type ReservedIP struct {
	IP, Region string
	Droplet    int
}

// ReservedIPs returns every reserved IP, by address.
func (s *Server) ReservedIPs() []ReservedIP {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ReservedIP
	for _, key := range slices.Sorted(maps.Keys(s.reservedIPs)) {
		ip := s.reservedIPs[key]
		out = append(out, ReservedIP{IP: ip.ip, Region: ip.region, Droplet: ip.droplet})
	}
	return out
}

// PutReservedIP plants an unassigned reserved IP in region, as another
// tool would reserve one, and returns its address.
func (s *Server) PutReservedIP(region string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextStatic++
	addr := fmt.Sprintf("203.0.113.%d", s.nextStatic%250+1)
	s.reservedIPs[addr] = &reservedIP{ip: addr, region: region}
	return addr
}
