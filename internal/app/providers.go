package app

import (
	"context"
	"fmt"
	"log/slog"

	"google.golang.org/api/option"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/gcp"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/queue"
)

// registry builds the registry of every enabled provider type, each behind
// the metering decorator, so every backend's calls count in the
// invocation's usage without its knowing, and each with its rules (the
// forms and the operator's policy of what a spec may ask of it) beside its
// constructor. Each provider's settings were
// read and checked by Load only when it is enabled, so a missing GCP_*
// setting never stops a mock run and always stops a gcp one at start-up.
func (a *App) registry() (*provider.Registry, error) {
	c := a.Config
	ctors := map[string]provider.Constructor{
		mock.Type: a.mockConstructor(),
		gcp.Type:  c.gcpConstructor(),
	}
	rules := map[string]provider.Validator{
		mock.Type: mock.Validate,
		gcp.Type:  gcp.Validator(c.GCPPolicy),
	}
	reg := provider.NewRegistry()
	for _, typ := range c.Providers {
		if err := reg.Register(typ, metered(ctors[typ]), provider.WithValidator(rules[typ])); err != nil {
			return nil, fmt.Errorf("config: PROVIDERS: %w", err)
		}
	}
	return reg, nil
}

func metered(ctor provider.Constructor) provider.Constructor {
	return func(ctx context.Context) (provider.Provider, error) {
		p, err := ctor(ctx)
		if err != nil {
			return nil, err
		}
		return metering.Provider(p), nil
	}
}

// mockConstructor makes the mock provider, whose VMs call home on the
// call-home topic as real ones do, so the local stack takes the
// production path: the message's run, not a poll, sees the VM ready.
func (a *App) mockConstructor() provider.Constructor {
	opts := a.Config.Mock
	opts.Clock = clock.Real{}
	if a.callHome != nil && a.Config.MockCallHome {
		log, pub := a.Log, a.callHome
		opts.CallHome = func(c mock.CallHome) {
			msg := proxy.ReconcileMessage{Namespace: c.Namespace, Pool: c.Pool, Name: c.Name, UID: c.UID, Reason: proxy.ReasonReady}
			if c.BootError != "" {
				msg.Reason = proxy.ReasonBootFailed
			}
			if err := pub.Publish(context.Background(), msg); err != nil {
				log.Warn("mock VM could not call home; the sweep will find it", slog.String("uid", c.UID), slog.Any("error", err))
			}
		}
	}
	if a.Config.MockServe {
		opts.Serve = &mock.Serve{AllowDestinations: a.Config.MockServeAllow, Log: a.Log}
	}
	return func(context.Context) (provider.Provider, error) { return mock.New(opts), nil }
}

// gcpConstructor dials Compute when the provider is first used. The VMs
// call home on the call-home topic of the functions' project.
func (c Config) gcpConstructor() provider.Constructor {
	cfg := c.GCP
	cfg.CallHomeTopic = "projects/" + c.Project + "/topics/" + queue.CallHomeTopic
	endpoint := c.ComputeEndpoint
	return func(ctx context.Context) (provider.Provider, error) {
		var opts []option.ClientOption
		if endpoint != "" {
			opts = append(opts, option.WithEndpoint(endpoint), option.WithoutAuthentication())
		}
		clients, err := gcp.NewClients(context.WithoutCancel(ctx), opts...)
		if err != nil {
			return nil, err
		}
		return gcp.New(clients, cfg)
	}
}
