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
	awsprovider "github.com/egress-proxies/egress/internal/provider/aws"
	"github.com/egress-proxies/egress/internal/provider/gcp"
	"github.com/egress-proxies/egress/internal/provider/hetzner"
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

	API       APIConfig
	Reconcile reconcile.Options
	GC        gc.Options
	// Mock is the mock provider's part, read only when PROVIDERS names
	// it: a binary that links the mock (Options.Linked) builds it from
	// this.
	Mock MockConfig
	GCP  gcp.Config
	// GCPPolicy is what the operator allows of the gcp provider.
	GCPPolicy gcp.Policy
	// CredentialsKey names the key-encryption key of the proxies'
	// credentials: a Cloud KMS key, or sealing.LocalKEKName.
	CredentialsKey string
	// Hetzner is the hetzner provider's part, read only when PROVIDERS
	// names it; HetznerPolicy is what the operator allows of it.
	Hetzner       HetznerConfig
	HetznerPolicy hetzner.Policy
	// AWS is the aws provider's part, read only when PROVIDERS names it;
	// AWSPolicy is what the operator allows of it.
	AWS       AWSConfig
	AWSPolicy awsprovider.Policy
	// CloudInitVM is what the VMs of the clouds that boot with cloud-init
	// need (hetzner's), read only when such a provider is enabled.
	CloudInitVM CloudInitVMConfig
	// CloudInitSecretPrefix is what a cloudInitSecret must start with:
	// the API refuses others, the reconciler reads no other.
	CloudInitSecretPrefix string
	// DenyRanges are destinations no proxy may reach beyond
	// vmconfig.DefaultDenyDestinations (EGRESS_DENY_RANGES).
	DenyRanges []string
	// ComputeEndpoint replaces Google's Compute API, without credentials:
	// tests against a fake only.
	ComputeEndpoint string
	Local           LocalConfig
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

// MockConfig is the mock provider's settings (the MOCK_ variables). They
// are plain values here so that the composition root does not link the
// mock: package app/mockprovider turns them into the mock's options.
type MockConfig struct {
	// Deployment is DEPLOYMENT's value.
	Deployment string
	// ProvisioningDelay is how long a mock VM takes to boot;
	// ReconfigureDelay how long it takes to apply a change.
	ProvisioningDelay, ReconfigureDelay time.Duration
	// CallHome says whether mock VMs call home, as real ones do.
	CallHome bool
	// Serve says whether mock VMs run the proxy engine on loopback;
	// ServeAllow are the loopback destinations their proxies may reach.
	Serve      bool
	ServeAllow []string
}

// HetznerConfig is the hetzner provider's settings (the HETZNER_
// variables). The token itself is no setting: the provider reads it from
// Secret Manager (TokenSecret) when it is first made.
type HetznerConfig struct {
	// Deployment is DEPLOYMENT's value.
	Deployment string
	// TokenSecret is the Secret Manager version holding the API token.
	TokenSecret string
	// Endpoint replaces Hetzner's API, with LocalHetznerToken: tests
	// against a fake only.
	Endpoint string
	// Locations are the locations a placement without one may be given.
	Locations []string
}

// AWSConfig is the aws provider's settings (the AWS_ variables). It
// holds no AWS key: the provider's credentials are the role's, by
// federation (RoleARN, Audience).
type AWSConfig struct {
	// Deployment is DEPLOYMENT's value.
	Deployment string
	// Regions and Zones are what the provider may use and lists.
	Regions, Zones []string
	// RoleARN is the role the functions assume; Audience the audience of
	// the Google ID token they exchange for its credentials.
	RoleARN, Audience string
	// Endpoint replaces EC2's endpoints, and STSEndpoint STS's: tests
	// against a fake only.
	Endpoint, STSEndpoint string
}

// CloudInitVMConfig is what the VMs of a cloud that boots them with
// cloud-init (hetzner) need of the control plane: an engine binary they
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

// LocalHetznerToken is the token the hetzner provider sends to a
// HETZNER_ENDPOINT (a fake: the local stack's and the tests'), which
// holds no secret of anyone's.
const LocalHetznerToken = "egress-local-hetzner-token"

// LocalConfig is the local stack's own part.
type LocalConfig struct {
	Port                      string
	FirestoreHost, PubSubHost string
	GCInterval                time.Duration
}

var (
	gcpEmailRE    = regexp.MustCompile(`^[^@\s]+@[^@\s]+\.[a-z]+$`)
	probeTargetRE = regexp.MustCompile(`^[A-Za-z0-9.-]+:[0-9]{1,5}$`)
	// engineURLRE and engineSHARE are the forms the startup script accepts.
	engineURLRE = regexp.MustCompile(`^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?/[A-Za-z0-9._~%+/-]+$`)
	engineSHARE = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// MockType is the mock provider's type (mock.Type, which a test holds
// equal): the name PROVIDERS gives it. The deployed functions do not link
// the mock, so New refuses it there (Options.Linked).
const MockType = "mock"

// knownProviders are the provider types PROVIDERS may name.
var knownProviders = []string{gcp.Type, hetzner.Type, awsprovider.Type, MockType}

// Load reads the variables of Vars that the functions fns read, in the
// table's order, and validates them. An error names the variable, the
// value and the rule, so a function that cannot start says why in its
// first log line.
func Load(getenv Getenv, fns ...Function) (Config, error) {
	c := Config{Serves: fns}
	for _, v := range Vars {
		if !readByAny(v, fns) || (v.when != nil && !v.when(&c)) {
			continue
		}
		raw := getenv(v.Name)
		if raw == "" {
			if v.Required {
				return c, fmt.Errorf("config: %s is not set: %s", v.Name, requiredHint[v.Name])
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

// check holds the rules between variables.
func (c Config) check() error {
	for _, p := range c.Providers {
		if !slices.Contains(knownProviders, p) {
			return fmt.Errorf("config: PROVIDERS names %q, which this build does not have (known: %s)", p, strings.Join(knownProviders, ", "))
		}
	}
	if c.DefaultProvider != "" && !slices.Contains(c.Providers, c.DefaultProvider) {
		return fmt.Errorf("config: DEFAULT_PROVIDER %q is not among PROVIDERS (%s)", c.DefaultProvider, strings.Join(c.Providers, ", "))
	}
	if c.serves(ProxyAPI) && gcpEnabled(&c) {
		if err := c.GCPPolicy.Check(); err != nil {
			return fmt.Errorf("config: GCP_ALLOWED_REGIONS, GCP_ALLOWED_MACHINE_TYPES and GCP_ALLOWED_IMAGES: the policy %w", err)
		}
	}
	if c.serves(ProxyAPI) && hetznerEnabled(&c) {
		if err := c.HetznerPolicy.Check(); err != nil {
			return fmt.Errorf("config: HETZNER_ALLOWED_LOCATIONS, HETZNER_ALLOWED_SERVER_TYPES and HETZNER_ALLOWED_IMAGES: the policy %w", err)
		}
	}
	if c.serves(ProxyAPI) && awsEnabled(&c) {
		if err := c.AWSPolicy.Check(); err != nil {
			return fmt.Errorf("config: AWS_ALLOWED_REGIONS, AWS_ALLOWED_ZONES, AWS_ALLOWED_INSTANCE_TYPES and AWS_ALLOWED_IMAGES: the policy %w", err)
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

// LocalGetenv is getenv with the local stack's defaults (LocalDefault)
// underneath.
func LocalGetenv(getenv Getenv) Getenv {
	defaults := map[string]string{}
	for _, v := range Vars {
		if v.LocalDefault != "" {
			defaults[v.Name] = v.LocalDefault
		}
	}
	return overlay(getenv, maps.Clone(defaults))
}
