package computefake

import (
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// Guest attributes are written by a process on the VM, through its
// metadata server, and read from outside with instances.getGuestAttributes
// (https://cloud.google.com/compute/docs/metadata/manage-guest-attributes:
// "You can't set or delete guest attributes from outside a VM"); the fake
// gives tests SetGuestAttribute to play the VM. That page also says they
// must be enabled (the enable-guest-attributes metadata key, on the
// instance or the project); the fake knows no project metadata and does
// not check.
//
// The answer has the shape the reference documents
// (https://cloud.google.com/compute/docs/reference/rest/v1/instances/getGuestAttributes):
// for a variableKey, variableKey and variableValue; for a queryPath — "the
// default namespace ('') or a nested namespace ('<namespace>/') or a
// specified key ('<namespace>/<key>')" — queryPath and queryValue.items of
// namespace, key and value.
//
// When nothing is found under the path or key, Compute answers 404: Google's
// own OS Config end-to-end tests poll getGuestAttributes and treat a 404 as
// "not written yet"
// (https://github.com/GoogleCloudPlatform/osconfig/blob/master/e2e_tests/compute/instance.go,
// WaitForGuestAttributes). No page gives its reason or message; the fake
// answers notFound, as for an absent instance, with a message naming the
// path. A caller therefore cannot tell the two 404s apart by code or reason
// and must not read this one as "instance not found": it should learn that
// from instances.get.

var guestRoutes = []route{
	{http.MethodGet, projectPath(`zones/([^/]+)/instances/([^/]+)/getGuestAttributes`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		s.getGuestAttributes(w, r, m[0], m[1], m[2])
	}},
}

// guestKey is NAMESPACE/KEY, what a VM can write; queryPath is a guestKey,
// NAMESPACE/, or empty (the forms the reference lists).
var (
	guestKey  = regexp.MustCompile(`^[A-Za-z0-9_-]+/[A-Za-z0-9_-]+$`)
	queryPath = regexp.MustCompile(`^([A-Za-z0-9_-]+/[A-Za-z0-9_-]*)?$`)
)

// SetGuestAttribute writes a guest attribute of an instance as a process on
// the VM would, key being NAMESPACE/KEY ("egress/ready"). It panics on an
// instance the fake does not have or a key no VM could write, which are
// mistakes of the test.
func (s *Server) SetGuestAttribute(zone, name, key, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := zone + "/" + name
	if _, ok := s.instances[id]; !ok {
		panic(fmt.Sprintf("computefake: SetGuestAttribute on %s, which is no instance", id))
	}
	if !guestKey.MatchString(key) {
		panic(fmt.Sprintf("computefake: SetGuestAttribute key %q is not NAMESPACE/KEY", key))
	}
	if s.guest[id] == nil {
		s.guest[id] = map[string]string{}
	}
	s.guest[id][key] = value
}

func (s *Server) getGuestAttributes(w http.ResponseWriter, r *http.Request, project, zone, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused(w, "guestAttributes") {
		return
	}
	id := zone + "/" + name
	if _, ok := s.instances[id]; !ok {
		writeError(w, notFound(project, zone, name))
		return
	}
	attrs := s.guest[id]
	self := link(project, "zones", zone, "instances", name, "getGuestAttributes")
	absent := func(path string) Fault {
		return Fault{Code: http.StatusNotFound, Reason: "notFound",
			Message: fmt.Sprintf("The resource 'projects/%s/zones/%s/instances/%s/guestAttributes/%s' was not found", project, zone, name, path)}
	}
	q := r.URL.Query()
	if key := q.Get("variableKey"); key != "" {
		value, ok := attrs[key]
		if !ok {
			writeError(w, absent(key))
			return
		}
		writeMessage(w, &computepb.GuestAttributes{Kind: proto.String("compute#guestAttributes"), SelfLink: proto.String(self),
			VariableKey: proto.String(key), VariableValue: proto.String(value)})
		return
	}
	path := q.Get("queryPath")
	if !queryPath.MatchString(path) {
		writeError(w, invalid("Invalid value for field 'queryPath': '%s'. It must be empty, NAMESPACE/ or NAMESPACE/KEY.", path))
		return
	}
	var items []*computepb.GuestAttributesEntry
	for k, v := range attrs {
		if path == "" || k == path || (strings.HasSuffix(path, "/") && strings.HasPrefix(k, path)) {
			ns, key, _ := strings.Cut(k, "/")
			items = append(items, &computepb.GuestAttributesEntry{Namespace: proto.String(ns), Key: proto.String(key), Value: proto.String(v)})
		}
	}
	if len(items) == 0 {
		writeError(w, absent(path))
		return
	}
	sort.Slice(items, func(i, j int) bool {
		if items[i].GetNamespace() != items[j].GetNamespace() {
			return items[i].GetNamespace() < items[j].GetNamespace()
		}
		return items[i].GetKey() < items[j].GetKey()
	})
	writeMessage(w, &computepb.GuestAttributes{Kind: proto.String("compute#guestAttributes"), SelfLink: proto.String(self),
		QueryPath: proto.String(path), QueryValue: &computepb.GuestAttributesValue{Items: items}})
}
