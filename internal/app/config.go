package app

import (
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/egress-proxies/egress/internal/gc"
	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/provider/plugin"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// Getenv reads one environment variable: os.Getenv in production, a map in
// tests.
type Getenv func(string) string

// Config is the configuration of a process, read from the variables of
// Vars that the functions it serves read.
type Config struct {
	// Serves are the functions the configuration was read for.
	Serves []Function

	Project         string
	Providers       []string
	DefaultProvider string
	LogLevel        slog.Level
	LogFormat       string
	// Deployment is this deployment's name, the value of every resource's
	// provider.LabelDeployment.
	Deployment string
	// PacingScale scales each cloud's rate (plugin.Plugin.Rate) to the
	// budget its accounts' calls are paced to; 0 paces none.
	PacingScale float64

	API       APIConfig
	Reconcile reconcile.Options
	GC        gc.Options
	// Clouds are the settings of each enabled cloud, by provider type:
	// the variables of its plugin that the served functions read, as
	// read. The composition root hands them to the cloud's New and
	// Validator.
	Clouds map[string]plugin.Settings
	// CredentialsKey names the key-encryption key of the proxies'
	// credentials: a Cloud KMS key, or sealing.LocalKEKName.
	CredentialsKey string
	// Engine is the engine binary the VMs of a cloud that boots them with
	// the house's startup script install (PROXY_ENGINE_URL and
	// PROXY_ENGINE_SHA256), read only when such a cloud is enabled.
	Engine plugin.Engine
	// CloudInitVM is what the VMs of the clouds that boot with cloud-init
	// need, read only when such a cloud is enabled.
	CloudInitVM CloudInitVMConfig
	// CloudInitSecretPrefix is what a cloudInitSecret must start with:
	// the API refuses others, the reconciler reads no other.
	CloudInitSecretPrefix string
	// CostCurrency and CostRates are what costs are shown and budgets held
	// in (COST_CURRENCY), and the deployment's dated rates into it
	// (COST_RATES).
	CostCurrency string
	CostRates    pricing.Rates
	// DenyRanges are destinations no proxy may reach beyond
	// vmconfig.DefaultDenyDestinations (EGRESS_DENY_RANGES).
	DenyRanges []string
	Local      LocalConfig

	// plugins are the clouds the configuration was read against: the
	// production list, and the mock where the binary links it.
	plugins []plugin.Plugin
}

// APIConfig is the ProxyAPI's part.
type APIConfig struct {
	// Quota is how many proxies a namespace created without a quota of
	// its own may hold.
	Quota int
	// Admins are the platform admins.
	Admins tenancy.Admins
	// CreatesPerHour bounds the VMs a namespace's requests ask for in any
	// hour; RotateMinInterval is the least time between two rotations.
	CreatesPerHour    int
	RotateMinInterval time.Duration
	// LocalIdentity is the caller of a request without an identity: the
	// local stack's only.
	LocalIdentity string
	// IAPAudience, when set, is the audience of Identity-Aware Proxy's
	// signed header: the API verifies it as a second source of identity.
	IAPAudience string
	// Policy is what the operator allows of every spec; its secret prefix
	// is CloudInitSecretPrefix.
	Policy proxy.Policy
}

// CloudInitVMConfig is what the VMs of a cloud that boots them with
// cloud-init need of the control plane: an engine binary they
// read without Google credentials, and the status the control plane reads
// through their proxy port (package vmstatus).
type CloudInitVMConfig struct {
	// EngineURL is the engine binary's public URL
	// (PROXY_ENGINE_PUBLIC_URL); EngineSHA256 is PROXY_ENGINE_SHA256.
	EngineURL, EngineSHA256 string
	// StatusKeySecret is the Secret Manager version of the key the status
	// credentials are derived from; empty against a fake, where the
	// process makes a key of its own.
	StatusKeySecret string
	// StatusSources are the control plane's egress addresses, which the
	// VMs admit for the status alone.
	StatusSources []string
}

// LocalConfig is the local stack's own part.
type LocalConfig struct {
	Port                      string
	FirestoreHost, PubSubHost string
	GCInterval                time.Duration
}

var (
	// engineURLRE and engineSHARE are the forms the startup script accepts.
	engineURLRE = regexp.MustCompile(`^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?/[A-Za-z0-9._~%+/-]+$`)
	engineSHARE = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// MockType is the mock provider's type (mock.Type, which a test holds
// equal): the name PROVIDERS gives it. The deployed functions do not link
// the mock, so New refuses it there (Options.Linked).
const MockType = "mock"

// Load reads the variables of VarsOf(cl) that the functions fns read, in
// the table's order, and validates them: cl are the clouds the process
// knows (clouds.All, and the mock where the binary links it). An error
// names the variable, the value and the rule, so a function that cannot
// start says why in its first log line.
func Load(getenv Getenv, cl []plugin.Plugin, fns ...Function) (Config, error) {
	c := Config{Serves: fns, plugins: cl}
	for _, v := range VarsOf(cl) {
		if !readByAny(v, fns) || (v.when != nil && !v.when(&c)) {
			continue
		}
		raw := getenv(v.Name)
		if raw == "" {
			if v.Required {
				hint := requiredHint[v.Name]
				if hint == "" {
					hint = "it is required with " + v.Cloud + " in PROVIDERS"
				}
				return c, fmt.Errorf("config: %s is not set: %s", v.Name, hint)
			}
			raw = v.Default
		}
		if err := v.set(&c, raw); err != nil {
			return c, fmt.Errorf("config: %s=%q %w", v.Name, raw, err)
		}
	}
	return c, c.check()
}

// requiredHint says how to set a required variable.
var requiredHint = map[string]string{
	"GOOGLE_CLOUD_PROJECT": "set it to the project id (a demo-… id for the emulators)",
}

func readByAny(v Var, fns []Function) bool {
	for _, f := range fns {
		if v.ReadBy(f) {
			return true
		}
	}
	return false
}

// check holds the rules between variables: PROVIDERS names known
// types (the mock's too, which the registry refuses where it is not
// linked, saying so), and each enabled cloud's policy holds, where the
// ProxyAPI reads it.
func (c Config) check() error {
	known := []string{}
	for _, p := range c.plugins {
		known = append(known, p.Type)
	}
	if !slices.Contains(known, MockType) {
		known = append(known, MockType)
	}
	for _, p := range c.Providers {
		if !slices.Contains(known, p) {
			return fmt.Errorf("config: PROVIDERS names %q, which this build does not have (known: %s)", p, strings.Join(known, ", "))
		}
	}
	if c.DefaultProvider != "" && !slices.Contains(c.Providers, c.DefaultProvider) {
		return fmt.Errorf("config: DEFAULT_PROVIDER %q is not among PROVIDERS (%s)", c.DefaultProvider, strings.Join(c.Providers, ", "))
	}
	if c.serves(ProxyAPI) {
		for _, p := range enabledClouds(&c, func(plugin.Plugin) bool { return true }) {
			if _, err := p.Validator(c.Clouds[p.Type]); err != nil {
				return fmt.Errorf("config: %w", err)
			}
		}
	}
	if r := c.Reconcile; r.MaxBackoff < r.InitialBackoff {
		return fmt.Errorf("config: RECONCILE_MAX_BACKOFF=%s is shorter than RECONCILE_INITIAL_BACKOFF=%s", r.MaxBackoff, r.InitialBackoff)
	}
	return nil
}

// serves reports whether the configuration was read for f.
func (c Config) serves(f Function) bool { return slices.Contains(c.Serves, f) }

// ByName returns the table's variables by name.
func ByName() map[string]Var {
	m := make(map[string]Var, len(Vars))
	for _, v := range Vars {
		m[v.Name] = v
	}
	return m
}

// Names returns the names of the variables f reads, sorted.
func Names(f Function, production bool) []string {
	var out []string
	for _, v := range Vars {
		if v.ReadBy(f) && !(production && v.Local) {
			out = append(out, v.Name)
		}
	}
	slices.Sort(out)
	return out
}

// overlay is getenv with local defaults underneath: what `make run` uses
// for a variable the shell does not set.
func overlay(getenv Getenv, defaults map[string]string) Getenv {
	return func(name string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return defaults[name]
	}
}

// LocalGetenv is getenv with the local stack's defaults (LocalDefault) of
// the variables of VarsOf(cl) underneath.
func LocalGetenv(getenv Getenv, cl []plugin.Plugin) Getenv {
	defaults := map[string]string{}
	for _, v := range VarsOf(cl) {
		if v.LocalDefault != "" {
			defaults[v.Name] = v.LocalDefault
		}
	}
	return overlay(getenv, maps.Clone(defaults))
}
