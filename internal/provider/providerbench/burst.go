package providerbench

import (
	"context"
	"time"

	"github.com/egress-proxies/egress/internal/pacing"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
)

// Burst is what a cloud brings to make bench's burst (dev/bench,
// issue 48): its fake, metering each account's calls at a rate limit
// scaled down so that a burst takes seconds, and its real provider over
// that fake in any of several accounts. The cloud's package of several
// accounts brings it (plugin.Plugin.AccountsStack's, through
// cloudsdev.Bursts), so that the benchmark names no cloud.
type Burst interface {
	// Type is the cloud's provider type.
	Type() string
	// Rate is the cloud's documented rate (its plugin's), whose source
	// the scaled-down budget names.
	Rate() pacing.Rate
	// Calls are the cloud's requests of each provider method on the
	// burst's path: a VM of the spec's own cloud-init (no readiness
	// read beside the VM's), made in Placement.
	Calls() pacing.Calls
	// Placement is where the burst's proxies go: one zone, so that a
	// Create is the fewest calls the cloud takes.
	Placement() proxy.Placement
	// Start starts the fake, metering each account's calls at limit in
	// each interval, and answering past it as the cloud does.
	Start(limit int, interval time.Duration) (BurstFake, error)
}

// BurstFake is a running fake of a burst.
type BurstFake interface {
	// Instance is a function instance's clients of the fake: its
	// providers of each account are made from them.
	Instance(ctx context.Context) (BurstInstance, error)
	// Counted is what account's calls the fake counted and, of them,
	// refused for the rate limit (account "" the deployment's default).
	Counted(account string) (calls, refused int)
	// Boot runs every VM created since the last Boot.
	Boot()
	Close()
}

// BurstInstance is one function instance's clients of a burst's fake.
type BurstInstance interface {
	// Provider is the cloud's real provider in account (its project,
	// subscription, …), waiting interval after a refusal of the rate
	// limit, as the scaled-down limit resets.
	Provider(account string, interval time.Duration) (provider.Provider, error)
	Close() error
}
