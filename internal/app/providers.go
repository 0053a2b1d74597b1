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
	// InPlace says the provider's VMs take live changes in place
	// (provider.InPlace).
	InPlace bool
	// New makes the provider's constructor for env.
	New func(env ProviderEnv) provider.Constructor
}

// ProviderEnv is what a linked provider is built from.
type ProviderEnv struct {
	Config Config
	Log    *slog.Logger
	// CallHome publishes what a VM says when it calls home, as a real VM
	// does on the call-home topic; nil when the process serves no function
	// that publishes.
	CallHome func(context.Context, proxy.ReconcileMessage) error
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
	inPlace := map[string]bool{gcp.Type: true}
	env := ProviderEnv{Config: c, Log: a.Log}
	if a.callHome != nil {
		env.CallHome = a.callHome.Publish
	}
	for _, l := range linked {
		ctors[l.Type], rules[l.Type], inPlace[l.Type] = l.New(env), l.Validator, l.InPlace
	}
	reg := provider.NewRegistry()
	for _, typ := range c.Providers {
		if ctors[typ] == nil {
			return nil, fmt.Errorf("config: PROVIDERS names %q, which this binary does not link: the mock is the local stack's and the tests' only, and the deployed functions serve %s", typ, gcp.Type)
		}
		opts := []provider.Option{provider.WithValidator(rules[typ])}
		if inPlace[typ] {
			opts = append(opts, provider.InPlace())
		}
		if err := reg.Register(typ, metered(ctors[typ]), opts...); err != nil {
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
