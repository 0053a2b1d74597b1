package ec2fake

import (
	"net/http"
	"net/url"
)

// statusOf is the HTTP status EC2 answers an error code with: most are
// the client's (400); these are not. InsufficientInstanceCapacity is a
// 500 (a fault of EC2's, which is why the SDK's default retryer would
// retry it), RequestLimitExceeded a 503, as the EC2 API reference's
// "Error codes" page lists them.
func statusOf(code string) int {
	switch code {
	case "InsufficientInstanceCapacity", "InsufficientAddressCapacity", "InternalError", "InternalFailure":
		return http.StatusInternalServerError
	case "RequestLimitExceeded", "Unavailable", "ServiceUnavailable":
		return http.StatusServiceUnavailable
	case "AuthFailure":
		return http.StatusUnauthorized
	case "UnauthorizedOperation", "OptInRequired", "Blocked":
		return http.StatusForbidden
	}
	return http.StatusBadRequest
}

// faultMessage is the message of an injected fault, as EC2 words it.
func faultMessage(code string) string {
	switch code {
	case "RequestLimitExceeded":
		return "Request limit exceeded."
	case "InstanceLimitExceeded":
		return "You have requested more instances than your current instance limit allows for the specified instance type."
	case "VcpuLimitExceeded":
		return "You have requested more vCPU capacity than your current vCPU limit of 32 allows for the instance bucket that the specified instance type belongs to."
	case "AddressLimitExceeded":
		return "The maximum number of addresses has been reached."
	case "InsufficientInstanceCapacity":
		return "We currently do not have sufficient capacity in the Availability Zone you requested."
	case "Unavailable", "InternalError":
		return "An internal error has occurred"
	}
	return "injected fault " + code
}

// Fail makes the next n calls of action answer code (with its HTTP
// status), before the fake does anything; n < 0 is every call until
// ClearFaults. A refusal of a launch (refusals) passes over a
// RunInstances whose ClientToken launched already, which EC2 answers
// with that launch, and waits for the next.
func (s *Server) Fail(action, code string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n < 0 {
		n = 1 << 30
	}
	for range n {
		s.faults[action] = append(s.faults[action], code)
	}
}

// LoseAnswers makes the next n calls of action do what they ask and
// answer InternalError (500), as a client sees a connection reset after
// EC2 acted: a RunInstances retried with its ClientToken finds the
// instance it made.
func (s *Server) LoseAnswers(action string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lost[action] += n
}

// NoCapacity makes RunInstances in zone answer InsufficientInstanceCapacity
// (500) until ClearFaults.
func (s *Server) NoCapacity(zone string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noCapacity[zone] = true
}

// Unsupported makes RunInstances of instanceType in zone answer
// Unsupported (400), as EC2 does where a zone does not offer the type.
func (s *Server) Unsupported(zone, instanceType string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unsupported[zone+"/"+instanceType] = true
}

// ClearFaults ends every fault set: injected codes, lost answers, zones
// without capacity or without a type; the quotas go back to
// DefaultQuotas.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.faults)
	clear(s.lost)
	clear(s.noCapacity)
	clear(s.unsupported)
	s.quotas = DefaultQuotas
}

// refusals are the codes by which EC2 refuses what a RunInstances asks
// (the account's limits, a zone's capacity or offer). EC2 answers a
// retry of a launch it made (the same ClientToken) with that launch, not
// with a refusal, so an injected refusal waits for a launch of its own
// (launched); an error of the service itself (InternalError, Unavailable,
// RequestLimitExceeded) may answer any call.
var refusals = map[string]bool{"InstanceLimitExceeded": true, "VcpuLimitExceeded": true,
	"InsufficientInstanceCapacity": true, "Unsupported": true}

// launched reports whether a call is a RunInstances whose ClientToken
// made an instance already.
func (s *Server) launched(action, region string, form url.Values) bool {
	if action != "RunInstances" || form.Get("ClientToken") == "" {
		return false
	}
	_, ok := s.tokens[region+"/"+form.Get("ClientToken")]
	return ok
}

// nextFault is the code the next call of action would answer, if a
// fault waits for it, without taking it.
func (s *Server) nextFault(action string) (string, bool) {
	if q := s.faults[action]; len(q) > 0 {
		return q[0], true
	}
	return "", false
}

// takeFault is the code the next call of action answers, if a fault
// waits for it.
func (s *Server) takeFault(action string) (string, bool) {
	q := s.faults[action]
	if len(q) == 0 {
		return "", false
	}
	s.faults[action] = q[1:]
	return q[0], true
}
