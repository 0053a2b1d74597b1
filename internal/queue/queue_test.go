package queue_test

import (
	"context"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/emulators/emulatortest"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/queue"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

func event(t *testing.T, typ, data string) cloudevents.Event {
	t.Helper()
	e := cloudevents.New()
	e.SetID("1")
	e.SetType(typ)
	e.SetSource("//pubsub.googleapis.com/projects/demo/topics/proxy-reconcile")
	if err := e.SetData("application/json", []byte(data)); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestDecode(t *testing.T) {
	cases := map[string]struct {
		reason  string
		typ     string
		data    string
		want    proxy.Key
		wantErr bool
	}{
		"Valid": {
			reason: "a requeue names its document; data is base64 of the JSON body",
			typ:    queue.MessagePublishedType,
			// base64 of {"document":"namespaces/a/proxies/b","reason":"requeue"}
			data: `{"subscription":"projects/demo/subscriptions/s","message":{"data":"eyJkb2N1bWVudCI6Im5hbWVzcGFjZXMvYS9wcm94aWVzL2IiLCJyZWFzb24iOiJyZXF1ZXVlIn0=","messageId":"7","publishTime":"2026-01-02T03:04:05Z"}}`,
			want: proxy.Key{Namespace: "a", Name: "b"},
		},
		"CallHome": {
			reason: "a VM's call-home names its proxy by namespace, name and uid, as its startup script sends it",
			typ:    queue.MessagePublishedType,
			data:   `{"message":{"data":"eyJuYW1lc3BhY2UiOiJ0ZWFtLWEiLCJuYW1lIjoiZWdyZXNzLTEiLCJ1aWQiOiI2YzFmMGE1ZS04ZDFiLTRjNTktOWE1My0xYjdhMmYzZDRlNWYiLCJyZWFzb24iOiJyZWFkeSJ9"}}`,
			want:   proxy.Key{Namespace: "team-a", Name: "egress-1"},
		},
		"CallHomeOfAPoolsVM": {
			reason: "a warm pool's VM names its member document by pool, name and uid (base64 of {\"pool\":\"ci\",\"name\":\"w-6c1f0a5e-8d1\",…})",
			typ:    queue.MessagePublishedType,
			data:   `{"message":{"data":"eyJwb29sIjoiY2kiLCJuYW1lIjoidy02YzFmMGE1ZS04ZDEiLCJ1aWQiOiI2YzFmMGE1ZS04ZDFiLTRjNTktOWE1My0xYjdhMmYzZDRlNWYiLCJyZWFzb24iOiJyZWFkeSJ9"}}`,
			want:   proxy.Key{Pool: "ci", Name: "w-6c1f0a5e-8d1"},
		},
		"CallHomePoolAndNamespace": {
			reason:  "a call-home that names a pool and a namespace names no one document, and is refused",
			typ:     queue.MessagePublishedType,
			data:    `{"message":{"data":"eyJuYW1lc3BhY2UiOiJ0ZWFtLWEiLCJwb29sIjoiY2kiLCJuYW1lIjoidy02YzFmMGE1ZS04ZDEiLCJ1aWQiOiI2YzFmMGE1ZS04ZDFiLTRjNTktOWE1My0xYjdhMmYzZDRlNWYiLCJyZWFzb24iOiJyZWFkeSJ9"}}`,
			wantErr: true,
		},
		"CallHomeBadName": {
			reason:  "a call-home whose name is no label is refused (base64 of {\"namespace\":\"a\",\"name\":\"B/c\"})",
			typ:     queue.MessagePublishedType,
			data:    `{"message":{"data":"eyJuYW1lc3BhY2UiOiJhIiwibmFtZSI6IkIvYyJ9"}}`,
			wantErr: true,
		},
		"WrongType":  {reason: "another event type is refused", typ: "google.cloud.storage.object.v1.finalized", data: `{}`, wantErr: true},
		"NotJSON":    {reason: "data that is not MessagePublishedData", typ: queue.MessagePublishedType, data: `[1,2]`, wantErr: true},
		"BadBody":    {reason: "a body that is not a ReconcileMessage (base64 of 'hello')", typ: queue.MessagePublishedType, data: `{"message":{"data":"aGVsbG8="}}`, wantErr: true},
		"OutsideRef": {reason: "a document outside namespaces/*/proxies/* (base64 of {\"document\":\"users/x\"})", typ: queue.MessagePublishedType, data: `{"message":{"data":"eyJkb2N1bWVudCI6InVzZXJzL3gifQ=="}}`, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := queue.DecodeMessagePublished(event(t, tc.typ, tc.data))
			var got proxy.Key
			if err == nil {
				got, _, err = queue.DecodeReconcileMessage(d.Message)
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("%s\nerror = %v, wantErr %v", tc.reason, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nkey (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestPublishReachesTheTopic(t *testing.T) {
	emulatortest.PubSub(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	project := emulatortest.ProjectID(t)
	client, err := pubsub.NewClient(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	topic := "projects/" + project + "/topics/" + queue.ReconcileTopic
	if _, err := client.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: topic}); err != nil {
		t.Fatal(err)
	}
	sub, err := client.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{Name: "projects/" + project + "/subscriptions/probe", Topic: topic})
	if err != nil {
		t.Fatal(err)
	}

	pub := queue.NewPublisher(client)
	defer pub.Stop()
	key := proxy.Key{Namespace: "team-a", Name: "p1"}
	if err := pub.Publish(ctx, proxy.ReconcileMessage{Document: key.Path(), Reason: proxy.ReasonRequeue}); err != nil {
		t.Fatal(err)
	}

	got := make(chan proxy.Key, 1)
	rctx, stop := context.WithCancel(ctx)
	go func() {
		_ = client.Subscriber(sub.GetName()).Receive(rctx, func(_ context.Context, m *pubsub.Message) {
			m.Ack()
			k, _, err := queue.DecodeReconcileMessage(queue.Message{Data: m.Data, MessageID: m.ID})
			if err != nil {
				t.Error(err)
			}
			select {
			case got <- k:
			default:
			}
			stop()
		})
	}()
	select {
	case k := <-got:
		if k != key {
			t.Errorf("received %v, want %v", k, key)
		}
	case <-ctx.Done():
		t.Fatal("no message received")
	}
}
