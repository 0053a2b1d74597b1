package emulatortest_test

import (
	"context"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/emulators/emulatortest"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

func TestFirestoreWriteRead(t *testing.T) {
	emulatortest.Firestore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, err := firestore.NewClient(ctx, emulatortest.ProjectID(t))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	doc := client.Doc("namespaces/team-a/proxies/p1")
	want := map[string]any{"uid": "u-1", "port": int64(3128)}
	if _, err := doc.Create(ctx, want); err != nil {
		t.Fatalf("create %s: %v", doc.Path, err)
	}
	snap, err := doc.Get(ctx)
	if err != nil {
		t.Fatalf("get %s: %v", doc.Path, err)
	}
	if diff := cmp.Diff(want, snap.Data()); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
}

func TestProjectsAreIsolated(t *testing.T) {
	emulatortest.Firestore(t)
	ctx := context.Background()
	a, err := firestore.NewClient(ctx, emulatortest.ProjectID(t))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := firestore.NewClient(ctx, emulatortest.ProjectID(t))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := a.Doc("c/d").Set(ctx, map[string]any{"x": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Doc("c/d").Get(ctx); err == nil {
		t.Errorf("a document written in one test project is visible in another")
	}
}

func TestPubSubPublishReceive(t *testing.T) {
	emulatortest.PubSub(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	project := emulatortest.ProjectID(t)
	client, err := pubsub.NewClient(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	topic, err := client.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: "projects/" + project + "/topics/greetings"})
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	sub, err := client.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{
		Name: "projects/" + project + "/subscriptions/greetings-pull", Topic: topic.GetName(),
	})
	if err != nil {
		t.Fatalf("create subscription: %v", err)
	}
	publisher := client.Publisher(topic.GetName())
	defer publisher.Stop()
	if _, err := publisher.Publish(ctx, &pubsub.Message{Data: []byte("hello"), Attributes: map[string]string{"k": "v"}}).Get(ctx); err != nil {
		t.Fatalf("publish: %v", err)
	}

	got := make(chan *pubsub.Message, 1)
	rctx, stop := context.WithCancel(ctx)
	go func() {
		_ = client.Subscriber(sub.GetName()).Receive(rctx, func(_ context.Context, m *pubsub.Message) {
			m.Ack()
			select {
			case got <- m:
			default:
			}
			stop()
		})
	}()
	select {
	case m := <-got:
		if string(m.Data) != "hello" || m.Attributes["k"] != "v" {
			t.Errorf("received data %q attributes %v, want \"hello\" {k:v}", m.Data, m.Attributes)
		}
	case <-ctx.Done():
		t.Fatalf("no message received: %v", ctx.Err())
	}
}
