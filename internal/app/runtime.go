package app

import (
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/egress-proxies/egress/internal/logging"
	"github.com/egress-proxies/egress/internal/provider"
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
	return &Runtime{
		Config:    cfg,
		Getenv:    getenv,
		Clients:   NewClients(cfg.Project),
		Providers: provider.NewSet(reg),
		Log:       logging.New(os.Stdout, slog.LevelInfo),
	}, nil
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
