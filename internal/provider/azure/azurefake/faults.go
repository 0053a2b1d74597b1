package azurefake

import (
	"fmt"
	"net/http"
)

// Fault is an error ARM answers: the HTTP status, ARM's error code and
// message ({"error": {"code", "message"}}), and Retry-After in seconds
// for a 429. An Async fault is not the request's answer but its
// operation's: the PUT is accepted (201) and the operation's status ends
// Failed with Code and Message, as Azure reports an allocation failure.
type Fault struct {
	Status     int
	Code       string
	Message    string
	RetryAfter int
	Async      bool
}

// In a create's fault, {id}, {size}, {location}, {zone} and
// {subscription} are replaced by the VM's.

// SkuNotAvailable is the answer to a VM create whose size Azure has no
// capacity of, or does not offer, in the location (and zone) asked: 409
// at once, nothing made.
func SkuNotAvailable() Fault {
	return Fault{Status: http.StatusConflict, Code: "SkuNotAvailable",
		Message: "The requested size for resource '{id}' is currently not available in location '{location}' zones '{zone}' for subscription '{subscription}'. Please try another size or deploy to a different location or zones. See https://aka.ms/azureskunotavailable for details."}
}

// AllocationFailed is a VM create Azure accepts and cannot place: the
// operation fails, the VM stays, Failed.
func AllocationFailed() Fault {
	return Fault{Status: http.StatusOK, Code: "AllocationFailed", Async: true,
		Message: "Allocation failed. We do not have sufficient capacity for the requested VM size in this region. Read more about improving likelihood of allocation success at http://aka.ms/allocation-guidance"}
}

// ZonalAllocationFailed is AllocationFailed in a zone.
func ZonalAllocationFailed() Fault {
	return Fault{Status: http.StatusOK, Code: "ZonalAllocationFailed", Async: true,
		Message: "Allocation failed. We do not have sufficient capacity for the requested VM size in this zone. Read more about improving likelihood of allocation success at http://aka.ms/allocation-guidance"}
}

// QuotaExceeded is the answer to a VM create past the subscription's
// cores quota of the size's family in the location: 409
// OperationNotAllowed, nothing made.
func QuotaExceeded(family string, limit, usage, required int) Fault {
	return Fault{Status: http.StatusConflict, Code: "OperationNotAllowed",
		Message: fmt.Sprintf("Operation could not be completed as it results in exceeding approved %s Cores quota. Additional details - Deployment Model: Resource Manager, Location: {location}, Current Limit: %d, Current Usage: %d, Additional Required: %d, (Minimum) New Limit Required: %d. Submit a request for Quota increase at https://aka.ms/ProdportalCRP/#blade/Microsoft_Azure_Capacity/UsageAndQuota.ReactView/Parameters/ by specifying parameters listed in the 'Details' section for deployment to succeed.",
			family, limit, usage, required, usage+required)}
}

// Throttled is ARM's answer to a client over its request limit: 429
// with Retry-After.
func Throttled(retryAfter int) Fault {
	return Fault{Status: http.StatusTooManyRequests, Code: "TooManyRequests", RetryAfter: retryAfter,
		Message: "The request is being throttled as the limit has been reached for operation type - Write_ObservationWindow_00:05:00. For more information, see - https://aka.ms/srpthrottlinglimits"}
}

// Status is a Fault of a bare status, with ARM's code for it.
func Status(status int) Fault {
	codes := map[int]string{400: "BadRequest", 401: "AuthenticationFailed", 403: "AuthorizationFailed", 404: "ResourceNotFound",
		409: "Conflict", 412: "PreconditionFailed", 429: "TooManyRequests", 500: "InternalServerError", 503: "ServiceUnavailable"}
	code, ok := codes[status]
	if !ok {
		code = fmt.Sprintf("Status%d", status)
	}
	return Fault{Status: status, Code: code, Message: http.StatusText(status)}
}

// capacityFailure refuses VM creates in a location and zone: the next
// left ones, or every one while left is negative.
type capacityFailure struct {
	location, zone string
	left           int
	fault          Fault
}

// FailCreates makes the next n VM creates in location (any for "") and
// zone (any for ""; a VM without zones has zone "") answer f: at once
// (SkuNotAvailable, QuotaExceeded) or through their operation
// (AllocationFailed, ZonalAllocationFailed). n < 0 makes every one do so
// until ClearCreateFailures: a location or zone out of capacity.
func (s *Server) FailCreates(location, zone string, n int, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.capacity = append(s.capacity, &capacityFailure{location: normalizeLocation(location), zone: zone, left: n, fault: f})
}

// ClearCreateFailures drops what FailCreates set up.
func (s *Server) ClearCreateFailures() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.capacity = nil
}

// takeCreateFailure returns how a create fails, if it does. Called with
// s.mu held.
func (s *Server) takeCreateFailure(location, zone string) *Fault {
	for i, c := range s.capacity {
		if (c.location != "" && c.location != location) || (c.zone != "" && c.zone != zone) {
			continue
		}
		if c.left > 0 {
			c.left--
			if c.left == 0 {
				s.capacity = append(s.capacity[:i:i], s.capacity[i+1:]...)
			}
		}
		f := c.fault
		return &f
	}
	return nil
}

// Fail makes the next n calls of a route answer f (routes as Calls names
// them; a 429's Retry-After is f.RetryAfter).
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
