package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"cloud.google.com/go/pubsub/v2"

	"github.com/egress-proxies/egress/emulators/emulator"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/queue"
)

// The warm-up: before the phases count anything, the emulators serve
// every call a lifecycle makes at least once a proxy, untimed, so that
// the first phase is not charged the Java virtual machines compiling
// their own code. Measured with the probe of the lifecycle's calls (the
// store's and the reconciler's, twenty proxies at once, on an emulator
// just started and on the same emulator after), the first round of
// lifecycles billed 1.7 to 2.4 function-seconds each and every later round
// 0.9 to 1.1: the same calls, the emulator's warm-up. The warm-up's own
// cost is in the table and the JSON (warmUp), beside the measured
// lifecycle's, so that the difference is a figure; -warmup=false runs the
// phases on the cold emulators.

func warmUpNamespace(i int) string { return fmt.Sprintf("warm-%03d", i) }

// warmUp creates s.lifecycles proxies and deletes them before their VMs
// boot, which takes the API's, the reconciler's and the store's paths of a
// lifecycle but its VM's call-home, and then sends a call-home for each
// of them (gone by then: one read each), which takes the call-home's
// topic, push and relay.
func (b *bench) warmUp(ctx context.Context, r *results) error {
	n := b.s.lifecycles
	before := b.lines.snapshot()
	keys, uids, err := b.createOneEach(ctx, n, warmUpNamespace)
	if err != nil {
		return err
	}
	// The create's runs first (Creating, Create, Provisioning), so that
	// the deletion takes the path of a VM that exists.
	if err := b.quiet(ctx); err != nil {
		return err
	}
	if err := b.deleteAll(ctx, keys); err != nil {
		return err
	}
	if err := b.quiet(ctx); err != nil {
		return err
	}
	os.Setenv(emulator.PubSub.EnvVar(), b.stack.PubSubHost)
	client, err := pubsub.NewClient(ctx, stackProject)
	if err != nil {
		return err
	}
	defer client.Close()
	pub := queue.NewCallHomePublisher(client)
	defer pub.Stop()
	sent := make([]time.Time, n)
	for i, k := range keys {
		sent[i] = time.Now()
		if err := pub.Publish(ctx, proxy.ReconcileMessage{Namespace: k.Namespace, Name: k.Name, UID: uids[i], Reason: proxy.ReasonReady}); err != nil {
			return fmt.Errorf("calling home for %s: %w", k, err)
		}
	}
	// Each proxy's POST and DELETE, its five writes' runs, and its
	// call-home's.
	if err := b.quietAfter(ctx, before, 8*n); err != nil {
		return err
	}
	t := b.lines.snapshot().minus(before)
	var delivery []time.Duration
	for i, run := range b.lines.callHomeRuns(paths(keys)) {
		if !run.start.IsZero() {
			delivery = append(delivery, run.start.Sub(sent[i]))
		}
	}
	r.WarmUp = warmUpResult{Proxies: n, Invocations: t.total(), FunctionSeconds: round(t.Billed.Seconds(), 3),
		PerInvocation: round(t.Billed.Seconds()/float64(max(t.total(), 1)), 3), CallHomeDeliveryMs: summarize(delivery)}
	return nil
}

// warmUpResult is what the warm-up cost, on the emulators as they
// started.
type warmUpResult struct {
	Proxies     int `json:"proxies"`
	Invocations int `json:"invocations"`
	// FunctionSeconds is the warm-up's billed function-seconds in all,
	// PerInvocation per invocation: the lifecycle's is beside it in the
	// table.
	FunctionSeconds float64 `json:"functionSeconds"`
	PerInvocation   float64 `json:"functionSecondsPerInvocation"`
	// CallHomeDeliveryMs is from the benchmark's publish of each call-home
	// to its run's start: the Pub/Sub emulator's push and the relay, on
	// the cold emulators.
	CallHomeDeliveryMs latency `json:"callHomeDeliveryMs"`
}
