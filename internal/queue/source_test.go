package queue_test

import (
	"encoding/base64"
	"fmt"
	"testing"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/queue"
)

// TestOnlyTheFunctionsOmitTheUID: a message on proxy-reconcile, where only
// the functions may publish, is taken as it is; one on proxy-callhome,
// where VMs publish, must name the proxy and its uid, says only ready or
// boot-failed, and hands no lease on; any other topic is refused.
func TestOnlyTheFunctionsOmitTheUID(t *testing.T) {
	const uid = "6c1f0a5e-8d1b-4c59-9a53-1b7a2f3d4e5f"
	key := proxy.Key{Namespace: "team-a", Name: "egress-1"}
	cases := map[string]struct {
		reason  string
		topic   string
		body    string
		want    proxy.ReconcileMessage
		wantErr bool
		// noKey: the message names no document.
		noKey bool
	}{
		"FunctionsRequeue": {
			reason: "the functions name a document and no uid",
			topic:  queue.ReconcileTopic,
			body:   `{"document":"namespaces/team-a/proxies/egress-1","reason":"requeue","lease":"h1"}`,
			want:   proxy.ReconcileMessage{Document: key.Path(), Reason: proxy.ReasonRequeue, Lease: "h1"},
		},
		"CallHome": {
			reason: "a VM names its proxy and uid",
			topic:  queue.CallHomeTopic,
			body:   fmt.Sprintf(`{"namespace":"team-a","name":"egress-1","uid":%q,"reason":"ready"}`, uid),
			want:   proxy.ReconcileMessage{Namespace: "team-a", Name: "egress-1", UID: uid, Reason: proxy.ReasonReady},
		},
		"CallHomeBootFailed": {
			reason: "a VM whose self-test failed says so",
			topic:  queue.CallHomeTopic,
			body:   fmt.Sprintf(`{"namespace":"team-a","name":"egress-1","uid":%q,"reason":"boot-failed"}`, uid),
			want:   proxy.ReconcileMessage{Namespace: "team-a", Name: "egress-1", UID: uid, Reason: proxy.ReasonBootFailed},
		},
		"CallHomeWithoutUID": {
			reason:  "a message where VMs publish that names no uid would be checked against no VM",
			topic:   queue.CallHomeTopic,
			body:    `{"document":"namespaces/team-a/proxies/egress-1","reason":"sweep"}`,
			wantErr: true,
		},
		"CallHomeNotAUUID": {
			reason:  "a uid that is no uid",
			topic:   queue.CallHomeTopic,
			body:    `{"namespace":"team-a","name":"egress-1","uid":"x","reason":"ready"}`,
			wantErr: true,
		},
		"CallHomeHandsALeaseOn": {
			reason:  "a VM may not take over a run's lease",
			topic:   queue.CallHomeTopic,
			body:    fmt.Sprintf(`{"namespace":"team-a","name":"egress-1","uid":%q,"reason":"ready","lease":"h1"}`, uid),
			wantErr: true,
		},
		"CallHomeOtherReason": {
			reason:  "a VM says ready or boot-failed, nothing else",
			topic:   queue.CallHomeTopic,
			body:    fmt.Sprintf(`{"namespace":"team-a","name":"egress-1","uid":%q,"reason":"age"}`, uid),
			wantErr: true,
		},
		"AccessPull": {
			reason: "the collector's request for the access lines of the VMs read by pull names no document",
			topic:  queue.ReconcileTopic,
			noKey:  true,
			body:   `{"reason":"access-pull","accessPull":{"listed":["hetzner"],"vms":[{"provider":"hetzner","providerID":"hcloud://1","uid":"u1","ip":"192.0.2.1","port":3128,"running":true}]}}`,
			want: proxy.ReconcileMessage{Reason: proxy.ReasonAccessPull, AccessPull: &proxy.AccessPull{Listed: []string{"hetzner"},
				VMs: []proxy.PulledVM{{Provider: "hetzner", ProviderID: "hcloud://1", UID: "u1", IP: "192.0.2.1", Port: 3128, Running: true}}}},
		},
		"CallHomeAccessPull": {
			reason:  "where VMs publish, a request for access lines is refused: a VM cannot send Reconcile to other VMs",
			topic:   queue.CallHomeTopic,
			body:    fmt.Sprintf(`{"namespace":"team-a","name":"egress-1","uid":%q,"reason":"access-pull","accessPull":{"vms":[{"providerID":"hcloud://1","uid":"u1","ip":"192.0.2.1","port":3128,"running":true}]}}`, uid),
			wantErr: true,
		},
		"OtherTopic": {
			reason:  "a topic Reconcile does not serve",
			topic:   "someone-elses",
			body:    `{"document":"namespaces/team-a/proxies/egress-1","reason":"sweep"}`,
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := cloudevents.New()
			e.SetID("1")
			e.SetType(queue.MessagePublishedType)
			e.SetSource("//pubsub.googleapis.com/projects/demo/topics/" + tc.topic)
			data := fmt.Sprintf(`{"message":{"data":%q,"messageId":"7"}}`, base64.StdEncoding.EncodeToString([]byte(tc.body)))
			if err := e.SetData("application/json", []byte(data)); err != nil {
				t.Fatal(err)
			}
			gotKey, got, err := queue.DecodeReconcileEvent(e)
			if (err != nil) != tc.wantErr {
				t.Fatalf("%s\nerror = %v, wantErr %v", tc.reason, err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			wantKey := key
			if tc.noKey {
				wantKey = proxy.Key{}
			}
			if gotKey != wantKey {
				t.Errorf("%s\nkey %v, want %v", tc.reason, gotKey, wantKey)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nmessage (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
