// Package computefake is a fake of the part of the Compute Engine REST API
// the gcp provider calls — instances insert, get, delete and aggregated
// list — answering with protojson-encoded computepb messages as the real API
// does (64-bit numbers as strings, errors in the googleapi shape), so the
// real Go client can be pointed at it with option.WithEndpoint and
// option.WithoutAuthentication. Google ships no Compute emulator.
//
// It keeps instances per zone, moves them from PROVISIONING to RUNNING and
// removes deleted ones when told to (Settle), honours insert request ids, and
// can inject errors and unreachable zones.
package computefake

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Insert is one Insert call the fake received.
type Insert struct {
	Project, Zone, RequestID string
	Instance                 *computepb.Instance
}

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
	labelFilter    = regexp.MustCompile(`^labels\.([a-z0-9_-]+)\s*=\s*"?([a-z0-9_-]*)"?$`)
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

func (s *Server) insert(w http.ResponseWriter, r *http.Request, project, zone string) {
	body, _ := io.ReadAll(r.Body)
	inst := &computepb.Instance{}
	if err := protojson.Unmarshal(body, inst); err != nil {
		writeError(w, Fault{Code: 400, Reason: "invalid", Message: "bad instance body: " + err.Error()})
		return
	}
	reqID := r.URL.Query().Get("requestId")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inserts = append(s.inserts, Insert{Project: project, Zone: zone, RequestID: reqID, Instance: proto.Clone(inst).(*computepb.Instance)})
	if f := s.takeFault("insert"); f != nil {
		writeError(w, *f)
		return
	}
	key := zone + "/" + inst.GetName()
	if reqID != "" && s.requestIDs[reqID] == key {
		// A retried request: the same operation, not a conflict.
		writeMessage(w, s.operation(project, zone, inst.GetName(), "insert"))
		return
	}
	if _, ok := s.instances[key]; ok {
		writeError(w, Fault{Code: http.StatusConflict, Reason: "alreadyExists",
			Message: fmt.Sprintf("The resource 'projects/%s/zones/%s/instances/%s' already exists", project, zone, inst.GetName())})
		return
	}
	s.nextID++
	inst.Id = proto.Uint64(s.nextID)
	inst.Status = proto.String("PROVISIONING")
	inst.Zone = proto.String(fmt.Sprintf("https://www.googleapis.com/compute/v1/projects/%s/zones/%s", project, zone))
	inst.CreationTimestamp = proto.String(time.Now().Format("2006-01-02T15:04:05.000-07:00"))
	inst.SelfLink = proto.String(fmt.Sprintf("https://www.googleapis.com/compute/v1/projects/%s/zones/%s/instances/%s", project, zone, inst.GetName()))
	s.instances[key] = inst
	if reqID != "" {
		s.requestIDs[reqID] = key
	}
	writeMessage(w, s.operation(project, zone, inst.GetName(), "insert"))
}

func (s *Server) get(w http.ResponseWriter, project, zone, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.takeFault("get"); f != nil {
		writeError(w, *f)
		return
	}
	inst, ok := s.instances[zone+"/"+name]
	if !ok {
		writeError(w, notFound(project, zone, name))
		return
	}
	writeMessage(w, inst)
}

func (s *Server) delete(w http.ResponseWriter, project, zone, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.takeFault("delete"); f != nil {
		writeError(w, *f)
		return
	}
	key := zone + "/" + name
	inst, ok := s.instances[key]
	if !ok {
		writeError(w, notFound(project, zone, name))
		return
	}
	// A deleted VM stops first and is gone once it has (Settle).
	inst.Status = proto.String("STOPPING")
	s.deleting[key] = true
	writeMessage(w, s.operation(project, zone, name, "delete"))
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, project string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.takeFault("list"); f != nil {
		writeError(w, *f)
		return
	}
	var key, value string
	if f := r.URL.Query().Get("filter"); f != "" {
		m := labelFilter.FindStringSubmatch(strings.TrimSpace(f))
		if m == nil {
			writeError(w, Fault{Code: 400, Reason: "invalid", Message: "the fake understands only labels.KEY=VALUE filters, not " + f})
			return
		}
		key, value = m[1], m[2]
	}
	out := &computepb.InstanceAggregatedList{Items: map[string]*computepb.InstancesScopedList{}}
	for k, inst := range s.instances {
		if key != "" && inst.GetLabels()[key] != value {
			continue
		}
		scope := "zones/" + strings.SplitN(k, "/", 2)[0]
		if out.Items[scope] == nil {
			out.Items[scope] = &computepb.InstancesScopedList{}
		}
		out.Items[scope].Instances = append(out.Items[scope].Instances, inst)
	}
	for _, sl := range out.Items {
		sort.Slice(sl.Instances, func(i, j int) bool { return sl.Instances[i].GetName() < sl.Instances[j].GetName() })
	}
	for _, z := range s.unreachable {
		out.Items["zones/"+z] = &computepb.InstancesScopedList{Warning: &computepb.Warning{
			Code: proto.String("UNREACHABLE"), Message: proto.String("zone " + z + " is unreachable"),
		}}
		out.Unreachables = append(out.Unreachables, "zones/"+z)
	}
	writeMessage(w, out)
}

func (s *Server) operation(project, zone, name, kind string) *computepb.Operation {
	s.nextID++
	return &computepb.Operation{
		Id:            proto.Uint64(s.nextID),
		Name:          proto.String(fmt.Sprintf("operation-%d", s.nextID)),
		Zone:          proto.String(fmt.Sprintf("https://www.googleapis.com/compute/v1/projects/%s/zones/%s", project, zone)),
		OperationType: proto.String(kind),
		Status:        computepb.Operation_RUNNING.Enum(),
		TargetLink:    proto.String(fmt.Sprintf("https://www.googleapis.com/compute/v1/projects/%s/zones/%s/instances/%s", project, zone, name)),
	}
}

func notFound(project, zone, name string) Fault {
	return Fault{Code: http.StatusNotFound, Reason: "notFound",
		Message: fmt.Sprintf("The resource 'projects/%s/zones/%s/instances/%s' was not found", project, zone, name)}
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

// Settle finishes what is in progress: provisioning instances run, with an
// external IP, and deleted ones are gone.
func (s *Server) Settle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, inst := range s.instances {
		if s.deleting[key] {
			delete(s.instances, key)
			delete(s.deleting, key)
			continue
		}
		if inst.GetStatus() == "PROVISIONING" || inst.GetStatus() == "STAGING" {
			inst.Status = proto.String("RUNNING")
			s.nextIP++
			for _, ni := range inst.GetNetworkInterfaces() {
				for _, ac := range ni.GetAccessConfigs() {
					ac.NatIP = proto.String(fmt.Sprintf("198.51.100.%d", s.nextIP))
				}
			}
		}
	}
}

// Put stores an instance as is, for states and foreign instances a test
// needs.
func (s *Server) Put(zone string, inst *computepb.Instance) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.instances[zone+"/"+inst.GetName()] = proto.Clone(inst).(*computepb.Instance)
}

// SetStatus sets an instance's status string.
func (s *Server) SetStatus(zone, name, status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if inst, ok := s.instances[zone+"/"+name]; ok {
		inst.Status = proto.String(status)
	}
}

// Inserts returns the Insert calls received so far.
func (s *Server) Inserts() []Insert {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Insert(nil), s.inserts...)
}

// Calls returns how many calls of method the fake answered.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}
