// Package plugin is how a cloud plugs into the house: a cloud's package
// (internal/provider/gcp, …/hetzner, …/aws, the mock) declares one
// exported Plugin value, and the one list of production clouds
// (internal/clouds) names it. Everything the rest of the house needs of a
// cloud is in that value, as data or as a function of an Env the
// composition root hands it: the configuration variables (the
// configuration reference is generated from them), the constructor, the
// rules of a spec, how the cloud's VMs boot and report readiness, whether
// they take a change in place, the placement's words in the cloud's
// terms, the images and APIs the compatibility page lists, and the
// Terraform the deploy tests read.
//
// As database/sql's drivers, a cloud is found through its registration;
// unlike them, the registration is a value passed to the composition root,
// never an init() side effect: which clouds a binary serves is the
// decision of the list it is given (internal/clouds for the functions,
// that list and the mock for the local stack and the tests).
//
// The package is apart from internal/provider because the Env it hands a
// cloud-init cloud holds the VM side's renderer and prober
// (internal/provider/vmside), which import the contract.
package plugin

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"

	"golang.org/x/oauth2"

	"github.com/egress-proxies/egress/internal/pacing"
	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/vmside"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// Plugin is a cloud as the house sees it. Its zero value is no cloud:
// Type, Name, New and Validator are required (Check says what is
// missing).
type Plugin struct {
	// Type is the provider type, as PROVIDERS and a spec's provider
	// name it: a short lowercase word.
	Type string
	// Name is the cloud's own name for what the provider makes VMs on
	// ("Compute Engine"), as the docs' diagrams say it.
	Name string
	// Vars are the cloud's configuration variables, in the order they
	// are loaded (a variable whose check reads another comes after it).
	// They are read only when PROVIDERS names Type, and only by the
	// functions of their Readers.
	Vars []Var
	// New makes the provider's constructor from env. The composition
	// root calls it once, when the type is enabled; the constructor runs
	// when the provider is first used, and a failed run is tried again
	// at the next use (provider.Set), so a credential read there (a
	// secret, a token) is read when first needed.
	New func(env Env) provider.Constructor
	// Validator makes the cloud's rules of a spec from its settings (the
	// operator's policy of the variables the ProxyAPI reads). Its error
	// says which variables make a policy that cannot hold: it stops the
	// ProxyAPI at start-up. The rules come with the error too: a process
	// that does not serve the ProxyAPI reads no policy, and registers the
	// rules of none.
	Validator func(s Settings) (provider.Validator, error)
	// Boot is how the cloud's VMs boot.
	Boot Boot
	// Readiness is how the control plane learns that a VM serves.
	Readiness Readiness
	// InPlace says the provider's VMs take live changes in place
	// (provider.InPlace): the provider implements provider.Reconfigurer,
	// and warm pools and live changes without a new VM follow from it.
	InPlace bool
	// Rate is the default budget of calls of one of the cloud's accounts,
	// as the cloud documents its rate limit (calls a window, and the
	// address of the page that says so): the fleet's calls to an account
	// are paced within it (package pacing), across every function
	// instance. Zero: the calls are not paced (the mock's VMs are in the
	// process).
	Rate pacing.Rate
	// Calls are the requests each provider method makes of the cloud's
	// API, which a call reserves in the budget before it goes: a test of
	// the cloud's holds them to what its fake counted
	// (providerbench.CallsOf).
	Calls pacing.Calls
	// IPv6Prefix is the length of the routed IPv6 prefix the cloud gives
	// each VM (64: a Hetzner server's /64), which the provider asks for
	// and reports (provider.CreateRequest.IPv6Prefix,
	// provider.Instance.IPv6Prefix); 0 when it gives none. The API refuses
	// by it, naming no cloud, a spec whose spec.ipv6Egress picks addresses
	// of a prefix (perConnection, perSession) on a cloud without one, and
	// writes the default egress by it (single with a prefix, off without).
	IPv6Prefix int
	// MakesFirewall says the provider makes the cloud's firewall itself,
	// through the cloud's API, from the house's settings (Env.Firewall):
	// the functions that call it read PROXY_PORTS and
	// FIREWALL_SOURCE_RANGES too, not the ProxyAPI alone. A cloud whose
	// firewall is Terraform's (a module of its own) leaves it false.
	MakesFirewall bool
	// CallHomeAccount is the variable (of Vars) that names the service
	// account a CallsHome cloud's VMs run as: the call-home handler takes
	// only identity tokens of that account. "" is none.
	CallHomeAccount string
	// FakeEndpoint is the variable (of Vars) that points the provider at
	// a fake on this machine instead of the cloud's API: set, the process
	// makes its own VM status key and asks from loopback. "" is none.
	FakeEndpoint string
	// Placement is what a spec's placement means on the cloud, in its
	// words: the CLI's help and the docs say it so.
	Placement Placement
	// Images are the images a placement may name by default, for the
	// compatibility page.
	Images Images
	// APIs are the cloud's APIs and the module of go.mod that calls each,
	// for the compatibility page.
	APIs []API
	// Terraform is the cloud's part of deploy/terraform, which the deploy
	// tests read.
	Terraform Terraform
	// Prices makes the cloud's price source from env: what one of its
	// proxies costs, read from the cloud's own price API (Hetzner's
	// pricing, DigitalOcean's sizes, AWS's Price List, Google's Cloud
	// Billing Catalog) with the functions' identity. Nil: the cloud
	// publishes no prices the product reads, and every price of it is
	// pricing.ErrNoPrices (PricesOf).
	Prices func(env Env) pricing.Source
	// PricedPlacements are the placements the operator allows, as price
	// keys, from the cloud's settings: what the daily refresh asks Prices
	// for. Nil with Prices set asks for none.
	PricedPlacements func(s Settings) []pricing.Key
	// Words are the names, beside Type, that a file dealing with the
	// cloud uses for it (its API's and tools': "hcloud", "ec2"): the guide
	// to adding a cloud is held to list every file outside the cloud's
	// folder that uses them (dev/gendocs).
	Words []string
	// Dev is the import path of the cloud's package for development and
	// tests (internal/provider/TYPE/TYPEsim), whose package name is the
	// path's last element and which declares New, a sim.NewCloud (the
	// cloud's real provider over its fake, with its faults, for the
	// simulation), Bench, a type whose zero value is the cloud's
	// providerbench.Phase (make bench), and Stack, the cloud's
	// providerstack.Cloud (its fake and flow in the local stack's
	// end-to-end test). `make docs` (dev/gendocs) writes
	// internal/clouds/cloudsdev's list from it, in the order of
	// internal/clouds.All. It is a path rather than the functions so that
	// production links no fake. "" is none: the cloud is neither
	// simulated, benchmarked nor in the stack's test over a fake of its
	// own (Compute Engine's).
	Dev string
	// VM is the import path of the cloud's VM-side package
	// (internal/provider/TYPE/TYPEvm), whose package name is the path's
	// last element and which declares Follower, the agent.Follower that
	// Boot.Follow names. `make docs` (dev/gendocs) writes
	// internal/clouds/cloudsvm's list from it, which the agent binary
	// links. A path, so that the functions link no VM code and the agent
	// no cloud SDK. "" is none: the cloud's VMs need nothing of their own
	// beyond the boot.
	VM string
	// ImageTest is the import path of the cloud's shape of the image test
	// (internal/provider/TYPE/TYPEimage), whose package name is the path's
	// last element and which declares Shape, the imagetest.Shape that
	// boots a Debian shaped like the cloud's image as the cloud's VM
	// (make image-test). `make docs` (dev/gendocs) writes the image
	// test's list of shapes from it. A path, so that nothing but the image
	// test links it. "" is none: the image test boots no VM of the cloud's.
	ImageTest string
}

// Env is what the composition root hands a cloud's New: the settings it
// declared, as read, and the house's means the provider may need. A
// field a cloud's Boot and Readiness do not call for is zero.
type Env struct {
	// Settings are the cloud's variables as read.
	Settings Settings
	// Project is GOOGLE_CLOUD_PROJECT, the functions' project.
	Project string
	// Deployment is DEPLOYMENT, the value of every resource's
	// provider.LabelDeployment.
	Deployment string
	// Log receives the provider's decisions.
	Log *slog.Logger
	// ReadSecret reads a Secret Manager version the functions may read
	// (a cloud's API token): errors name the version, never the value.
	ReadSecret func(ctx context.Context, version string) (string, error)
	// IDTokens is a source of the function's Google ID tokens for an
	// audience (the metadata server's on Cloud Run), for a cloud that
	// federates with Google's identity.
	IDTokens func(ctx context.Context, audience string) (oauth2.TokenSource, error)
	// VM is the VM side a BootCloudInit cloud's provider renders and
	// asks its VMs with.
	VM VMSide
	// Engine is the engine binary a BootStartupScript cloud's VMs
	// install (PROXY_ENGINE_URL and PROXY_ENGINE_SHA256).
	Engine Engine
	// CallHomeTopic is the topic a CallsHome cloud's VMs publish on,
	// projects/P/topics/T.
	CallHomeTopic string
	// Firewall is what the deployment's firewall opens, for a cloud whose
	// provider makes it (MakesFirewall).
	Firewall Firewall
	// CallHome publishes what the VM named instance says when it calls
	// home, as a real VM does on the call-home topic, with an identity
	// token the house signs for it as Google's metadata server would:
	// for a cloud whose VMs live in the process (the mock's); nil when
	// the process serves no function that publishes, and in the deployed
	// functions.
	CallHome func(ctx context.Context, msg proxy.ReconcileMessage, instance string) error
}

// VMSide is what a provider of a cloud whose VMs boot by cloud-init
// needs of the VM side (package vmside): the renderer of a VM's
// user-data, made as the cloud's Boot asks, and the prober that asks a
// VM's proxy whether it serves.
type VMSide struct {
	Renderer vmside.Renderer
	Prober   vmside.Prober
}

// Firewall is what the deployment's firewall opens on the proxy VMs, as
// the house's settings say it.
type Firewall struct {
	// ProxyPorts are the TCP ports ("3128") and ranges ("3128-3130") the
	// proxies may listen on (PROXY_PORTS).
	ProxyPorts []string
	// SourceRanges are the CIDRs that may reach them
	// (FIREWALL_SOURCE_RANGES); each proxy narrows them on its VM.
	SourceRanges []string
	// StatusSourceRanges are the functions' fixed egress addresses
	// (VM_STATUS_SOURCE_RANGES), which a status-door VM admits to its
	// proxy port for the status request alone.
	StatusSourceRanges []string
}

// Engine is the proxy engine binary a VM installs: its URL and SHA-256.
type Engine struct {
	URL, SHA256 string
}

// BootKind is what a cloud's VMs run when they boot.
type BootKind int

const (
	// BootNone: the cloud's VMs are no machines (the mock's, in the
	// process), and need nothing of the VM side.
	BootNone BootKind = iota
	// BootStartupScript: the house's startup script (internal/bootstrap)
	// in the VM's metadata, which installs the engine from the
	// deployment's bucket with the VM's own token (Env.Engine).
	BootStartupScript
	// BootCloudInit: user-data of internal/bootstrap/cloudinit, run by
	// the cloud's Debian image's cloud-init, which installs the engine
	// from PROXY_ENGINE_PUBLIC_URL without any credential (Env.VM).
	BootCloudInit
)

// Boot is how a cloud's VMs boot.
type Boot struct {
	Kind BootKind
	// Gzip compresses a BootCloudInit VM's user-data, for a cloud whose
	// limit the plain text outgrows (EC2's 16 KiB).
	Gzip bool
	// MetadataURL, when set, is the cloud's instance metadata service,
	// which a BootCloudInit VM's agent asks which instance it is, so that
	// an answer through a moved static address is not taken for its own.
	MetadataURL string
	// Follow, when set, names the cloud's VM-side part that a
	// BootCloudInit VM of a Static proxy runs to send its outbound
	// traffic from its static address, where the cloud routes that
	// address's traffic only through a gateway of its own (DigitalOcean's
	// reserved IPs and their anchor gateway), and the URL that part reads:
	// the setting vmconfig.KeyFollow, vmconfig.Follow(name, url), sent as
	// cloudinit.Renderer.Follow. The part is an agent.Follower in the
	// cloud's folder (the plugin's VM), linked into the agent by
	// internal/clouds/cloudsvm.
	Follow string
	// WatchUserData, when set, is the cloud's instance metadata URL of
	// the VM's user data, readable from inside the VM and changeable from
	// outside it without a reboot (Azure's IMDS userData): a
	// BootCloudInit VM's agent polls it for a new user-data of
	// cloudinit.Render's and applies the configuration in it, as a GCE
	// VM's agent watches its metadata, and the provider reconfigures a VM
	// by writing it (provider.Reconfigurer): cloudinit.Renderer.WatchUserData.
	WatchUserData string
}

// Readiness is how the control plane learns that a VM serves.
type Readiness int

const (
	// CallsHome: the VM publishes on the call-home topic with an
	// identity token of the cloud's own (GCE's metadata server, the
	// house's for the mock).
	CallsHome Readiness = iota
	// StatusDoor: the control plane asks the VM through its proxy port
	// (package vmstatus), and reads its access lines so too: the
	// collector asks every listed VM of the cloud (the access pull).
	StatusDoor
)

// Placement is what a spec's placement means on a cloud, in its words,
// for the CLI's help and the docs. Each is a phrase that follows "on
// TYPE", such as "a network zone (eu-central, us-east, …)".
type Placement struct {
	// Region and Zone are what a placement's region and zone are.
	Region, Zone string
	// MachineType is what its machine type is, and DefaultMachineType
	// the one a placement that names none gets.
	MachineType, DefaultMachineType string
	// Image is what its image is.
	Image string
	// Regions, when set, are regions and their zones, a line each with
	// aligned columns, as the CLI's help shows them under the rest.
	Regions []string
	// Example is the flags of a create on the cloud, after the proxy's
	// name and namespace: `--provider TYPE --region …`.
	Example string
}

// Images are a cloud's images as the operator's policy allows them by
// default.
type Images struct {
	// Default is the image of a placement that names none.
	Default string
	// Allowed are the images allowed when Var is unset.
	Allowed []string
	// Var is the variable that allows others.
	Var string
}

// API is an API of a cloud and the module of go.mod that calls it.
type API struct {
	Name, Module string
}

// Terraform is a cloud's part of deploy/terraform.
type Terraform struct {
	// Module is the cloud's own module, applied with the cloud's own
	// credentials (deploy/terraform/hetzner-firewall); "" when the
	// deployment's module alone serves the cloud (Google's).
	Module string
	// Secrets are the secrets of the deployment's module (Terraform
	// addresses, google_secret_manager_secret.NAME) that the functions
	// calling the provider read, each granted on that secret alone.
	Secrets []string
	// Policy is the file of Module that grants the permissions the
	// provider's calls need, which a deploy test holds to the calls in
	// the provider's code; "" when the cloud has no permission model to
	// grant by (a token with the project's rights) or its permissions
	// are the deployment's own IAM table's (deploy/iam.go).
	Policy string
}

// typePattern is what a provider type looks like (provider.Registry's
// rule).
var typePattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)

// varPattern is what a variable's name looks like.
var varPattern = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// Check says what the house needs of p that p lacks: a type, a name, a
// constructor, a validator, variables each with a name and a meaning,
// and what its boot and readiness call for.
func (p Plugin) Check() error {
	var problems []string
	if !typePattern.MatchString(p.Type) {
		problems = append(problems, fmt.Sprintf("type %q is not a lowercase word matching %s", p.Type, typePattern))
	}
	if p.Name == "" {
		problems = append(problems, "no name")
	}
	if p.New == nil {
		problems = append(problems, "no constructor (New)")
	}
	if p.Validator == nil {
		problems = append(problems, "no validator")
	}
	seen := map[string]bool{}
	for _, v := range p.Vars {
		switch {
		case !varPattern.MatchString(v.Name):
			problems = append(problems, fmt.Sprintf("variable %q is not an upper-case name", v.Name))
		case seen[v.Name]:
			problems = append(problems, fmt.Sprintf("variable %s is declared twice", v.Name))
		case v.Meaning == "":
			problems = append(problems, fmt.Sprintf("variable %s has no meaning", v.Name))
		case v.Readers == 0:
			problems = append(problems, fmt.Sprintf("variable %s has no readers", v.Name))
		}
		seen[v.Name] = true
	}
	if p.CallHomeAccount != "" && !seen[p.CallHomeAccount] {
		problems = append(problems, fmt.Sprintf("the call-home account %s is none of its variables", p.CallHomeAccount))
	}
	if p.FakeEndpoint != "" && !seen[p.FakeEndpoint] {
		problems = append(problems, fmt.Sprintf("the fake's endpoint %s is none of its variables", p.FakeEndpoint))
	}
	if p.Boot.Kind != BootCloudInit && (p.Boot.Gzip || p.Boot.MetadataURL != "" || p.Boot.Follow != "" || p.Boot.WatchUserData != "") {
		problems = append(problems, "gzip, a metadata URL, a VM-side part to follow and a watched user data are a cloud-init boot's")
	}
	if p.Boot.Follow != "" {
		if _, _, err := vmconfig.ParseFollow(p.Boot.Follow); err != nil {
			problems = append(problems, "its boot's Follow: "+err.Error())
		}
	}
	if !p.Rate.IsZero() && !strings.HasPrefix(p.Rate.Source, "https://") {
		problems = append(problems, fmt.Sprintf("its rate (%s) names no source: want the https address of the cloud's page that gives the limit", p.Rate))
	}
	if !p.Rate.IsZero() && p.Calls == (pacing.Calls{}) {
		problems = append(problems, "its rate is spent by no method: declare the calls each method makes (Calls)")
	}
	if p.Readiness == StatusDoor && p.Boot.Kind != BootCloudInit {
		problems = append(problems, "the status door is a cloud-init boot's (its VMs carry the status access in their user-data)")
	}
	if len(problems) > 0 {
		return fmt.Errorf("cloud plugin %q: %s", p.Type, strings.Join(problems, "; "))
	}
	return nil
}

// ReadToken reads a cloud's API token from the Secret Manager version
// its variable names (as HETZNER_TOKEN_SECRET does), trimmed. Errors
// name the variable and the version, never the token.
func (e Env) ReadToken(ctx context.Context, variable, version string) (string, error) {
	token, err := e.ReadSecret(ctx, version)
	if err != nil {
		return "", fmt.Errorf("the API token (%s): %w", variable, err)
	}
	if token = strings.TrimSpace(token); token == "" {
		return "", fmt.Errorf("the API token (%s) %s is empty", variable, version)
	}
	return token, nil
}

// PricesOf is the cloud's price source from env, or an error that wraps
// pricing.ErrNoPrices, naming the cloud, when it declares none.
func (p Plugin) PricesOf(env Env) (pricing.Source, error) {
	if p.Prices == nil {
		return nil, fmt.Errorf("cloud %s: %w", p.Type, pricing.ErrNoPrices)
	}
	return p.Prices(env), nil
}
