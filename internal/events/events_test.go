package events_test

import (
	"errors"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/go-cmp/cmp"
	"github.com/googleapis/google-cloudevents-go/cloud/firestoredata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/egress-proxies/egress/internal/events"
	"github.com/egress-proxies/egress/internal/proxy"
)

const docName = "projects/demo-p/databases/(default)/documents/namespaces/team-a/proxies/egress-1"

func newEvent(t *testing.T, subject, contentType string, data []byte) event.Event {
	t.Helper()
	e := event.New()
	e.SetID("evt-1")
	e.SetSource("//firestore.googleapis.com/projects/demo-p/databases/(default)")
	e.SetType(events.DocumentWritten)
	if subject != "" {
		e.SetSubject(subject)
	}
	if err := e.SetData(contentType, data); err != nil {
		t.Fatal(err)
	}
	return e
}

func protoData(t *testing.T, d *firestoredata.DocumentEventData) []byte {
	t.Helper()
	b, err := proto.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDocumentKey(t *testing.T) {
	want := proxy.Key{Namespace: "team-a", Name: "egress-1"}
	written := &firestoredata.DocumentEventData{Value: &firestoredata.Document{Name: docName}}
	deleted := &firestoredata.DocumentEventData{OldValue: &firestoredata.Document{Name: docName}}
	jsonData, err := protojson.Marshal(written)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason    string
		event     func(t *testing.T) event.Event
		want      proxy.Key
		malformed bool
	}{
		"ProtobufWithSubject": {
			reason: "Eventarc's shape: protobuf data, subject documents/...",
			event: func(t *testing.T) event.Event {
				return newEvent(t, "documents/namespaces/team-a/proxies/egress-1", "application/protobuf", protoData(t, written))
			},
			want: want,
		},
		"ProtobufNameOnly": {
			reason: "Without a subject the name comes from the document in the data.",
			event:  func(t *testing.T) event.Event { return newEvent(t, "", "application/protobuf", protoData(t, written)) },
			want:   want,
		},
		"DeleteEvent": {
			reason: "A delete has only an old value.",
			event:  func(t *testing.T) event.Event { return newEvent(t, "", "application/protobuf", protoData(t, deleted)) },
			want:   want,
		},
		"JSONData": {
			reason: "JSON-encoded DocumentEventData is accepted.",
			event:  func(t *testing.T) event.Event { return newEvent(t, "", "application/json", jsonData) },
			want:   want,
		},
		"BadProtobuf": {
			reason: "Data that is not a DocumentEventData is malformed.",
			event: func(t *testing.T) event.Event {
				return newEvent(t, "documents/namespaces/team-a/proxies/egress-1", "application/protobuf", []byte{0xff, 0xff, 0xff})
			},
			malformed: true,
		},
		"BadJSON": {
			reason:    "Broken JSON is malformed.",
			event:     func(t *testing.T) event.Event { return newEvent(t, "", "application/json", []byte(`{"value":`)) },
			malformed: true,
		},
		"OutsideProxies": {
			reason: "A document outside namespaces/*/proxies/* is not ours.",
			event: func(t *testing.T) event.Event {
				return newEvent(t, "documents/namespaces/team-a", "application/protobuf", protoData(t, written))
			},
			malformed: true,
		},
		"NoName": {
			reason:    "An event naming no document is malformed.",
			event:     func(t *testing.T) event.Event { return newEvent(t, "", "application/protobuf", nil) },
			malformed: true,
		},
		"UnknownContentType": {
			reason:    "Data in an encoding we cannot read is malformed.",
			event:     func(t *testing.T) event.Event { return newEvent(t, "", "text/plain", []byte("hello")) },
			malformed: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := events.DocumentKey(tc.event(t))
			if tc.malformed {
				if !errors.Is(err, events.ErrMalformed) {
					t.Fatalf("%s\nerror %v, want ErrMalformed", tc.reason, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\nunexpected error: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nkey (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
