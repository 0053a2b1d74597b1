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
	"time"

	"cloud.google.com/go/pubsub/v2"
	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/proxy"
)

// Topic names. Terraform creates topics of these names; a test checks that
// the two agree.
const (
	// ReconcileTopic carries proxy.ReconcileMessage bodies to Reconcile.
	ReconcileTopic = "proxy-reconcile"
	// GCTopic carries Cloud Scheduler's ticks to CollectGarbage.
	GCTopic = "proxy-gc"
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
// ReconcileTopic.
func DecodeReconcileMessage(m Message) (proxy.Key, proxy.ReconcileMessage, error) {
	var rm proxy.ReconcileMessage
	if err := json.Unmarshal(m.Data, &rm); err != nil {
		return proxy.Key{}, rm, fmt.Errorf("message %s on %s: body is not a ReconcileMessage: %w", m.MessageID, ReconcileTopic, err)
	}
	k, err := rm.Key()
	if err != nil {
		return proxy.Key{}, rm, fmt.Errorf("message %s on %s: %w", m.MessageID, ReconcileTopic, err)
	}
	return k, rm, nil
}

// Publisher publishes reconcile requests on ReconcileTopic. It is safe for
// concurrent use; Stop flushes it.
type Publisher struct {
	pub *pubsub.Publisher
}

// NewPublisher returns a publisher on ReconcileTopic of the client's project.
func NewPublisher(client *pubsub.Client) *Publisher {
	return &Publisher{pub: client.Publisher(ReconcileTopic)}
}

// Publish publishes a reconcile request, and waits until Pub/Sub has it: a
// request that was not stored is a stranded proxy until the next sweep.
func (p *Publisher) Publish(ctx context.Context, msg proxy.ReconcileMessage) error {
	body, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if _, err := p.pub.Publish(ctx, &pubsub.Message{Data: body}).Get(ctx); err != nil {
		k, _ := msg.Key()
		return fmt.Errorf("publishing a %s request for %s on %s: %w", msg.Reason, k, ReconcileTopic, err)
	}
	metering.Add(ctx, metering.PubSubPublished, 1)
	return nil
}

// Stop sends what is still buffered and releases the publisher.
func (p *Publisher) Stop() { p.pub.Stop() }
