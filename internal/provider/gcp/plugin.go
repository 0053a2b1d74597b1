package gcp

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"google.golang.org/api/option"

	"github.com/egress-proxies/egress/internal/pacing"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/plugin"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// Plugin is Compute Engine as the house takes it (internal/clouds lists
// it): its variables, its constructor and its rules. Its VMs run the
// house's startup script and call home on Pub/Sub with the identity
// Google's metadata server gives them, and take live changes in place
// (Reconfigure).
var Plugin = plugin.Plugin{
	Type:      Type,
	Name:      "Compute Engine",
	Vars:      vars,
	New:       newFromEnv,
	Validator: validatorOf,
	Boot:      plugin.Boot{Kind: plugin.BootStartupScript},
	Readiness: plugin.CallsHome,
	InPlace:   true,
	// Compute meters a project's calls per minute by group (mutations,
	// reads, lists, operations' reads), 1,500 each by default: one
	// budget of 1,500 a minute over all of them holds each group's.
	Rate: pacing.Rate{Calls: 1500, Window: time.Minute, Source: "https://cloud.google.com/compute/api-quota"},
	// As the Compute fake counted them for a warm process's proxy with
	// an ephemeral address (TestCallsAsCounted): an insert; a get and a
	// look at the create's operation or the guest attributes; a get and a
	// delete; the aggregated lists of instances and addresses; a
	// Reconfigure's get, setLabels and setMetadata; one serial port read;
	// the regions.get placement reads an account's quotas with (a read
	// that went unpaced while it cost nothing here).
	// A Static proxy's address costs a few more, which Compute's own
	// refusal, waited out, covers.
	Calls: pacing.Calls{Create: 1, Get: 2, Delete: 2, ListByTag: 2, Reconfigure: 3, Console: 1, Quotas: 1},
	// A dual-stack interface's external IPv6 is a /96 (the access
	// config's externalIpv6PrefixLength), under GCP_STACK_TYPE=IPV4_IPV6.
	IPv6Prefix:       ipv6PrefixBits,
	FakeEndpoint:     "GCP_COMPUTE_ENDPOINT",
	Prices:           pricesFromEnv,
	PricedPlacements: pricedPlacements,
	Placement: plugin.Placement{
		Region:             "a Google Cloud region such as europe-west1",
		Zone:               "a zone of it (europe-west1-b)",
		MachineType:        "a machine type",
		DefaultMachineType: DefaultMachineType,
		Image:              "an image (projects/P/global/images/NAME or …/family/F)",
		Example:            "--region europe-west1 --allowed-source-range 203.0.113.0/24 --ip-policy Static --wait",
	},
	Images: plugin.Images{Default: DefaultImage, Allowed: DefaultAllowedImages, Var: "GCP_ALLOWED_IMAGES"},
	APIs:   []plugin.API{{Name: "Compute Engine API v1", Module: "cloud.google.com/go/compute"}},
	// The deployment's own module: its IAM table is deploy/iam.go's.
	Terraform: plugin.Terraform{},
	// Two projects in the local stack's test of several accounts.
	AccountsStack: "github.com/egress-proxies/egress/internal/provider/gcp/gcpaccounts",
	// No Dev: the simulation's base provider, the mock, calls home and
	// changes in place as Compute Engine's VMs do, and make bench's pool
	// phase times Compute Engine's PATCH through the local stack's mock
	// VMs.
}

var (
	emailRE       = regexp.MustCompile(`^[^@\s]+@[^@\s]+\.[a-z]+$`)
	probeTargetRE = regexp.MustCompile(`^[A-Za-z0-9.-]+:[0-9]{1,5}$`)
)

// gceName refuses what is not a GCE resource name.
func gceName(v string, _ plugin.Settings) error {
	if !IsName(v) {
		return fmt.Errorf("is not a GCE name: lowercase letters, digits and '-', at most 63")
	}
	return nil
}

// vars are Compute Engine's variables: what the operator allows of a
// placement (the ProxyAPI's), then where and how the VMs are made.
var vars = []plugin.Var{
	{Name: "GCP_ALLOWED_REGIONS", DefaultDoc: "any region", Readers: plugin.ReadByAPI | plugin.ReadByCallers,
		Meaning: "the regions a placement may name, comma-separated"},
	{Name: "GCP_ALLOWED_MACHINE_TYPES", Default: strings.Join(DefaultAllowedMachineTypes, ","), Readers: plugin.ReadByAPI | plugin.ReadByCallers,
		Meaning: "the machine types a placement may name, comma-separated; it must hold e2-micro, the type of a placement that names none"},
	{Name: "GCP_ALLOWED_IMAGES", Default: strings.Join(DefaultAllowedImages, ","), Readers: plugin.ReadByAPI,
		Meaning: "the images a placement may name, comma-separated: `projects/P/global/images/NAME`, `…/images/family/F` or `…/images/*`; it must allow the Debian 13 family, the image of a placement that names none"},

	{Name: "GCP_PROJECT", PerAccount: true, DefaultDoc: "`GOOGLE_CLOUD_PROJECT`", Readers: plugin.ReadByCallers,
		Meaning: "where VMs are made"},
	{Name: "GCP_NETWORK", Default: DefaultNetwork, Readers: plugin.ReadByCallers,
		Meaning: "the VPC network", Check: gceName},
	{Name: "GCP_SUBNETWORK", Readers: plugin.ReadByAPI | plugin.ReadByCallers,
		Meaning: "the subnetwork of each region, for custom-mode networks",
		Check: func(v string, s plugin.Settings) error {
			if v == "" {
				return nil
			}
			return gceName(v, s)
		}},
	// The ProxyAPI reads the stack type (and the subnet its check needs)
	// to refuse a spec.ipv6Egress that needs a prefix the VMs will not get.
	{Name: "GCP_STACK_TYPE", Default: StackIPv4, Readers: plugin.ReadByAPI | plugin.ReadByCallers,
		Meaning: "the VMs' network stack: `IPV4_ONLY`, or `IPV4_IPV6` for an external IPv6 address on each VM (`status.ipv6`), which needs `GCP_SUBNETWORK` to be dual-stack with external IPv6 (see IPv6 egress)",
		Check: func(v string, s plugin.Settings) error {
			switch v {
			case StackIPv4:
			case StackDual:
				if s.Get("GCP_SUBNETWORK") == "" {
					return fmt.Errorf("is %s, which needs GCP_SUBNETWORK: a dual-stack subnet with external IPv6, in a custom-mode network (an auto-mode network's subnets cannot be dual-stack)", StackDual)
				}
			default:
				return fmt.Errorf("is neither %s nor %s", StackIPv4, StackDual)
			}
			return nil
		}},
	{Name: "GCP_NETWORK_TAG", Default: DefaultNetworkTag, Readers: plugin.ReadByCallers,
		Meaning: "the tag the firewall rule targets", Check: gceName},
	{Name: "GCP_SERVICE_ACCOUNT", Readers: plugin.ReadByCallers,
		Meaning: "the VMs' own service account",
		Check: func(v string, _ plugin.Settings) error {
			if v != "" && !emailRE.MatchString(v) {
				return fmt.Errorf("is not a service account email such as proxy-vm@PROJECT.iam.gserviceaccount.com")
			}
			return nil
		}},
	{Name: "GCP_SCOPES", Default: strings.Join(DefaultScopes, ","), DefaultDoc: strings.ReplaceAll(strings.Join(DefaultScopes, ", "), "https://www.googleapis.com/auth/", ""), Readers: plugin.ReadByCallers,
		Meaning: "that account's OAuth scopes, comma-separated",
		Check: func(v string, _ plugin.Settings) error {
			for _, s := range plugin.SplitList(v) {
				if !strings.HasPrefix(s, "https://www.googleapis.com/auth/") {
					return fmt.Errorf("holds %q, which is not an OAuth scope URL (https://www.googleapis.com/auth/…)", s)
				}
			}
			return nil
		}},
	{Name: "GCP_PROBE_TARGET", Default: vmconfig.DefaultProbeTarget, Readers: plugin.ReadByCallers,
		Meaning: "the host:port a VM's self-test reaches through its proxy before it says it serves",
		// The form the startup script accepts: a bad one stops the
		// function at start-up rather than every VM at boot.
		Check: func(v string, _ plugin.Settings) error {
			if !probeTargetRE.MatchString(v) {
				return fmt.Errorf("is not host:port, such as www.google.com:443")
			}
			return nil
		}},
	{Name: "GCP_COMPUTE_ENDPOINT", PerAccount: true, Readers: plugin.ReadByCallers, Local: true,
		Meaning: "a Compute API to use instead of Google's, without credentials: tests against a fake only"},
	{Name: "GCP_BILLING_ENDPOINT", Readers: plugin.ReadByCallers, Local: true,
		Meaning: "a Cloud Billing Catalog API to use instead of Google's, without credentials, for the daily price refresh: tests against a fake only",
		Check:   plugin.LoopbackURL("http://127.0.0.1:PORT/")},
}

// ConfigOf is the provider's configuration from its settings and the
// house's environment: the project falls back to the functions', and the
// VMs call home on the environment's topic.
func ConfigOf(env plugin.Env) Config {
	s := env.Settings
	project := s.Get("GCP_PROJECT")
	if project == "" {
		project = env.Project
	}
	return Config{
		Project: project, Deployment: env.Deployment,
		Network: s.Get("GCP_NETWORK"), Subnetwork: s.Get("GCP_SUBNETWORK"), StackType: s.Get("GCP_STACK_TYPE"),
		NetworkTag: s.Get("GCP_NETWORK_TAG"), ServiceAccount: s.Get("GCP_SERVICE_ACCOUNT"), Scopes: s.List("GCP_SCOPES"),
		ProbeTarget: s.Get("GCP_PROBE_TARGET"), CallHomeTopic: env.CallHomeTopic,
		EngineURL: env.Engine.URL, EngineSHA256: env.Engine.SHA256,
	}
}

// newFromEnv dials Compute when the provider is first used; against
// GCP_COMPUTE_ENDPOINT (a fake) without credentials.
func newFromEnv(env plugin.Env) provider.Constructor {
	cfg := ConfigOf(env)
	endpoint := env.Settings.Get("GCP_COMPUTE_ENDPOINT")
	return func(ctx context.Context) (provider.Provider, error) {
		var opts []option.ClientOption
		if endpoint != "" {
			opts = append(opts, option.WithEndpoint(endpoint), option.WithoutAuthentication())
		}
		clients, err := NewClients(context.WithoutCancel(ctx), opts...)
		if err != nil {
			return nil, err
		}
		return New(clients, cfg)
	}
}

// PolicyOf is the operator's policy from the settings.
func PolicyOf(s plugin.Settings) Policy {
	return Policy{Regions: s.List("GCP_ALLOWED_REGIONS"), MachineTypes: s.List("GCP_ALLOWED_MACHINE_TYPES"), Images: s.List("GCP_ALLOWED_IMAGES"),
		StackType: s.Get("GCP_STACK_TYPE")}
}

func validatorOf(s plugin.Settings) (provider.Validator, error) {
	pol := PolicyOf(s)
	if err := pol.Check(); err != nil {
		return Validator(pol), fmt.Errorf("GCP_ALLOWED_REGIONS, GCP_ALLOWED_MACHINE_TYPES and GCP_ALLOWED_IMAGES: the policy %w", err)
	}
	return Validator(pol), nil
}
