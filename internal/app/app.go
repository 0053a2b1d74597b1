// Package app is the composition root: it reads the configuration from the
// environment, validates it, and assembles the provider registry, the clients
// and the domain services that the function entry points in functions/ serve.
// It is the only package that knows every concrete implementation.
//
// Configuration errors name the variable to set, so that a function that
// cannot start says why in its first log line.
package app

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/gcp"
	"github.com/egress-proxies/egress/internal/provider/mock"
)

// Getenv reads one environment variable; os.Getenv in production, a map in
// tests.
type Getenv func(string) string

// Config is what every function shares.
type Config struct {
	// Project is the Google Cloud project (GOOGLE_CLOUD_PROJECT).
	Project string
	// Providers are the enabled provider types (PROVIDERS, comma-separated;
	// default "mock").
	Providers []string
	// DefaultProvider is used for a spec that names none (DEFAULT_PROVIDER;
	// default the first of Providers).
	DefaultProvider string
	// MockProvisioningDelay is how long mock instances stay Provisioning
	// (MOCK_PROVISIONING_DELAY; default 5s).
	MockProvisioningDelay time.Duration
}

// LoadConfig reads and validates the shared configuration.
func LoadConfig(getenv Getenv) (Config, error) {
	c := Config{
		Project:               getenv("GOOGLE_CLOUD_PROJECT"),
		Providers:             splitList(getenv("PROVIDERS")),
		DefaultProvider:       getenv("DEFAULT_PROVIDER"),
		MockProvisioningDelay: 5 * time.Second,
	}
	if c.Project == "" {
		return c, fmt.Errorf("config: GOOGLE_CLOUD_PROJECT is not set: set it to the project id (a demo-… id for the emulators)")
	}
	if len(c.Providers) == 0 {
		c.Providers = []string{mock.Type}
	}
	if c.DefaultProvider == "" {
		c.DefaultProvider = c.Providers[0]
	}
	var err error
	if c.MockProvisioningDelay, err = Duration(getenv, "MOCK_PROVISIONING_DELAY", c.MockProvisioningDelay); err != nil {
		return c, err
	}
	return c, nil
}

// Registry builds the registry of every enabled provider type. A type named
// in PROVIDERS that this binary does not know is an error naming the known
// ones, and DEFAULT_PROVIDER must be one of PROVIDERS.
func (c Config) Registry(getenv Getenv) (*provider.Registry, error) {
	// Each provider's configuration is read and checked only when the
	// provider is enabled, so a missing GCP_* setting never stops a mock
	// run, and always stops a gcp one at start-up.
	known := map[string]func() (provider.Constructor, error){
		mock.Type: func() (provider.Constructor, error) { return c.mockConstructor(), nil },
		gcp.Type:  func() (provider.Constructor, error) { return c.gcpConstructor(getenv) },
	}
	reg := provider.NewRegistry()
	for _, typ := range c.Providers {
		build, ok := known[typ]
		if !ok {
			return nil, fmt.Errorf("config: PROVIDERS names %q, which this build does not have (known: %s)", typ, strings.Join(sortedKeys(known), ", "))
		}
		ctor, err := build()
		if err != nil {
			return nil, err
		}
		if err := reg.Register(typ, metered(ctor)); err != nil {
			return nil, fmt.Errorf("config: PROVIDERS: %w", err)
		}
	}
	if !reg.Has(c.DefaultProvider) {
		return nil, fmt.Errorf("config: DEFAULT_PROVIDER %q is not among PROVIDERS (%s)", c.DefaultProvider, strings.Join(c.Providers, ", "))
	}
	return reg, nil
}

// metered makes every provider the constructor builds count its calls in
// the invocation's usage.
func metered(ctor provider.Constructor) provider.Constructor {
	return func(ctx context.Context) (provider.Provider, error) {
		p, err := ctor(ctx)
		if err != nil {
			return nil, err
		}
		return metering.Provider(p), nil
	}
}

func (c Config) mockConstructor() provider.Constructor {
	delay := c.MockProvisioningDelay
	return func(context.Context) (provider.Provider, error) {
		return mock.New(mock.Options{Clock: clock.Real{}, ProvisioningDelay: delay}), nil
	}
}

// Duration reads a Go duration ("2s", "10m") from the variable name, or def
// if it is unset. A value that does not parse, or is negative, is an error
// naming the variable.
func Duration(getenv Getenv, name string, def time.Duration) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("config: %s=%q is not a duration: want Go's syntax, such as 2s or 10m", name, v)
	}
	return d, nil
}

// OSGetenv is os.Getenv as a Getenv.
var OSGetenv Getenv = os.Getenv

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
