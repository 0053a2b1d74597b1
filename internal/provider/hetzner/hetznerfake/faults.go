package hetznerfake

import (
	"fmt"
	"net/http"
)

// Fault is an error the API answers: Hetzner's error code, the HTTP
// status it comes with, and the message.
type Fault struct {
	Code    string
	Status  int
	Message string
}

// ResourceUnavailable is the error of a create Hetzner cannot serve where
// it was asked: no room for the server type in the location right now
// ("resource_unavailable: The requested resource is currently
// unavailable", the error table of the API reference). The reference
// names codes, not the HTTP status of each: the statuses here are the
// fake's assumption, and the SDK and the provider read the code.
func ResourceUnavailable(location, serverType string) Fault {
	return Fault{Code: "resource_unavailable", Status: http.StatusServiceUnavailable,
		Message: fmt.Sprintf("server type %s unavailable in location %s", serverType, location)}
}

// PlacementError is the error of a server the scheduler could not place.
func PlacementError(location string) Fault {
	return Fault{Code: "placement_error", Status: http.StatusPreconditionFailed,
		Message: fmt.Sprintf("error during placement in location %s", location)}
}

// LimitExceeded is the project's limit of a resource, the quota of
// Hetzner: 403 resource_limit_exceeded, "server limit exceeded" or
// "Primary IP limit exceeded" as the API words it
// (https://github.com/hetzneronline/community-content/issues/933), with
// no figure: the limits show in the Console only
// (https://docs.hetzner.com/cloud/general/faq/#are-there-limits-to-the-number-of-resources-i-can-get).
func LimitExceeded(what string) Fault {
	return Fault{Code: "resource_limit_exceeded", Status: http.StatusForbidden,
		Message: what + " limit exceeded"}
}

// capacityFailure refuses server creates in a location: the next left
// ones, or every one while left is negative.
type capacityFailure struct {
	location string
	left     int
	fault    Fault
}

// FailCreates makes the next n server creates in location (any location
// for "") answer f and make nothing; n < 0 makes every one do so until
// ClearCreateFailures: a location out of capacity.
func (s *Server) FailCreates(location string, n int, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.capacity = append(s.capacity, &capacityFailure{location: location, left: n, fault: f})
}

// ClearCreateFailures drops what FailCreates set up.
func (s *Server) ClearCreateFailures() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.capacity = nil
}

// takeCreateFailure returns how a create in location fails, if it does.
// Called with s.mu held.
func (s *Server) takeCreateFailure(location string) *Fault {
	for i, c := range s.capacity {
		if c.location != "" && c.location != location {
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

// SetServerLimit sets the project's limit of servers (0: none); a create
// past it answers LimitExceeded.
func (s *Server) SetServerLimit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.serverLimit = n
}

// SetPrimaryIPLimit sets the project's limit of Primary IPs (0: none):
// a Primary IP create past it, or a server create whose own IPv4 and
// IPv6 would take it past, answers LimitExceeded("Primary IP"). Every
// Primary IP counts, assigned or not, IPv4 or IPv6: the fake's
// assumption, as Hetzner's Console shows one "Primary IPs" limit.
func (s *Server) SetPrimaryIPLimit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.primaryIPLimit = n
}

// primaryIPsFull reports whether the project may make no more Primary
// IPs. Called with s.mu held.
func (s *Server) primaryIPsFull() bool {
	return s.primaryIPLimit > 0 && len(s.primaryIPs) >= s.primaryIPLimit
}

// Fail makes the next n calls of a route answer f. The routes are
// "servers.create", "servers.get", "servers.list", "servers.update",
// "servers.delete", "primary_ips.create", "primary_ips.get",
// "primary_ips.list", "primary_ips.delete", "primary_ips.assign",
// "primary_ips.unassign", "actions.get", "actions.list" and the
// catalog's "locations.list", "server_types.list", "images.list".
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
