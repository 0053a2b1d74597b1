package eventarc_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/pubsub/v2"
	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/go-cmp/cmp"
	"github.com/googleapis/google-cloudevents-go/cloud/firestoredata"
	"google.golang.org/protobuf/proto"

	"github.com/egress-proxies/egress/emulators/emulator"
	"github.com/egress-proxies/egress/emulators/emulatortest"
	"github.com/egress-proxies/egress/emulators/eventarc"
	"github.com/egress-proxies/egress/internal/queue"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// receiver is a CloudEvents endpoint that fails its first `failures`
// deliveries with 503, then records events.
type receiver struct {
	failures atomic.Int32
	mu       sync.Mutex
	events   []event.Event
	got      chan struct{}
}

func newReceiver(t *testing.T, failures int32) (*receiver, *httptest.Server) {
	t.Helper()
	r := &receiver{got: make(chan struct{}, 100)}
	r.failures.Store(failures)
	p, err := cloudevents.NewHTTP()
	if err != nil {
		t.Fatal(err)
	}
	h, err := cloudevents.NewHTTPReceiveHandler(context.Background(), p, func(_ context.Context, e event.Event) error {
		if r.failures.Add(-1) >= 0 {
			return cloudevents.NewHTTPResult(http.StatusServiceUnavailable, "not yet")
		}
		r.mu.Lock()
		r.events = append(r.events, e)
		r.mu.Unlock()
		r.got <- struct{}{}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return r, srv
}

func (r *receiver) wait(t *testing.T, n int) []event.Event {
	t.Helper()
	timeout := time.After(2 * time.Minute) // generous: a busy machine delivers late
	for range n {
		select {
		case <-r.got:
		case <-timeout:
			t.Fatalf("timed out waiting for %d events", n)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event.Event(nil), r.events...)
}

// TestFirestoreRelay runs the real Firestore emulator with its functions
// hook pointed at the relay, writes a document twice, and checks that the
// function receives two Eventarc-shaped events with protobuf value and old
// value — the first delivery failing once and being retried.
func TestFirestoreRelay(t *testing.T) {
	emulatortest.Firestore(t) // skips, or fails under CI, where the emulators are missing
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rec, fn := newReceiver(t, 1)

	sender, err := eventarc.NewSender()
	if err != nil {
		t.Fatal(err)
	}
	relay := eventarc.NewFirestoreRelay(ctx, fn.URL, sender, quiet)
	relay.Retry = eventarc.Retry{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond, Attempts: 5}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	relaySrv := &http.Server{Handler: relay}
	go relaySrv.Serve(l)
	defer relaySrv.Close()

	fs, err := emulator.Start(ctx, emulator.Firestore, emulator.Options{Args: []string{"--functions_emulator=" + l.Addr().String()}})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Stop()
	project := emulatortest.ProjectID(t)
	if err := eventarc.RegisterFirestoreTrigger(ctx, fs.Host, project, "reconcile"); err != nil {
		t.Fatal(err)
	}

	t.Setenv("FIRESTORE_EMULATOR_HOST", fs.Host)
	client, err := firestore.NewClient(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	doc := client.Doc("namespaces/team-a/proxies/p1")
	if _, err := doc.Create(ctx, map[string]any{"uid": "u1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Doc("elsewhere/x").Set(ctx, map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := doc.Set(ctx, map[string]any{"uid": "u1", "phase": "Ready"}); err != nil {
		t.Fatal(err)
	}

	events := rec.wait(t, 2)
	relay.Wait()
	if len(events) != 2 {
		t.Fatalf("got %d events, want 2 (the write outside namespaces/*/proxies/* must not arrive)", len(events))
	}
	type seen struct {
		Type, Source, Subject, ContentType, Document string
		Value, OldValue                              string
	}
	var got []seen
	for _, e := range events {
		var d firestoredata.DocumentEventData
		if err := proto.Unmarshal(e.Data(), &d); err != nil {
			t.Fatalf("event %s data is not protobuf DocumentEventData: %v", e.ID(), err)
		}
		doc, _ := e.Extensions()["document"].(string)
		got = append(got, seen{
			Type: e.Type(), Source: e.Source(), Subject: e.Subject(), ContentType: e.DataContentType(), Document: doc,
			Value: d.GetValue().GetFields()["phase"].GetStringValue() + "|" + d.GetValue().GetName(), OldValue: d.GetOldValue().GetFields()["phase"].GetStringValue(),
		})
	}
	name := "projects/" + project + "/databases/(default)/documents/namespaces/team-a/proxies/p1"
	base := seen{
		Type: eventarc.FirestoreWrittenType, Source: "//firestore.googleapis.com/projects/" + project + "/databases/(default)",
		Subject: "documents/namespaces/team-a/proxies/p1", ContentType: "application/protobuf", Document: "namespaces/team-a/proxies/p1",
	}
	first, second := base, base
	first.Value = "|" + name
	second.Value, second.OldValue = "Ready|"+name, ""
	want := []seen{first, second}
	// Retries may reorder the two; Eventarc gives no order either.
	if got[0].Value != first.Value {
		got[0], got[1] = got[1], got[0]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delivered events (-want +got):\n%s", diff)
	}
}

// TestPushRelay sends a real Pub/Sub push from the emulator through the relay
// to a function, which fails once; the emulator redelivers.
func TestPushRelay(t *testing.T) {
	emulatortest.PubSub(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	project := emulatortest.ProjectID(t)
	rec, fn := newReceiver(t, 1)
	sender, err := eventarc.NewSender()
	if err != nil {
		t.Fatal(err)
	}
	relay := httptest.NewServer(&eventarc.PushRelay{Project: project, Functions: fn.URL, Sender: sender, Log: quiet})
	defer relay.Close()
	// The receiver serves every path, so /Reconcile reaches it.
	client, err := pubsub.NewClient(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if err := eventarc.SetupPubSub(ctx, client, project, relay.URL, []eventarc.PushTrigger{{Topic: queue.ReconcileTopic, Function: "Reconcile"}}); err != nil {
		t.Fatal(err)
	}
	// SetupPubSub is idempotent.
	if err := eventarc.SetupPubSub(ctx, client, project, relay.URL, []eventarc.PushTrigger{{Topic: queue.ReconcileTopic, Function: "Reconcile"}}); err != nil {
		t.Fatalf("second SetupPubSub: %v", err)
	}
	pub := client.Publisher(queue.ReconcileTopic)
	defer pub.Stop()
	if _, err := pub.Publish(ctx, &pubsub.Message{Data: []byte(`{"document":"namespaces/a/proxies/b"}`)}).Get(ctx); err != nil {
		t.Fatal(err)
	}
	events := rec.wait(t, 1)
	e := events[0]
	if e.Type() != queue.MessagePublishedType || e.Source() != "//pubsub.googleapis.com/projects/"+project+"/topics/"+queue.ReconcileTopic {
		t.Errorf("event type %q source %q", e.Type(), e.Source())
	}
	d, err := queue.DecodeMessagePublished(e)
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := queue.DecodeReconcileMessage(d.Message)
	if err != nil {
		t.Fatal(err)
	}
	if key.Path() != "namespaces/a/proxies/b" || d.Message.MessageID != e.ID() {
		t.Errorf("decoded key %v message id %q (event id %q)", key, d.Message.MessageID, e.ID())
	}
}
