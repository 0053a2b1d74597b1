package app

import (
	"context"
	"fmt"
	"log/slog"

	"google.golang.org/api/option"

	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/gcp"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/queue"
)

// Linked is a provider type a binary links beside the ones every
// deployment may use (gcp): the local stack and the tests link the mock
// (package app/mockprovider), which the deployed functions do not contain.
type Linked struct {
	Type      string
	Validator provider.Validator
	// New makes the provider's constructor for env.
	New func(env ProviderEnv) provider.Constructor
}

// ProviderEnv is what a linked provider is built from.
type ProviderEnv struct {
	Config Config
	Log    *slog.Logger
	// CallHome publishes what the VM named instance says when it calls
	// home, as a real VM does on the call-home topic, with an identity
	// token the app signs for it as Google's metadata server would; nil
	// when the process serves no function that publishes.
	CallHome func(ctx context.Context, msg proxy.ReconcileMessage, instance string) error
}

// registry builds the registry of every enabled provider type, each behind
// the metering decorator, so every backend's calls count in the
// invocation's usage without its knowing, and each with its rules (the
// forms and the operator's policy of what a spec may ask of it) beside its
// constructor. Each provider's settings were read and checked by Load only
// when it is enabled, so a missing GCP_* setting never stops a mock run and
// always stops a gcp one at start-up.
func (a *App) registry(linked []Linked) (*provider.Registry, error) {
	c := a.Config
	ctors := map[string]provider.Constructor{gcp.Type: c.gcpConstructor()}
	rules := map[string]provider.Validator{gcp.Type: gcp.Validator(c.GCPPolicy)}
	env := ProviderEnv{Config: c, Log: a.Log}
	if a.callHome != nil && a.issuer != nil {
		env.CallHome = a.publishCallHome
	}
	for _, l := range linked {
		ctors[l.Type], rules[l.Type] = l.New(env), l.Validator
	}
	reg := provider.NewRegistry()
	for _, typ := range c.Providers {
		if ctors[typ] == nil {
			return nil, fmt.Errorf("config: PROVIDERS names %q, which this binary does not link: the mock is the local stack's and the tests' only, and the deployed functions serve %s", typ, gcp.Type)
		}
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
