package functions

import (
	"context"
	"sync"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"
	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/egress-proxies/egress/internal/app"
)

func init() {
	functions.CloudEvent("CollectGarbage", collectGarbage)
}

// collectGarbageFunc is built on the first event rather than in init, so a
// process serving only the other functions never reads the GC settings, and
// a configuration error reaches the log of the event it fails.
var collectGarbageFunc = sync.OnceValues(func() (*app.CollectGarbage, error) {
	rt, err := app.Process()
	if err != nil {
		return nil, err
	}
	return app.NewCollectGarbage(rt)
})

// collectGarbage is the CollectGarbage entry point: a
// google.cloud.pubsub.topic.v1.messagePublished event on topic proxy-gc.
func collectGarbage(ctx context.Context, e event.Event) error {
	f, err := collectGarbageFunc()
	if err != nil {
		return err
	}
	return f.Handle(ctx, e)
}
