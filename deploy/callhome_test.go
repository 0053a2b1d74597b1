package deploy_test

import (
	"strings"
	"testing"

	"github.com/egress-proxies/egress/internal/queue"
)

// TestVMsPublishOnlyWhereTheirMessagesAreChecked: the proxy VMs' account
// publishes on proxy-callhome and nowhere else, whose messages Reconcile
// checks against the VM they name (queue.DecodeReconcileEvent); only the
// functions publish on proxy-reconcile, where a message may name no uid.
// Each topic reaches Reconcile through a push subscription whose endpoint
// names that topic, which is how Reconcile tells them apart.
func TestVMsPublishOnlyWhereTheirMessagesAreChecked(t *testing.T) {
	m := parseModule(t)
	topics := map[string]string{} // resource name → topic name
	for _, tp := range m.resources("google_pubsub_topic") {
		topics[tp.Labels[1]] = literal(t, tp.Body, "name")
	}
	vmPublishesOn := map[string]bool{}
	for _, b := range m.resources("google_pubsub_topic_iam_member") {
		src := m.source(t, b.Range())
		if !strings.Contains(src, "roles/pubsub.publisher") {
			continue
		}
		for res, name := range topics {
			if strings.Contains(src, "google_pubsub_topic."+res+".") && strings.Contains(src, "google_service_account.proxy_vm.") {
				vmPublishesOn[name] = true
			}
		}
	}
	for name := range vmPublishesOn {
		if name != queue.CallHomeTopic {
			t.Errorf("the proxy VMs' account publishes on %s: want %s only, whose messages must name a uid", name, queue.CallHomeTopic)
		}
	}
	if !vmPublishesOn[queue.CallHomeTopic] {
		t.Errorf("the proxy VMs' account does not publish on %s: the VMs could not call home", queue.CallHomeTopic)
	}
	// Each of Reconcile's topics has its push subscription to Reconcile,
	// the topic named in the endpoint.
	for _, want := range []string{queue.ReconcileTopic, queue.CallHomeTopic} {
		found := false
		for _, sub := range m.resources("google_pubsub_subscription") {
			block := m.source(t, sub.Range())
			topic, ok := sub.Body.Attributes["topic"]
			if !ok {
				continue
			}
			// The endpoint names the topic the subscription reads (by
			// its resource, or through for_each).
			name := "${" + strings.TrimSuffix(m.source(t, topic.Expr.Range()), ".id") + ".name}"
			for _, pc := range nested(sub.Body, "push_config") {
				ep := m.source(t, pc.Body.Attributes["push_endpoint"].Expr.Range())
				for res, n := range topics {
					if n == want && strings.Contains(block, "google_pubsub_topic."+res) &&
						strings.Contains(ep, "google_cloudfunctions2_function.reconcile.") &&
						strings.Contains(ep, "/topics/"+name+"?") && strings.Contains(ep, "CUSTOM_PUBSUB_projects%2F${var.project_id}%2Ftopics%2F"+name) {
						found = true
					}
				}
			}
		}
		if !found {
			t.Errorf("no push subscription delivers %s to Reconcile with the topic in its endpoint", want)
		}
	}
}
