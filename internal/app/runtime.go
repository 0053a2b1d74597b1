package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/egress-proxies/egress/internal/logging"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/queue"
	"github.com/egress-proxies/egress/internal/store"
)

// Runtime is what one process shares between the functions it serves: the
// validated configuration, the Google clients, one instance of each provider
// and the logger. Locally all three functions run in one process and must
// see the same mock provider (its VMs live in memory); in production each
// function runs alone and the sharing costs nothing.
type Runtime struct {
	Config    Config
	Getenv    Getenv
	Clients   *Clients
	Providers *provider.Set
	Log       *slog.Logger

	store     func(context.Context) (*store.Store, error)
	publisher func(context.Context) (*queue.Publisher, error)
}

// services returns the document store and the reconcile-request publisher,
// made on first use and shared by the functions of the process.
func (rt *Runtime) services(ctx context.Context) (*store.Store, *queue.Publisher, error) {
	st, err := rt.store(ctx)
	if err != nil {
		return nil, nil, err
	}
	pub, err := rt.publisher(ctx)
	if err != nil {
		return nil, nil, err
	}
	return st, pub, nil
}

// NewRuntime validates the configuration and assembles a runtime. Nothing
// is dialled yet: clients and providers are made on first use.
func NewRuntime(getenv Getenv) (*Runtime, error) {
	cfg, err := LoadConfig(getenv)
	if err != nil {
		return nil, err
	}
	reg, err := cfg.Registry(getenv)
	if err != nil {
		return nil, err
	}
	log, err := newLogger(getenv)
	if err != nil {
		return nil, err
	}
	rt := &Runtime{
		Config:    cfg,
		Getenv:    getenv,
		Clients:   NewClients(cfg.Project),
		Providers: provider.NewSet(reg),
		Log:       log,
	}
	// One store per process, so that the transactions it queues per
	// namespace are queued across all the functions of the process; the
	// API needs no Pub/Sub, so the two are made apart.
	rt.store = onceWith(func(ctx context.Context) (*store.Store, error) {
		fs, err := rt.Clients.Firestore(ctx)
		if err != nil {
			return nil, err
		}
		return store.New(fs), nil
	})
	rt.publisher = onceWith(func(ctx context.Context) (*queue.Publisher, error) {
		ps, err := rt.Clients.PubSub(ctx)
		if err != nil {
			return nil, err
		}
		return queue.NewPublisher(ps), nil
	})
	return rt, nil
}

// newLogger reads LOG_LEVEL (debug, info, warn, error; default info) and
// LOG_FORMAT (json, the Cloud Logging shape and the default; or text, for
// people reading a terminal, which the local stack sets).
func newLogger(getenv Getenv) (*slog.Logger, error) {
	var level slog.Level
	if v := getenv("LOG_LEVEL"); v != "" {
		if err := level.UnmarshalText([]byte(v)); err != nil {
			return nil, fmt.Errorf("config: LOG_LEVEL=%q is not a level: want debug, info, warn or error", v)
		}
	}
	switch f := getenv("LOG_FORMAT"); f {
	case "", "json":
		return logging.New(os.Stdout, level), nil
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})), nil
	default:
		return nil, fmt.Errorf("config: LOG_FORMAT=%q: want json or text", f)
	}
}

// onceWith is sync.OnceValues for a function of the first caller's
// context.
func onceWith[T any](f func(context.Context) (T, error)) func(context.Context) (T, error) {
	var (
		once sync.Once
		v    T
		err  error
	)
	return func(ctx context.Context) (T, error) {
		once.Do(func() { v, err = f(ctx) })
		return v, err
	}
}

var (
	processOnce sync.Once
	process     *Runtime
	processErr  error
)

// Process returns the runtime of this process, built once from the
// environment. The function entry points all use it.
func Process() (*Runtime, error) {
	processOnce.Do(func() {
		process, processErr = NewRuntime(OSGetenv)
		if processErr != nil {
			processErr = fmt.Errorf("egress functions cannot start: %w", processErr)
		}
	})
	return process, processErr
}
