package computefake

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Fault is an error answered to the next calls of one method.
type Fault struct {
	Code    int
	Reason  string
	Message string
}

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	*httptest.Server

	mu          sync.Mutex
	instances   map[string]*computepb.Instance // by zone/name
	deleting    map[string]bool
	requestIDs  map[string]string // request id → zone/name
	inserts     []Insert
	faults      map[string][]Fault // by method: insert, get, delete, list
	unreachable []string
	nextID      uint64
	nextIP      int
	calls       map[string]int
}

// New starts a fake on a loopback port. Close it when done.
func New() *Server {
	s := &Server{
		instances:  map[string]*computepb.Instance{},
		deleting:   map[string]bool{},
		requestIDs: map[string]string{},
		faults:     map[string][]Fault{},
		calls:      map[string]int{},
		nextID:     1000,
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

var (
	instancesPath  = regexp.MustCompile(`^/compute/v1/projects/([^/]+)/zones/([^/]+)/instances$`)
	instancePath   = regexp.MustCompile(`^/compute/v1/projects/([^/]+)/zones/([^/]+)/instances/([^/]+)$`)
	aggregatedPath = regexp.MustCompile(`^/compute/v1/projects/([^/]+)/aggregated/instances$`)
)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch m := instancesPath.FindStringSubmatch(p); {
	case m != nil && r.Method == http.MethodPost:
		s.insert(w, r, m[1], m[2])
		return
	}
	if m := instancePath.FindStringSubmatch(p); m != nil {
		switch r.Method {
		case http.MethodGet:
			s.get(w, m[1], m[2], m[3])
			return
		case http.MethodDelete:
			s.delete(w, m[1], m[2], m[3])
			return
		}
	}
	if m := aggregatedPath.FindStringSubmatch(p); m != nil && r.Method == http.MethodGet {
		s.list(w, r, m[1])
		return
	}
	writeError(w, Fault{Code: http.StatusNotFound, Reason: "notFound", Message: "the fake does not serve " + r.Method + " " + p})
}

// takeFault returns the next injected fault of a method, if any. Called
// with s.mu held.
func (s *Server) takeFault(method string) *Fault {
	s.calls[method]++
	if fs := s.faults[method]; len(fs) > 0 {
		s.faults[method] = fs[1:]
		return &fs[0]
	}
	return nil
}

func writeMessage(w http.ResponseWriter, m proto.Message) {
	b, err := protojson.Marshal(m)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.Write(b)
}

func writeError(w http.ResponseWriter, f Fault) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(f.Code)
	fmt.Fprintf(w, `{"error":{"code":%d,"message":%q,"errors":[{"message":%q,"domain":"global","reason":%q}]}}`, f.Code, f.Message, f.Message, f.Reason)
}

// Fail makes the next n calls of method ("insert", "get", "delete",
// "list") answer the fault.
func (s *Server) Fail(method string, n int, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults[method] = append(s.faults[method], f)
	}
}

// SetUnreachable makes aggregated lists report these zones unreachable.
func (s *Server) SetUnreachable(zones ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unreachable = zones
}

// Calls returns how many calls of method the fake answered.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}
