package gcpaccounts

import (
	"context"
	"time"

	"google.golang.org/api/option"

	"github.com/egress-proxies/egress/internal/pacing"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/gcp"
	"github.com/egress-proxies/egress/internal/provider/gcp/computefake"
	"github.com/egress-proxies/egress/internal/provider/providerbench"
	"github.com/egress-proxies/egress/internal/proxy"
)

// Burst is Compute Engine's part of make bench's burst: one Compute fake
// whose rate quotas are scaled down, each account a project on it, and
// the gcp provider through Google's Go client over it.
func (twoProjects) Burst() providerbench.Burst { return burst{} }

type burst struct{}

func (burst) Type() string { return gcp.Type }

func (burst) Rate() pacing.Rate { return gcp.Plugin.Rate }

// Calls are the plugin's, but a Get of one request: the plugin's Get is
// two for a VM of the default bootstrap, read with its guest attributes
// (its readiness); the burst's VMs run the spec's own cloud-init, and
// are read alone. A Create with its zone given is one insert.
func (burst) Calls() pacing.Calls {
	c := gcp.Plugin.Calls
	c.Get = 1
	return c
}

func (burst) Placement() proxy.Placement {
	return proxy.Placement{Region: "us-central1", Zone: "us-central1-a"}
}

// Start meters every group of Compute's rate quotas of each project at
// limit in each interval: the project's budget is spent by every call,
// whatever its group, as the plugin's is.
func (burst) Start(limit int, interval time.Duration) (providerbench.BurstFake, error) {
	fake := computefake.New()
	fake.SetRateLimitWindow(computefake.RateLimits{Mutations: limit, Reads: limit, Lists: limit, OperationReads: limit}, interval)
	return burstFake{fake}, nil
}

type burstFake struct{ fake *computefake.Server }

func (f burstFake) Instance(ctx context.Context) (providerbench.BurstInstance, error) {
	clients, err := gcp.NewClients(ctx, option.WithEndpoint(f.fake.URL), option.WithoutAuthentication())
	if err != nil {
		return nil, err
	}
	return burstInstance{clients}, nil
}

func (f burstFake) Counted(account string) (calls, refused int) {
	return f.fake.RateLimitCounted(burstProject(account))
}

func (f burstFake) Boot()  { f.fake.Settle() }
func (f burstFake) Close() { f.fake.Close() }

type burstInstance struct{ clients gcp.Clients }

func (i burstInstance) Provider(account string, interval time.Duration) (provider.Provider, error) {
	return gcp.New(i.clients, gcp.Config{Project: burstProject(account), RateInterval: interval})
}

func (i burstInstance) Close() error { return i.clients.Close() }

// burstProject is the project of a burst's account: demo-burst for the
// deployment's default, demo-ACCOUNT for another.
func burstProject(account string) string {
	if account == "" {
		return "demo-burst"
	}
	return "demo-" + account
}
