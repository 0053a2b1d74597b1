package functions

import (
	"context"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"
	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/egress-proxies/egress/internal/app"
)

func init() {
	functions.CloudEvent("Reconcile", reconcileProxy)
}

var reconcileFunc = lazily(app.NewReconcile)

// reconcileProxy is the Reconcile entry point: Firestore
// google.cloud.firestore.document.v1.written events on
// namespaces/{namespace}/proxies/{proxy}, and
// google.cloud.pubsub.topic.v1.messagePublished events on proxy-reconcile.
func reconcileProxy(ctx context.Context, e event.Event) error {
	f, err := reconcileFunc()
	if err != nil {
		return err
	}
	return f.Handle(ctx, e)
}
