package computefake

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// operation is one long-running operation the fake answered: what an
// insert or delete returns, kept so that zoneOperations (and, for regional
// resources, regionOperations) can serve it afterwards.
//
// Every operation starts RUNNING and ends DONE on Settle, which is also
// when what it does is done (an instance running, a deleted one gone), so
// a test sees both: the RUNNING operation right after the call and the DONE
// one after Settle. Compute documents PENDING, RUNNING and DONE
// (https://cloud.google.com/compute/docs/reference/rest/v1/zoneOperations);
// the fake skips PENDING.
type operation struct {
	project string
	scope   string // zones/ZONE or regions/REGION
	op      *computepb.Operation
	fail    *OperationError // how it ends, if it fails
}

var operationRoutes = []route{
	{http.MethodGet, projectPath(`(zones/[^/]+)/operations/([^/]+)`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		s.getOperation(w, m[0], m[1], m[2])
	}},
	{http.MethodGet, projectPath(`(zones/[^/]+)/operations`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		s.listOperations(w, r, m[0], m[1])
	}},
	// Regional resources' operations (addresses') are regionOperations'.
	{http.MethodGet, projectPath(`(regions/[^/]+)/operations/([^/]+)`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		s.getOperation(w, m[0], m[1], m[2])
	}},
	{http.MethodGet, projectPath(`(regions/[^/]+)/operations`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		s.listOperations(w, r, m[0], m[1])
	}},
}

// startOperation records a new RUNNING operation of kind ("insert",
// "delete") on the resource at target. Called with s.mu held.
func (s *Server) startOperation(project, scope, kind, target, requestID string) *operation {
	t := s.now()
	now := t.Format(stamp)
	s.nextID++
	// Compute's names start operation- and a millisecond time, so that the
	// documented default order of lists (by name) is the order they began.
	name := fmt.Sprintf("operation-%d-%08x", t.UnixMilli(), s.nextID)
	op := &computepb.Operation{
		Kind:          proto.String("compute#operation"),
		Id:            proto.Uint64(s.nextID),
		Name:          proto.String(name),
		OperationType: proto.String(kind),
		Status:        computepb.Operation_RUNNING.Enum(),
		Progress:      proto.Int32(0),
		TargetLink:    proto.String(target),
		InsertTime:    proto.String(now),
		StartTime:     proto.String(now),
		SelfLink:      proto.String(link(project, scope, "operations", name)),
	}
	if zone, ok := strings.CutPrefix(scope, "zones/"); ok {
		op.Zone = proto.String(link(project, "zones", zone))
	} else {
		op.Region = proto.String(link(project, scope))
	}
	if requestID != "" {
		// "The value of requestId if you provided it in the request": the
		// Operation's clientOperationId, as computepb documents it.
		op.ClientOperationId = proto.String(requestID)
	}
	o := &operation{project: project, scope: scope, op: op}
	s.operations[name] = o
	return o
}

// finishOperations makes every running operation DONE. Called with s.mu
// held, by Settle.
func (s *Server) finishOperations() {
	now := s.now().Format(stamp)
	for _, o := range s.operations {
		if o.op.GetStatus() == computepb.Operation_DONE {
			continue
		}
		o.op.Status = computepb.Operation_DONE.Enum()
		o.op.Progress = proto.Int32(100)
		o.op.EndTime = proto.String(now)
		if o.fail != nil {
			fail(o.op, *o.fail)
		}
	}
}

func (s *Server) getOperation(w http.ResponseWriter, project, scope, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused(w, "operations.get") {
		return
	}
	o, ok := s.operations[name]
	if !ok {
		// The reference takes "the name of the Operations resource ... or its
		// unique numeric identifier".
		for _, c := range s.operations {
			if strconv.FormatUint(c.op.GetId(), 10) == name {
				o, ok = c, true
			}
		}
	}
	if !ok || o.project != project || o.scope != scope {
		writeError(w, Fault{Code: http.StatusNotFound, Reason: "notFound",
			Message: "The resource 'projects/" + project + "/" + scope + "/operations/" + name + "' was not found"})
		return
	}
	writeMessage(w, o.op)
}

// operationFields are the fields a filter of the operations list may name.
var operationFields = map[string]bool{"name": true, "targetLink": true, "operationType": true, "status": true, "clientOperationId": true}

func operationField(op *computepb.Operation) func(string) string {
	return func(name string) string {
		switch name {
		case "name":
			return op.GetName()
		case "targetLink":
			return op.GetTargetLink()
		case "operationType":
			return op.GetOperationType()
		case "status":
			return op.GetStatus().String()
		case "clientOperationId":
			return op.GetClientOperationId()
		}
		return ""
	}
}

func (s *Server) listOperations(w http.ResponseWriter, r *http.Request, project, scope string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused(w, "operations.list") {
		return
	}
	filter := r.URL.Query().Get("filter")
	cs, err := parseFilter(filter, operationFields)
	if err != nil {
		writeError(w, invalid("the fake does not understand the filter %q: %v", filter, err))
		return
	}
	out := &computepb.OperationList{
		Kind:     proto.String("compute#operationList"),
		SelfLink: proto.String(link(project, scope, "operations")),
	}
	for _, o := range s.operations {
		if o.project == project && o.scope == scope && matches(cs, operationField(o.op)) {
			out.Items = append(out.Items, o.op)
		}
	}
	// "By default, results are returned in alphanumerical order based on
	// the resource name" (the orderBy parameter of the same page).
	sort.Slice(out.Items, func(i, j int) bool { return out.Items[i].GetName() < out.Items[j].GetName() })
	writeMessage(w, out)
}
