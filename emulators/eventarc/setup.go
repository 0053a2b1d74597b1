package eventarc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// PushTrigger is one Eventarc Pub/Sub trigger: messages on Topic go to
// Function.
type PushTrigger struct {
	Topic    string
	Function string
}

// DeadLetterTopic receives what a push subscription could not deliver, as
// the production setup's dead-letter topic does.
const DeadLetterTopic = "proxy-dead-letter"

// SetupPubSub creates the topics and one push subscription per trigger on
// the Pub/Sub emulator, pointing at the relay, with the retry policy and
// dead-lettering that deploy/terraform gives the real ones. It is idempotent:
// what exists already is kept.
func SetupPubSub(ctx context.Context, client *pubsub.Client, project, relayBase string, triggers []PushTrigger) error {
	topicName := func(t string) string { return "projects/" + project + "/topics/" + t }
	for _, t := range append([]string{DeadLetterTopic}, topics(triggers)...) {
		if _, err := client.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: topicName(t)}); err != nil && !exists(err) {
			return fmt.Errorf("creating topic %s: %w", t, err)
		}
	}
	for _, tr := range triggers {
		sub := &pubsubpb.Subscription{
			Name:               "projects/" + project + "/subscriptions/eventarc-" + tr.Topic + "-" + tr.Function,
			Topic:              topicName(tr.Topic),
			PushConfig:         &pubsubpb.PushConfig{PushEndpoint: Endpoint(relayBase, tr.Topic, tr.Function)},
			AckDeadlineSeconds: 600,
			RetryPolicy: &pubsubpb.RetryPolicy{
				MinimumBackoff: durationpb.New(time.Second),
				MaximumBackoff: durationpb.New(60 * time.Second),
			},
			DeadLetterPolicy: &pubsubpb.DeadLetterPolicy{DeadLetterTopic: topicName(DeadLetterTopic), MaxDeliveryAttempts: 10},
		}
		if _, err := client.SubscriptionAdminClient.CreateSubscription(ctx, sub); err != nil && !exists(err) {
			return fmt.Errorf("creating push subscription %s: %w", sub.Name, err)
		}
	}
	return nil
}

func topics(triggers []PushTrigger) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range triggers {
		if !seen[t.Topic] {
			seen[t.Topic] = true
			out = append(out, t.Topic)
		}
	}
	return out
}

func exists(err error) bool { return status.Code(err) == codes.AlreadyExists }

// Scheduler is the local Cloud Scheduler: it publishes an empty message to
// a topic every Interval until its context ends.
type Scheduler struct {
	Publisher *pubsub.Publisher
	Interval  time.Duration
	Log       *slog.Logger
}

// Run ticks until ctx ends. The first tick is one interval after the start,
// as a Cloud Scheduler job's first run is.
func (s *Scheduler) Run(ctx context.Context) error {
	if s.Interval <= 0 {
		return errors.New("scheduler: interval must be positive")
	}
	t := time.NewTicker(s.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if _, err := s.Publisher.Publish(ctx, &pubsub.Message{Data: []byte("{}")}).Get(ctx); err != nil && ctx.Err() == nil {
				s.Log.Error("scheduler tick not published", "err", err)
			}
		}
	}
}
