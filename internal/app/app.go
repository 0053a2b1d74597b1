// Package app is the composition root: it reads the configuration (one
// table of variables, Vars), validates it, and assembles the clients, the
// provider registry and the domain services that the function entry points
// in functions/ and the local stack serve. It is the only package that
// knows every concrete implementation of the house (Firestore, Pub/Sub,
// Secret Manager, KMS); the clouds it knows only as plug-ins, the values
// of internal/clouds' list (plugin.Plugin), and a cloud is added there,
// never here.
//
// One App is built per process, from the environment, for the functions
// the process serves: in production one (FUNCTION_TARGET), locally all
// three. Its parts are made once, when it is built, and shared by every
// request; nothing below it caches a result of its own, so a build that
// failed is simply tried again by the next request.
package app

import (
	"golang.org/x/oauth2"

	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/pubsub/v2"

	"github.com/egress-proxies/egress/internal/accesspull"
	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/budgetalert"
	"github.com/egress-proxies/egress/internal/budgetstop"
	"github.com/egress-proxies/egress/internal/callhome"
	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/clouds"
	"github.com/egress-proxies/egress/internal/gc"
	"github.com/egress-proxies/egress/internal/logging"
	"github.com/egress-proxies/egress/internal/pools"
	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/pricing/pricestore"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/plugin"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/queue"
	"github.com/egress-proxies/egress/internal/reconcile"
	"github.com/egress-proxies/egress/internal/sealing"
	"github.com/egress-proxies/egress/internal/spend"
	"github.com/egress-proxies/egress/internal/store"
	"github.com/egress-proxies/egress/internal/version"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"github.com/egress-proxies/egress/internal/vmidentity"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

// Options change what New builds, for the local stack, tests and the
// benchmark.
type Options struct {
	// Serve are the functions the process serves; empty means every entry
	// point.
	Serve []Function
	// Registry, if set, replaces the providers the configuration names:
	// the benchmark's garbage-collection worker brings a mock of its own.
	Registry *provider.Registry
	// Linked are the clouds the binary links beside the production list
	// (internal/clouds): the local stack and the tests pass the mock's
	// (mock.Plugin), which the deployed functions do not contain.
	Linked []plugin.Plugin
	// LogOutput receives the logs; nil is standard output for JSON (where
	// Cloud Run reads them) and standard error for text.
	LogOutput io.Writer
	// VM replaces, by provider type, what a cloud-init cloud's provider
	// needs of the VM side: the VMs' user-data and the question whether
	// they serve (tests' doubles). Unset, they are the VM side's own:
	// packages cloudinit and vmstatus.
	VM map[string]plugin.VMSide
}

// App is one process's composition: the configuration and the services of
// the functions it serves. It is safe for concurrent use.
type App struct {
	Config    Config
	Log       *slog.Logger
	Providers *provider.Set
	// Catalog is the price catalog proxies are costed from (status.cost,
	// budgets): the store's (pricestore), which the collector refreshes
	// daily. Nil writes no status.cost and holds no request to a budget:
	// no figure is ever guessed.
	Catalog pricing.Catalog

	firestore *firestore.Client
	pubsub    *pubsub.Client
	publisher *queue.Publisher
	// callHome publishes what a linked provider's VMs say when they call
	// home (the mock's, in the local stack; production's functions never
	// do).
	callHome *queue.Publisher
	secrets  *secretManager
	// readSecret, when set, reads a secret version instead of Secret
	// Manager: tests of a cloud's token.
	readSecret func(ctx context.Context, version string) (string, error)
	// idTokens, when set, is the source of Google ID tokens a cloud's
	// provider exchanges for its credentials, instead of the metadata
	// server's: tests of the federation.
	idTokens func(ctx context.Context, audience string) (oauth2.TokenSource, error)
	store    *store.Store
	// pacing keeps the budgets of calls of the cloud accounts (paced),
	// one store for the process so that its transactions on a shard
	// queue in it.
	pacingOnce sync.Once
	pacing     *store.Pacing
	// issuer signs the identity tokens of a linked provider's VMs (the
	// mock's, locally) as Google's metadata server signs a real VM's; nil
	// in the deployed functions, which trust Google's keys alone.
	issuer *vmidentity.Issuer
	// callhomes checks and handles the VMs' messages on proxy-callhome.
	callhomes *callhome.Handler
	// status is the VMs' status key once read (statusKey).
	statusMu sync.Mutex
	status   *vmstatus.Key

	api        http.Handler
	reconciler *reconcile.Reconciler
	pools      *pools.Reconciler
	collector  *gc.Collector
	// budgetStop is the tick's look at the budgets that stop traffic
	// (package budgetstop); nil without a price catalog.
	budgetStop *budgetstop.Look
	// prices refreshes the price catalog on the collector's ticks
	// (refreshPrices); nil where CollectGarbage is not served.
	prices *pricestore.Refresher
	// budgets tells the budget thresholds reached on the collector's
	// ticks (lookAtBudgets); nil without a price catalog.
	budgets *budgetalert.Checker
	// puller reads the access lines of the VMs read by pull (the status
	// door's); nil when no enabled provider's VMs are.
	puller *accesspull.Puller
	// accessReaders ask those VMs (each provider's VM side's prober), by
	// provider type, as registry found them.
	accessReaders map[string]accesspull.Reader
	// logOutput is where the logs go (Options.LogOutput).
	logOutput io.Writer
}

// ServedBy is what a process serves given its FUNCTION_TARGET: that entry
// point, or every one when it names none of them (the local stack, a
// framework serving each function at /NAME).
func ServedBy(target string) []Function {
	if slices.Contains(Functions, Function(target)) {
		return []Function{Function(target)}
	}
	return slices.Clone(Functions)
}

// StartMessage is the message of the line each instance logs first.
const StartMessage = "egress starting"

// New reads the configuration and builds the App. The clients it makes do
// not dial until a request uses them.
func New(ctx context.Context, getenv Getenv, opts Options) (*App, error) {
	serve := opts.Serve
	if len(serve) == 0 {
		serve = slices.Clone(Functions)
	}
	cfg, err := Load(getenv, append(slices.Clone(clouds.All), opts.Linked...), serve...)
	if err != nil {
		return nil, err
	}
	if err := onCloudRun(getenv, cfg); err != nil {
		return nil, err
	}
	a := &App{Config: cfg, logOutput: opts.LogOutput}
	a.Log = newLogger(cfg, opts.LogOutput)
	// The first line of every instance: which release made the lines
	// after it (the API's Egress-Version header says the same).
	a.Log.Info(StartMessage, slog.String("version", version.Version), slog.Any("functions", serve))
	if len(opts.Linked) > 0 {
		if a.issuer, err = vmidentity.NewIssuer(); err != nil {
			return nil, err
		}
	}
	if err := a.dial(ctx); err != nil {
		a.Close()
		return nil, err
	}
	// The prices the collector's daily refresh keeps in the store are
	// what every proxy is costed from: a cloud that declares no source is
	// known to have no price, without a read.
	a.Catalog = pricestore.NewCatalog(a.firestore, a.NoPrices()...)
	reg := opts.Registry
	if reg == nil {
		if reg, err = a.registry(opts.VM); err != nil {
			a.Close()
			return nil, err
		}
	}
	a.Providers = provider.NewSet(reg)
	now := clock.Real{}
	if cfg.serves(ProxyAPI) {
		if a.api, err = newProxyAPI(ctx, a); err != nil {
			a.Close()
			return nil, err
		}
	}
	if cfg.serves(Reconcile) {
		a.reconciler = reconcile.New(a.store, a.Providers, a.publisher, a.secrets, now, a.Log, a.reconcileOptions())
		a.pools = pools.New(a.store, now, a.Log)
		if a.callhomes, err = a.callHomeHandler(ctx, now); err != nil {
			a.Close()
			return nil, err
		}
		if len(a.accessReaders) > 0 {
			a.puller = &accesspull.Puller{Readers: a.accessReaders, Store: a.store, Sink: a.callhomes.Sink, Log: a.Log}
		}
	}
	if cfg.serves(CollectGarbage) {
		a.collector = gc.New(a.Providers, a.store, a.publisher, now, a.Log, a.gcOptions())
		if a.firestore != nil {
			a.prices = pricestore.NewRefresher(a.firestore, a.priceClouds(), a.Log)
		}
		if a.Catalog != nil && a.store != nil {
			// Without prices no month is known, so no budget is looked at
			// (and the tick lists no namespace for them).
			costs := spend.Costs{Catalog: a.Catalog, Rates: a.Config.CostRates}
			a.budgetStop = &budgetstop.Look{Store: a.store, Requeuer: a.publisher, Costs: costs, Log: a.Log}
			a.budgets = &budgetalert.Checker{Store: a.store, Costs: costs, Log: a.Log}
		}
	}
	return a, nil
}

// onCloudRun refuses what must never run deployed. Cloud Run sets
// K_SERVICE on every service it runs (Cloud Run functions included), and
// no one sets it for the local stack. LOCAL_IDENTITY there would make
// every request that carries no token — one that reached the function
// some way other than through Cloud Run's check — the local identity's,
// an admin's by default: only Terraform's not setting it kept it off.
func onCloudRun(getenv Getenv, cfg Config) error {
	service := getenv("K_SERVICE")
	if service == "" {
		return nil
	}
	// The local key is in this source: a password sealed with it is
	// sealed for no one.
	if (cfg.serves(ProxyAPI) || cfg.serves(Reconcile)) && cfg.CredentialsKey == sealing.LocalKEKName {
		return fmt.Errorf("config: CREDENTIALS_KEY=%s is set on Cloud Run (K_SERVICE=%q): the local key is no secret; set it to the deployment's Cloud KMS key (Terraform does)", sealing.LocalKEKName, service)
	}
	if cfg.API.LocalIdentity == "" {
		return nil
	}
	return fmt.Errorf("config: LOCAL_IDENTITY=%q is set on Cloud Run (K_SERVICE=%q): it would make every request without a token %s's; unset it (only the local stack sets it)",
		cfg.API.LocalIdentity, service, cfg.API.LocalIdentity)
}

// dial makes the clients the served functions need: Firestore for all of
// them, Pub/Sub for the two that publish reconcile requests. The clients
// honour FIRESTORE_EMULATOR_HOST and PUBSUB_EMULATOR_HOST by themselves,
// and outlive the request that built the App.
func (a *App) dial(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	var err error
	if a.firestore, err = firestore.NewClient(ctx, a.Config.Project); err != nil {
		return fmt.Errorf("firestore client for project %s: %w", a.Config.Project, err)
	}
	// The credentials' keys, for the two functions that read and write
	// them; the collector reads none.
	var sealer store.Sealer
	if a.Config.serves(ProxyAPI) || a.Config.serves(Reconcile) {
		kek := sealing.LocalKEK()
		if a.Config.CredentialsKey != sealing.LocalKEKName {
			if kek, err = sealing.KMS(ctx, a.Config.CredentialsKey); err != nil {
				return err
			}
		}
		kr := sealing.NewKeyring(kek, sealing.Firestore{Client: a.firestore})
		// A new primary key each period, the keyset wrapped again with
		// KMS's key version of the day (docs/operations/key-rotation.md).
		kr.RotateEvery = sealing.RotationPeriod
		sealer = kr
	}
	// One store per process, so that the transactions it queues per
	// namespace are queued across all the functions of the process.
	a.store = store.New(a.firestore, sealer)
	if a.Config.serves(Reconcile) || a.Config.serves(CollectGarbage) {
		if a.pubsub, err = pubsub.NewClient(ctx, a.Config.Project); err != nil {
			return fmt.Errorf("pubsub client for project %s: %w", a.Config.Project, err)
		}
		a.publisher = queue.NewPublisher(a.pubsub)
		a.callHome = queue.NewCallHomePublisher(a.pubsub)
	}
	if a.Config.serves(Reconcile) {
		a.secrets = &secretManager{prefix: a.Config.CloudInitSecretPrefix}
	}
	return nil
}

// reconcileOptions are the reconciler's settings from the configuration,
// and the default bootstrap for specs that bring no cloud-init.
func (a *App) reconcileOptions() reconcile.Options {
	o := a.Config.Reconcile
	// The lease must outlast a whole run: the budget plus the provider
	// calls around it.
	o.LeaseDuration = max(reconcile.DefaultLeaseDuration, o.WaitBudget+2*time.Minute)
	o.CloudInitSecretPrefix = a.Config.CloudInitSecretPrefix
	o.Costs = spend.Costs{Catalog: a.Catalog, Rates: a.Config.CostRates}
	o.Bootstrap = func(s proxy.Spec, c proxy.Credentials, generation int64) (string, *vmconfig.Config, error) {
		cfg := bootstrap.ForProxy(s, c, a.Config.DenyRanges)
		cfg.Generation = generation
		script, err := bootstrap.Render(cfg)
		if err != nil {
			return "", nil, err
		}
		engine, err := bootstrap.EngineConfig(cfg)
		return script, &engine, err
	}
	return o
}

func (a *App) gcOptions() gc.Options {
	o := a.Config.GC
	o.SweepLimit = gc.DefaultSweepLimit
	o.PulledTypes = slices.Sorted(maps.Keys(a.accessReaders))
	if a.Catalog != nil {
		o.CostCurrency = a.Config.CostRates.Currency
	}
	return o
}

// Close releases the clients.
func (a *App) Close() error {
	var errs []error
	if a.publisher != nil {
		a.publisher.Stop()
		a.callHome.Stop()
	}
	if a.pubsub != nil {
		errs = append(errs, a.pubsub.Close())
	}
	if a.firestore != nil {
		errs = append(errs, a.firestore.Close())
	}
	if a.secrets != nil {
		errs = append(errs, a.secrets.Close())
	}
	return errors.Join(errs...)
}

// newLogger is JSON in the shape Cloud Logging reads, or text for people
// at a terminal.
func newLogger(c Config, w io.Writer) *slog.Logger {
	if c.LogFormat == "text" {
		if w == nil {
			w = os.Stderr
		}
		return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: c.LogLevel}))
	}
	if w == nil {
		w = os.Stdout
	}
	return logging.New(w, c.LogLevel)
}
