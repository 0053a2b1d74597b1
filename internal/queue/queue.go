// Package queue is the Pub/Sub side of the product: the topic names, the
// publisher that asks for a document to be reconciled (requeues and the GC
// sweep), and the decoding of the messagePublished CloudEvents that Eventarc
// delivers to the Reconcile and CollectGarbage functions.
//
// google-cloudevents-go has no Pub/Sub type, so MessagePublishedData is a
// small struct of this package's own, in the shape Eventarc documents.
package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"cloud.google.com/go/pubsub/v2"
	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"

	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// Topic names. Terraform creates topics of these names; a test checks that
// the two agree.
const (
	// ReconcileTopic carries proxy.ReconcileMessage bodies to Reconcile
	// from the functions, the only publishers IAM lets on it: a message
	// there may name a document and no uid.
	ReconcileTopic = "proxy-reconcile"
	// CallHomeTopic carries the proxy VMs' call-homes to Reconcile: the
	// VMs' account may publish here and nowhere else. Anything on it could
	// come from a VM, so a message must name its proxy and uid, which the
	// run checks against the document (DecodeReconcileEvent).
	CallHomeTopic = "proxy-callhome"
	// GCTopic carries Cloud Scheduler's ticks to CollectGarbage.
	GCTopic = "proxy-gc"
)

// The attributes of a message on CallHomeTopic (internal/callhome).
// They are the VM's contract (vmconfig).
const (
	// IdentityAttribute is the VM's identity token (package vmidentity),
	// for the audience vmidentity.Audience(project, CallHomeTopic).
	IdentityAttribute = vmconfig.IdentityAttribute
	// KindAttribute is KindAccess for a batch of access lines; a message
	// without it is a ReconcileMessage, a hint.
	KindAttribute = vmconfig.KindAttribute
	KindAccess    = vmconfig.KindAccess
)

// MessagePublishedType is the CloudEvent type of a Pub/Sub delivery.
const MessagePublishedType = "google.cloud.pubsub.topic.v1.messagePublished"

// MessagePublishedData is the data of a messagePublished CloudEvent.
type MessagePublishedData struct {
	Message      Message `json:"message"`
	Subscription string  `json:"subscription,omitempty"`
}

// Message is a Pub/Sub message as Eventarc encodes it: data is base64 in
// JSON, which encoding/json decodes into []byte by itself.
type Message struct {
	Data        []byte            `json:"data,omitempty"`
	Attributes  map[string]string `json:"attributes,omitempty"`
	MessageID   string            `json:"messageId,omitempty"`
	PublishTime time.Time         `json:"publishTime,omitzero"`
}

// DecodeMessagePublished reads the Pub/Sub message out of a messagePublished
// CloudEvent.
func DecodeMessagePublished(e cloudevents.Event) (MessagePublishedData, error) {
	var d MessagePublishedData
	if e.Type() != MessagePublishedType {
		return d, fmt.Errorf("event %s has type %q, want %q", e.ID(), e.Type(), MessagePublishedType)
	}
	if err := json.Unmarshal(e.Data(), &d); err != nil {
		return d, fmt.Errorf("event %s: data is not a Pub/Sub MessagePublishedData: %w", e.ID(), err)
	}
	return d, nil
}

// DecodeReconcileMessage reads the document key out of a message on
// ReconcileTopic. A message naming a warm pool's document
// ({"document":"pools/P"}, rm.PoolName) has no key: it asks for the
// pool's reconcile; nor has the collector's request for access lines
// (proxy.ReasonAccessPull).
func DecodeReconcileMessage(m Message) (proxy.Key, proxy.ReconcileMessage, error) {
	var rm proxy.ReconcileMessage
	if err := json.Unmarshal(m.Data, &rm); err != nil {
		return proxy.Key{}, rm, fmt.Errorf("message %s on %s: body is not a ReconcileMessage: %w", m.MessageID, ReconcileTopic, err)
	}
	if _, ok := rm.PoolName(); ok {
		return proxy.Key{}, rm, nil
	}
	if rm.Reason == proxy.ReasonAccessPull {
		// The collector's request for the access lines of the VMs read
		// by pull: it names no document.
		return proxy.Key{}, rm, nil
	}
	k, err := rm.Key()
	if err != nil {
		return proxy.Key{}, rm, fmt.Errorf("message %s on %s: %w", m.MessageID, ReconcileTopic, err)
	}
	return k, rm, nil
}

// DecodeReconcileEvent reads the document key and the message out of a
// messagePublished CloudEvent for Reconcile, by the topic the event's
// source names (//pubsub.googleapis.com/projects/P/topics/T, which the
// push subscription sets, not the publisher). A message on ReconcileTopic
// is the functions' own and taken as it is. A message on CallHomeTopic
// may be a VM's, a tenant's code's even: it must name a namespace, a name
// and a uid, say ready or boot-failed and hand no lease on. The topic is
// the proof, not an attribute: a VM may set any attribute it likes, but
// IAM keeps it off ReconcileTopic.
func DecodeReconcileEvent(e cloudevents.Event) (proxy.Key, proxy.ReconcileMessage, error) {
	d, err := DecodeMessagePublished(e)
	if err != nil {
		return proxy.Key{}, proxy.ReconcileMessage{}, err
	}
	switch topic := topicOf(e.Source()); topic {
	case ReconcileTopic:
		return DecodeReconcileMessage(d.Message)
	case CallHomeTopic:
		return DecodeCallHome(d.Message)
	default:
		return proxy.Key{}, proxy.ReconcileMessage{}, fmt.Errorf("event %s comes from %q, neither %s nor %s", e.ID(), e.Source(), ReconcileTopic, CallHomeTopic)
	}
}

// topicOf is the topic's short name in a Pub/Sub event source.
func topicOf(source string) string {
	_, topic, ok := strings.Cut(source, "/topics/")
	if !ok || !strings.HasPrefix(source, "//pubsub.googleapis.com/projects/") {
		return ""
	}
	return topic
}

// IsCallHome reports whether e is a delivery from CallHomeTopic, and
// returns its message: a VM's, which internal/callhome checks before
// anything acts on it.
func IsCallHome(e cloudevents.Event) (Message, bool, error) {
	if e.Type() != MessagePublishedType || topicOf(e.Source()) != CallHomeTopic {
		return Message{}, false, nil
	}
	d, err := DecodeMessagePublished(e)
	return d.Message, true, err
}

// DecodeCallHome reads a hint on CallHomeTopic by the rules of
// DecodeReconcileEvent.
func DecodeCallHome(m Message) (proxy.Key, proxy.ReconcileMessage, error) {
	var rm proxy.ReconcileMessage
	if err := json.Unmarshal(m.Data, &rm); err != nil {
		return proxy.Key{}, rm, fmt.Errorf("message %s on %s: body is not a ReconcileMessage: %w", m.MessageID, CallHomeTopic, err)
	}
	refuse := func(rule string) (proxy.Key, proxy.ReconcileMessage, error) {
		return proxy.Key{}, rm, fmt.Errorf("message %s on %s: %s", m.MessageID, CallHomeTopic, rule)
	}
	switch {
	case rm.Document != "":
		return refuse("a call-home names its proxy by namespace, name and uid, not by document path")
	case rm.Lease != "":
		return refuse("a call-home hands no lease on")
	case rm.Reason != proxy.ReasonReady && rm.Reason != proxy.ReasonBootFailed:
		return refuse(fmt.Sprintf("reason %q is neither %s nor %s", rm.Reason, proxy.ReasonReady, proxy.ReasonBootFailed))
	}
	if _, err := uuid.Parse(rm.UID); err != nil || len(rm.UID) != 36 {
		return refuse(fmt.Sprintf("uid %q is not a proxy's uid: a call-home must name one", rm.UID))
	}
	k, err := rm.Key()
	if err != nil {
		return proxy.Key{}, rm, fmt.Errorf("message %s on %s: %w", m.MessageID, CallHomeTopic, err)
	}
	return k, rm, nil
}

// Publisher publishes reconcile requests on ReconcileTopic, or call-homes
// on CallHomeTopic. It is safe for concurrent use; Stop flushes it.
type Publisher struct {
	pub   *pubsub.Publisher
	topic string
}

// NewPublisher returns a publisher on ReconcileTopic of the client's project.
func NewPublisher(client *pubsub.Client) *Publisher {
	return &Publisher{pub: client.Publisher(ReconcileTopic), topic: ReconcileTopic}
}

// NewCallHomePublisher returns a publisher on CallHomeTopic of the client's
// project: what the mock provider's VMs call home with in the local stack,
// as real ones do.
func NewCallHomePublisher(client *pubsub.Client) *Publisher {
	return &Publisher{pub: client.Publisher(CallHomeTopic), topic: CallHomeTopic}
}

// Publish publishes a reconcile request, and waits until Pub/Sub has it: a
// request that was not stored is a stranded proxy until the next sweep.
func (p *Publisher) Publish(ctx context.Context, msg proxy.ReconcileMessage) error {
	return p.PublishWith(ctx, msg, nil)
}

// PublishWith is Publish with attributes: a call-home's identity token.
func (p *Publisher) PublishWith(ctx context.Context, msg proxy.ReconcileMessage, attributes map[string]string) error {
	body, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if _, err := p.pub.Publish(ctx, &pubsub.Message{Data: body, Attributes: attributes}).Get(ctx); err != nil {
		k, _ := msg.Key()
		return fmt.Errorf("publishing a %s request for %s on %s: %w", msg.Reason, k, p.topic, err)
	}
	metering.Add(ctx, metering.PubSubPublished, 1)
	return nil
}

// Stop sends what is still buffered and releases the publisher.
func (p *Publisher) Stop() { p.pub.Stop() }
