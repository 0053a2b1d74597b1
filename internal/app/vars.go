package app

import (
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/egress-proxies/egress/internal/clouds"
	"github.com/egress-proxies/egress/internal/gc"
	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/plugin"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
	"github.com/egress-proxies/egress/internal/sealing"
	"github.com/egress-proxies/egress/internal/tenancy"
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
// deployed. A cloud's variables are its plugin's (plugin.Var), which the
// table takes in as Vars of its own.
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
	// Cloud is the provider type whose plugin declares the variable; ""
	// for the house's own.
	Cloud string
	// when, if set, reads the variable only when the configuration read so
	// far calls for it (a cloud's settings only when it is enabled).
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
	providerUsers = []Function{Reconcile, CollectGarbage}
)

// enabledClouds are the enabled clouds (of those the configuration was
// read against) for which is reports true.
func enabledClouds(c *Config, is func(plugin.Plugin) bool) []plugin.Plugin {
	var out []plugin.Plugin
	for _, p := range c.plugins {
		if slices.Contains(c.Providers, p.Type) && is(p) {
			out = append(out, p)
		}
	}
	return out
}

func bootsBy(kind plugin.BootKind) func(plugin.Plugin) bool {
	return func(p plugin.Plugin) bool { return p.Boot.Kind == kind }
}

// startupScriptEnabled: a cloud whose VMs run the house's startup script
// is enabled.
func startupScriptEnabled(c *Config) bool {
	return len(enabledClouds(c, bootsBy(plugin.BootStartupScript))) > 0
}

// cloudInitEnabled: a cloud whose VMs boot with cloud-init and report
// through vmstatus is enabled.
func cloudInitEnabled(c *Config) bool {
	return len(enabledClouds(c, bootsBy(plugin.BootCloudInit))) > 0
}

// firewallVars are the firewall's settings, which firewallReader reads.
var firewallVars = []string{"PROXY_PORTS", "FIREWALL_SOURCE_RANGES"}

// firewallReader: the process reads the firewall's settings, as the
// ProxyAPI always does (it holds a spec's port and ranges within them),
// and as the functions that call a provider do when an enabled cloud's
// provider makes its firewall itself (plugin.Plugin.MakesFirewall).
func firewallReader(c *Config) bool {
	return c.serves(ProxyAPI) || len(enabledClouds(c, func(p plugin.Plugin) bool { return p.MakesFirewall })) > 0
}

// againstFakes: every enabled cloud-init cloud is pointed at a fake on
// this machine (its plugin's FakeEndpoint is set), so the process makes
// its own status key and asks from loopback.
func againstFakes(c *Config) bool {
	for _, p := range enabledClouds(c, bootsBy(plugin.BootCloudInit)) {
		if p.FakeEndpoint == "" || c.Clouds[p.Type].Get(p.FakeEndpoint) == "" {
			return false
		}
	}
	return true
}

// typesOf are the clouds' types, as a sentence joins them ("a, b or c").
func typesOf(cl []plugin.Plugin, is func(plugin.Plugin) bool) string {
	var types []string
	for _, p := range cl {
		if is(p) {
			types = append(types, p.Type)
		}
	}
	if len(types) < 2 {
		return strings.Join(types, "")
	}
	return strings.Join(types[:len(types)-1], ", ") + " or " + types[len(types)-1]
}

// Vars is every variable the deployed functions read, in the order they
// are loaded: those of the production clouds (internal/clouds) among the
// house's. A binary that links the mock reads VarsOf that list and the
// mock.
var Vars = VarsOf(clouds.All)

// VarsOf is every variable a process that knows the clouds cl reads, in
// the order they are loaded: the house's, each cloud's in cl's order
// (read only when PROVIDERS names it), then the VM side's, which follow
// from the clouds enabled and their settings, and the local stack's. A
// variable whose default or check derives from another comes after it.
func VarsOf(cl []plugin.Plugin) []Var {
	out := slices.Clone(houseVars)
	// The firewall's settings are the callers' only where a cloud's
	// provider makes its firewall (firewallReader): with none among cl,
	// the ProxyAPI alone reads them, and the table says so.
	if !slices.ContainsFunc(cl, func(p plugin.Plugin) bool { return p.MakesFirewall }) {
		for i, v := range out {
			if slices.Contains(firewallVars, v.Name) {
				out[i].Readers = []Function{ProxyAPI}
			}
		}
	}
	for _, p := range cl {
		for _, v := range p.Vars {
			out = append(out, cloudVar(p.Type, v))
		}
	}
	out = append(out, vmVars(cl)...)
	return append(out, localVars...)
}

// cloudVar is a cloud's variable in the table: read when the cloud is
// enabled, by the functions of its readers, into the cloud's settings.
func cloudVar(typ string, v plugin.Var) Var {
	var readers []Function
	if v.Readers&plugin.ReadByAPI != 0 {
		readers = append(readers, ProxyAPI)
	}
	if v.Readers&plugin.ReadByCallers != 0 {
		readers = append(readers, providerUsers...)
	}
	return Var{Name: v.Name, Default: v.Default, DefaultDoc: v.DefaultDoc, LocalDefault: v.LocalDefault, Meaning: v.Meaning,
		Readers: readers, Local: v.Local, Required: v.Required, Cloud: typ,
		when: func(c *Config) bool { return slices.Contains(c.Providers, typ) },
		set: func(c *Config, value string) error {
			s := c.Clouds[typ]
			if v.Check != nil {
				if err := v.Check(value, s); err != nil {
					return err
				}
			}
			s[v.Name] = value
			return nil
		}}
}

// houseVars are the house's own variables, read before any cloud's.
var houseVars = []Var{
	{Name: "GOOGLE_CLOUD_PROJECT", Required: true, LocalDefault: "demo-egress", Readers: append(allFunctions, LocalStack),
		Meaning: "the project of the functions, Firestore and Pub/Sub; `demo-` ids are the emulators' convention and never reach Google",
		set:     func(c *Config, v string) error { c.Project = v; return nil }},
	{Name: "PROVIDERS", Default: clouds.All[0].Type, LocalDefault: MockType, Readers: allFunctions,
		Meaning: "the enabled provider types, comma-separated; `mock` only where a binary links it (the local stack and the tests): the deployed functions do not contain it, and refuse it at start-up",
		set: func(c *Config, v string) error {
			c.Providers = splitList(v)
			if len(c.Providers) == 0 {
				return fmt.Errorf("names no provider")
			}
			// Each enabled cloud's settings fill as its variables are read.
			c.Clouds = map[string]plugin.Settings{}
			for _, p := range c.plugins {
				if slices.Contains(c.Providers, p.Type) {
					c.Clouds[p.Type] = plugin.Settings{}
				}
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
			c.Deployment, c.GC.Deployment = v, v
			return nil
		}},

	{Name: "PACING_SCALE", Default: "1", Readers: providerUsers,
		Meaning: "the share of each cloud account's documented rate limit (its plugin's rate, in [the providers' page](../concepts/providers.md#one-budget-of-calls-per-account)) that the fleet's calls to it are paced to, across every function instance: 1 is the cloud's default, 0.5 leaves half to the account's other callers, 2 uses a limit the cloud raised for the account, 0 turns the pacing off (every call goes straight to the cloud, whose refusals are still waited out)",
		set: func(c *Config, v string) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
				return fmt.Errorf("is not a number of at least 0, such as 1 or 0.5")
			}
			c.PacingScale = f
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

	// The two functions that cost proxies: the reconciler writes each
	// proxy's status.cost, the API holds requests to namespaces' budgets.
	{Name: "COST_CURRENCY", Default: "USD", Readers: []Function{ProxyAPI, Reconcile},
		Meaning: "the currency (ISO 4217) every cost (`status.cost`, a namespace's month) is shown in and every budget is held in; a price in another currency is converted at `COST_RATES`",
		set: func(c *Config, v string) error {
			if _, err := pricing.ParseMoney("0", v); err != nil {
				return fmt.Errorf("is not an ISO 4217 currency code such as EUR")
			}
			c.CostCurrency = v
			return nil
		}},
	{Name: "COST_RATES", DefaultDoc: "none: only prices in `COST_CURRENCY` are costed, the others' costs say \"unknown\" and why", Readers: []Function{ProxyAPI, Reconcile},
		Meaning: "the deployment's own conversion rates into `COST_CURRENCY`, comma-separated `CURRENCY=AMOUNT@DATE` (`USD=0.92@2026-12-01`: one USD is 0.92 from that day, 00:00 UTC, on), any number of dates per currency: a cost is converted at the latest rate dated on or before the moment it is of, never a guessed one",
		set: func(c *Config, v string) error {
			r, err := pricing.ParseRates(c.CostCurrency, v)
			if err != nil {
				return fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "pricing: "))
			}
			c.CostRates = r
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
	{Name: "PROXY_PORTS", Default: strconv.Itoa(proxy.DefaultPort), LocalDefault: strconv.Itoa(proxy.DefaultPort) + ",1080", Readers: allFunctions, when: firewallReader,
		Meaning: "the ports the firewall opens on proxy VMs, comma-separated ports or ranges (`3128,8080-8090`), as Terraform's `proxy_ports`: `spec.port` must be one of them; a spec without a port gets 3128, or the first of these when 3128 is not",
		set:     nonEmptyList("port", proxy.ParsePortRanges, func(c *Config) *[]proxy.PortRange { return &c.API.Policy.ProxyPorts })},
	{Name: "FIREWALL_SOURCE_RANGES", Default: "0.0.0.0/0,::/0", Readers: allFunctions, when: firewallReader,
		Meaning: "the sources the firewall lets reach those ports, comma-separated CIDRs, as Terraform's `allowed_source_ranges`: each of a spec's `allowedSourceRanges` must lie within them",
		set:     nonEmptyList("range", proxy.ParsePrefixes, func(c *Config) *[]netip.Prefix { return &c.API.Policy.FirewallSourceRanges })},

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
}

// vmVars are the variables of the VM side, read when an enabled cloud's
// VMs call for them (its plugin's Boot), after the clouds' own: which
// clouds' VMs boot how is cl's to say, and whether they are all against
// fakes is their settings'.
func vmVars(cl []plugin.Plugin) []Var {
	cloudInit := typesOf(cl, bootsBy(plugin.BootCloudInit))
	return []Var{
		{Name: "PROXY_ENGINE_URL", Readers: providerUsers, when: startupScriptEnabled,
			Meaning: "the URL of the proxy engine binary a VM installs, an object of the deployment's bucket (`https://storage.googleapis.com/BUCKET/OBJECT`), downloaded with the VM's token; without it a VM cannot serve and says so in `egress/error`",
			set: func(c *Config, v string) error {
				if v != "" && !engineURLRE.MatchString(v) {
					return fmt.Errorf("is not an http(s) URL of an object, such as https://storage.googleapis.com/BUCKET/egress-proxy")
				}
				c.Engine.URL = v
				return nil
			}},
		{Name: "PROXY_ENGINE_SHA256", Readers: providerUsers, when: func(c *Config) bool { return startupScriptEnabled(c) || cloudInitEnabled(c) },
			Meaning: "that binary's SHA-256 in hex: a VM installs no other (required with " + cloudInit + " in `PROVIDERS`)",
			set: func(c *Config, v string) error {
				if v != "" && !engineSHARE.MatchString(v) {
					return fmt.Errorf("is not a SHA-256 in lower-case hex")
				}
				if startupScriptEnabled(c) && (v == "") != (c.Engine.URL == "") {
					return fmt.Errorf("and PROXY_ENGINE_URL go together: set both or neither")
				}
				if cloudInitEnabled(c) && v == "" {
					return fmt.Errorf("is required with %s in PROVIDERS: their VMs install only the binary of that SHA-256", cloudInit)
				}
				c.Engine.SHA256, c.CloudInitVM.EngineSHA256 = v, v
				return nil
			}},
		{Name: "PROXY_ENGINE_PUBLIC_URL", Readers: providerUsers, when: cloudInitEnabled,
			Meaning: "the URL of the same binary (`PROXY_ENGINE_SHA256`) that a VM outside Google Cloud downloads without any credential: an object anyone may read (Terraform makes one in a public bucket when `providers_enabled` names " + cloudInit + "); it holds nothing secret, and a VM checks what it downloads against the SHA-256",
			set: func(c *Config, v string) error {
				if !engineURLRE.MatchString(v) {
					return fmt.Errorf("is required with %s in PROVIDERS, an http(s) URL of an object anyone may read, such as https://storage.googleapis.com/BUCKET/egress-proxy-SHA256", cloudInit)
				}
				c.CloudInitVM.EngineURL = v
				return nil
			}},
		// The status of the VMs that boot with cloud-init, which the
		// control plane reads through their proxy port (package vmstatus).
		{Name: "VM_STATUS_KEY_SECRET", Readers: providerUsers, when: cloudInitEnabled,
			Meaning: "the Secret Manager version of the key (32 random bytes, base64) from which the control plane derives each " + cloudInit + " VM's own status credential and answer-signing key (from the proxy's uid and the VM's status id), `projects/P/secrets/S/versions/latest`; only Reconcile and CollectGarbage read it (Terraform makes the secret, you add its version); a VM's user-data holds only a salted hash of its credential, and its own signing key. Against fakes (" + fakeEndpoints(cl) + ") the process makes a key of its own",
			set: func(c *Config, v string) error {
				switch {
				case v == "" && !againstFakes(c):
					return fmt.Errorf("is required with %s in PROVIDERS: name the secret version of the status key, such as projects/P/secrets/egress-vm-status-key/versions/latest", cloudInit)
				case v != "" && !proxy.IsSecretVersion(v):
					return fmt.Errorf("is not a secret version: want projects/PROJECT/secrets/SECRET/versions/VERSION")
				}
				c.CloudInitVM.StatusKeySecret = v
				return nil
			}},
		{Name: "VM_STATUS_SOURCE_RANGES", DefaultDoc: "none (`127.0.0.1/32` against a fake)", Readers: providerUsers, when: cloudInitEnabled,
			Meaning: "the control plane's egress addresses as CIDRs, comma-separated (the Cloud NAT addresses Terraform reserves for the functions' egress): the cloud's firewall of each " + cloudInit + " VM and the VM itself admit them to the proxy port for the status request alone",
			set: func(c *Config, v string) error {
				if v == "" && againstFakes(c) {
					v = "127.0.0.1/32"
				}
				c.CloudInitVM.StatusSources = splitList(v)
				if len(c.CloudInitVM.StatusSources) == 0 {
					return fmt.Errorf("is required with %s in PROVIDERS: name the functions' egress addresses (the output status_source_ranges of deploy/terraform), or no VM is ever seen serving", cloudInit)
				}
				for _, s := range c.CloudInitVM.StatusSources {
					if _, err := netip.ParsePrefix(s); err != nil {
						return fmt.Errorf("holds %q, which is not a CIDR", s)
					}
				}
				return nil
			}},
	}
}

// fakeEndpoints are the cloud-init clouds' variables that point them at a
// fake, as the docs list them.
func fakeEndpoints(cl []plugin.Plugin) string {
	var out []string
	for _, p := range cl {
		if p.Boot.Kind == plugin.BootCloudInit && p.FakeEndpoint != "" {
			out = append(out, "`"+p.FakeEndpoint+"`")
		}
	}
	return strings.Join(out, ", ")
}

// localVars are the local stack's own settings, read last.
var localVars = []Var{
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
