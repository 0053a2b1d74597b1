// Package cloudsdev is the one list of the clouds' parts for development
// and tests: each cloud's simulated cloud (a sim.Cloud, for make sim and
// internal/sim's tests), its phase of make bench (a providerbench.Phase)
// and its part of the local stack's end-to-end test (a
// providerstack.Cloud: its fake for the stack, and its flow), all from
// the cloud's <cloud>sim package, over its fake. The list (clouds_gen.go) is written by make docs
// (dev/gendocs) from each plugin of internal/clouds.All that names its
// development package (plugin.Plugin.Dev): the simulation, the
// benchmark and the stack's test name no cloud, and no cloud is a hand-written line here.
// Production's list of the clouds' providers is package internal/clouds;
// this one links the fakes, and nothing deployed imports it.
package cloudsdev

import (
	"slices"

	"github.com/egress-proxies/egress/internal/provider/providerbench"
	"github.com/egress-proxies/egress/internal/provider/providerstack"
	"github.com/egress-proxies/egress/internal/sim"
)

// Cloud is a cloud's development parts.
type Cloud struct {
	// Sim builds the cloud for a schedule of the simulation.
	Sim sim.NewCloud
	// Bench is the cloud's phase of make bench.
	Bench providerbench.Phase
	// Stack is the cloud's part of the local stack's end-to-end test.
	Stack providerstack.Cloud
}

// Clouds are the clouds beside the mock, in internal/clouds.All's order:
// the order the simulation offers them each new proxy (until one takes
// it) and the benchmark runs their phases. A cloud added last to All
// leaves the earlier clouds' share of the proxies as it was and takes
// from the mock's, and its draws are its own: the seeds' schedules
// change only where its proxies and faults come in.
func Clouds() []Cloud {
	return slices.Clone(listed)
}

// Sims are the clouds' simulated clouds, in Clouds' order.
func Sims() []sim.NewCloud {
	var out []sim.NewCloud
	for _, c := range Clouds() {
		out = append(out, c.Sim)
	}
	return out
}

// Phases are the clouds' phases of make bench, in Clouds' order.
func Phases() []providerbench.Phase {
	var out []providerbench.Phase
	for _, c := range Clouds() {
		out = append(out, c.Bench)
	}
	return out
}

// Stacks are the clouds' parts of the local stack's end-to-end test, in
// Clouds' order: the order the stack's PROVIDERS enables them in, after
// the mock.
func Stacks() []providerstack.Cloud {
	var out []providerstack.Cloud
	for _, c := range Clouds() {
		out = append(out, c.Stack)
	}
	return out
}

// Accounts are the clouds' parts of the local stack's test of several
// accounts of one cloud (issue 48), in internal/clouds.All's order: from
// each plugin that names one (plugin.Plugin.AccountsStack).
func Accounts() []providerstack.Accounts {
	return slices.Clone(accountsListed)
}

// Bursts are the clouds' parts of make bench's burst (issue 48): each
// cloud whose part of several accounts (Accounts) brings one, in
// internal/clouds.All's order.
func Bursts() []providerbench.Burst {
	var out []providerbench.Burst
	for _, a := range accountsListed {
		if b, ok := a.(interface{ Burst() providerbench.Burst }); ok {
			out = append(out, b.Burst())
		}
	}
	return out
}
