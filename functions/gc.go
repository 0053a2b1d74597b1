package functions

import (
	"context"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"
	"github.com/cloudevents/sdk-go/v2/event"
)

func init() {
	functions.CloudEvent("CollectGarbage", collectGarbage)
}

// collectGarbage is the CollectGarbage entry point: a
// google.cloud.pubsub.topic.v1.messagePublished event on topic proxy-gc.
func collectGarbage(ctx context.Context, e event.Event) error {
	a, err := process.get(ctx)
	if err != nil {
		return err
	}
	return a.CollectGarbage(ctx, e)
}
