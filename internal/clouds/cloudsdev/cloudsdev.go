// Package cloudsdev is the one list of the clouds' parts for development
// and tests: each cloud's simulated cloud (a sim.Cloud, for make sim and
// internal/sim's tests) and its phase of make bench (a
// providerbench.Phase), both from the cloud's <cloud>sim package, over
// its fake. A cloud is one line here: the simulation and the benchmark
// name no cloud. Production's list of the clouds' providers is package
// internal/clouds; this one links the fakes, and nothing deployed
// imports it.
package cloudsdev

import (
	"github.com/egress-proxies/egress/internal/provider/aws/awssim"
	"github.com/egress-proxies/egress/internal/provider/azure/azuresim"
	"github.com/egress-proxies/egress/internal/provider/digitalocean/dosim"
	"github.com/egress-proxies/egress/internal/provider/hetzner/hetznersim"
	"github.com/egress-proxies/egress/internal/provider/providerbench"
	"github.com/egress-proxies/egress/internal/sim"
)

// Cloud is a cloud's development parts.
type Cloud struct {
	// Sim builds the cloud for a schedule of the simulation.
	Sim sim.NewCloud
	// Bench is the cloud's phase of make bench.
	Bench providerbench.Phase
}

// Clouds are the clouds beside the mock, in the order the simulation
// offers them each new proxy (until one takes it) and the benchmark runs
// their phases. A cloud added last leaves the earlier clouds' share of
// the proxies as it was and takes from the mock's, and its draws are its
// own: the seeds' schedules change only where its proxies and faults
// come in.
func Clouds() []Cloud {
	return []Cloud{
		{Sim: hetznersim.New, Bench: hetznersim.Bench{}},
		{Sim: awssim.New, Bench: awssim.Bench{}},
		{Sim: dosim.New, Bench: dosim.Bench{}},
		{Sim: azuresim.New, Bench: azuresim.Bench{}},
	}
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
