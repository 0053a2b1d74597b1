package functions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/google/uuid"
	"github.com/googleapis/google-cloudevents-go/cloud/firestoredata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/egress-proxies/egress/emulators/emulatortest"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/queue"
	"github.com/egress-proxies/egress/internal/sealing"
	"github.com/egress-proxies/egress/internal/store"
)

// TestReconcileThroughTheFramework serves Reconcile with
// functions-framework-go and posts it what Eventarc sends for a Firestore
// write: a binary-mode CloudEvent (ce-* headers) whose body is the protobuf
// DocumentEventData. That one delivery creates the VM and returns with the
// proxy Provisioning; the VM's call-home, a Pub/Sub push as the VM's
// publish arrives, brings it Ready.
func TestReconcileThroughTheFramework(t *testing.T) {
	emulatortest.Firestore(t)
	emulatortest.PubSub(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a bound against a hang, generous for a busy machine
	defer cancel()
	a := useApp(t, nil)
	project := a.Config.Project
	fs, err := firestore.NewClient(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	st := store.New(fs, sealing.NewKeyring(sealing.LocalKEK(), sealing.Firestore{Client: fs}))
	url := serveTarget(t, "Reconcile")

	newDoc := func(name string) *proxy.Proxy {
		p := &proxy.Proxy{
			Namespace: "team-r", Name: name, UID: uuid.NewString(), Generation: 1,
			Spec:       proxy.Spec{Provider: mock.Type, Port: 8888, AllowedSourceRanges: []string{"203.0.113.0/24"}},
			Status:     proxy.Status{Phase: proxy.PhasePending},
			CreateTime: time.Now(),
		}
		if _, err := st.Create(ctx, p, 20); err != nil {
			t.Fatal(err)
		}
		return p
	}
	docName := func(p *proxy.Proxy) string {
		return "projects/" + project + "/databases/(default)/documents/" + p.Key().Path()
	}
	firestoreEvent := func(p *proxy.Proxy, contentType string, body []byte) *http.Request {
		r, _ := http.NewRequest(http.MethodPost, url+"/", bytes.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		r.Header.Set("ce-id", "evt-"+p.Name)
		r.Header.Set("ce-specversion", "1.0")
		r.Header.Set("ce-type", "google.cloud.firestore.document.v1.written")
		r.Header.Set("ce-source", "//firestore.googleapis.com/projects/"+project+"/databases/(default)")
		r.Header.Set("ce-subject", "documents/"+p.Key().Path())
		r.Header.Set("ce-dataschema", "https://github.com/googleapis/google-cloudevents/blob/main/proto/google/events/cloud/firestore/v1/data.proto")
		r.Header.Set("ce-time", time.Now().UTC().Format(time.RFC3339Nano))
		r.Header.Set("ce-database", "(default)")
		r.Header.Set("ce-namespace", "(default)")
		r.Header.Set("ce-document", p.Key().Path())
		return r
	}
	post := func(t *testing.T, r *http.Request) {
		t.Helper()
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d, want 200", resp.StatusCode)
		}
	}
	pubsubEvent := func(topic, id, data string, attributes ...string) *http.Request {
		attrs := map[string]string{}
		for i := 0; i+1 < len(attributes); i += 2 {
			attrs[attributes[i]] = attributes[i+1]
		}
		a, _ := json.Marshal(attrs)
		body := fmt.Sprintf(`{"message":{"data":%q,"messageId":%q,"attributes":%s},"subscription":"projects/%s/subscriptions/eventarc-reconcile"}`,
			b64(data), id, a, project)
		r, _ := http.NewRequest(http.MethodPost, url+"/", bytes.NewBufferString(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("ce-id", id)
		r.Header.Set("ce-specversion", "1.0")
		r.Header.Set("ce-type", queue.MessagePublishedType)
		r.Header.Set("ce-source", "//pubsub.googleapis.com/projects/"+project+"/topics/"+topic)
		return r
	}
	wantPhase := func(t *testing.T, p *proxy.Proxy, phase proxy.Phase) {
		t.Helper()
		got, err := st.Get(ctx, p.Key())
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase != phase || (phase == proxy.PhaseReady) != (got.Status.Endpoint != "") {
			t.Fatalf("status %+v, want %s (with an endpoint once Ready)", got.Status, phase)
		}
	}
	// identity is the token VM p's metadata server gives it.
	identity := func(t *testing.T, p *proxy.Proxy) string {
		t.Helper()
		tok, err := a.IdentityToken(provider.NameFromUID(p.UID))
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	// wantReady delivers what the VM publishes once its boot (1 s, the
	// mock's here) has ended.
	wantReady := func(t *testing.T, p *proxy.Proxy) {
		t.Helper()
		wantPhase(t, p, proxy.PhaseProvisioning)
		time.Sleep(time.Second)
		post(t, pubsubEvent(queue.CallHomeTopic, "home-"+p.Name, fmt.Sprintf(`{"namespace":%q,"name":%q,"uid":%q,"reason":"ready"}`, p.Namespace, p.Name, p.UID),
			queue.IdentityAttribute, identity(t, p)))
		wantPhase(t, p, proxy.PhaseReady)
	}

	t.Run("ProtobufEvent", func(t *testing.T) {
		p := newDoc("protobuf")
		body, err := proto.Marshal(&firestoredata.DocumentEventData{Value: &firestoredata.Document{Name: docName(p)}})
		if err != nil {
			t.Fatal(err)
		}
		post(t, firestoreEvent(p, "application/protobuf", body))
		wantReady(t, p)
	})
	t.Run("JSONEvent", func(t *testing.T) {
		p := newDoc("json-data")
		body, err := protojson.Marshal(&firestoredata.DocumentEventData{Value: &firestoredata.Document{Name: docName(p)}})
		if err != nil {
			t.Fatal(err)
		}
		post(t, firestoreEvent(p, "application/json", body))
		wantReady(t, p)
	})
	t.Run("PubSubRequest", func(t *testing.T) {
		p := newDoc("requeued")
		post(t, pubsubEvent(queue.ReconcileTopic, "7", fmt.Sprintf(`{"document":%q,"reason":"sweep"}`, p.Key().Path())))
		wantReady(t, p)
	})
	t.Run("CallHomeOfAnotherUID", func(t *testing.T) {
		// A VM of the name's predecessor: acknowledged, and nothing done.
		p := newDoc("stale-vm")
		post(t, firestoreEvent(p, "application/protobuf", nil))
		post(t, pubsubEvent(queue.CallHomeTopic, "stale", fmt.Sprintf(`{"namespace":%q,"name":%q,"uid":%q,"reason":"ready"}`, p.Namespace, p.Name, uuid.NewString()),
			queue.IdentityAttribute, identity(t, p)))
		wantPhase(t, p, proxy.PhaseProvisioning)
	})
	t.Run("CallHomeWithoutUID", func(t *testing.T) {
		// Where VMs publish, a message that names no uid would be checked
		// against no VM: acknowledged, and nothing done.
		p := newDoc("no-uid")
		post(t, firestoreEvent(p, "application/protobuf", nil))
		time.Sleep(time.Second)
		post(t, pubsubEvent(queue.CallHomeTopic, "forged", fmt.Sprintf(`{"document":%q,"reason":"sweep"}`, p.Key().Path()),
			queue.IdentityAttribute, identity(t, p)))
		wantPhase(t, p, proxy.PhaseProvisioning)
	})
	t.Run("CallHomeWithoutIdentity", func(t *testing.T) {
		// A ready hint with no identity token (anyone who may publish on
		// proxy-callhome): acknowledged, and nothing read or done.
		p := newDoc("no-identity")
		post(t, firestoreEvent(p, "application/protobuf", nil))
		time.Sleep(time.Second)
		post(t, pubsubEvent(queue.CallHomeTopic, "anonymous", fmt.Sprintf(`{"namespace":%q,"name":%q,"uid":%q,"reason":"ready"}`, p.Namespace, p.Name, p.UID)))
		wantPhase(t, p, proxy.PhaseProvisioning)
	})
	t.Run("MalformedEventsAcknowledged", func(t *testing.T) {
		// Acknowledged (2xx) so they are not retried forever, and harmless.
		outside := &proxy.Proxy{Namespace: "team-r", Name: "x"}
		bad := firestoreEvent(outside, "application/protobuf", []byte{0xff, 0xff})
		post(t, bad)
		wrongPath := firestoreEvent(outside, "application/protobuf", nil)
		wrongPath.Header.Set("ce-subject", "documents/users/alice")
		post(t, wrongPath)
	})
}
