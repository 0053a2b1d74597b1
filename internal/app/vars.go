package app

import (
	"fmt"
	"github.com/egress-proxies/egress/internal/gc"
	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/provider"
	awsprovider "github.com/egress-proxies/egress/internal/provider/aws"
	"github.com/egress-proxies/egress/internal/provider/gcp"
	"github.com/egress-proxies/egress/internal/provider/hetzner"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
	"github.com/egress-proxies/egress/internal/sealing"
	"github.com/egress-proxies/egress/internal/tenancy"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Function is a reader of configuration: one of the three entry points, or
// the local stack's own process.
type Function string

// The readers. The first three are the entry points functions/ registers
// and Terraform deploys; LocalStack is `make run`.
const (
	ProxyAPI       Function = "ProxyAPI"
	Reconcile      Function = "Reconcile"
	CollectGarbage Function = "CollectGarbage"
	LocalStack     Function = "localstack"
)

// Functions are the entry points, in the order they are documented.
var Functions = []Function{ProxyAPI, Reconcile, CollectGarbage}

// Var is one configuration variable: the one place its name, default,
// meaning and readers are written down. The docs' configuration reference
// (docs/reference/configuration.md, written from it by `make docs`) and
// deploy/terraform are checked against this table (internal/app and
// deploy tests), so a variable cannot be read without being documented and
// deployed.
type Var struct {
	Name string
	// Default is the value used when the variable is unset or empty, in the
	// variable's own syntax; "" means there is none (or it is derived, as
	// DefaultDoc says).
	Default string
	// DefaultDoc is the default as the docs give it, when Default alone
	// does not say it ("the first of PROVIDERS").
	DefaultDoc string
	// LocalDefault is the default `make run` gives the variable, when it is
	// not Default.
	LocalDefault string
	Meaning      string
	Readers      []Function
	// Local marks a variable only the local stack and tests set: production
	// (Terraform) never sets it.
	Local bool
	// Required variables have no default; unset, they stop the start-up.
	Required bool
	// when, if set, reads the variable only when the configuration read so
	// far calls for it (a provider's settings only when it is enabled).
	when func(*Config) bool
	set  func(*Config, string) error
}

// DocDefault is the default as documented.
func (v Var) DocDefault() string {
	switch {
	case v.DefaultDoc != "":
		return v.DefaultDoc
	case v.Default != "":
		return v.Default
	}
	return "—"
}

// ReadBy reports whether f reads v.
func (v Var) ReadBy(f Function) bool { return slices.Contains(v.Readers, f) }

// localIdentity is the local stack's default caller, an admin there.
const localIdentity = "local-admin@localhost"

var (
	allFunctions = []Function{ProxyAPI, Reconcile, CollectGarbage}
	// providerUsers make providers: they call Create, Get, Delete, ListByTag.
	providerUsers  = []Function{Reconcile, CollectGarbage}
	gcpEnabled     = func(c *Config) bool { return slices.Contains(c.Providers, gcp.Type) }
	mockEnabled    = func(c *Config) bool { return slices.Contains(c.Providers, MockType) }
	hetznerEnabled = func(c *Config) bool { return slices.Contains(c.Providers, hetzner.Type) }
	awsEnabled     = func(c *Config) bool { return slices.Contains(c.Providers, awsprovider.Type) }
	// cloudInitEnabled: a provider whose VMs boot with cloud-init and
	// report through vmstatus is enabled.
	cloudInitEnabled = func(c *Config) bool { return hetznerEnabled(c) || awsEnabled(c) }
	// againstFakes: every enabled cloud-init provider is pointed at a
	// fake on this machine (HETZNER_ENDPOINT, AWS_EC2_ENDPOINT), so the
	// process makes its own status key and asks from loopback.
	againstFakes = func(c *Config) bool {
		return (!hetznerEnabled(c) || c.Hetzner.Endpoint != "") && (!awsEnabled(c) || c.AWS.Endpoint != "")
	}
)

// roleARN is the form of an IAM role's ARN (any partition).
var roleARN = regexp.MustCompile(`^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]{1,512}$`)

// loopback reports whether u is a URL of this machine, where a fake runs.
func loopback(u string) bool {
	return strings.HasPrefix(u, "http://127.0.0.1:") || strings.HasPrefix(u, "http://localhost:")
}

// Vars is every variable the product reads, in the order they are loaded:
// a variable whose default derives from another comes after it.
var Vars = []Var{
	{Name: "GOOGLE_CLOUD_PROJECT", Required: true, LocalDefault: "demo-egress", Readers: append(allFunctions, LocalStack),
		Meaning: "the project of the functions, Firestore and Pub/Sub; `demo-` ids are the emulators' convention and never reach Google",
		set:     func(c *Config, v string) error { c.Project = v; return nil }},
	{Name: "PROVIDERS", Default: gcp.Type, LocalDefault: MockType, Readers: allFunctions,
		Meaning: "the enabled provider types, comma-separated; `mock` only where a binary links it (the local stack and the tests): the deployed functions do not contain it, and refuse it at start-up",
		set: func(c *Config, v string) error {
			c.Providers = splitList(v)
			if len(c.Providers) == 0 {
				return fmt.Errorf("names no provider")
			}
			return nil
		}},
	{Name: "DEFAULT_PROVIDER", DefaultDoc: "the first of `PROVIDERS`", Readers: allFunctions,
		Meaning: "the provider of a spec that names none",
		set: func(c *Config, v string) error {
			c.DefaultProvider = v
			if v == "" {
				c.DefaultProvider = c.Providers[0]
			}
			return nil
		}},
	{Name: "LOG_LEVEL", Default: "info", Readers: allFunctions,
		Meaning: "the functions' log level: debug, info, warn or error (above info, the invocation lines the metrics read are not logged)",
		set: func(c *Config, v string) error {
			if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
				return fmt.Errorf("is not a level: want debug, info, warn or error")
			}
			return nil
		}},
	{Name: "LOG_FORMAT", Default: "json", LocalDefault: "text", Readers: allFunctions,
		Meaning: "`json`, the Cloud Logging shape, or `text` for a terminal",
		set: func(c *Config, v string) error {
			if v != "json" && v != "text" {
				return fmt.Errorf("is neither json nor text")
			}
			c.LogFormat = v
			return nil
		}},

	// The functions that call providers: which deployment's resources are
	// theirs.
	{Name: "DEPLOYMENT", Default: provider.DefaultDeployment, Readers: providerUsers,
		Meaning: "this deployment's name, an RFC 1035 label: every VM and address carries it as the label `egress-deployment`, and the collector deletes only its own deployment's",
		set: func(c *Config, v string) error {
			if provider.ValidateDeployment(v) != nil {
				return fmt.Errorf("is not an RFC 1035 label: want 1 to 63 lowercase letters, digits and '-', starting with a letter and ending with a letter or digit, such as %s", provider.DefaultDeployment)
			}
			c.Deployment, c.GC.Deployment, c.Mock.Deployment, c.GCP.Deployment, c.Hetzner.Deployment, c.AWS.Deployment = v, v, v, v, v, v
			return nil
		}},

	// ProxyAPI: tenancy.
	{Name: "NAMESPACE_QUOTA", Default: strconv.Itoa(httpapi.DefaultQuota), Readers: []Function{ProxyAPI},
		Meaning: "proxies a namespace may hold when an admin creates it without a quota of its own",
		set:     atLeast(1, func(c *Config) *int { return &c.API.Quota })},
	{Name: "NAMESPACE_CREATES_PER_HOUR", Default: strconv.Itoa(httpapi.DefaultCreatesPerHour), Readers: []Function{ProxyAPI, Reconcile},
		Meaning: "VMs a namespace may cause in any hour: creates, rotations, live changes that need a new VM and warm VMs claimed for them (past it: 429 with when to retry), and rotations by `maxAge` (past it: the rotation waits, the proxy's status says until when); replacements of lost or failed VMs are never counted nor refused",
		set: func(c *Config, v string) error {
			err := atLeast(1, func(c *Config) *int { return &c.API.CreatesPerHour })(c, v)
			c.Reconcile.CreatesPerHour = c.API.CreatesPerHour
			return err
		}},
	{Name: "ROTATE_MIN_INTERVAL", Default: durationText(httpapi.DefaultRotateMinInterval), Readers: []Function{ProxyAPI},
		Meaning: "the least time between two VMs a user asks for one proxy, rotations and live changes that need a new VM (sooner: 429 with when to retry), and the shortest `maxAge`",
		set:     positive(func(c *Config) *time.Duration { return &c.API.RotateMinInterval })},
	{Name: "API_ADMINS", DefaultDoc: "no one", LocalDefault: localIdentity, Readers: []Function{ProxyAPI},
		Meaning: "the platform admins, comma-separated emails and `domain:example.com`: they act in every namespace and alone create and delete namespaces and change quotas",
		set: func(c *Config, v string) error {
			a, err := tenancy.ParseAdmins(v)
			c.API.Admins = a
			return err
		}},
	{Name: "IAP_AUDIENCE", DefaultDoc: "none: the console is still served at `/console/` (the local stack uses it so), but a browser on Cloud Run sends no ID token, so every page there is the console's 401 page, \"Not available\", with the API's reason (`TestConsoleWithoutIAP`); a request with an IAP assertion is refused (401 `IAP_NOT_ENABLED`)", Readers: []Function{ProxyAPI},
		Meaning: "the audience of Identity-Aware Proxy's signed header for this service, `/projects/PROJECT_NUMBER/locations/REGION/services/proxy-api`: set (Terraform's `console_enabled`), the API verifies `x-goog-iap-jwt-assertion` as a second identity beside the ID token, so people sign in to the web console at `/console/` with their Google account",
		set: func(c *Config, v string) error {
			if v != "" && !strings.HasPrefix(v, "/projects/") {
				return fmt.Errorf("is not an IAP audience: want /projects/PROJECT_NUMBER/locations/REGION/services/SERVICE")
			}
			c.API.IAPAudience = v
			return nil
		}},
	{Name: "LOCAL_IDENTITY", LocalDefault: localIdentity, Readers: []Function{ProxyAPI, LocalStack}, Local: true,
		Meaning: "the email of a request that carries no identity; never set in production, where such a request is refused (401), and where it stops the function at start-up (Cloud Run sets `K_SERVICE`)",
		set: func(c *Config, v string) error {
			if v == "" {
				return nil
			}
			e, ok := tenancy.NormalizeEmail(v)
			if !ok {
				return fmt.Errorf("is not an email")
			}
			c.API.LocalIdentity = e
			return nil
		}},

	// The two functions that read and write the proxies' credentials.
	{Name: "CREDENTIALS_KEY", Default: sealing.LocalKEKName, Readers: []Function{ProxyAPI, Reconcile},
		Meaning: "the Cloud KMS key (`projects/P/locations/L/keyRings/R/cryptoKeys/K`) that wraps the keyset the proxies' passwords are sealed with, in Firestore (`keysets/credentials`); `local` is the local stack's fixed key, refused on Cloud Run, where Terraform sets its key",
		set: func(c *Config, v string) error {
			if v != sealing.LocalKEKName && !sealing.IsKMSKeyName(v) {
				return fmt.Errorf("is neither %s nor a Cloud KMS key name (projects/P/locations/L/keyRings/R/cryptoKeys/K)", sealing.LocalKEKName)
			}
			c.CredentialsKey = v
			return nil
		}},

	// ProxyAPI: what the operator allows of every spec.
	{Name: "ALLOW_CUSTOM_CLOUD_INIT", Default: "false", Readers: []Function{ProxyAPI},
		Meaning: "whether a spec may bring its own `cloudInit`, user-data its VM runs as root",
		set:     boolean(func(c *Config) *bool { return &c.API.Policy.AllowCloudInit })},
	{Name: "CLOUD_INIT_SECRET_PREFIX", DefaultDoc: "none: `cloudInitSecret` is refused", Readers: []Function{ProxyAPI, Reconcile},
		Meaning: "what a spec's `cloudInitSecret` must start with, `projects/P/secrets/egress-`, followed by the proxy's namespace and `_`, which no namespace name holds (namespace `team` names `egress-team_db`, never `team-prod`'s `egress-team-prod_db`); the reconciler reads no other, and Terraform's IAM condition grants no secret outside that form",
		set: func(c *Config, v string) error {
			// A prefix of no secret name at all would be every secret of
			// the project: the hole this closes.
			if _, name, _ := strings.Cut(v, "/secrets/"); v != "" && (name == "" || !proxy.IsSecretVersion(v+"x/versions/1")) {
				return fmt.Errorf("is not the start of a secret's name: want projects/PROJECT/secrets/PREFIX, such as projects/P/secrets/egress-")
			}
			c.CloudInitSecretPrefix = v
			return nil
		}},
	{Name: "MIN_SOURCE_PREFIX_IPV4", Default: strconv.Itoa(proxy.DefaultMinPrefixIPv4), Readers: []Function{ProxyAPI},
		Meaning: "the widest IPv4 range `allowedSourceRanges` may hold, as a prefix length (8: nothing wider than a /8)",
		set:     between(1, 32, func(c *Config) *int { return &c.API.Policy.MinPrefixIPv4 })},
	{Name: "MIN_SOURCE_PREFIX_IPV6", Default: strconv.Itoa(proxy.DefaultMinPrefixIPv6), Readers: []Function{ProxyAPI},
		Meaning: "the widest IPv6 range, likewise (32: nothing wider than a /32)",
		set:     between(1, 128, func(c *Config) *int { return &c.API.Policy.MinPrefixIPv6 })},
	{Name: "ALLOW_ANY_SOURCE", Default: "false", Readers: []Function{ProxyAPI},
		Meaning: "whether a range may be the whole internet, `0.0.0.0/0` or `::/0`",
		set:     boolean(func(c *Config) *bool { return &c.API.Policy.AllowAnySource })},
	{Name: "PROXY_PORTS", Default: strconv.Itoa(proxy.DefaultPort), LocalDefault: strconv.Itoa(proxy.DefaultPort) + ",1080", Readers: []Function{ProxyAPI},
		Meaning: "the ports the firewall opens on proxy VMs, comma-separated ports or ranges (`3128,8080-8090`), as Terraform's `proxy_ports`: `spec.port` must be one of them; a spec without a port gets 3128, or the first of these when 3128 is not",
		set:     nonEmptyList("port", proxy.ParsePortRanges, func(c *Config) *[]proxy.PortRange { return &c.API.Policy.ProxyPorts })},
	{Name: "FIREWALL_SOURCE_RANGES", Default: "0.0.0.0/0,::/0", Readers: []Function{ProxyAPI},
		Meaning: "the sources the firewall lets reach those ports, comma-separated CIDRs, as Terraform's `allowed_source_ranges`: each of a spec's `allowedSourceRanges` must lie within them",
		set:     nonEmptyList("range", proxy.ParsePrefixes, func(c *Config) *[]netip.Prefix { return &c.API.Policy.FirewallSourceRanges })},

	// ProxyAPI: what the operator allows of the gcp provider, read only
	// when it is enabled. The gcp package checks these (gcp.Policy.Check).
	{Name: "GCP_ALLOWED_REGIONS", DefaultDoc: "any region", Readers: []Function{ProxyAPI}, when: gcpEnabled,
		Meaning: "the regions a placement may name, comma-separated",
		set:     func(c *Config, v string) error { c.GCPPolicy.Regions = splitList(v); return nil }},
	{Name: "GCP_ALLOWED_MACHINE_TYPES", Default: strings.Join(gcp.DefaultAllowedMachineTypes, ","), Readers: []Function{ProxyAPI}, when: gcpEnabled,
		Meaning: "the machine types a placement may name, comma-separated; it must hold e2-micro, the type of a placement that names none",
		set:     func(c *Config, v string) error { c.GCPPolicy.MachineTypes = splitList(v); return nil }},
	{Name: "GCP_ALLOWED_IMAGES", Default: strings.Join(gcp.DefaultAllowedImages, ","), Readers: []Function{ProxyAPI}, when: gcpEnabled,
		Meaning: "the images a placement may name, comma-separated: `projects/P/global/images/NAME`, `…/images/family/F` or `…/images/*`; it must allow the Debian 13 family, the image of a placement that names none",
		set:     func(c *Config, v string) error { c.GCPPolicy.Images = splitList(v); return nil }},

	// What the operator allows of the hetzner provider, read only when it
	// is enabled. The hetzner package checks these (hetzner.Policy.Check).
	// The locations are the reconciler's too: it chooses among them for a
	// placement that names none.
	{Name: "HETZNER_ALLOWED_LOCATIONS", DefaultDoc: "every location", Readers: allFunctions, when: hetznerEnabled,
		Meaning: "the Hetzner locations a placement may name or be given, comma-separated (fsn1, nbg1, hel1, ash, hil, sin); a placement's region is a network zone, eu-central, us-east, us-west or ap-southeast",
		set: func(c *Config, v string) error {
			c.HetznerPolicy.Locations, c.Hetzner.Locations = splitList(v), splitList(v)
			for _, l := range c.Hetzner.Locations {
				if _, ok := hetzner.Locations()[l]; !ok {
					return fmt.Errorf("holds %q, which is not a Hetzner location (fsn1, nbg1, hel1, ash, hil, sin)", l)
				}
			}
			return nil
		}},
	{Name: "HETZNER_ALLOWED_SERVER_TYPES", Default: strings.Join(hetzner.DefaultAllowedServerTypes, ","), Readers: []Function{ProxyAPI}, when: hetznerEnabled,
		Meaning: "the server types a placement may name, comma-separated; it must hold cx23, the type of a placement that names none (CX types are sold in eu-central only: a US or Singapore placement names a CPX type)",
		set:     func(c *Config, v string) error { c.HetznerPolicy.ServerTypes = splitList(v); return nil }},
	{Name: "HETZNER_ALLOWED_IMAGES", Default: strings.Join(hetzner.DefaultAllowedImages, ","), Readers: []Function{ProxyAPI}, when: hetznerEnabled,
		Meaning: "the Hetzner images a placement may name, comma-separated; it must hold debian-13, the image of a placement that names none",
		set:     func(c *Config, v string) error { c.HetznerPolicy.Images = splitList(v); return nil }},

	// What the operator allows of the aws provider, read only when it is
	// enabled. The aws package checks these (aws.Policy.Check). The
	// regions are the collector's too: it lists these, and the
	// reconciler's zones are chosen among the allowed ones.
	{Name: "AWS_ALLOWED_REGIONS", Readers: allFunctions, when: awsEnabled,
		Meaning: "the AWS regions a placement may name, comma-separated (us-east-1, eu-central-1, …): required with aws in PROVIDERS, since the collector lists each of them and no other; Terraform's aws module makes the security group in each",
		set: func(c *Config, v string) error {
			c.AWSPolicy.Regions, c.AWS.Regions = splitList(v), splitList(v)
			if len(c.AWS.Regions) == 0 {
				return fmt.Errorf("is required with aws in PROVIDERS: name the regions it may use, such as us-east-1,eu-central-1")
			}
			return nil
		}},
	{Name: "AWS_ALLOWED_ZONES", DefaultDoc: "every zone of the allowed regions", Readers: allFunctions, when: awsEnabled,
		Meaning: "the availability zones a placement may name or be given, comma-separated (us-east-1a, …), each of an allowed region",
		set: func(c *Config, v string) error {
			c.AWSPolicy.Zones, c.AWS.Zones = splitList(v), splitList(v)
			return nil
		}},
	{Name: "AWS_ALLOWED_INSTANCE_TYPES", Default: strings.Join(awsprovider.DefaultAllowedInstanceTypes, ","), Readers: []Function{ProxyAPI}, when: awsEnabled,
		Meaning: "the EC2 instance types a placement may name, comma-separated; it must hold t3.micro, the type of a placement that names none (x86: the proxy engine is built for linux/amd64)",
		set:     func(c *Config, v string) error { c.AWSPolicy.InstanceTypes = splitList(v); return nil }},
	{Name: "AWS_ALLOWED_IMAGES", Default: strings.Join(awsprovider.DefaultAllowedImages, ","), Readers: []Function{ProxyAPI}, when: awsEnabled,
		Meaning: "the images a placement may name, comma-separated: a Debian release (debian-13, debian-12), which each region resolves to Debian's newest official amd64 AMI (owner 136693071363), or an AMI id (one region's); it must hold debian-13, the image of a placement that names none",
		set:     func(c *Config, v string) error { c.AWSPolicy.Images = splitList(v); return nil }},

	// Reconcile.
	{Name: "EGRESS_DENY_RANGES", DefaultDoc: "none beyond the built-in list", Readers: []Function{Reconcile},
		Meaning: "CIDRs, comma-separated, no proxy may reach besides the built-in private, link-local, documentation and special ranges: the VPC's own ranges, peered networks; the VM's kernel filter and the proxy engine both refuse them",
		set: func(c *Config, v string) error {
			c.DenyRanges = splitList(v)
			for _, r := range c.DenyRanges {
				if p, err := netip.ParsePrefix(r); err != nil || p.Addr().Is4In6() {
					return fmt.Errorf("holds %q, which is not an IPv4 or IPv6 CIDR such as 10.128.0.0/9", r)
				}
			}
			return nil
		}},
	{Name: "RECONCILE_WAIT_BUDGET", Default: durationText(reconcile.DefaultWaitBudget), Readers: []Function{Reconcile},
		Meaning: "how long one invocation waits — for a VM on its way out, or to retry a provider call, never for a boot — before it hands on through `proxy-reconcile`",
		set:     positive(func(c *Config) *time.Duration { return &c.Reconcile.WaitBudget })},
	{Name: "RECONCILE_INITIAL_BACKOFF", Default: durationText(reconcile.DefaultInitialBackoff), Readers: []Function{Reconcile},
		Meaning: "the first wait between two tries",
		set:     positive(func(c *Config) *time.Duration { return &c.Reconcile.InitialBackoff })},
	{Name: "RECONCILE_MAX_BACKOFF", Default: durationText(reconcile.DefaultMaxBackoff), Readers: []Function{Reconcile},
		Meaning: "the longest such wait",
		set:     positive(func(c *Config) *time.Duration { return &c.Reconcile.MaxBackoff })},
	{Name: "BOOT_TIMEOUT", Default: durationText(reconcile.DefaultBootTimeout), Readers: []Function{Reconcile},
		Meaning: "how long a VM may take from its creation to serving before it is replaced",
		set:     positive(func(c *Config) *time.Duration { return &c.Reconcile.BootTimeout })},
	{Name: "RECONFIGURE_TIMEOUT", Default: durationText(reconcile.DefaultReconfigureTimeout), Readers: []Function{Reconcile},
		Meaning: "how long a VM handed a new configuration (a PATCH, new credentials) may take to serve it before it is replaced by a new VM with it",
		set:     positive(func(c *Config) *time.Duration { return &c.Reconcile.ReconfigureTimeout })},
	{Name: "MAX_BOOT_FAILURES", Default: strconv.Itoa(reconcile.DefaultMaxBootFailures), Readers: []Function{Reconcile},
		Meaning: "VMs in a row that may fail to become ready before the proxy is `Failed`, with the last lines of the VM's console in `status.consoleTail`",
		set:     atLeast(1, func(c *Config) *int { return &c.Reconcile.MaxBootFailures })},

	// CollectGarbage.
	{Name: "GC_GRACE_PERIOD", Default: durationText(gc.DefaultGracePeriod), Readers: []Function{CollectGarbage},
		Meaning: "an unclaimed VM younger than this is kept (must be > 0)",
		set:     positive(func(c *Config) *time.Duration { return &c.GC.GracePeriod })},
	{Name: "GC_PARALLELISM", Default: strconv.Itoa(gc.DefaultParallelism), Readers: []Function{CollectGarbage},
		Meaning: "deletes and requeues in flight at once (≥ 1)",
		set:     atLeast(1, func(c *Config) *int { return &c.GC.Parallelism })},
	{Name: "GC_DRY_RUN", Default: "false", Readers: []Function{CollectGarbage},
		Meaning: "log what would be deleted, delete nothing (the sweep still runs)",
		set:     boolean(func(c *Config) *bool { return &c.GC.DryRun })},
	{Name: "GC_MAX_DELETES", Default: strconv.Itoa(gc.DefaultMaxDeletes), Readers: []Function{CollectGarbage},
		Meaning: "the most VMs and addresses one run may delete; a run that would delete more deletes none and logs `gc refused` (≥ 1)",
		set:     atLeast(1, func(c *Config) *int { return &c.GC.MaxDeletes })},
	// The local stack allows it: its mock's VMs live and die with the
	// process, beside an emulator's database that starts empty, so an
	// empty database there is never a wrong one, and its end-to-end test
	// deletes every proxy and expects what is left collected.
	{Name: "GC_ALLOW_EMPTY_DATABASE", Default: "false", LocalDefault: "true", Readers: []Function{CollectGarbage},
		Meaning: "let a run delete while no proxy document exists at all; off, such a run deletes nothing and logs `gc refused`",
		set:     boolean(func(c *Config) *bool { return &c.GC.AllowEmptyDatabase })},
	{Name: "GC_SWEEP_THRESHOLD", Default: durationText(gc.DefaultSweepThreshold), Readers: []Function{CollectGarbage},
		Meaning: "time without progress before a document is re-driven (must be > 0)",
		set:     positive(func(c *Config) *time.Duration { return &c.GC.SweepThreshold })},

	// The mock provider: the local stack's and the tests'.
	{Name: "MOCK_PROVISIONING_DELAY", Default: "5s", Readers: providerUsers, Local: true,
		Meaning: "how long a mock VM takes to boot",
		when:    mockEnabled,
		set:     duration(func(c *Config) *time.Duration { return &c.Mock.ProvisioningDelay })},
	{Name: "MOCK_RECONFIGURE_DELAY", Default: "1s", Readers: providerUsers, Local: true,
		Meaning: "how long a running mock VM takes to apply a reconfiguration (new credentials, ranges or ports, or a claim of a warm VM) and report its generation: the metadata server's notice, the engine's live apply and the self-test again",
		when:    mockEnabled,
		set:     duration(func(c *Config) *time.Duration { return &c.Mock.ReconfigureDelay })},
	{Name: "MOCK_CALL_HOME", Default: "true", Readers: providerUsers, Local: true,
		Meaning: "whether mock VMs call home when they are ready, as real ones do; `false` leaves them to the sweep",
		when:    mockEnabled,
		set:     boolean(func(c *Config) *bool { return &c.Mock.CallHome })},
	{Name: "MOCK_SERVE", Default: "false", LocalDefault: "true", Readers: providerUsers, Local: true,
		Meaning: "whether each mock VM runs the proxy engine on a loopback address of its own, its IP, with its proxy's credentials, ranges and ports, so a Ready proxy's `proxyURL` takes requests",
		when:    mockEnabled,
		set:     boolean(func(c *Config) *bool { return &c.Mock.Serve })},
	{Name: "MOCK_SERVE_ALLOW", Default: "127.0.0.1/32", Readers: providerUsers, Local: true,
		Meaning: "what a serving mock proxy may reach besides the internet, comma-separated CIDRs: the local test targets; its deny list, the VM's, refuses the rest of loopback and every private range",
		when:    mockEnabled,
		set: func(c *Config, v string) error {
			for _, s := range splitList(v) {
				if _, err := netip.ParsePrefix(s); err != nil {
					return fmt.Errorf("holds %q, which is not a CIDR such as 127.0.0.1/32", s)
				}
			}
			c.Mock.ServeAllow = splitList(v)
			return nil
		}},

	// The gcp provider, read only when it is enabled.
	{Name: "GCP_PROJECT", DefaultDoc: "`GOOGLE_CLOUD_PROJECT`", Readers: providerUsers, when: gcpEnabled,
		Meaning: "where VMs are made",
		set: func(c *Config, v string) error {
			c.GCP.Project = v
			if v == "" {
				c.GCP.Project = c.Project
			}
			return nil
		}},
	{Name: "GCP_NETWORK", Default: gcp.DefaultNetwork, Readers: providerUsers, when: gcpEnabled,
		Meaning: "the VPC network", set: gceName(func(c *Config) *string { return &c.GCP.Network })},
	{Name: "GCP_SUBNETWORK", Readers: providerUsers, when: gcpEnabled,
		Meaning: "the subnetwork of each region, for custom-mode networks",
		set: func(c *Config, v string) error {
			if v == "" {
				return nil
			}
			return gceName(func(c *Config) *string { return &c.GCP.Subnetwork })(c, v)
		}},
	{Name: "GCP_STACK_TYPE", Default: gcp.StackIPv4, Readers: providerUsers, when: gcpEnabled,
		Meaning: "the VMs' network stack: `IPV4_ONLY`, or `IPV4_IPV6` for an external IPv6 address on each VM (`status.ipv6`), which needs `GCP_SUBNETWORK` to be dual-stack with external IPv6 (see IPv6 egress)",
		set: func(c *Config, v string) error {
			switch v {
			case gcp.StackIPv4:
			case gcp.StackDual:
				if c.GCP.Subnetwork == "" {
					return fmt.Errorf("is %s, which needs GCP_SUBNETWORK: a dual-stack subnet with external IPv6, in a custom-mode network (an auto-mode network's subnets cannot be dual-stack)", gcp.StackDual)
				}
			default:
				return fmt.Errorf("is neither %s nor %s", gcp.StackIPv4, gcp.StackDual)
			}
			c.GCP.StackType = v
			return nil
		}},
	{Name: "GCP_NETWORK_TAG", Default: gcp.DefaultNetworkTag, Readers: providerUsers, when: gcpEnabled,
		Meaning: "the tag the firewall rule targets", set: gceName(func(c *Config) *string { return &c.GCP.NetworkTag })},
	{Name: "GCP_SERVICE_ACCOUNT", Readers: providerUsers, when: gcpEnabled,
		Meaning: "the VMs' own service account",
		set: func(c *Config, v string) error {
			if v != "" && !gcpEmailRE.MatchString(v) {
				return fmt.Errorf("is not a service account email such as proxy-vm@PROJECT.iam.gserviceaccount.com")
			}
			c.GCP.ServiceAccount = v
			return nil
		}},
	{Name: "GCP_SCOPES", Default: strings.Join(gcp.DefaultScopes, ","), DefaultDoc: strings.ReplaceAll(strings.Join(gcp.DefaultScopes, ", "), "https://www.googleapis.com/auth/", ""), Readers: providerUsers, when: gcpEnabled,
		Meaning: "that account's OAuth scopes, comma-separated",
		set: func(c *Config, v string) error {
			c.GCP.Scopes = splitList(v)
			for _, s := range c.GCP.Scopes {
				if !strings.HasPrefix(s, "https://www.googleapis.com/auth/") {
					return fmt.Errorf("holds %q, which is not an OAuth scope URL (https://www.googleapis.com/auth/…)", s)
				}
			}
			return nil
		}},
	{Name: "GCP_PROBE_TARGET", Default: vmconfig.DefaultProbeTarget, Readers: providerUsers, when: gcpEnabled,
		Meaning: "the host:port a VM's self-test reaches through its proxy before it says it serves",
		set: func(c *Config, v string) error {
			// The form the startup script accepts: a bad one stops the
			// function at start-up rather than every VM at boot.
			if !probeTargetRE.MatchString(v) {
				return fmt.Errorf("is not host:port, such as www.google.com:443")
			}
			c.GCP.ProbeTarget = v
			return nil
		}},
	{Name: "PROXY_ENGINE_URL", Readers: providerUsers, when: gcpEnabled,
		Meaning: "the URL of the proxy engine binary a VM installs, an object of the deployment's bucket (`https://storage.googleapis.com/BUCKET/OBJECT`), downloaded with the VM's token; without it a VM cannot serve and says so in `egress/error`",
		set: func(c *Config, v string) error {
			if v != "" && !engineURLRE.MatchString(v) {
				return fmt.Errorf("is not an http(s) URL of an object, such as https://storage.googleapis.com/BUCKET/egress-proxy")
			}
			c.GCP.EngineURL = v
			return nil
		}},
	{Name: "PROXY_ENGINE_SHA256", Readers: providerUsers, when: func(c *Config) bool { return gcpEnabled(c) || cloudInitEnabled(c) },
		Meaning: "that binary's SHA-256 in hex: a VM installs no other (required with hetzner or aws in `PROVIDERS`)",
		set: func(c *Config, v string) error {
			if v != "" && !engineSHARE.MatchString(v) {
				return fmt.Errorf("is not a SHA-256 in lower-case hex")
			}
			if gcpEnabled(c) && (v == "") != (c.GCP.EngineURL == "") {
				return fmt.Errorf("and PROXY_ENGINE_URL go together: set both or neither")
			}
			if cloudInitEnabled(c) && v == "" {
				return fmt.Errorf("is required with hetzner or aws in PROVIDERS: their VMs install only the binary of that SHA-256")
			}
			c.GCP.EngineSHA256, c.CloudInitVM.EngineSHA256 = v, v
			return nil
		}},
	{Name: "PROXY_ENGINE_PUBLIC_URL", Readers: providerUsers, when: cloudInitEnabled,
		Meaning: "the URL of the same binary (`PROXY_ENGINE_SHA256`) that a VM outside Google Cloud downloads without any credential: an object anyone may read (Terraform makes one in a public bucket when `providers_enabled` names hetzner or aws); it holds nothing secret, and a VM checks what it downloads against the SHA-256",
		set: func(c *Config, v string) error {
			if !engineURLRE.MatchString(v) {
				return fmt.Errorf("is required with hetzner or aws in PROVIDERS, an http(s) URL of an object anyone may read, such as https://storage.googleapis.com/BUCKET/egress-proxy-SHA256")
			}
			c.CloudInitVM.EngineURL = v
			return nil
		}},
	{Name: "GCP_COMPUTE_ENDPOINT", Readers: providerUsers, Local: true, when: gcpEnabled,
		Meaning: "a Compute API to use instead of Google's, without credentials: tests against a fake only",
		set:     func(c *Config, v string) error { c.ComputeEndpoint = v; return nil }},

	// The hetzner provider, read only when it is enabled.
	{Name: "HETZNER_ENDPOINT", Readers: providerUsers, Local: true, when: hetznerEnabled,
		Meaning: "a Hetzner Cloud API to use instead of Hetzner's, sent the token `" + LocalHetznerToken + "` and no other: tests against a fake only",
		set: func(c *Config, v string) error {
			if v != "" && !strings.HasPrefix(v, "http://127.0.0.1:") && !strings.HasPrefix(v, "http://localhost:") {
				return fmt.Errorf("is not a loopback URL such as http://127.0.0.1:PORT/v1: it is for a fake on this machine")
			}
			c.Hetzner.Endpoint = v
			return nil
		}},
	{Name: "HETZNER_TOKEN_SECRET", Readers: providerUsers, when: hetznerEnabled,
		Meaning: "the Secret Manager version that holds the Hetzner Cloud API token (read & write), `projects/P/secrets/S/versions/latest`; the two functions that call Hetzner read it when they first do, and no environment variable, log line or document holds the token (Terraform makes the secret, you add its version)",
		set: func(c *Config, v string) error {
			switch {
			case v == "" && c.Hetzner.Endpoint == "":
				return fmt.Errorf("is required with hetzner in PROVIDERS: name the secret version of the API token, such as projects/P/secrets/egress-hetzner-token/versions/latest")
			case v != "" && !proxy.IsSecretVersion(v):
				return fmt.Errorf("is not a secret version: want projects/PROJECT/secrets/SECRET/versions/VERSION")
			}
			c.Hetzner.TokenSecret = v
			return nil
		}},

	// The aws provider, read only when it is enabled. No AWS key: the
	// functions assume the role by federation.
	{Name: "AWS_EC2_ENDPOINT", Readers: providerUsers, Local: true, when: awsEnabled,
		Meaning: "an EC2 API to use instead of AWS's, for every region: tests against a fake only; without AWS_ROLE_ARN the provider signs with the key `" + LocalAWSAccessKey + "`, which no account has",
		set: func(c *Config, v string) error {
			if v != "" && !loopback(v) {
				return fmt.Errorf("is not a loopback URL such as http://127.0.0.1:PORT: it is for a fake on this machine")
			}
			c.AWS.Endpoint = v
			return nil
		}},
	{Name: "AWS_STS_ENDPOINT", Readers: providerUsers, Local: true, when: awsEnabled,
		Meaning: "an STS API to use instead of AWS's for the exchange of the ID token: tests against a fake only",
		set: func(c *Config, v string) error {
			if v != "" && !loopback(v) {
				return fmt.Errorf("is not a loopback URL such as http://127.0.0.1:PORT: it is for a fake on this machine")
			}
			c.AWS.STSEndpoint = v
			return nil
		}},
	{Name: "AWS_ROLE_ARN", Readers: providerUsers, when: awsEnabled,
		Meaning: "the AWS role the two functions that call EC2 assume, `arn:aws:iam::ACCOUNT:role/NAME` (Terraform's aws module makes it): each exchanges its Google ID token for AWS_AUDIENCE with STS AssumeRoleWithWebIdentity for the role's credentials, which last an hour; no AWS key is in any variable, secret, log line or document",
		set: func(c *Config, v string) error {
			switch {
			case v == "" && c.AWS.Endpoint == "":
				return fmt.Errorf("is required with aws in PROVIDERS: name the role the functions assume, such as arn:aws:iam::123456789012:role/egress-proxy-egress (deploy/terraform/aws makes it)")
			case v != "" && !roleARN.MatchString(v):
				return fmt.Errorf("is not a role ARN: want arn:aws:iam::ACCOUNT:role/NAME")
			}
			c.AWS.RoleARN = v
			return nil
		}},
	{Name: "AWS_AUDIENCE", Readers: providerUsers, when: awsEnabled,
		Meaning: "the audience of the Google ID token the functions exchange with STS: the role's trust policy accepts this audience only (Terraform's aws module writes both)",
		set: func(c *Config, v string) error {
			if v == "" && c.AWS.RoleARN != "" {
				return fmt.Errorf("is required with AWS_ROLE_ARN: the audience the role's trust policy names, such as https://egress.example.com/aws")
			}
			c.AWS.Audience = v
			return nil
		}},
	// The status of the VMs that boot with cloud-init (hetzner's, aws's), which
	// the control plane reads through their proxy port (package vmstatus).
	{Name: "VM_STATUS_KEY_SECRET", Readers: providerUsers, when: cloudInitEnabled,
		Meaning: "the Secret Manager version of the key (32 random bytes, base64) from which the control plane derives each Hetzner server's and EC2 instance's own status credential and answer-signing key (from the proxy's uid and the VM's status id), `projects/P/secrets/S/versions/latest`; only Reconcile and CollectGarbage read it (Terraform makes the secret, you add its version); a VM's user-data holds only a salted hash of its credential, and its own signing key. Against fakes (`HETZNER_ENDPOINT`, `AWS_EC2_ENDPOINT`) the process makes a key of its own",
		set: func(c *Config, v string) error {
			switch {
			case v == "" && !againstFakes(c):
				return fmt.Errorf("is required with hetzner or aws in PROVIDERS: name the secret version of the status key, such as projects/P/secrets/egress-vm-status-key/versions/latest")
			case v != "" && !proxy.IsSecretVersion(v):
				return fmt.Errorf("is not a secret version: want projects/PROJECT/secrets/SECRET/versions/VERSION")
			}
			c.CloudInitVM.StatusKeySecret = v
			return nil
		}},
	{Name: "VM_STATUS_SOURCE_RANGES", DefaultDoc: "none (`127.0.0.1/32` against a fake)", Readers: providerUsers, when: cloudInitEnabled,
		Meaning: "the control plane's egress addresses as CIDRs, comma-separated (the Cloud NAT addresses Terraform reserves for the functions' egress): a Hetzner server's firewall, an EC2 instance's security group and the VM itself admit them to the proxy port for the status request alone",
		set: func(c *Config, v string) error {
			if v == "" && againstFakes(c) {
				v = "127.0.0.1/32"
			}
			c.CloudInitVM.StatusSources = splitList(v)
			if len(c.CloudInitVM.StatusSources) == 0 {
				return fmt.Errorf("is required with hetzner or aws in PROVIDERS: name the functions' egress addresses (the output status_source_ranges of deploy/terraform), or no VM is ever seen serving")
			}
			for _, s := range c.CloudInitVM.StatusSources {
				if _, err := netip.ParsePrefix(s); err != nil {
					return fmt.Errorf("holds %q, which is not a CIDR", s)
				}
			}
			return nil
		}},

	// The local stack's own settings.
	{Name: "PORT", Default: "8080", Readers: []Function{LocalStack}, Local: true,
		Meaning: "where the API (`/v1/…`, `/healthz`), `/Reconcile`, `/CollectGarbage` and `/debug/instances` are served",
		set: func(c *Config, v string) error {
			if n, err := strconv.Atoi(v); err != nil || n < 1 || n > 65535 {
				return fmt.Errorf("is not a port: want 1-65535")
			}
			c.Local.Port = v
			return nil
		}},
	{Name: "FIRESTORE_EMULATOR_HOST", Default: "127.0.0.1:8081", Readers: []Function{LocalStack}, Local: true,
		Meaning: "where the Firestore emulator is started",
		set:     func(c *Config, v string) error { c.Local.FirestoreHost = v; return nil }},
	{Name: "PUBSUB_EMULATOR_HOST", Default: "127.0.0.1:8085", Readers: []Function{LocalStack}, Local: true,
		Meaning: "where the Pub/Sub emulator is started",
		set:     func(c *Config, v string) error { c.Local.PubSubHost = v; return nil }},
	{Name: "GC_INTERVAL", Default: "1m", Readers: []Function{LocalStack}, Local: true,
		Meaning: "how often the Scheduler stand-in publishes to `proxy-gc`",
		set:     positive(func(c *Config) *time.Duration { return &c.Local.GCInterval })},
}
