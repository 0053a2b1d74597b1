package computefake

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// instances.setMetadata and instances.setLabels replace an instance's
// metadata items or labels, whole, under optimistic locking: the request
// carries the fingerprint the caller read (metadata.fingerprint,
// labelFingerprint), and Compute refuses it when the fingerprint is not
// the current one. The Metadata reference
// (https://cloud.google.com/compute/docs/reference/rest/v1/instances/setMetadata,
// the fingerprint field): "You must always provide an up-to-date
// fingerprint hash in order to update or change metadata, otherwise the
// request will fail with error 412 conditionNotMet. To see the latest
// fingerprint, make a get() request to retrieve the resource." Its
// message is "Supplied fingerprint does not match current metadata
// fingerprint.", one of the two Terraform's Google provider retries on
// after a 412 (FINGERPRINT_FAIL_ERRORS, beside "Invalid fingerprint.").
// For labels the reference only says the fingerprint is "used to prevent
// conflicts"; the fake assumes the same 412 conditionNotMet, with the
// message "Labels fingerprint either invalid or resource labels have
// changed". A request without a fingerprint is refused the same way: the
// fake assumes Compute takes a missing fingerprint for a stale one.
//
// A fingerprint is "essentially a hash of the metadata's contents": the
// fake's is the first 8 bytes of the SHA-256 of the items or labels, in
// base64 (the length Compute's have), so setting the same content again
// gives the same fingerprint, and a fingerprint read before any change
// is refused after it. The reference gives both fields as "string (bytes
// format)": Google's Cloud CLI decodes them and sends them back in the
// URL-safe alphabet, so the fake writes that alphabet (gcloud then shows
// what the Go client reads) and compares fingerprints by their bytes,
// whichever alphabet a client uses.
//
// Both answer an operation of type setMetadata or setLabels, RUNNING
// until Settle as every operation of the fake; the change is applied at
// once, so instances.get shows it and its new fingerprint right after the
// call (Compute shows it when the operation is done: a test cannot tell
// the difference, and gcloud, which waits on the operation, needs OnWait
// to Settle, as for an insert).

var fingerprintRoutes = []route{
	{http.MethodPost, projectPath(`zones/([^/]+)/instances/([^/]+)/setMetadata`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		s.setMetadata(w, r, m[0], m[1], m[2])
	}},
	{http.MethodPost, projectPath(`zones/([^/]+)/instances/([^/]+)/setLabels`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		s.setLabels(w, r, m[0], m[1], m[2])
	}},
}

// The refusals of a stale or missing fingerprint.
var (
	staleMetadata = Fault{Code: http.StatusPreconditionFailed, Reason: "conditionNotMet",
		Message: "Supplied fingerprint does not match current metadata fingerprint."}
	staleLabels = Fault{Code: http.StatusPreconditionFailed, Reason: "conditionNotMet",
		Message: "Labels fingerprint either invalid or resource labels have changed"}
)

// fingerprint is the fake's hash of a value's content: of metadata items,
// a list of {key, value}; of labels, a map (encoding/json sorts its keys).
func fingerprint(v any) string {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return base64.URLEncoding.EncodeToString(sum[:8])
}

// sameFingerprint reports whether a request's fingerprint, if it has one,
// is the current one, in either base64 alphabet.
func sameFingerprint(sent *string, current string) bool {
	if sent == nil {
		return false
	}
	decode := func(s string) []byte {
		if b, err := base64.URLEncoding.DecodeString(s); err == nil {
			return b
		}
		b, _ := base64.StdEncoding.DecodeString(s)
		return b
	}
	got, want := decode(*sent), decode(current)
	return got != nil && string(got) == string(want)
}

func metadataFingerprint(items []*computepb.Items) string {
	kv := make([][2]string, len(items))
	for i, it := range items {
		kv[i] = [2]string{it.GetKey(), it.GetValue()}
	}
	return fingerprint(kv)
}

func labelFingerprint(labels map[string]string) string {
	if labels == nil {
		labels = map[string]string{}
	}
	return fingerprint(labels)
}

// stampFingerprints gives an instance the fingerprints of its metadata and
// labels, as Compute shows them on every instance (an instance without
// metadata still has a metadata object with a fingerprint). Called at
// insert and Put, with s.mu held or before the instance is shared.
func stampFingerprints(inst *computepb.Instance) {
	if inst.Metadata == nil {
		inst.Metadata = &computepb.Metadata{}
	}
	inst.Metadata.Kind = proto.String("compute#metadata")
	inst.Metadata.Fingerprint = proto.String(metadataFingerprint(inst.Metadata.GetItems()))
	inst.LabelFingerprint = proto.String(labelFingerprint(inst.GetLabels()))
}

// readBody decodes a request body into m, answering 400 if it cannot.
func readBody(w http.ResponseWriter, r *http.Request, m proto.Message) bool {
	body, _ := io.ReadAll(r.Body)
	if err := protojson.Unmarshal(body, m); err != nil {
		writeError(w, invalid("bad request body: %v", err))
		return false
	}
	return true
}

// setMetadata is instances.setMetadata: the items replace the instance's
// (the request is the whole metadata, not a patch).
func (s *Server) setMetadata(w http.ResponseWriter, r *http.Request, project, zone, name string) {
	md := &computepb.Metadata{}
	if !readBody(w, r, md) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setMetadataCalls = append(s.setMetadataCalls, proto.Clone(md).(*computepb.Metadata))
	inst, reqID, ok := s.setTarget(w, r, project, zone, name, "setMetadata")
	if !ok {
		return
	}
	if !sameFingerprint(md.Fingerprint, inst.GetMetadata().GetFingerprint()) {
		writeError(w, staleMetadata)
		return
	}
	if f := checkItems(md.GetItems()); f != nil {
		writeError(w, *f)
		return
	}
	inst.Metadata = &computepb.Metadata{Items: md.GetItems()}
	stampFingerprints(inst)
	s.accept(w, project, "zones/"+zone, "setMetadata", inst.GetSelfLink(), reqID, inst.Id)
}

// setTarget is what setMetadata and setLabels do alike before their
// fingerprint: an injected fault, a replayed request id, an instance that
// is not there each answered. Called with s.mu held.
func (s *Server) setTarget(w http.ResponseWriter, r *http.Request, project, zone, name, method string) (*computepb.Instance, string, bool) {
	if s.refused(w, method) {
		return nil, "", false
	}
	reqID := r.URL.Query().Get("requestId")
	if s.replayed(w, project, reqID) {
		return nil, "", false
	}
	inst, ok := s.instances[zone+"/"+name]
	if !ok {
		writeError(w, notFound(project, zone, name))
		return nil, "", false
	}
	return inst, reqID, true
}

// checkItems refuses what Compute documents as invalid metadata: a key
// twice, or items of more than 512 KB in all ("The total size of all keys
// and values must be less than 512 KB", the Metadata reference).
func checkItems(items []*computepb.Items) *Fault {
	seen := map[string]bool{}
	size := 0
	for _, it := range items {
		if seen[it.GetKey()] {
			f := invalid("Invalid value for field 'metadata.items': the key %q appears more than once", it.GetKey())
			return &f
		}
		seen[it.GetKey()] = true
		size += len(it.GetKey()) + len(it.GetValue())
	}
	if size >= 512*1024 {
		f := invalid("Invalid value for field 'metadata': the metadata's %d bytes exceed 512 KB", size)
		return &f
	}
	return nil
}

// setLabels is instances.setLabels: the labels replace the instance's.
func (s *Server) setLabels(w http.ResponseWriter, r *http.Request, project, zone, name string) {
	req := &computepb.InstancesSetLabelsRequest{}
	if !readBody(w, r, req) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setLabelsCalls = append(s.setLabelsCalls, proto.Clone(req).(*computepb.InstancesSetLabelsRequest))
	inst, reqID, ok := s.setTarget(w, r, project, zone, name, "setLabels")
	if !ok {
		return
	}
	if !sameFingerprint(req.LabelFingerprint, inst.GetLabelFingerprint()) {
		writeError(w, staleLabels)
		return
	}
	inst.Labels = req.GetLabels()
	stampFingerprints(inst)
	s.accept(w, project, "zones/"+zone, "setLabels", inst.GetSelfLink(), reqID, inst.Id)
}

// SetMetadataCalls returns the bodies of the setMetadata calls received so
// far, refused ones included.
func (s *Server) SetMetadataCalls() []*computepb.Metadata {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*computepb.Metadata(nil), s.setMetadataCalls...)
}

// SetLabelsCalls returns the bodies of the setLabels calls received so
// far, refused ones included.
func (s *Server) SetLabelsCalls() []*computepb.InstancesSetLabelsRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*computepb.InstancesSetLabelsRequest(nil), s.setLabelsCalls...)
}

// Touch changes an instance's metadata or labels as another client would
// between a caller's read and its write (a person with gcloud, another
// tool): key=value is set in the metadata items (metadata true) or the
// labels, and the fingerprint changes with it. It panics on an instance
// the fake does not have, a mistake of the test.
func (s *Server) Touch(zone, name string, metadata bool, key, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inst, ok := s.instances[zone+"/"+name]
	if !ok {
		panic(fmt.Sprintf("computefake: Touch of %s/%s, which the fake does not have", zone, name))
	}
	if !metadata {
		if inst.Labels == nil {
			inst.Labels = map[string]string{}
		}
		inst.Labels[key] = value
		stampFingerprints(inst)
		return
	}
	items := inst.GetMetadata().GetItems()
	found := false
	for _, it := range items {
		if it.GetKey() == key {
			it.Value, found = proto.String(value), true
		}
	}
	if !found {
		items = append(items, &computepb.Items{Key: proto.String(key), Value: proto.String(value)})
	}
	inst.Metadata.Items = items
	stampFingerprints(inst)
}
