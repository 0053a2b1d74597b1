package computefake

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

var instanceRoutes = []route{
	{http.MethodPost, projectPath(`zones/([^/]+)/instances`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		s.insert(w, r, m[0], m[1])
	}},
	{http.MethodGet, projectPath(`zones/([^/]+)/instances/([^/]+)`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		s.get(w, m[0], m[1], m[2])
	}},
	{http.MethodDelete, projectPath(`zones/([^/]+)/instances/([^/]+)`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		s.delete(w, r, m[0], m[1], m[2])
	}},
	{http.MethodGet, projectPath(`aggregated/instances`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		s.list(w, r, m[0])
	}},
}

// Insert is one Insert call the fake received.
type Insert struct {
	Project, Zone, RequestID string
	Instance                 *computepb.Instance
}

// insert takes an instance insert in the order its answers can be told
// apart: an injected fault (the request never got through), a repeated
// request id (which must do nothing else, not even conflict), the refusals
// of the HTTP answer (a name taken, a natIP not reserved), and only then
// the failures that arrive in the operation.
func (s *Server) insert(w http.ResponseWriter, r *http.Request, project, zone string) {
	body, _ := io.ReadAll(r.Body)
	inst := &computepb.Instance{}
	if err := protojson.Unmarshal(body, inst); err != nil {
		writeError(w, invalid("bad instance body: %v", err))
		return
	}
	reqID := r.URL.Query().Get("requestId")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inserts = append(s.inserts, Insert{Project: project, Zone: zone, RequestID: reqID, Instance: proto.Clone(inst).(*computepb.Instance)})
	if s.refused(w, "insert") {
		return
	}
	if s.replayed(w, project, reqID) {
		return
	}
	key := zone + "/" + inst.GetName()
	if _, ok := s.instances[key]; ok {
		writeError(w, Fault{Code: http.StatusConflict, Reason: "alreadyExists",
			Message: fmt.Sprintf("The resource 'projects/%s/zones/%s/instances/%s' already exists", project, zone, inst.GetName())})
		return
	}
	nats, fault := s.natAddresses(inst, zone)
	if fault == nil {
		fault = s.stackFault(inst, zone)
	}
	if fault != nil {
		writeError(w, *fault)
		return
	}
	f := s.takeInsertFailure(zone)
	if f == nil {
		f = s.instanceOverQuota(zone, inst)
	}
	if f != nil {
		// Accepted, to fail later: no instance, ever.
		s.accept(w, project, "zones/"+zone, "insert", link(project, "zones", zone, "instances", inst.GetName()), reqID, nil).fail = f
		return
	}
	s.nextID++
	inst.Kind = proto.String("compute#instance")
	inst.Id = proto.Uint64(s.nextID)
	inst.Status = proto.String("PROVISIONING")
	inst.Zone = proto.String(link(project, "zones", zone))
	inst.CreationTimestamp = proto.String(s.now().Format(stamp))
	inst.SelfLink = proto.String(link(project, "zones", zone, "instances", inst.GetName()))
	stampFingerprints(inst)
	s.instances[key] = inst
	s.booting[key] = true
	claim(nats, inst.GetSelfLink())
	s.accept(w, project, "zones/"+zone, "insert", inst.GetSelfLink(), reqID, inst.Id)
}

func (s *Server) get(w http.ResponseWriter, project, zone, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused(w, "get") {
		return
	}
	inst, ok := s.instances[zone+"/"+name]
	if !ok {
		writeError(w, notFound(project, zone, name))
		return
	}
	writeMessage(w, inst)
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request, project, zone, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused(w, "delete") {
		return
	}
	reqID := r.URL.Query().Get("requestId")
	if s.replayed(w, project, reqID) {
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
	delete(s.booting, key)
	s.accept(w, project, "zones/"+zone, "delete", link(project, "zones", zone, "instances", name), reqID, inst.Id)
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, project string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused(w, "list") {
		return
	}
	key, value, err := parseLabelFilter(r.URL.Query().Get("filter"))
	if err != nil {
		writeError(w, invalid("%v", err))
		return
	}
	// The kind and selfLink every aggregated list carries
	// (https://cloud.google.com/compute/docs/reference/rest/v1/instances/aggregatedList).
	out := &computepb.InstanceAggregatedList{
		Kind:     proto.String("compute#instanceAggregatedList"),
		SelfLink: proto.String(link(project, "aggregated", "instances")),
		Items:    map[string]*computepb.InstancesScopedList{},
	}
	for k, inst := range s.instances {
		s.visits++
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

func notFound(project, zone, name string) Fault {
	return Fault{Code: http.StatusNotFound, Reason: "notFound",
		Message: fmt.Sprintf("The resource 'projects/%s/zones/%s/instances/%s' was not found", project, zone, name)}
}

// Settle finishes what is in progress: provisioning instances run, with an
// ephemeral external IP where they asked for no static one, deleted
// instances and addresses are gone (the addresses a gone instance used
// are RESERVED again), and every running operation is DONE.
func (s *Server) Settle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finishOperations()
	for key := range s.deleting {
		s.visits++
		if inst, ok := s.instances[key]; ok {
			s.releaseNATs(key, inst)
		}
		delete(s.instances, key)
		delete(s.deleting, key)
		delete(s.guest, key)
		delete(s.serial, key)
	}
	for key := range s.booting {
		s.visits++
		inst := s.instances[key]
		delete(s.booting, key)
		inst.Status = proto.String("RUNNING")
		s.nextIP++
		for _, ni := range inst.GetNetworkInterfaces() {
			for _, ac := range ni.GetAccessConfigs() {
				if ac.GetNatIP() == "" {
					ac.NatIP = proto.String(fmt.Sprintf("198.51.100.%d", s.nextIP))
				}
			}
			s.assignIPv6(inst)
		}
	}
	s.settleAddresses()
}

// Put stores an instance as is, for states and foreign instances a test
// needs.
func (s *Server) Put(zone string, inst *computepb.Instance) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := proto.Clone(inst).(*computepb.Instance)
	stampFingerprints(c)
	s.instances[zone+"/"+inst.GetName()] = c
	s.noteStatus(zone+"/"+inst.GetName(), c)
}

// noteStatus keeps the instance of key among the booting ones when its
// status says it boots. Called with s.mu held.
func (s *Server) noteStatus(key string, inst *computepb.Instance) {
	if st := inst.GetStatus(); (st == "PROVISIONING" || st == "STAGING") && !s.deleting[key] {
		s.booting[key] = true
	} else {
		delete(s.booting, key)
	}
}

// SetStatus sets an instance's status string.
func (s *Server) SetStatus(zone, name, status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if inst, ok := s.instances[zone+"/"+name]; ok {
		inst.Status = proto.String(status)
		s.noteStatus(zone+"/"+name, inst)
	}
}

// Inserts returns the Insert calls received so far.
func (s *Server) Inserts() []Insert {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Insert(nil), s.inserts...)
}

// Instances returns how many instances the fake holds, in every zone.
func (s *Server) Instances() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.instances)
}
