package dofake

import (
	"fmt"
	"net/http"
)

// Fault is an error the API answers: the HTTP status, DigitalOcean's id
// of it and the message.
type Fault struct {
	Status  int
	ID      string
	Message string
}

// SizeUnavailable is the answer to a create DigitalOcean cannot serve in
// the region it asked for, the size sold out there for now: 422 with the
// message DigitalOcean's control panel and API give ("Size is not
// available in this region."). The provider reads it as capacity.
func SizeUnavailable() Fault {
	return unprocessable("Size is not available in this region.")
}

// RegionUnavailable is the answer to a create in a region that takes no
// new Droplets for now.
func RegionUnavailable() Fault {
	return unprocessable("Region is not available")
}

// DropletLimit is the answer to a create past the account's Droplet limit
// (422, "creating this/these droplet(s) will exceed your droplet
// limit").
func DropletLimit() Fault {
	return unprocessable("creating this/these droplet(s) will exceed your droplet limit")
}

// ReservedIPLimit is the answer to a reserve past the account's reserved
// IP limit; the wording is the fake's assumption, after the Droplet
// limit's.
func ReservedIPLimit(limit int) Fault {
	return unprocessable("creating this reserved IP will exceed your reserved IP limit of %d", limit)
}

// capacityFailure refuses Droplet creates in a region: the next left
// ones, or every one while left is negative.
type capacityFailure struct {
	region string
	left   int
	fault  Fault
}

// FailCreates makes the next n Droplet creates in region (any region for
// "") answer f and make nothing; n < 0 makes every one do so until
// ClearCreateFailures: a region out of capacity.
func (s *Server) FailCreates(region string, n int, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.capacity = append(s.capacity, &capacityFailure{region: region, left: n, fault: f})
}

// ClearCreateFailures drops what FailCreates set up.
func (s *Server) ClearCreateFailures() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.capacity = nil
}

// takeCreateFailure returns how a create in region fails, if it does.
// Called with s.mu held.
func (s *Server) takeCreateFailure(region string) *Fault {
	for i, c := range s.capacity {
		if c.region != "" && c.region != region {
			continue
		}
		if c.left > 0 {
			c.left--
			if c.left == 0 {
				s.capacity = append(s.capacity[:i:i], s.capacity[i+1:]...)
			}
		}
		return &c.fault
	}
	return nil
}

// SetDropletLimit sets the account's Droplet limit (0: none); a create
// past it answers DropletLimit. A new fake's is DefaultDropletLimit.
func (s *Server) SetDropletLimit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropletLimit = n
}

// SetReservedIPLimit sets the account's reserved IP limit (0: none).
func (s *Server) SetReservedIPLimit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reservedIPLimit = n
}

// Fail makes the next n calls of a route answer f. The routes are
// "droplets.create", "droplets.get", "droplets.list", "droplets.delete",
// "reserved_ips.create", "reserved_ips.get", "reserved_ips.list",
// "reserved_ips.delete", "reserved_ips.actions", "reserved_ips.action",
// "firewalls.create", "firewalls.get", "firewalls.list",
// "firewalls.update", "firewalls.delete", "tags.create", "tags.get",
// "tags.list", "tags.delete", "actions.get", "actions.list", and the
// catalog's "regions.list", "sizes.list", "account.get".
func (s *Server) Fail(route string, n int, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults[route] = append(s.faults[route], f)
	}
}

// takeFault returns the next injected fault of a route. Called with s.mu
// held.
func (s *Server) takeFault(route string) *Fault {
	if fs := s.faults[route]; len(fs) > 0 {
		s.faults[route] = fs[1:]
		return &fs[0]
	}
	return nil
}

// Status makes a Fault of a bare status, with DigitalOcean's id for it.
func Status(status int) Fault {
	ids := map[int]string{400: "bad_request", 401: "Unauthorized", 403: "Forbidden", 404: "not_found", 409: "conflict",
		422: "unprocessable_entity", 429: "too_many_requests", 500: "server_error", 503: "service_unavailable"}
	id, ok := ids[status]
	if !ok {
		id = fmt.Sprintf("status_%d", status)
	}
	return Fault{Status: status, ID: id, Message: http.StatusText(status)}
}
