package app

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"strings"
	"time"

	secretmanager "cloud.google.com/go/secretmanager/apiv1"

	"google.golang.org/api/option"

	"github.com/egress-proxies/egress/internal/bootstrap/cloudinit"
	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/gcp"
	"github.com/egress-proxies/egress/internal/provider/hetzner"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/queue"
	"github.com/egress-proxies/egress/internal/secrets"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"github.com/egress-proxies/egress/internal/vmstatus"
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
func (a *App) registry(linked []Linked, vm HetznerVM) (*provider.Registry, error) {
	c := a.Config
	ctors := map[string]provider.Constructor{gcp.Type: c.gcpConstructor()}
	rules := map[string]provider.Validator{gcp.Type: gcp.Validator(c.GCPPolicy)}
	inPlace := map[string]bool{gcp.Type: true}
	if hetznerEnabled(&c) {
		vm, err := a.cloudInitVM(vm)
		if err != nil {
			return nil, err
		}
		ctors[hetzner.Type] = a.hetznerConstructor(vm)
		rules[hetzner.Type] = hetzner.Validator(c.HetznerPolicy)
	}
	env := ProviderEnv{Config: c, Log: a.Log}
	if a.callHome != nil && a.issuer != nil {
		env.CallHome = a.publishCallHome
	}
	for _, l := range linked {
		ctors[l.Type], rules[l.Type], inPlace[l.Type] = l.New(env), l.Validator, l.InPlace
	}
	reg := provider.NewRegistry()
	for _, typ := range c.Providers {
		if ctors[typ] == nil {
			return nil, fmt.Errorf("config: PROVIDERS names %q, which this binary does not link: the mock is the local stack's and the tests' only, and the deployed functions serve %s and %s", typ, gcp.Type, hetzner.Type)
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

// HetznerVM is what the hetzner provider needs of the VM side: the
// renderer of a server's user-data (cloud-init) from the request's
// engine configuration and startup script, and the prober that asks a
// server's proxy whether it serves. Unset, they are the VM side's own
// (cloudInitVM); the simulation and the benchmark bring doubles.
type HetznerVM struct {
	Renderer hetzner.Renderer
	Prober   hetzner.Prober
}

// cloudInitVM fills what vm leaves unset with the VM side's own: the
// user-data of package cloudinit, with the engine binary's public URL and
// the status access of each server's uid, and the prober of package
// vmstatus, both with the status key (statusKey).
func (a *App) cloudInitVM(vm HetznerVM) (HetznerVM, error) {
	cfg := a.Config.CloudInitVM
	if vm.Renderer == nil {
		r := cloudinit.Renderer{EngineURL: cfg.EngineURL, EngineSHA256: cfg.EngineSHA256,
			Status: func(ctx context.Context, uid string) (*vmconfig.StatusAccess, error) {
				k, err := a.statusKey(ctx)
				if err != nil {
					return nil, err
				}
				return k.Access(uid, cfg.StatusSources)
			}}
		// Only the functions that make servers read the settings (the
		// ProxyAPI registers the provider for its rules alone, and never
		// renders a server).
		if a.Config.serves(Reconcile) || a.Config.serves(CollectGarbage) {
			if err := r.Check(); err != nil {
				return vm, fmt.Errorf("config: PROXY_ENGINE_PUBLIC_URL and PROXY_ENGINE_SHA256: %w", err)
			}
		}
		vm.Renderer = r
	}
	if vm.Prober == nil {
		vm.Prober = &vmstatus.Prober{Key: a.statusKey}
	}
	return vm, nil
}

// statusKey is the key the VMs' status credentials are derived from: read
// from VM_STATUS_KEY_SECRET's version when first needed, and kept once
// read (a failed read is tried again at the next need); against a fake,
// a key this process makes. Errors name the version, never the key.
func (a *App) statusKey(ctx context.Context) (vmstatus.Key, error) {
	a.statusMu.Lock()
	defer a.statusMu.Unlock()
	if a.status != nil {
		return *a.status, nil
	}
	version := a.Config.CloudInitVM.StatusKeySecret
	var k vmstatus.Key
	if version == "" {
		b := make([]byte, vmstatus.MinKeyBytes)
		if _, err := rand.Read(b); err != nil {
			return k, err
		}
		var err error
		if k, err = vmstatus.NewKey(b); err != nil {
			return k, err
		}
	} else {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		text, err := a.readSecretVersion(ctx, version)
		if err != nil {
			return k, fmt.Errorf("the VM status key (VM_STATUS_KEY_SECRET): %w", err)
		}
		if k, err = vmstatus.ParseKey(strings.TrimSpace(text)); err != nil {
			return k, fmt.Errorf("the VM status key (VM_STATUS_KEY_SECRET) %s: %w", version, err)
		}
	}
	a.status = &k
	return k, nil
}

// hetznerConstructor reads the API token from Secret Manager when the
// provider is first used, and makes the provider with it; a failed read
// is not remembered (provider.Set), so the next use tries again. Against
// HETZNER_ENDPOINT (a fake) without a HETZNER_TOKEN_SECRET it sends
// LocalHetznerToken, and reads no secret.
func (a *App) hetznerConstructor(vm HetznerVM) provider.Constructor {
	cfg := a.Config.Hetzner
	log := a.Log.With(slog.String("provider", hetzner.Type))
	return func(ctx context.Context) (provider.Provider, error) {
		token := LocalHetznerToken
		if cfg.TokenSecret != "" {
			var err error
			if token, err = a.hetznerToken(ctx, cfg.TokenSecret); err != nil {
				return nil, err
			}
		}
		return hetzner.New(hetzner.NewClient(token, cfg.Endpoint, nil), hetzner.Config{
			Deployment: cfg.Deployment, Locations: cfg.Locations, Renderer: vm.Renderer, Prober: vm.Prober, Log: log,
		})
	}
}

// hetznerToken reads the API token from its Secret Manager version.
// Errors name the version, never the token.
func (a *App) hetznerToken(ctx context.Context, version string) (string, error) {
	token, err := a.readSecretVersion(ctx, version)
	if err != nil {
		return "", fmt.Errorf("hetzner: the API token (HETZNER_TOKEN_SECRET): %w", err)
	}
	if token = strings.TrimSpace(token); token == "" {
		return "", fmt.Errorf("hetzner: the API token (HETZNER_TOKEN_SECRET) %s is empty", version)
	}
	return token, nil
}

// readSecretVersion reads a secret version the functions hold, dialling
// Secret Manager's client for that read alone.
func (a *App) readSecretVersion(ctx context.Context, version string) (string, error) {
	if a.readSecret != nil {
		return a.readSecret(ctx, version)
	}
	c, err := secretmanager.NewClient(context.WithoutCancel(ctx))
	if err != nil {
		return "", fmt.Errorf("secret manager client: %w", err)
	}
	defer c.Close()
	return secrets.New(c).Access(ctx, version)
}
