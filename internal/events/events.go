// Package events reads, out of the CloudEvents that trigger Reconcile, the
// proxy document they are about. Firestore events arrive as Eventarc sends
// them: binary mode, data a DocumentEventData in protobuf
// (application/protobuf) or, from some senders, in JSON; the types are
// Google's own, from google-cloudevents-go.
package events

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/googleapis/google-cloudevents-go/cloud/firestoredata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/egress-proxies/egress/internal/proxy"
)

// The Firestore event types. Reconcile is triggered by Written; the others
// are accepted too, so a trigger set up on them works the same.
const (
	DocumentWritten = "google.cloud.firestore.document.v1.written"
	DocumentCreated = "google.cloud.firestore.document.v1.created"
	DocumentUpdated = "google.cloud.firestore.document.v1.updated"
	DocumentDeleted = "google.cloud.firestore.document.v1.deleted"
)

// ErrMalformed marks an event that no retry can make readable: it is to be
// logged and acknowledged.
var ErrMalformed = errors.New("malformed event")

// IsDocumentEvent reports whether the event is a Firestore document event.
func IsDocumentEvent(e event.Event) bool {
	switch e.Type() {
	case DocumentWritten, DocumentCreated, DocumentUpdated, DocumentDeleted:
		return true
	}
	return false
}

// DocumentKey returns the proxy document a Firestore event is about. The
// data must decode; the path is the event's subject
// ("documents/namespaces/{ns}/proxies/{name}"), or, without one, the name
// of the document in the data (its new value, or its old one for a
// delete). Every error wraps ErrMalformed.
func DocumentKey(e event.Event) (proxy.Key, error) {
	path, err := documentPath(e)
	if err != nil {
		return proxy.Key{}, err
	}
	key, err := proxy.ParseKey(path)
	if err != nil {
		return proxy.Key{}, fmt.Errorf("%w: event %s: %w", ErrMalformed, e.ID(), err)
	}
	return key, nil
}

// Document returns what a Firestore event is about: a proxy document
// (a namespace's proxy or a pool's member) as its key, or a warm pool's
// document (pools/{pool}) as the pool's name, the key then zero. Every
// error wraps ErrMalformed.
func Document(e event.Event) (key proxy.Key, pool string, err error) {
	path, err := documentPath(e)
	if err != nil {
		return proxy.Key{}, "", err
	}
	if name, perr := proxy.ParsePoolPath(path); perr == nil {
		return proxy.Key{}, name, nil
	}
	key, err = proxy.ParseKey(path)
	if err != nil {
		return proxy.Key{}, "", fmt.Errorf("%w: event %s: %w", ErrMalformed, e.ID(), err)
	}
	return key, "", nil
}

// documentPath is the path of the document the event is about: its
// subject, or the name in its data.
func documentPath(e event.Event) (string, error) {
	data, err := decode(e)
	if err != nil {
		return "", fmt.Errorf("%w: event %s: %w", ErrMalformed, e.ID(), err)
	}
	path := e.Subject()
	if path == "" {
		path = data.GetValue().GetName()
	}
	if path == "" {
		path = data.GetOldValue().GetName()
	}
	if path == "" {
		return "", fmt.Errorf("%w: event %s names no document: no subject and no document name in its data", ErrMalformed, e.ID())
	}
	return path, nil
}

// decode reads the DocumentEventData in the encoding the event declares.
func decode(e event.Event) (*firestoredata.DocumentEventData, error) {
	var d firestoredata.DocumentEventData
	ct := e.DataContentType()
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	switch strings.TrimSpace(ct) {
	case "application/protobuf", "application/x-protobuf", "":
		if err := proto.Unmarshal(e.Data(), &d); err != nil {
			return nil, fmt.Errorf("data is not a protobuf DocumentEventData: %w", err)
		}
	case "application/json":
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(e.Data(), &d); err != nil {
			return nil, fmt.Errorf("data is not a JSON DocumentEventData: %w", err)
		}
	default:
		return nil, fmt.Errorf("data content type %q is neither application/protobuf nor application/json", e.DataContentType())
	}
	return &d, nil
}
