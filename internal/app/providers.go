package app

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	secretmanager "cloud.google.com/go/secretmanager/apiv1"

	"golang.org/x/oauth2"
	"google.golang.org/api/idtoken"

	"github.com/egress-proxies/egress/internal/accesspull"
	"github.com/egress-proxies/egress/internal/account"
	"github.com/egress-proxies/egress/internal/bootstrap/cloudinit"
	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/clouds"
	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/pacing"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/plugin"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/queue"
	"github.com/egress-proxies/egress/internal/secrets"
	"github.com/egress-proxies/egress/internal/store"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

// registry builds the registry of every enabled provider type from its
// cloud's plugin (internal/clouds' list, and the linked ones), each behind
// the metering decorator, so every backend's calls count in the
// invocation's usage without its knowing, and each with its rules (the
// forms and the operator's policy of what a spec may ask of it) beside its
// constructor. Each cloud's settings were read and checked by Load only
// when it is enabled, so a missing setting of a cloud never stops a mock
// run and always stops that cloud's at start-up. What a plugin's Boot and
// Readiness call for, the registry hands it: the engine of the startup
// script, the VM side of cloud-init (vm replaces it by type: doubles), the
// call-home topic; and the access pull reads the VMs of the status door.
func (a *App) registry(vm map[string]plugin.VMSide) (*provider.Registry, error) {
	c := a.Config
	reg := provider.NewRegistry()
	for _, typ := range c.Providers {
		p, ok := pluginOf(c.plugins, typ)
		if !ok {
			var served []string
			for _, p := range clouds.All {
				served = append(served, p.Type)
			}
			return nil, fmt.Errorf("config: PROVIDERS names %q, which this binary does not link: the mock is the local stack's and the tests' only, and the deployed functions serve %s", typ, strings.Join(served[:len(served)-1], ", ")+" and "+served[len(served)-1])
		}
		env := plugin.Env{Settings: c.Clouds[typ], Project: c.Project, Deployment: c.Deployment, Log: a.Log,
			ReadSecret: a.readSecretVersion, IDTokens: a.idTokenSource}
		switch p.Boot.Kind {
		case plugin.BootStartupScript:
			env.Engine = c.Engine
		case plugin.BootCloudInit:
			side, err := a.cloudInitVM(vm[typ], p.Boot, p.IPv6Prefix)
			if err != nil {
				return nil, err
			}
			env.VM = side
		}
		if p.MakesFirewall {
			env.Firewall = c.firewall()
		}
		switch p.Readiness {
		case plugin.CallsHome:
			env.CallHomeTopic = "projects/" + c.Project + "/topics/" + queue.CallHomeTopic
		case plugin.StatusDoor:
			a.readsByPull(typ, env.VM)
		}
		if a.callHome != nil && a.issuer != nil {
			env.CallHome = a.publishCallHome
		}
		// The policy's error stopped the ProxyAPI in Load; another
		// function reads no policy and registers the rules of none.
		rules, _ := p.Validator(c.Clouds[typ])
		opts := []provider.Option{provider.WithValidator(rules)}
		if p.InPlace {
			opts = append(opts, provider.InPlace())
		}
		if p.IPv6Prefix > 0 {
			opts = append(opts, provider.IPv6Prefix(p.IPv6Prefix))
		}
		ctorFor := a.accountConstructor(p, env)
		def, err := ctorFor(provider.AccountSpec{ID: account.Default})
		if err != nil {
			return nil, err // the pacer's, which names PACING_SCALE
		}
		opts = append(opts, provider.PerAccount(ctorFor))
		if err := reg.Register(typ, def, opts...); err != nil {
			return nil, fmt.Errorf("config: PROVIDERS: %w", err)
		}
	}
	return reg, nil
}

// accountConstructor makes, for each account of the cloud p, the
// constructor of its provider: the plugin's New over env with the
// account's settings over the deployment's, each checked by its
// variable's own check as Load checks the deployment's, and decorated
// (decorate) knowing the account. The default account ("") sets nothing.
func (a *App) accountConstructor(p plugin.Plugin, env plugin.Env) provider.AccountConstructor {
	return func(acct provider.AccountSpec) (provider.Constructor, error) {
		id, settings := acct.ID, acct.Settings
		e := env
		if len(settings) > 0 {
			e.Settings = env.Settings.Over(settings)
			for _, v := range p.Vars {
				val, ok := settings[v.Name]
				switch {
				case !ok:
				case !v.PerAccount:
					return nil, fmt.Errorf("account %q sets %s, which is the deployment's, not an account's", id, v.Name)
				case v.Check != nil:
					if err := v.Check(val, e.Settings); err != nil {
						return nil, fmt.Errorf("account %q: %s=%q %w", id, v.Name, val, err)
					}
				}
			}
		}
		if id != account.Default {
			e.Log = env.Log.With(slog.String("account", id))
		}
		return a.decorate(p, acct, p.New(e))
	}
}

// accountLookup reads an account's document for the provider set: the
// type it holds and what it sets.
func (a *App) accountLookup(ctx context.Context, id string) (string, provider.AccountSpec, error) {
	if a.store == nil {
		return "", provider.AccountSpec{}, fmt.Errorf("accounts/%s: %w (no store)", id, provider.ErrNoAccount)
	}
	doc, err := a.store.GetAccount(ctx, id)
	if errors.Is(err, proxy.ErrNotFound) {
		return "", provider.AccountSpec{}, fmt.Errorf("%w: %w", provider.ErrNoAccount, err)
	}
	if err != nil {
		return "", provider.AccountSpec{}, err
	}
	return doc.Provider, provider.AccountSpec{ID: id, Settings: doc.Settings, CallsPerWindow: doc.Limits.CallsPerWindow}, nil
}

// decorate wraps the constructor of the provider of plugin p in account
// acct (account.Default: the deployment's own) with the house's
// decorators: the metering of every call, and outside it the account's
// budget of calls (paced), so that a queued call, which never reached
// the cloud, counts as no provider call. Both are keyed by the type and
// the account: a budget of calls is an account's.
func (a *App) decorate(p plugin.Plugin, acct provider.AccountSpec, ctor provider.Constructor) (provider.Constructor, error) {
	return a.paced(p, acct, metered(ctor))
}

// paced puts the budget of calls of the account (provider type and
// account id; account.Default is the deployment's own) before ctor's
// provider: every call reserves its cost (the plugin's Calls) in the
// budget of the plugin's rate (its calls the account's
// limits.callsPerWindow where it sets them) scaled by PACING_SCALE, kept in Firestore
// and so shared by every instance of every function (package pacing). A
// cloud without a rate (the mock), a scale of 0, or a process without
// Firestore is not paced. The budget's decorator goes outside the
// metering one, so that a queued call, which never reached the cloud,
// counts as no provider call.
func (a *App) paced(p plugin.Plugin, acct provider.AccountSpec, ctor provider.Constructor) (provider.Constructor, error) {
	rate := accountRate(p.Rate, acct).Scaled(a.Config.PacingScale)
	if rate.IsZero() || a.firestore == nil {
		return ctor, nil
	}
	a.pacingOnce.Do(func() { a.pacing = store.NewPacing(a.firestore) })
	pacer, err := pacing.New(a.pacing, pacing.Key{Type: p.Type, Account: acct.ID}, rate, clock.Real{}, pacing.Options{})
	if err != nil {
		return nil, fmt.Errorf("config: PACING_SCALE=%g: %w", a.Config.PacingScale, err)
	}
	a.Log.Debug("provider calls paced", slog.String("budget", pacer.Key().String()), slog.String("rate", rate.String()),
		slog.Int("shards", pacer.Shards()), slog.String("source", rate.Source))
	return func(ctx context.Context) (provider.Provider, error) {
		prov, err := ctor(ctx)
		if err != nil {
			return nil, err
		}
		return pacing.Provider(prov, pacer, p.Calls, a.Log), nil
	}, nil
}

// accountRate is the budget of account acct of a cloud whose documented
// rate is rate: the account's own calls per window where its document
// raises or lowers them, in the cloud's window.
func accountRate(rate pacing.Rate, acct provider.AccountSpec) pacing.Rate {
	if acct.CallsPerWindow > 0 && !rate.IsZero() {
		rate.Calls = acct.CallsPerWindow
		rate.Source = "accounts/" + acct.ID + ": limits.callsPerWindow"
	}
	return rate
}

// pluginOf is the plugin of type typ among cl.
func pluginOf(cl []plugin.Plugin, typ string) (plugin.Plugin, bool) {
	i := slices.IndexFunc(cl, isType(typ))
	if i < 0 {
		return plugin.Plugin{}, false
	}
	return cl[i], true
}

func isType(typ string) func(plugin.Plugin) bool {
	return func(p plugin.Plugin) bool { return p.Type == typ }
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

// cloudInitVM fills what vm leaves unset with the VM side's own: the
// user-data of package cloudinit, with the engine binary's public URL and
// the status access of each VM's uid, and the prober of package
// vmstatus, both with the status key (statusKey). The cloud's boot says
// whether its user-data is compressed (within a size limit of the
// cloud's) and names the instance metadata service, which its agent asks
// which instance it is, and the VM-side part a Static proxy's VM runs to
// leave from its static address; its plugin, the length of the IPv6
// prefix its VMs get, which a VM created to rotate its IPv6 sources
// finds its prefix with.
func (a *App) cloudInitVM(vm plugin.VMSide, boot plugin.Boot, ipv6PrefixLength int) (plugin.VMSide, error) {
	cfg := a.Config.CloudInitVM
	if vm.Renderer == nil {
		r := cloudinit.Renderer{EngineURL: cfg.EngineURL, EngineSHA256: cfg.EngineSHA256, Gzip: boot.Gzip, IMDS: boot.MetadataURL, Follow: boot.Follow, WatchUserData: boot.WatchUserData, IPv6PrefixLength: ipv6PrefixLength,
			Status: func(ctx context.Context, uid, id string) (*vmconfig.StatusAccess, error) {
				k, err := a.statusKey(ctx)
				if err != nil {
					return nil, err
				}
				return k.Access(uid, id, cfg.StatusSources)
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

// readsByPull notes that the VMs of provider typ are read by pull: the
// collector asks for their access lines each tick, and Reconcile reads
// them with the VM side's prober, when it reads access lines too (the
// VM side's own, vmstatus.Prober, does; a double that does not leaves
// the lines unread).
func (a *App) readsByPull(typ string, vm plugin.VMSide) {
	r, ok := vm.Prober.(accesspull.Reader)
	if !ok {
		return
	}
	if a.accessReaders == nil {
		a.accessReaders = map[string]accesspull.Reader{}
	}
	a.accessReaders[typ] = r
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

// idTokenSource is the source of the function's Google ID tokens for
// audience: the metadata server's on Cloud Run, a test's where it set
// one.
func (a *App) idTokenSource(ctx context.Context, audience string) (oauth2.TokenSource, error) {
	if a.idTokens != nil {
		return a.idTokens(ctx, audience)
	}
	return idtoken.NewTokenSource(ctx, audience)
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

// firewall is what the deployment's firewall opens, as the settings say,
// for a cloud whose provider makes it.
func (c Config) firewall() plugin.Firewall {
	var f plugin.Firewall
	for _, r := range c.API.Policy.ProxyPorts {
		f.ProxyPorts = append(f.ProxyPorts, r.String())
	}
	for _, p := range c.API.Policy.FirewallSourceRanges {
		f.SourceRanges = append(f.SourceRanges, p.String())
	}
	f.StatusSourceRanges = c.CloudInitVM.StatusSources
	return f
}
