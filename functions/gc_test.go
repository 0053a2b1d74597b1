package functions

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"

	"github.com/egress-proxies/egress/emulators/emulatortest"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/queue"
	"github.com/egress-proxies/egress/internal/store"
)

// TestCollectGarbageThroughTheFramework serves CollectGarbage with
// functions-framework-go, as Cloud Run functions does (FUNCTION_TARGET set,
// the function at every path), and posts it what Eventarc and a raw Pub/Sub
// push subscription send.
func TestCollectGarbageThroughTheFramework(t *testing.T) {
	emulatortest.Firestore(t)
	emulatortest.PubSub(t)
	// A bound against a hang, generous for a busy machine.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Every unclaimed VM is past so short a grace; the mock provider of the
	// App stamps CreatedAt with the wall clock. Its VMs do not call home:
	// those made here belong to no document, and a call-home of theirs on
	// proxy-reconcile, once their boot has passed (under load, before the
	// collector's run), is not the sweep request this test waits for.
	a := useApp(t, map[string]string{"GC_GRACE_PERIOD": "1ns", "GC_SWEEP_THRESHOLD": "1ns", "MOCK_CALL_HOME": "false"})
	project := a.Config.Project
	p, err := a.Providers.Get(ctx, mock.Type)
	if err != nil {
		t.Fatal(err)
	}
	vms := provider.Unwrap(p).(*mock.Provider)
	fs, err := firestore.NewClient(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	st := store.New(fs, nil) // the collector opens no credentials
	received := subscribe(ctx, t, project, queue.ReconcileTopic)

	// One live proxy, stuck in Creating, with its VM; one VM of another tool.
	live := &proxy.Proxy{
		Namespace: "team-a", Name: "live", UID: "11111111-1111-4111-8111-111111111111",
		Spec:       proxy.Spec{Provider: mock.Type, Port: proxy.DefaultPort},
		Status:     proxy.Status{Phase: proxy.PhaseCreating},
		Reconciler: proxy.Bookkeeping{ProgressTime: time.Now().Add(-time.Hour)},
	}
	if _, err := st.Create(ctx, live, 10); err != nil {
		t.Fatal(err)
	}
	liveVM := createVM(ctx, t, vms, live.UID)
	foreign := vms.AddForeign("other-tool", map[string]string{provider.LabelManaged: "false", provider.LabelUID: "22222222-2222-4222-8222-222222222222"})

	url := serveTarget(t, "CollectGarbage")
	tick := base64.StdEncoding.EncodeToString([]byte(`{"from":"cloud-scheduler"}`))
	topic := "projects/" + project + "/topics/" + queue.GCTopic

	cases := []struct {
		name   string
		post   func() *http.Request
		status int
	}{
		{
			name: "EventarcBinaryMode",
			post: func() *http.Request {
				body := fmt.Sprintf(`{"message":{"data":%q,"messageId":"101","publishTime":"2026-03-01T12:00:00Z"},"subscription":"projects/%s/subscriptions/eventarc-gc"}`, tick, project)
				r, _ := http.NewRequest(http.MethodPost, url+"/", bytes.NewBufferString(body))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("ce-id", "101")
				r.Header.Set("ce-specversion", "1.0")
				r.Header.Set("ce-type", queue.MessagePublishedType)
				r.Header.Set("ce-source", "//pubsub.googleapis.com/"+topic)
				return r
			},
			status: http.StatusOK,
		},
		{
			name: "RawPushToTopicPath",
			post: func() *http.Request {
				body := fmt.Sprintf(`{"message":{"data":%q,"messageId":"102","publishTime":"2026-03-01T12:05:00Z"},"subscription":"projects/%s/subscriptions/push-gc"}`, tick, project)
				r, _ := http.NewRequest(http.MethodPost, url+"/"+topic, bytes.NewBufferString(body))
				r.Header.Set("Content-Type", "application/json")
				return r
			},
			status: http.StatusOK,
		},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			orphan := createVM(ctx, t, vms, fmt.Sprintf("33333333-3333-4333-8333-%012d", i))

			resp, err := http.DefaultClient.Do(tc.post())
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()

			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			got := instanceIDs(vms)
			want := []string{foreign, liveVM}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("instances left %v, want %v (orphan %s deleted, the live and the foreign VM kept)", got, want, orphan)
			}
			// The mock's VMs call home on the same topic once they have
			// booted, whenever that is on a busy machine: those requests
			// are not the collector's.
			for {
				select {
				case m := <-received:
					if strings.HasSuffix(m, " ready") {
						continue
					}
					if m != live.Key().Path()+" sweep" {
						t.Errorf("reconcile request %q, want %q", m, live.Key().Path()+" sweep")
					}
					return
				case <-ctx.Done():
					t.Fatal("the stuck document was not re-driven")
				}
			}
		})
	}

	t.Run("ListingFailsIsRetried", func(t *testing.T) {
		orphan := createVM(ctx, t, vms, "44444444-4444-4444-8444-444444444444")
		vms.FailNext(mock.MethodListByTag, 1, provider.NewError(provider.KindTransient, "list", "", fmt.Errorf("backend unavailable")))

		resp, err := http.DefaultClient.Do(cases[0].post())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()

		if resp.StatusCode < 500 {
			t.Errorf("status %d, want a 5xx so that Pub/Sub delivers the tick again", resp.StatusCode)
		}
		if !slices.Contains(instanceIDs(vms), orphan) {
			t.Errorf("orphan %s deleted although its provider could not be listed", orphan)
		}
	})
}

func createVM(ctx context.Context, t *testing.T, p *mock.Provider, uid string) string {
	t.Helper()
	// Named like a proxy's, so that its call-home is a request the test
	// can tell from the collector's.
	id, err := p.Create(ctx, provider.CreateRequest{Name: provider.NameFromUID(uid), UID: uid, Namespace: "team-vm", ProxyName: "vm-" + uid[:8]})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func instanceIDs(p *mock.Provider) []string {
	var out []string
	for _, in := range p.Instances() {
		out = append(out, in.ID)
	}
	slices.Sort(out)
	return out
}

// serveTarget starts the functions framework on a free loopback port with
// target as its FUNCTION_TARGET, as Cloud Run functions serves each
// function, and returns its URL once it accepts.
func serveTarget(t *testing.T, target string) string {
	t.Helper()
	t.Setenv("FUNCTION_TARGET", target)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	host, port, _ := net.SplitHostPort(addr)
	go func() {
		// It serves until the test binary exits.
		_ = funcframework.StartHostPort(host, port)
	}()
	deadline := time.Now().Add(time.Minute) // generous: a busy machine starts it late
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return "http://" + addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("the functions framework did not start on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// subscribe creates topic and a subscription to it, and returns the
// requests it receives as "document reason".
func subscribe(ctx context.Context, t *testing.T, project, topic string) <-chan string {
	t.Helper()
	client, err := pubsub.NewClient(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	name := "projects/" + project + "/topics/" + topic
	if _, err := client.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: name}); err != nil {
		t.Fatal(err)
	}
	sub, err := client.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{
		Name: "projects/" + project + "/subscriptions/gc-test-" + topic, Topic: name,
	})
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan string, 100)
	rctx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go func() {
		_ = client.Subscriber(sub.GetName()).Receive(rctx, func(_ context.Context, m *pubsub.Message) {
			m.Ack()
			k, rm, err := queue.DecodeReconcileMessage(queue.Message{Data: m.Data, MessageID: m.ID})
			if err != nil {
				out <- "undecodable: " + err.Error()
				return
			}
			out <- k.Path() + " " + string(rm.Reason)
		})
	}()
	return out
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
