// Package gcp is the Compute Engine provider (type "gcp"): each proxy is one
// VM, created through the Compute REST API with Google's Go client, and,
// for a Static IP policy, one regional external address kept across its
// VMs.
//
// providerIDs are gce://PROJECT/ZONE/NAME for a VM and
// gce-address://PROJECT/REGION/NAME for an address. Create does not wait
// for the insert operation: the reconciler looks again when the VM calls
// home, which is the contract. What Compute says goes into the provider's
// kinds (not found, already exists, quota, rate limited, capacity,
// transient, permanent), read from the *googleapi.Error the client returns
// (errors[].reason) or, for a create that Compute accepted and that failed
// later (a stockout, a quota, a bad image), from the insert's operation,
// which Get finds when the VM is missing.
//
// The files: provider.go (configuration, clients), create.go (the insert,
// the zone, the address), get.go (Get, readiness, the insert's operation),
// delete.go, list.go (ListByTag), reconfigure.go (a live change of the
// engine's configuration and of the VM's owner, under Compute's
// fingerprints), ids.go (providerIDs), errors.go (classification),
// console.go.
package gcp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"google.golang.org/api/option"

	"github.com/egress-proxies/egress/internal/provider"
)

// Type is the registry type of this provider.
const Type = "gcp"

// The stack types of Config.StackType, as Compute names a network
// interface's.
const (
	StackIPv4 = "IPV4_ONLY"
	StackDual = "IPV4_IPV6"
)

// Defaults of Config.
const (
	DefaultNetwork     = "default"
	DefaultNetworkTag  = "egress-proxy"
	DefaultMachineType = "e2-micro"
	DefaultImage       = "projects/debian-cloud/global/images/family/debian-13"
	DefaultDiskSizeGB  = 10
)

// DefaultScopes lets a proxy VM call home on Pub/Sub, where its account's
// only role is publisher on the call-home topic, and download the proxy
// engine, the one object it may read (deploy/terraform). It writes no log
// entry and no metric of the project: what it reports travels in its
// call-home (docs/concepts/security.md).
var DefaultScopes = []string{
	"https://www.googleapis.com/auth/pubsub",
	"https://www.googleapis.com/auth/devstorage.read_only",
}

// Config is the provider's configuration (internal/app reads it from GCP_*
// variables).
type Config struct {
	// Project is where the VMs are made, and the one project ListByTag
	// lists. A providerID names its own project, so the VMs of another
	// (GCP_PROJECT changed under a live fleet) are still read and deleted
	// through it; Lists says which are not listed.
	Project string
	// Deployment is the value of every resource's provider.LabelDeployment
	// label, and the one ListByTag lists; empty is
	// provider.DefaultDeployment.
	Deployment string
	// Network and Subnetwork place the VM's interface; Subnetwork may be
	// empty for an auto-mode network.
	Network, Subnetwork string
	// StackType is the VMs' interface's stack: StackIPv4 (empty is the
	// same), or StackDual, which gives each VM an external IPv6 address
	// beside its IPv4 one (Instance.IPv6). Dual needs Subnetwork to be a
	// dual-stack subnet with external IPv6 (stackType IPV4_IPV6,
	// ipv6AccessType EXTERNAL), which only a custom-mode network has.
	StackType string
	// NetworkTag is the tag the firewall rule opens the proxy port for.
	NetworkTag string
	// ServiceAccount is the proxy VMs' own service account email, given
	// only to VMs that run the default bootstrap (a spec's own cloud-init
	// runs with none); empty gives every VM none.
	ServiceAccount string
	// Scopes are the OAuth scopes of that service account.
	Scopes []string
	// ProbeTarget is the host:port a VM's self-test CONNECTs to through its
	// proxy before it says it serves; empty leaves the script's default,
	// vmconfig.DefaultProbeTarget.
	ProbeTarget string
	// CallHomeTopic is the topic a VM publishes to once it serves,
	// projects/P/topics/T; empty, VMs do not call home.
	CallHomeTopic string
	// PubSubEndpoint is the Pub/Sub REST API the VMs publish to; empty is
	// Google's. Tests point it at a stand-in.
	PubSubEndpoint string
	// EngineURL and EngineSHA256 name the proxy engine binary a VM
	// installs (an object of the deployment's bucket) and its SHA-256.
	EngineURL, EngineSHA256 string
	// Now is the clock a rate limit's wait is read against; nil is
	// time.Now.
	Now func() time.Time
	// RateInterval is how long Compute's rate quotas count, a refused
	// call waiting for the next: a minute (0 is the same). A benchmark
	// against a fake whose quotas count in a scaled-down interval
	// (computefake.SetRateLimitWindow) sets the same.
	RateInterval time.Duration
}

// Clients are the Compute REST clients the provider calls.
type Clients struct {
	Instances      *compute.InstancesClient
	Addresses      *compute.AddressesClient
	ZoneOperations *compute.ZoneOperationsClient
	Regions        *compute.RegionsClient
}

// NewClients dials the Compute REST clients with opts.
func NewClients(ctx context.Context, opts ...option.ClientOption) (Clients, error) {
	var c Clients
	var err error
	if c.Instances, err = compute.NewInstancesRESTClient(ctx, opts...); err != nil {
		return c, fmt.Errorf("compute instances client: %w", err)
	}
	if c.Addresses, err = compute.NewAddressesRESTClient(ctx, opts...); err != nil {
		return c, fmt.Errorf("compute addresses client: %w", err)
	}
	if c.ZoneOperations, err = compute.NewZoneOperationsRESTClient(ctx, opts...); err != nil {
		return c, fmt.Errorf("compute zone operations client: %w", err)
	}
	if c.Regions, err = compute.NewRegionsRESTClient(ctx, opts...); err != nil {
		return c, fmt.Errorf("compute regions client: %w", err)
	}
	return c, nil
}

// Close closes the clients.
func (c Clients) Close() error {
	var errs []error
	for _, cl := range []interface{ Close() error }{c.Instances, c.Addresses, c.ZoneOperations, c.Regions} {
		errs = append(errs, cl.Close())
	}
	return errors.Join(errs...)
}

// Provider is the Compute Engine provider.
type Provider struct {
	c   Clients
	cfg Config

	// zones caches each region's zones: they do not change while a
	// process lives.
	mu    sync.Mutex
	zones map[string][]string
}

// New returns a provider over the Compute clients (NewClients).
func New(c Clients, cfg Config) (*Provider, error) {
	if cfg.Project == "" {
		return nil, errors.New("gcp provider: no project")
	}
	if c.Instances == nil || c.Addresses == nil || c.ZoneOperations == nil || c.Regions == nil {
		return nil, errors.New("gcp provider: a Compute client is missing")
	}
	if cfg.Deployment == "" {
		cfg.Deployment = provider.DefaultDeployment
	}
	if err := provider.ValidateDeployment(cfg.Deployment); err != nil {
		return nil, fmt.Errorf("gcp provider: %w", err)
	}
	if cfg.Network == "" {
		cfg.Network = DefaultNetwork
	}
	if cfg.NetworkTag == "" {
		cfg.NetworkTag = DefaultNetworkTag
	}
	if cfg.Scopes == nil {
		cfg.Scopes = DefaultScopes
	}
	switch cfg.StackType {
	case "":
		cfg.StackType = StackIPv4
	case StackIPv4:
	case StackDual:
		if cfg.Subnetwork == "" {
			return nil, fmt.Errorf("gcp provider: stack type %s needs a subnetwork: only a custom-mode network's subnet can be dual-stack", StackDual)
		}
	default:
		return nil, fmt.Errorf("gcp provider: stack type %q is neither %s nor %s", cfg.StackType, StackIPv4, StackDual)
	}
	return &Provider{c: c, cfg: cfg, zones: map[string][]string{}}, nil
}

var (
	_ provider.Provider      = (*Provider)(nil)
	_ provider.ConsoleReader = (*Provider)(nil)
	_ provider.Scoped        = (*Provider)(nil)
	_ provider.Reconfigurer  = (*Provider)(nil)
)

// Lists reports whether ListByTag lists what providerID names: a VM or
// address of the configured project. One of another project, made before
// GCP_PROJECT changed, is served, replaced and deleted through its
// providerID, but never listed.
func (p *Provider) Lists(providerID string) bool {
	id, err := parseID(providerID)
	return err == nil && id.project == p.cfg.Project
}

// labels are the labels of every resource made for req: the garbage
// collection contract's (provider.LabelManaged, LabelUID,
// LabelDeployment).
func (p *Provider) labels(req provider.CreateRequest) map[string]string {
	return map[string]string{
		provider.LabelManaged:    provider.LabelManagedYes,
		provider.LabelUID:        req.UID,
		provider.LabelDeployment: p.cfg.Deployment,
	}
}
