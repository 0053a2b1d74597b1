// Package iamfixture is a program for the deploy tests' call analysis
// (calls_test.go): two entry points, one of which reaches a Compute call
// only through what the analysis must follow, an interface and a closure a
// library runs. It is never built into anything.
package iamfixture

import (
	"context"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/GoogleCloudPlatform/functions-framework-go/functions"
	"github.com/cloudevents/sdk-go/v2/event"
	"golang.org/x/sync/errgroup"
)

func init() {
	functions.CloudEvent("Labels", labels)
	functions.CloudEvent("Idle", idle)
}

type labeller interface {
	label(ctx context.Context) error
}

type vm struct{ c *compute.InstancesClient }

func (v vm) label(ctx context.Context) error {
	_, err := v.c.SetLabels(ctx, &computepb.SetLabelsInstanceRequest{})
	return err
}

var target labeller = vm{}

func labels(ctx context.Context, _ event.Event) error {
	var g errgroup.Group
	g.Go(func() error { return target.label(ctx) })
	return g.Wait()
}

func idle(context.Context, event.Event) error { return nil }
