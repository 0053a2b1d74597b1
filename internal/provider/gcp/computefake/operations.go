package computefake

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

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
	// zoneOperations.wait and regionOperations.wait, which gcloud polls an
	// operation with (POST …/operations/OPERATION/wait).
	{http.MethodPost, projectPath(`(zones/[^/]+)/operations/([^/]+)/wait`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		s.waitOperation(w, r, m[0], m[1], m[2])
	}},
	{http.MethodPost, projectPath(`(regions/[^/]+)/operations/([^/]+)/wait`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		s.waitOperation(w, r, m[0], m[1], m[2])
	}},
	// globalOperations.aggregatedList, which `gcloud compute operations
	// list` reads.
	{http.MethodGet, projectPath(`aggregated/operations`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		s.aggregatedOperations(w, r, m[0])
	}},
}

// User is the operations' user. Compute writes there the account that made
// the request, "for example: user@example.com"
// (https://cloud.google.com/compute/docs/reference/rest/v1/zoneOperations);
// the fake takes no credentials, so every operation names that example.
const User = "user@example.com"

// WaitDeadline is how long zoneOperations.wait holds a request for an
// operation that is not DONE before it answers the operation as it is.
// Compute "waits for no more than the 2 minutes and then returns the
// current state of the operation, which might be DONE or still in
// progress" (https://cloud.google.com/compute/docs/reference/rest/v1/zoneOperations/wait).
// It is real time, not the fake's clock: it bounds how long a client
// blocks, and a test that wants the wait to end calls Settle (OnWait).
const WaitDeadline = 2 * time.Minute

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
		User:          proto.String(User),
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
	s.running[name] = o
	s.operationByID[strconv.FormatUint(op.GetId(), 10)] = o
	return o
}

// finishOperations makes every running operation DONE and wakes the
// requests waiting on one. Called with s.mu held, by Settle.
func (s *Server) finishOperations() {
	close(s.settled)
	s.settled = make(chan struct{})
	now := s.now().Format(stamp)
	for name, o := range s.running {
		s.visits++
		delete(s.running, name)
		o.op.Status = computepb.Operation_DONE.Enum()
		o.op.Progress = proto.Int32(100)
		o.op.EndTime = proto.String(now)
		if o.fail != nil {
			fail(o.op, *o.fail)
		}
	}
}

// operation finds an operation of a project's scope by name or, as the
// reference also takes, "its unique numeric identifier"; nil answers
// Compute's 404. Called with s.mu held.
func (s *Server) operation(w http.ResponseWriter, project, scope, name string) *operation {
	o, ok := s.operations[name]
	if !ok {
		o, ok = s.operationByID[name]
	}
	if !ok || o.project != project || o.scope != scope {
		writeError(w, Fault{Code: http.StatusNotFound, Reason: "notFound",
			Message: "The resource 'projects/" + project + "/" + scope + "/operations/" + name + "' was not found"})
		return nil
	}
	return o
}

func (s *Server) getOperation(w http.ResponseWriter, project, scope, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused(w, "operations.get") {
		return
	}
	if o := s.operation(w, project, scope, name); o != nil {
		writeMessage(w, o.op)
	}
}

// waitOperation answers the operation once it is DONE: at once if it is,
// else when Settle finishes it, or as it is after WaitDeadline or when the
// client gives up. Before it blocks it calls the OnWait hook, so a test
// can play Compute finishing the work the client waits for.
func (s *Server) waitOperation(w http.ResponseWriter, r *http.Request, project, scope, name string) {
	deadline := time.NewTimer(WaitDeadline)
	defer deadline.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused(w, "operations.wait") {
		return
	}
	hooked, expired := false, false
	for {
		o := s.operation(w, project, scope, name)
		if o == nil {
			return
		}
		if o.op.GetStatus() == computepb.Operation_DONE || expired {
			writeMessage(w, o.op)
			return
		}
		settled, hook := s.settled, s.onWait
		s.mu.Unlock()
		if hook != nil && !hooked {
			hooked = true
			hook(o.op.GetName())
		}
		select {
		case <-settled:
		case <-r.Context().Done():
		case <-deadline.C:
			expired = true
		}
		s.mu.Lock()
		if r.Context().Err() != nil {
			return
		}
	}
}

// OnWait sets a function the fake calls, outside its lock, when a wait
// request finds its operation not yet DONE and is about to block: a test
// that drives a client which waits (gcloud) calls Settle from it.
func (s *Server) OnWait(hook func(operation string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onWait = hook
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

// operationFilter answers a list of operations that is refused, or whose
// filter the fake cannot read, and otherwise returns the filter's
// conditions. s.mu must be held.
func (s *Server) operationFilter(w http.ResponseWriter, r *http.Request, method string) ([]comparison, bool) {
	if s.refused(w, method) {
		return nil, false
	}
	filter := r.URL.Query().Get("filter")
	cs, err := parseFilter(filter, operationFields)
	if err != nil {
		writeError(w, invalid("the fake does not understand the filter %q: %v", filter, err))
		return nil, false
	}
	return cs, true
}

func (s *Server) listOperations(w http.ResponseWriter, r *http.Request, project, scope string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, ok := s.operationFilter(w, r, "operations.list")
	if !ok {
		return
	}
	out := &computepb.OperationList{
		Kind:     proto.String("compute#operationList"),
		SelfLink: proto.String(link(project, scope, "operations")),
	}
	for _, o := range s.operations {
		s.visits++
		if o.project == project && o.scope == scope && matches(cs, operationField(o.op)) {
			out.Items = append(out.Items, o.op)
		}
	}
	// "By default, results are returned in alphanumerical order based on
	// the resource name" (the orderBy parameter of the same page).
	sort.Slice(out.Items, func(i, j int) bool { return out.Items[i].GetName() < out.Items[j].GetName() })
	writeMessage(w, out)
}

// aggregatedOperations is globalOperations.aggregatedList
// (https://cloud.google.com/compute/docs/reference/rest/v1/globalOperations/aggregatedList):
// every operation of the project, by scope ("zones/ZONE",
// "regions/REGION"), each scope's in name order as listOperations, with the
// same filters.
func (s *Server) aggregatedOperations(w http.ResponseWriter, r *http.Request, project string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, ok := s.operationFilter(w, r, "operations.aggregatedList")
	if !ok {
		return
	}
	out := &computepb.OperationAggregatedList{
		Kind:     proto.String("compute#operationAggregatedList"),
		SelfLink: proto.String(link(project, "aggregated", "operations")),
		Items:    map[string]*computepb.OperationsScopedList{},
	}
	for _, o := range s.operations {
		s.visits++
		if o.project != project || !matches(cs, operationField(o.op)) {
			continue
		}
		if out.Items[o.scope] == nil {
			out.Items[o.scope] = &computepb.OperationsScopedList{}
		}
		out.Items[o.scope].Operations = append(out.Items[o.scope].Operations, o.op)
	}
	for _, sl := range out.Items {
		sort.Slice(sl.Operations, func(i, j int) bool { return sl.Operations[i].GetName() < sl.Operations[j].GetName() })
	}
	writeMessage(w, out)
}
