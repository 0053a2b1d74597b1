package main

import (
	"context"
	"fmt"
)

// The warm-up: before the phases count anything, the emulators serve
// every call a lifecycle makes, untimed, so that the first phase is not
// charged the Java virtual machines compiling their own code. Measured
// with the probe of the lifecycle's calls (the store's and the
// reconciler's, twenty proxies at once, on an emulator just started and on
// the same emulator after), the first round of lifecycles billed 1.7 to
// 2.4 function-seconds each and every later round 0.9 to 1.1: the same
// calls, the emulator's warm-up. The warm-up is s.lifecycles lifecycles,
// as the lifecycle phase runs them, in namespaces of their own; its cost
// is in the table and the JSON (warmUp), beside the measured
// lifecycle's, so that the difference is a figure; -warmup=false runs the
// phases on the cold emulators.

func warmUpNamespace(i int) string { return fmt.Sprintf("warm-%03d", i) }

// warmUp runs the warm-up's lifecycles.
func (b *bench) warmUp(ctx context.Context, r *results) error {
	m, err := b.lifecycles(ctx, warmUpNamespace)
	if err != nil {
		return err
	}
	t := m.usage
	r.WarmUp = warmUpResult{Proxies: b.s.lifecycles, Invocations: t.total(), FunctionSeconds: round(t.Billed.Seconds(), 3),
		PerInvocation: round(t.Billed.Seconds()/float64(max(t.total(), 1)), 3), CallHomeDeliveryMs: summarize(m.delivery)}
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
	// CallHomeDeliveryMs is from each VM ready to its call-home's run's
	// start (the VM's publish, the Pub/Sub emulator's push, the relay), on
	// the cold emulators.
	CallHomeDeliveryMs latency `json:"callHomeDeliveryMs"`
}
