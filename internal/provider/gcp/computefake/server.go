package computefake

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Fault is an error answered to the next calls of one method.
type Fault struct {
	Code    int
	Reason  string
	Message string
	// Domain is errors[].domain; empty is "global".
	Domain string
}

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	*httptest.Server

	mu    sync.Mutex
	clock func() time.Time
	skew  time.Duration // what Advance added to clock

	// What Compute keeps.
	instances map[string]*computepb.Instance // by zone/name
	deleting  map[string]bool                // instances gone on Settle
	// booting are the instances PROVISIONING or STAGING, which Settle
	// runs: Settle looks at what is in progress, never the whole fleet.
	booting           map[string]bool
	addresses         map[string]*computepb.Address // by region/name
	deletingAddresses map[string]bool
	// addressByIP finds an address's key by region/IP.
	addressByIP map[string]string
	operations  map[string]*operation // by name
	// running are the operations not DONE, which Settle finishes;
	// operationByID finds an operation by its numeric id.
	running       map[string]*operation
	operationByID map[string]*operation
	// visits counts the stored resources calls looked at (Visits).
	visits      int
	requestIDs  map[string]seenRequest       // by project/request id
	guest       map[string]map[string]string // by zone/name, then NAMESPACE/KEY
	serial      map[string]*serialBuffer     // port 1, by zone/name
	nextID      uint64
	nextIP      int // of ephemeral NATs, 198.51.100.x
	nextAddress int // of reserved addresses, 203.0.113.x
	regionZones map[string][]string
	dualStack   map[string]bool // region/subnetwork (SetDualStack)

	// What tests set up and read.
	faults         map[string][]Fault // by method (see Fail)
	insertFailures []*insertFailure
	unreachable    []string
	inserts        []Insert
	// setMetadataCalls and setLabelsCalls are those calls' bodies.
	setMetadataCalls []*computepb.Metadata
	setLabelsCalls   []*computepb.InstancesSetLabelsRequest
	calls            map[string]int
	requests         int // every request, refused ones too
	// settled is closed, and replaced, by each Settle: what a wait request
	// blocks on. onWait is the OnWait hook.
	settled chan struct{}
	onWait  func(operation string)
	// meter counts requests toward the rate quotas (SetRateLimits).
	meter meter
	// quotas are the regional quotas enforced, by region (SetQuotas).
	quotas map[string]Quotas
}

// New starts a fake on a loopback port. Close it when done.
func New() *Server {
	s := &Server{
		clock:             time.Now,
		instances:         map[string]*computepb.Instance{},
		deleting:          map[string]bool{},
		booting:           map[string]bool{},
		requestIDs:        map[string]seenRequest{},
		operations:        map[string]*operation{},
		running:           map[string]*operation{},
		operationByID:     map[string]*operation{},
		addressByIP:       map[string]string{},
		serial:            map[string]*serialBuffer{},
		guest:             map[string]map[string]string{},
		addresses:         map[string]*computepb.Address{},
		deletingAddresses: map[string]bool{},
		regionZones:       map[string][]string{},
		dualStack:         map[string]bool{},
		faults:            map[string][]Fault{},
		calls:             map[string]int{},
		settled:           make(chan struct{}),
		nextID:            1000,
		meter:             meter{left: -1},
		quotas:            map[string]Quotas{},
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// route is one method and path of the API the fake serves; m holds the
// path's submatches, the project first.
type route struct {
	method string
	path   *regexp.Regexp
	serve  func(s *Server, w http.ResponseWriter, r *http.Request, m []string)
}

// projectPath matches a path under /compute/v1/projects/PROJECT/.
func projectPath(rest string) *regexp.Regexp {
	return regexp.MustCompile(`^/compute/v1/projects/([^/]+)/` + rest + `$`)
}

// routes are every resource's routes; each resource's file holds its own.
var routes = slices.Concat(instanceRoutes, fingerprintRoutes, guestRoutes, serialRoutes, addressRoutes, operationRoutes, regionRoutes)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	f := s.throttle(r)
	s.mu.Unlock()
	if f != nil {
		writeError(w, *f)
		return
	}
	for _, rt := range routes {
		if m := rt.path.FindStringSubmatch(r.URL.Path); m != nil && rt.method == r.Method {
			rt.serve(s, w, r, m[1:])
			return
		}
	}
	writeError(w, Fault{Code: http.StatusNotFound, Reason: "notFound", Message: "the fake does not serve " + r.Method + " " + r.URL.Path})
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

// refused answers with the next injected fault of method, if there is
// one. Called with s.mu held.
func (s *Server) refused(w http.ResponseWriter, method string) bool {
	if f := s.takeFault(method); f != nil {
		writeError(w, *f)
		return true
	}
	return false
}

// stamp is the layout of every time Compute writes (RFC 3339 with
// milliseconds and the zone offset).
const stamp = "2006-01-02T15:04:05.000-07:00"

// now is the fake's time. Called with s.mu held.
func (s *Server) now() time.Time { return s.clock().Add(s.skew) }

// link is the URL Compute names a resource by, as in selfLink and
// targetLink.
func link(project string, parts ...string) string {
	return "https://www.googleapis.com/compute/v1/projects/" + project + "/" + strings.Join(parts, "/")
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
	if f.Domain == "" {
		f.Domain = "global"
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(f.Code)
	fmt.Fprintf(w, `{"error":{"code":%d,"message":%q,"errors":[{"message":%q,"domain":%q,"reason":%q}]}}`, f.Code, f.Message, f.Message, f.Domain, f.Reason)
}

// invalid is Compute's 400 for a request it will not take.
func invalid(format string, args ...any) Fault {
	return Fault{Code: http.StatusBadRequest, Reason: "invalid", Message: fmt.Sprintf(format, args...)}
}

// Fail makes the next n calls of method answer the fault. The methods are
// the instances' "insert", "get", "delete", "list", "setMetadata" and
// "setLabels", the addresses'
// "addresses.insert", "addresses.get", "addresses.delete" and
// "addresses.list", "operations.get", "operations.list" and
// "operations.wait" (zonal and regional alike),
// "operations.aggregatedList", "guestAttributes" and "serialPort".
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

// Visits returns how many stored instances, addresses and operations the
// fake's calls have looked at beyond the one each names: a list looks at
// what it lists, Settle at what is in progress. A test bounds it to hold
// the fake's calls to the work of what they touch, whatever the fleet
// (work_test.go).
func (s *Server) Visits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.visits
}

// Calls returns how many calls of method the fake answered.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// Requests returns how many requests the fake was sent, whatever they
// asked, refused ones too.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// SetClock makes the fake read the time from now instead of time.Now. The
// times it writes (creation, operation insert, start and end times) follow
// it.
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock = now
}

// Advance moves the fake's clock forward by d, on top of the clock it
// reads, so a test can let time pass without sleeping.
func (s *Server) Advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.skew += d
}
