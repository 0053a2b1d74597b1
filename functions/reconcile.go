package functions

import (
	"context"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"
	"github.com/cloudevents/sdk-go/v2/event"
)

func init() {
	functions.CloudEvent("Reconcile", reconcile)
}

// reconcile is the Reconcile entry point: Firestore document events
// (google.cloud.firestore.document.v1.written) and messagePublished events
// on proxy-reconcile.
func reconcile(ctx context.Context, e event.Event) error {
	a, err := process.get(ctx)
	if err != nil {
		return err
	}
	return a.Reconcile(ctx, e)
}
