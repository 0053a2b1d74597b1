package computefake

import (
	"net/http"
	"time"
)

// RequestIDWindow is how long the fake remembers a request id, on its own
// clock (Advance moves it).
//
// Compute's reference for every mutating method says of requestId
// (https://cloud.google.com/compute/docs/reference/rest/v1/instances/insert):
// "If you make the request again with the same request ID, the server can
// check if original operation with the same request ID was received, and if
// so, will ignore the second request." It names no window. Sixty minutes is
// the window other Google APIs document for the same parameter in the same
// words ("The server will guarantee that for at least 60 minutes after the
// first request", e.g. Batch:
// https://cloud.google.com/python/docs/reference/batch/0.17.14/google.cloud.batch_v1.types.DeleteJobRequest),
// and AIP-155 (https://google.aip.dev/155) lets an API choose "any
// reasonable timeframe"; the fake assumes Compute's is that one.
const RequestIDWindow = 60 * time.Minute

// seenRequest is the first request the fake answered with a request id.
type seenRequest struct {
	operation string // its operation's name
	at        time.Time
}

// repeated returns the operation of an earlier request of the project with
// this request id, if the fake still remembers it. A request that repeats
// an id is ignored: the caller answers the first request's operation (its
// state now, same name and id) and does nothing else — whatever the body
// says, whichever method it is, and even if what the first request made
// has gone since. AIP-155 asks the same: "the server should return the
// response for the previously successful request". Compute scopes request
// ids by nothing finer than the project in the docs, so the fake keys them
// by project. Called with s.mu held.
func (s *Server) repeated(project, requestID string) *operation {
	if requestID == "" {
		return nil
	}
	seen, ok := s.requestIDs[project+"/"+requestID]
	if !ok || s.now().Sub(seen.at) >= RequestIDWindow {
		return nil
	}
	return s.operations[seen.operation]
}

// remember records the first request with a request id. Only a request
// Compute accepted (one that answered an operation) is remembered: a
// request refused in its HTTP answer made nothing, and its retry is a new
// request. Called with s.mu held.
func (s *Server) remember(project, requestID string, o *operation) {
	if requestID != "" {
		s.requestIDs[project+"/"+requestID] = seenRequest{operation: o.op.GetName(), at: s.now()}
	}
}

// replayed answers a request whose request id Compute saw within its
// window with the first request's operation. Called with s.mu held.
func (s *Server) replayed(w http.ResponseWriter, project, requestID string) bool {
	if o := s.repeated(project, requestID); o != nil {
		writeMessage(w, o.op)
		return true
	}
	return false
}

// accept starts the operation of a request Compute accepted on the
// resource at target (targetID, once it has one), remembers its request id
// and answers with the operation. Called with s.mu held.
func (s *Server) accept(w http.ResponseWriter, project, scope, kind, target, requestID string, targetID *uint64) *operation {
	o := s.startOperation(project, scope, kind, target, requestID)
	o.op.TargetId = targetID
	s.remember(project, requestID, o)
	writeMessage(w, o.op)
	return o
}
