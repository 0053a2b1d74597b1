package azurefake

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// operation is a long-running operation: what a 201 or 202 names in its
// Azure-AsyncOperation and Location headers.
type operation struct {
	id        string
	namespace string // Microsoft.Compute, Microsoft.Network
	location  string
	status    string // InProgress, Succeeded, Failed
	polls     int
	fault     *Fault // a Failed one's error
	start     time.Time
	end       time.Time
	// finish applies the operation's effect when it succeeds (a create's
	// resource Succeeded, a delete's gone), fail when it fails.
	finish, fail func()
	// target is the resource's id; final is the resource's id whose GET
	// a Location poll answers once done, "" for a delete, whose Location
	// poll answers 204.
	target, final string
}

var operationRoutes = []route{
	{method: http.MethodGet, name: "operations.get", auth: true, path: armPath(subPath + `/providers/([^/]+)/locations/([^/]+)/operations/([^/]+)`), serve: (*Server).operationGet},
	{method: http.MethodGet, name: "operations.location", auth: true, path: armPath(subPath + `/providers/([^/]+)/locations/([^/]+)/operationResults/([^/]+)`), serve: (*Server).operationResult},
}

// DefaultPollsToFinish is how many polls of its status an operation
// answers InProgress to before it finishes: none (the first poll finds it
// done). SetPollsToFinish changes it.
const DefaultPollsToFinish = 1

// SetPollsToFinish makes every operation finish at its status's n-th
// poll (by its Azure-AsyncOperation or its Location URL); 0 holds every
// operation InProgress until Settle: a test that stops a client between
// its request and its end (a crash and a ResumeToken).
func (s *Server) SetPollsToFinish(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pollsToFinish = max(n, 0)
}

// Settle finishes every operation in progress: creates Succeeded,
// deletes gone (with what their deleteOptions take along), failed ones
// Failed.
func (s *Server) Settle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, op := range s.ops {
		s.complete(op)
	}
}

// InProgress returns how many operations are still in progress.
func (s *Server) InProgress() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, op := range s.ops {
		if op.status == "InProgress" {
			n++
		}
	}
	return n
}

// begin starts an operation on res (deleting it, or not) and writes its
// headers: Azure-AsyncOperation (the status) and Location (the result),
// with Retry-After-Ms, which both the Go SDK's poller and azure-core's
// read (a bare Retry-After would be whole seconds). An operation still in
// progress on the same resource is preempted: it ends Canceled with
// OperationPreempted, its effect not applied, as Azure ends an operation
// a later one overtakes (a delete of a VM still being created). Called
// with s.mu held.
func (s *Server) begin(w *writer, namespace string, res *resource, deleting bool, fault *Fault, finish, fail func()) *operation {
	op := &operation{id: s.newID(), namespace: namespace, location: normalizeLocation(res.location),
		status: "InProgress", fault: fault, start: s.now(), finish: finish, fail: fail, target: key(res.id)}
	if !deleting {
		op.final = res.id
	}
	for _, prev := range s.ops {
		if prev.target == op.target && prev.status == "InProgress" {
			prev.status, prev.end = "Canceled", s.now()
			prev.fault = &Fault{Status: http.StatusConflict, Code: "OperationPreempted", Message: "Operation execution has been preempted by a more recent operation."}
		}
	}
	s.ops[op.id] = op
	base := fmt.Sprintf("%s/subscriptions/%s/providers/%s/locations/%s", s.URL, s.subscription, namespace, op.location)
	v := url.Values{"api-version": {w.apiVersion}}
	w.Header().Set("Azure-AsyncOperation", base+"/operations/"+op.id+"?"+v.Encode())
	v.Set("monitor", "true")
	w.Header().Set("Location", base+"/operationResults/"+op.id+"?"+v.Encode())
	w.Header().Set("Retry-After-Ms", strconv.Itoa(PollDelayMs))
	return op
}

// PollDelayMs is the Retry-After-Ms of every long-running operation's
// answer: how long a client waits before it polls (Azure's are seconds;
// a test's are not).
const PollDelayMs = 10

// complete finishes op if it is in progress. Called with s.mu held.
func (s *Server) complete(op *operation) {
	if op.status != "InProgress" {
		return
	}
	op.end = s.now()
	if op.fault != nil {
		op.status = "Failed"
		if op.fail != nil {
			op.fail()
		}
		return
	}
	op.status = "Succeeded"
	if op.finish != nil {
		op.finish()
	}
}

// poll counts a poll of op and finishes it at the poll SetPollsToFinish
// says. Called with s.mu held.
func (s *Server) poll(op *operation) {
	op.polls++
	if s.pollsToFinish > 0 && op.polls >= s.pollsToFinish {
		s.complete(op)
	}
}

func (s *Server) operationGet(w *writer, _ *http.Request, m []string) {
	op, ok := s.ops[m[3]]
	if !ok || !strings.EqualFold(op.namespace, m[1]) {
		w.error(notFound("operations", m[3], ""))
		return
	}
	s.poll(op)
	body := map[string]any{"name": op.id, "status": op.status, "startTime": op.start.Format(time.RFC3339)}
	if op.status != "InProgress" {
		body["endTime"] = op.end.Format(time.RFC3339)
	} else {
		w.Header().Set("Retry-After-Ms", strconv.Itoa(PollDelayMs))
	}
	if op.status == "Failed" || op.status == "Canceled" {
		body["error"] = map[string]string{"code": op.fault.Code, "message": op.fault.Message}
	}
	w.json(http.StatusOK, body)
}

// operationResult answers a Location poll: 202 while in progress, then
// the resource (a create's, an update's) or 204 (a delete's); a failed
// operation answers its error.
func (s *Server) operationResult(w *writer, r *http.Request, m []string) {
	op, ok := s.ops[m[3]]
	if !ok || !strings.EqualFold(op.namespace, m[1]) {
		w.error(notFound("operationResults", m[3], ""))
		return
	}
	s.poll(op)
	switch {
	case op.status == "InProgress":
		w.Header().Set("Location", s.URL+r.URL.RequestURI())
		w.Header().Set("Retry-After-Ms", strconv.Itoa(PollDelayMs))
		w.WriteHeader(http.StatusAccepted)
	case op.status == "Failed" || op.status == "Canceled":
		f := *op.fault
		if f.Status == 0 || f.Status < 400 {
			f.Status = http.StatusConflict
		}
		w.error(f)
	case op.final == "":
		w.WriteHeader(http.StatusNoContent)
	default:
		res := s.lookup(op.final)
		if res == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.json(http.StatusOK, res.view(false, false))
	}
}
