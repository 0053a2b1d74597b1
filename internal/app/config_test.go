package app_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"log/slog"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/clouds"
	"github.com/egress-proxies/egress/internal/gc"
	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/provider/gcp"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/provider/plugin"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
	"github.com/egress-proxies/egress/internal/tenancy"
)

func env(m map[string]string) app.Getenv { return func(k string) string { return m[k] } }

// defaults is what every entry point reads with only the project set:
// gcp, the provider a deployment runs, with its defaults.
func defaults() app.Config {
	return app.Config{
		Serves:    app.Functions,
		Project:   "demo-x",
		Providers: []string{"gcp"}, DefaultProvider: "gcp",
		LogLevel: slog.LevelInfo, LogFormat: "json",
		Deployment:     "egress",
		PacingScale:    1,
		CredentialsKey: "local",
		CostCurrency:   "USD", CostRates: pricing.Rates{Currency: "USD"},
		API: app.APIConfig{Quota: 20, CreatesPerHour: 60, RotateMinInterval: 10 * time.Minute, Policy: proxy.Policy{MinPrefixIPv4: 8, MinPrefixIPv6: 32,
			ProxyPorts: []proxy.PortRange{{First: 3128, Last: 3128}}, FirewallSourceRanges: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}}},
		Reconcile: reconcile.Options{WaitBudget: time.Minute, InitialBackoff: 2 * time.Second, MaxBackoff: 10 * time.Second,
			BootTimeout: 10 * time.Minute, ReconfigureTimeout: 2 * time.Minute, MaxBootFailures: 3, CreatesPerHour: 60},
		GC: gc.Options{GracePeriod: 10 * time.Minute, Parallelism: 16, SweepThreshold: 2 * time.Minute,
			Deployment: "egress", MaxDeletes: 50},
		Clouds: map[string]plugin.Settings{"gcp": gcpDefaults()},
	}
}

// gcpDefaults are gcp's settings with none set: the project falls back
// to GOOGLE_CLOUD_PROJECT in the provider (gcp.ConfigOf).
func gcpDefaults() plugin.Settings {
	return plugin.Settings{
		"GCP_ALLOWED_REGIONS": "", "GCP_ALLOWED_MACHINE_TYPES": strings.Join(gcp.DefaultAllowedMachineTypes, ","), "GCP_ALLOWED_IMAGES": strings.Join(gcp.DefaultAllowedImages, ","),
		"GCP_PROJECT": "", "GCP_NETWORK": "default", "GCP_SUBNETWORK": "", "GCP_STACK_TYPE": gcp.StackIPv4, "GCP_NETWORK_TAG": "egress-proxy",
		"GCP_SERVICE_ACCOUNT": "", "GCP_SCOPES": strings.Join(gcp.DefaultScopes, ","), "GCP_PROBE_TARGET": "www.google.com:443", "GCP_COMPUTE_ENDPOINT": "", "GCP_BILLING_ENDPOINT": "",
	}
}

// mockSettings are the mock's settings with none set.
func mockSettings() plugin.Settings {
	return plugin.Settings{"MOCK_PROVISIONING_DELAY": "5s", "MOCK_RECONFIGURE_DELAY": "1s", "MOCK_CALL_HOME": "true", "MOCK_SERVE": "false", "MOCK_SERVE_ALLOW": "127.0.0.1/32"}
}

// known are the clouds the tests' processes know: the production list
// and the mock, which they link.
var known = append(slices.Clone(clouds.All), mock.Plugin)

// typesOf are the clouds' types.
func typesOf(cl []plugin.Plugin) []string {
	var types []string
	for _, c := range cl {
		types = append(types, c.Type)
	}
	return types
}

// mockDefaults is the same with PROVIDERS=mock: the mock's settings read,
// gcp's not.
func mockDefaults() app.Config {
	c := defaults()
	c.Providers, c.DefaultProvider = []string{"mock"}, "mock"
	c.Clouds = map[string]plugin.Settings{"mock": mockSettings()}
	return c
}

func TestLoad(t *testing.T) {
	with := func(base func() app.Config, change func(*app.Config)) app.Config {
		c := base()
		change(&c)
		return c
	}
	cases := map[string]struct {
		reason  string
		env     map[string]string
		want    app.Config
		wantErr string
	}{
		"Defaults": {
			reason: "only the project is required; gcp is the default provider: the deployed functions link no other",
			env:    map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x"},
			want:   defaults(),
		},
		"AllSet": {
			reason: "every variable of the three functions is read",
			env: map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "mock", "LOG_LEVEL": "debug", "LOG_FORMAT": "text", "NAMESPACE_QUOTA": "5",
				"RECONCILE_WAIT_BUDGET": "2m", "RECONCILE_INITIAL_BACKOFF": "400ms", "RECONCILE_MAX_BACKOFF": "2s",
				"GC_GRACE_PERIOD": "30m", "GC_PARALLELISM": "4", "GC_DRY_RUN": "true", "GC_SWEEP_THRESHOLD": "90s", "MOCK_PROVISIONING_DELAY": "1s",
				"DEPLOYMENT": "staging-eu", "GC_MAX_DELETES": "200", "GC_ALLOW_EMPTY_DATABASE": "true",
				"BOOT_TIMEOUT": "5m", "RECONFIGURE_TIMEOUT": "90s", "MAX_BOOT_FAILURES": "2", "MOCK_CALL_HOME": "false",
				"MOCK_SERVE": "true", "MOCK_SERVE_ALLOW": "127.0.0.1/32, 127.0.0.2/32",
				"API_ADMINS": "Ops@Example.com, domain:platform.example", "LOCAL_IDENTITY": "Dev@Localhost", "ALLOW_CUSTOM_CLOUD_INIT": "true",
				"CLOUD_INIT_SECRET_PREFIX": "projects/demo-x/secrets/egress-", "MIN_SOURCE_PREFIX_IPV4": "16", "MIN_SOURCE_PREFIX_IPV6": "48", "ALLOW_ANY_SOURCE": "true",
				"PROXY_PORTS": "3128, 8080-8090", "FIREWALL_SOURCE_RANGES": "203.0.113.0/24,2001:db8::/32"},
			want: with(mockDefaults, func(c *app.Config) {
				c.LogLevel, c.LogFormat, c.API.Quota = slog.LevelDebug, "text", 5
				c.API.Admins, _ = tenancy.ParseAdmins("ops@example.com,domain:platform.example")
				c.API.LocalIdentity = "dev@localhost"
				c.API.Policy = proxy.Policy{MinPrefixIPv4: 16, MinPrefixIPv6: 48, AllowAnySource: true, AllowCloudInit: true,
					ProxyPorts:           []proxy.PortRange{{First: 3128, Last: 3128}, {First: 8080, Last: 8090}},
					FirewallSourceRanges: []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("2001:db8::/32")}}
				c.CloudInitSecretPrefix = "projects/demo-x/secrets/egress-"
				c.Reconcile = reconcile.Options{WaitBudget: 2 * time.Minute, InitialBackoff: 400 * time.Millisecond, MaxBackoff: 2 * time.Second,
					BootTimeout: 5 * time.Minute, ReconfigureTimeout: 90 * time.Second, MaxBootFailures: 2, CreatesPerHour: 60}
				c.GC = gc.Options{GracePeriod: 30 * time.Minute, Parallelism: 4, DryRun: true, SweepThreshold: 90 * time.Second,
					Deployment: "staging-eu", MaxDeletes: 200, AllowEmptyDatabase: true}
				c.Deployment = "staging-eu"
				c.Clouds["mock"] = plugin.Settings{"MOCK_PROVISIONING_DELAY": "1s", "MOCK_RECONFIGURE_DELAY": "1s", "MOCK_CALL_HOME": "false",
					"MOCK_SERVE": "true", "MOCK_SERVE_ALLOW": "127.0.0.1/32, 127.0.0.2/32"}
			}),
		},
		"NoProject": {
			reason:  "the project is named in the error",
			env:     map[string]string{},
			wantErr: "config: GOOGLE_CLOUD_PROJECT is not set: set it to the project id (a demo-… id for the emulators)",
		},
		"BadDuration": {
			reason:  "a duration that does not parse names the variable and the syntax",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "mock", "MOCK_PROVISIONING_DELAY": "5 seconds"},
			wantErr: `config: MOCK_PROVISIONING_DELAY="5 seconds" is not a duration: want Go's syntax, such as 2s or 10m`,
		},
		"ZeroGrace": {
			reason:  "a zero grace period would let a run delete a VM mid-create",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "GC_GRACE_PERIOD": "0s"},
			wantErr: `config: GC_GRACE_PERIOD="0s" must be longer than zero`,
		},
		"WordParallelism": {
			reason:  "parallelism that is not a number is refused",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "GC_PARALLELISM": "many"},
			wantErr: `config: GC_PARALLELISM="many" is not a whole number of at least 1`,
		},
		"BadDryRun": {
			reason:  "a dry run flag that is not a boolean is refused",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "GC_DRY_RUN": "yes please"},
			wantErr: `config: GC_DRY_RUN="yes please" is not a boolean: want true or false`,
		},
		"BadDeployment": {
			reason:  "a deployment name that is no RFC 1035 label stops the start-up, saying what a label is",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "DEPLOYMENT": "Prod_EU"},
			wantErr: `config: DEPLOYMENT="Prod_EU" is not an RFC 1035 label: want 1 to 63 lowercase letters, digits and '-', starting with a letter and ending with a letter or digit, such as egress`,
		},
		"BadCredentialsKey": {
			reason:  "a credentials key that is neither the local one nor a KMS key's name is refused, saying what a name is",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "CREDENTIALS_KEY": "gcp-kms://projects/p/locations/l/keyRings/r/cryptoKeys/k"},
			wantErr: `config: CREDENTIALS_KEY="gcp-kms://projects/p/locations/l/keyRings/r/cryptoKeys/k" is neither local nor a Cloud KMS key name (projects/P/locations/L/keyRings/R/cryptoKeys/K)`,
		},
		"ZeroMaxDeletes": {
			reason:  "a run that may delete nothing at all would never collect: at least 1",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "GC_MAX_DELETES": "0"},
			wantErr: `config: GC_MAX_DELETES="0" is not a whole number of at least 1`,
		},
		"MaxBelowInitial": {
			reason:  "a longest wait shorter than the first is refused, naming both",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "RECONCILE_INITIAL_BACKOFF": "5s", "RECONCILE_MAX_BACKOFF": "1s"},
			wantErr: "config: RECONCILE_MAX_BACKOFF=1s is shorter than RECONCILE_INITIAL_BACKOFF=5s",
		},
		"PortRangeBackwards": {
			reason:  "a range of ports must go up, as a firewall rule's",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROXY_PORTS": "3128,8090-8080"},
			wantErr: `config: PROXY_PORTS="3128,8090-8080" "8090-8080" is neither a port (1-65535) nor a range of them such as 3128-3130`,
		},
		"NoPorts": {
			reason:  "a firewall that opens no port serves no proxy",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROXY_PORTS": " , "},
			wantErr: `config: PROXY_PORTS=" , " names no port`,
		},
		"FirewallRangeNotACIDR": {
			reason:  "the firewall's ranges are CIDRs",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "FIREWALL_SOURCE_RANGES": "203.0.113.0/24,office"},
			wantErr: `config: FIREWALL_SOURCE_RANGES="203.0.113.0/24,office" "office" is not a CIDR such as 203.0.113.0/24`,
		},
		"BadLevel": {
			reason:  "a log level names the levels there are",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "LOG_LEVEL": "loud"},
			wantErr: `config: LOG_LEVEL="loud" is not a level: want debug, info, warn or error`,
		},
		"UnknownProvider": {
			reason:  "a provider this build lacks is refused at start-up",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "mock,linode"},
			wantErr: `config: PROVIDERS names "linode", which this build does not have (known: ` + strings.Join(typesOf(known), ", ") + `)`,
		},
		"AzureNeedsItsLocations": {
			reason:  "azure lists the locations the operator allows, so it needs them",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "gcp,azure"},
			wantErr: `config: AZURE_LOCATIONS="" allows no location: name the Azure locations proxies may use, such as westeurope,eastus`,
		},
		"AWSNeedsItsRegions": {
			reason:  "aws lists the regions the operator allows, so it needs them",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "gcp,aws"},
			wantErr: `config: AWS_ALLOWED_REGIONS="" is required with aws in PROVIDERS: name the regions it may use, such as us-east-1,eu-central-1`,
		},
		"AWSNeedsItsRole": {
			reason:  "aws reaches EC2 by a role assumed by federation, never a key",
			env:     withVars(awsEngineVars, map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "gcp,aws", "AWS_ALLOWED_REGIONS": "us-east-1"}),
			wantErr: `config: AWS_ROLE_ARN="" is required with aws in PROVIDERS: name the role the functions assume, such as arn:aws:iam::123456789012:role/egress-proxy-egress (deploy/terraform/aws makes it)`,
		},
		"AWSRoleNeedsAnAudience": {
			reason: "the role's trust names the audience of the ID token",
			env: withVars(awsEngineVars, map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "gcp,aws", "AWS_ALLOWED_REGIONS": "us-east-1",
				"AWS_ROLE_ARN": "arn:aws:iam::123456789012:role/egress-proxy-egress"}),
			wantErr: `config: AWS_AUDIENCE="" is required with AWS_ROLE_ARN: the audience the role's trust policy names, such as https://egress.example.com/aws`,
		},
		"AWSEndpointIsAFake": {
			reason:  "AWS_EC2_ENDPOINT is for a fake on this machine",
			env:     withVars(awsEngineVars, map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "gcp,aws", "AWS_ALLOWED_REGIONS": "us-east-1", "AWS_EC2_ENDPOINT": "https://ec2.us-east-1.amazonaws.com"}),
			wantErr: `config: AWS_EC2_ENDPOINT="https://ec2.us-east-1.amazonaws.com" is not a loopback URL such as http://127.0.0.1:PORT: it is for a fake on this machine`,
		},
		"GCPEnabled": {
			reason: "gcp with its defaults: the project falls back to GOOGLE_CLOUD_PROJECT",
			env:    map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "gcp,mock"},
			want: with(mockDefaults, func(c *app.Config) {
				c.Providers, c.DefaultProvider = []string{"gcp", "mock"}, "gcp"
				c.Clouds["gcp"] = gcpDefaults()
			}),
		},
		"GCPPolicy": {
			reason: "the gcp policy's lists are read, comma-separated",
			env: map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "gcp", "GCP_ALLOWED_REGIONS": "europe-west4, europe-west1",
				"GCP_ALLOWED_MACHINE_TYPES": "e2-micro,e2-standard-2", "GCP_ALLOWED_IMAGES": gcp.DefaultImage + ",projects/acme-images/global/images/*"},
			want: with(defaults, func(c *app.Config) {
				c.Clouds["gcp"]["GCP_ALLOWED_REGIONS"] = "europe-west4, europe-west1"
				c.Clouds["gcp"]["GCP_ALLOWED_MACHINE_TYPES"] = "e2-micro,e2-standard-2"
				c.Clouds["gcp"]["GCP_ALLOWED_IMAGES"] = gcp.DefaultImage + ",projects/acme-images/global/images/*"
			}),
		},
		"DualStack": {
			reason: "IPV4_IPV6 in a subnetwork gives the VMs an external IPv6 address",
			env:    map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "gcp", "GCP_SUBNETWORK": "proxies", "GCP_STACK_TYPE": "IPV4_IPV6"},
			want: with(defaults, func(c *app.Config) {
				c.Clouds["gcp"]["GCP_SUBNETWORK"], c.Clouds["gcp"]["GCP_STACK_TYPE"] = "proxies", gcp.StackDual
			}),
		},
		"DualStackWithoutSubnetwork": {
			reason:  "an auto-mode network's subnets cannot be dual-stack: every VM's insert would be refused",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "gcp", "GCP_STACK_TYPE": "IPV4_IPV6"},
			wantErr: `config: GCP_STACK_TYPE="IPV4_IPV6" is IPV4_IPV6, which needs GCP_SUBNETWORK: a dual-stack subnet with external IPv6, in a custom-mode network (an auto-mode network's subnets cannot be dual-stack)`,
		},
		"StackTypeUnknown": {
			reason:  "Compute's two stacks of a VM with an IPv4 address",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "gcp", "GCP_STACK_TYPE": "IPV6_ONLY"},
			wantErr: `config: GCP_STACK_TYPE="IPV6_ONLY" is neither IPV4_ONLY nor IPV4_IPV6`,
		},
		"GCPPolicyWithoutDefault": {
			reason:  "a machine-type list without the type Create uses would refuse every placement that names none",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "gcp", "GCP_ALLOWED_MACHINE_TYPES": "e2-small"},
			wantErr: "config: GCP_ALLOWED_REGIONS, GCP_ALLOWED_MACHINE_TYPES and GCP_ALLOWED_IMAGES: the policy does not allow e2-micro, the machine type of a placement that names none",
		},
		"BadAdmins": {
			reason:  "an admin entry that is neither an email nor a domain stops the start",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "API_ADMINS": "ops@example.com,platform-team"},
			wantErr: `config: API_ADMINS="ops@example.com,platform-team" holds "platform-team", which is neither an email nor domain:DOMAIN`,
		},
		"BadLocalIdentity": {
			reason:  "the local identity is an email",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "LOCAL_IDENTITY": "me"},
			wantErr: `config: LOCAL_IDENTITY="me" is not an email`,
		},
		"SecretPrefixOfEverySecret": {
			reason:  "a prefix that is no start of a secret's name would be every secret of the project",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "CLOUD_INIT_SECRET_PREFIX": "projects/demo-x/secrets/"},
			wantErr: `config: CLOUD_INIT_SECRET_PREFIX="projects/demo-x/secrets/" is not the start of a secret's name: want projects/PROJECT/secrets/PREFIX, such as projects/P/secrets/egress-`,
		},
		"SecretPrefixNotAName": {
			reason:  "a prefix that is no secret name's start",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "CLOUD_INIT_SECRET_PREFIX": "egress-"},
			wantErr: `config: CLOUD_INIT_SECRET_PREFIX="egress-" is not the start of a secret's name: want projects/PROJECT/secrets/PREFIX, such as projects/P/secrets/egress-`,
		},
		"SourcePrefixOutOfRange": {
			reason:  "an IPv4 prefix is 1-32",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "MIN_SOURCE_PREFIX_IPV4": "33"},
			wantErr: `config: MIN_SOURCE_PREFIX_IPV4="33" is not a whole number in 1-32`,
		},
		"GCPBadTag": {
			reason:  "a gcp setting that cannot work stops the start, naming the variable",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "gcp", "GCP_NETWORK_TAG": "Egress Proxy"},
			wantErr: `config: GCP_NETWORK_TAG="Egress Proxy" is not a GCE name: lowercase letters, digits and '-', at most 63`,
		},
		"GCPBadServiceAccount": {
			reason:  "the VMs' service account must be an email",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "gcp", "GCP_SERVICE_ACCOUNT": "proxy-vm"},
			wantErr: `config: GCP_SERVICE_ACCOUNT="proxy-vm" is not a service account email such as proxy-vm@PROJECT.iam.gserviceaccount.com`,
		},
		"GCPBadProbeTarget": {
			reason:  "a probe target the startup script would refuse stops the start, not every VM's boot",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "gcp", "GCP_PROBE_TARGET": "https://www.google.com/"},
			wantErr: `config: GCP_PROBE_TARGET="https://www.google.com/" is not host:port, such as www.google.com:443`,
		},
		"GCPSettingsIgnoredWhenDisabled": {
			reason: "GCP_* settings are not read when gcp is not enabled",
			env:    map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "mock", "GCP_NETWORK_TAG": "Egress Proxy"},
			want:   mockDefaults(),
		},
		"CostInEURWithRates": {
			reason: "costs are shown in COST_CURRENCY and converted at COST_RATES, each rate dated",
			env:    map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "mock", "COST_CURRENCY": "EUR", "COST_RATES": "USD=0.92@2026-12-01"},
			want: func() app.Config {
				c := mockDefaults()
				c.CostCurrency = "EUR"
				c.CostRates = pricing.Rates{Currency: "EUR", ByCurrency: map[string][]pricing.Rate{"USD": {{From: "USD", Per: pricing.Money{Currency: "EUR", Nanos: 920_000_000}, Date: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}}}}
				return c
			}(),
		},
		"CostRateWithoutDate": {
			reason:  "a rate is never undated: which day it holds from is part of it",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "mock", "COST_CURRENCY": "EUR", "COST_RATES": "USD=0.92"},
			wantErr: `config: COST_RATES="USD=0.92" rate "USD=0.92" is not CURRENCY=AMOUNT@DATE such as USD=0.92@2026-12-01`,
		},
		"DefaultNotEnabled": {
			reason:  "the default provider must be enabled",
			env:     map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "mock", "DEFAULT_PROVIDER": "gcp"},
			wantErr: `config: DEFAULT_PROVIDER "gcp" is not among PROVIDERS (mock)`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := app.Load(env(tc.env), known, app.Functions...)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, gotErr); diff != "" {
				t.Fatalf("%s\nerror (-want +got):\n%s", tc.reason, diff)
			}
			if err == nil {
				if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty(), cmpopts.EquateComparable(netip.Prefix{}), cmpopts.IgnoreUnexported(app.Config{})); diff != "" {
					t.Errorf("%s\nconfig (-want +got):\n%s", tc.reason, diff)
				}
			}
		})
	}
}

// awsEngineVars are the engine's settings a deployment with gcp and aws
// names: the VMs of both install it (PROXY_ENGINE_URL for gcp's, the
// public URL for EC2's).
var awsEngineVars = withVars(engineVars, map[string]string{"PROXY_ENGINE_URL": "https://storage.googleapis.com/egress-source/egress-proxy"})

// TestEachFunctionReadsItsVariables loads the configuration of each reader
// with a getenv that records what is asked of it: a function reads exactly
// the variables the table gives it, and nothing outside the table. A
// variable read in code but missing from the table fails here.
func TestEachFunctionReadsItsVariables(t *testing.T) {
	for _, f := range []app.Function{app.ProxyAPI, app.Reconcile, app.CollectGarbage, app.LocalStack} {
		t.Run(string(f), func(t *testing.T) {
			asked := map[string]bool{}
			// Enough to switch every conditional variable on: every cloud
			// the process knows enabled, each with the settings it needs,
			// and beside them one whose provider makes its firewall, so
			// that the callers read the firewall's settings whichever
			// production clouds do.
			var firewalled plugin.Env
			demo := demoCloud(&firewalled)
			demo.MakesFirewall = true
			cl := append(slices.Clone(known), demo)
			set := withSecretVersions(map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": strings.Join(typesOf(cl), ","),
				"PROXY_ENGINE_URL": "https://storage.googleapis.com/b/egress-proxy", "PROXY_ENGINE_PUBLIC_URL": "https://storage.googleapis.com/p/egress-proxy",
				"PROXY_ENGINE_SHA256":  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
				"VM_STATUS_KEY_SECRET": "projects/demo-x/secrets/egress-vm-status-key/versions/latest", "VM_STATUS_SOURCE_RANGES": "198.51.100.7/32",
				"AWS_ALLOWED_REGIONS": "us-east-1", "AWS_ROLE_ARN": "arn:aws:iam::123456789012:role/egress-proxy-egress",
				"AWS_AUDIENCE":          "https://egress.example.com/aws",
				"AZURE_LOCATIONS":       "westeurope",
				"AZURE_SUBSCRIPTION_ID": "00000000-0000-0000-0000-000000000001", "AZURE_RESOURCE_GROUP": "egress-proxies",
				"AZURE_SUBNET_IDS": "westeurope=/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/egress-proxies/providers/Microsoft.Network/virtualNetworks/egress-westeurope/subnets/proxies",
				"AZURE_TENANT_ID":  "00000000-0000-0000-0000-000000000002", "AZURE_CLIENT_ID": "00000000-0000-0000-0000-000000000003"}, cl)
			getenv := func(k string) string {
				asked[k] = true
				return set[k]
			}
			if _, err := app.Load(getenv, cl, f); err != nil {
				t.Fatal(err)
			}
			var got, want []string
			for k := range asked {
				got = append(got, k)
			}
			slices.Sort(got)
			// The house's variables and those of the clouds enabled
			// above: another cloud's are read only when it is.
			enabled := append([]string{""}, typesOf(cl)...)
			for _, v := range app.VarsOf(cl) {
				if v.ReadBy(f) && slices.Contains(enabled, v.Cloud) {
					want = append(want, v.Name)
				}
			}
			slices.Sort(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("variables %s reads (-the table +what Load asked for):\n%s", f, diff)
			}
		})
	}
}

// withSecretVersions is set with a Secret Manager version, of a secret
// named after it, for each variable of cl's that set leaves empty and
// whose check refuses empty but takes a version (a cloud's API token's
// secret, required when the cloud is enabled), so that every cloud of
// cl can be enabled without the test naming one's token.
func withSecretVersions(set map[string]string, cl []plugin.Plugin) map[string]string {
	for _, c := range cl {
		for _, v := range c.Vars {
			if set[v.Name] != "" || v.Check == nil || v.Check("", plugin.Settings{}) == nil {
				continue
			}
			version := "projects/" + set["GOOGLE_CLOUD_PROJECT"] + "/secrets/egress-" + strings.ToLower(strings.ReplaceAll(v.Name, "_", "-")) + "/versions/latest"
			if v.Check(version, plugin.Settings{}) == nil {
				set[v.Name] = version
			}
		}
	}
	return set
}

// TestNoVariableIsReadAroundTheTable scans the production code the
// functions run (functions/ and internal/) for environment reads that
// bypass Load: each must be a variable of the table or one of the few read
// by tools around the product, which are named here with why.
func TestNoVariableIsReadAroundTheTable(t *testing.T) {
	outside := map[string]string{
		"FUNCTION_TARGET": "set by Cloud Run functions; the functions framework and functions/ read it to know what to serve",
		"CLOUDSDK_ROOT":   "where the Cloud CLI lives, for starting the emulators (emulators/emulator, never in production)",
		"CI":              "makes a missing emulator a failure instead of a skip (emulators/emulatortest)",
		"XDG_CACHE_HOME":  "where the image test caches its Debian root file system (internal/vm/imagetest, never in production)",
	}
	vars := app.ByName()
	fset := token.NewFileSet()
	for _, dir := range []string{"../../functions", "../../internal"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || (sel.Sel.Name != "Getenv" && sel.Sel.Name != "LookupEnv") {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "os" {
					return true
				}
				lit, ok := call.Args[0].(*ast.BasicLit)
				if !ok {
					// os.Getenv(kind.EnvVar()): the emulators' own variables.
					return true
				}
				name := strings.Trim(lit.Value, `"`)
				if _, ok := vars[name]; !ok && outside[name] == "" {
					t.Errorf("%s reads %s around app.Vars: add it to the table (and the docs and Terraform) or say here why not", fset.Position(call.Pos()), name)
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestTheFirewallsSettingsFollowTheClouds: the callers (Reconcile and
// CollectGarbage) read PROXY_PORTS and FIREWALL_SOURCE_RANGES only where a
// cloud's provider makes its firewall, and the table, which the docs and
// the Terraform's check read, says so from the clouds it is given: all
// three functions with such a cloud, the ProxyAPI alone without.
func TestTheFirewallsSettingsFollowTheClouds(t *testing.T) {
	for _, makes := range []bool{true, false} {
		var got plugin.Env
		demo := demoCloud(&got)
		demo.MakesFirewall = makes
		cl := []plugin.Plugin{demo, mock.Plugin}
		want := []app.Function{app.ProxyAPI}
		if makes {
			want = []app.Function{app.ProxyAPI, app.Reconcile, app.CollectGarbage}
		}
		for _, v := range app.VarsOf(cl) {
			if v.Name != "PROXY_PORTS" && v.Name != "FIREWALL_SOURCE_RANGES" {
				continue
			}
			if diff := cmp.Diff(want, v.Readers); diff != "" {
				t.Errorf("MakesFirewall %t: the readers of %s (-want +the table):\n%s", makes, v.Name, diff)
			}
		}
		asked := map[string]bool{}
		set := withVars(engineVars, map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "demo,mock", "DEMO_ENDPOINT": "http://127.0.0.1:1"})
		getenv := func(k string) string { asked[k] = true; return set[k] }
		if _, err := app.Load(getenv, cl, app.Reconcile); err != nil {
			t.Fatal(err)
		}
		if asked["PROXY_PORTS"] != makes || asked["FIREWALL_SOURCE_RANGES"] != makes {
			t.Errorf("MakesFirewall %t: Reconcile asked for PROXY_PORTS %t, FIREWALL_SOURCE_RANGES %t; want both %t", makes, asked["PROXY_PORTS"], asked["FIREWALL_SOURCE_RANGES"], makes)
		}
	}
}
