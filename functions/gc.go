package functions

import (
	"context"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"
	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/egress-proxies/egress/internal/app"
)

func init() {
	functions.CloudEvent("CollectGarbage", collectGarbage)
}

var collectGarbageFunc = lazily(app.NewCollectGarbage)

// collectGarbage is the CollectGarbage entry point: a
// google.cloud.pubsub.topic.v1.messagePublished event on topic proxy-gc.
func collectGarbage(ctx context.Context, e event.Event) error {
	f, err := collectGarbageFunc()
	if err != nil {
		return err
	}
	return f.Handle(ctx, e)
}
