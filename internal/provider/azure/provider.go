// Package azure is the Azure provider (type "azure"): each proxy is one
// virtual machine in the deployment's resource group, with a network
// interface and a Standard-SKU public IP of its own, made through Azure
// Resource Manager with Microsoft's SDK for Go (armcompute, armnetwork,
// azidentity), and authenticated with no secret: the function's Google ID
// token is the client assertion of a federated identity (credential.go).
//
// It keeps every rule the other providers keep (docs/concepts/providers.md),
// in Azure's terms:
//
//   - Labels are tags, set in the call that makes each resource: the
//     contract's three on the VM, its NIC and its public IP, and the VM
//     side's (the proxy port, the status id) on the VM (tags.go).
//   - Create is idempotent by the deterministic name. Every resource is
//     named from the VM's name (NAME-ip, NAME-nic, NAME-osdisk, NAME), so a
//     create first reads the VM of that name and adopts it when its uid tag
//     is the proxy's, and its PUT carries If-None-Match: *, so a create
//     racing another (or retried after a lost answer) never overwrites a
//     VM: Azure answers 412 and the VM is read and adopted. The public IP
//     and the NIC are PUT with the same body each time, which ARM takes as
//     no change.
//   - Long-running operations (every PUT and DELETE of ARM) are followed
//     with the SDK's pollers (lro.go). The IP's and the NIC's are waited
//     for, since the next PUT names them; the VM's is not (Create returns
//     once Azure accepted it, as the contract asks; Get reads the VM's
//     provisioning state). A poller cut short (the call's deadline) leaves
//     its ResumeToken in the provider's memory, keyed by the resource, and
//     the next call of the same process resumes it instead of sending the
//     PUT or DELETE again. A crash loses that memory: the next process
//     reads each resource by its name first, and a resource still being
//     made is PUT again with the same body, which ARM accepts once the
//     running operation ends (until then it answers a conflict, transient).
//   - Placement: a proxy's region is an Azure location (westeurope) among
//     AZURE_LOCATIONS, its zone one of the location's availability zones,
//     named as Kubernetes on Azure names them (westeurope-1). A placement
//     that names no zone gets one chosen from the uid, past those found
//     out of capacity; so SkuNotAvailable, AllocationFailed and
//     ZonalAllocationFailed, synchronous or from the VM's failed
//     provisioning, move on to the next zone (errors.go).
//   - Quota (OperationNotAllowed with a quota message, QuotaExceeded) is
//     KindQuota, its message kept for the proxy's status; 429 is retried by
//     azcore's retry policy with its Retry-After (up to MaxRetryDelay), and
//     past that returned as KindRateLimited with the wait.
//   - Static proxies: the public IP NAME-ip is made with deleteOption
//     Detach, so it outlives the VM; the next VM of the proxy (the same
//     name) takes it again. Delete of the VM leaves it; Delete of its
//     providerID (Instance.AddressID) releases it; ListByTag lists it, in
//     state Terminated, while no NIC holds it. An Ephemeral proxy's IP has
//     deleteOption Delete and goes with the VM.
//   - Reconfigure writes the VM's userData (reconfigure.go), which the VM's
//     agent polls through IMDS and applies without a reboot.
//
// Readiness is the VM side's, as for hetzner, aws and digitalocean: a VM
// that runs the default bootstrap is Running only once its proxy answers
// the control plane's status request through the proxy port (Prober), and
// it boots with user-data made by a Renderer, sent both as customData
// (what cloud-init reads at the first boot) and userData (what IMDS serves
// and Reconfigure changes).
//
// # What a crash can leave
//
// Create makes the IP, then the NIC, then the VM; Delete deletes the VM,
// whose deleteOptions take its OS disk, its NIC and an Ephemeral IP, then
// deletes whichever of NAME-osdisk, NAME-nic and (Ephemeral) NAME-ip is
// still there (a VM deleted by someone else with other options, a cascade
// cut short). A crash between Create's PUTs leaves an IP, or an IP and a
// NIC, with the proxy's tags and no VM: the next Create of the proxy takes
// them, and if none comes (the proxy was deleted), ListByTag lists such a
// NIC or IP under the VM's providerID in state Terminated, so the garbage
// collector's Delete of that providerID takes them under its usual rules.
//
// providerIDs are "azure://" followed by the ARM resource id of the VM, or
// of a Static proxy's public IP.
//
// The files: provider.go (configuration, clients), credential.go (the
// federated credential), names.go (resource names, providerIDs), tags.go,
// lro.go (pollers and their resume tokens), create.go, get.go, delete.go,
// list.go, reconfigure.go, errors.go (classification), validate.go
// (placements and the operator's policy), plugin.go (the registration).
package azure

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	azcloud "github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v8"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/vmside"
)

// Type is the registry type of this provider.
const Type = "azure"

// Config is the provider's configuration (the composition root reads it
// from the AZURE_* variables).
type Config struct {
	// SubscriptionID and ResourceGroup are where every resource is made
	// (AZURE_SUBSCRIPTION_ID, AZURE_RESOURCE_GROUP). Required.
	SubscriptionID, ResourceGroup string
	// Deployment is the value of every resource's LabelDeployment tag,
	// and the one ListByTag lists; empty is provider.DefaultDeployment.
	Deployment string
	// Subnets are the subnet of each allowed location, by location
	// (AZURE_SUBNET_IDS): a NIC joins its location's, whose network
	// security group opens the proxy ports. Required: a location without
	// one cannot be created in.
	Subnets map[string]string
	// Renderer makes the user-data of a VM that runs the default
	// bootstrap; Prober asks such a VM whether its proxy serves. Both are
	// required.
	Renderer vmside.Renderer
	Prober   vmside.Prober
	// Log receives the provider's decisions; nil discards them. It never
	// receives a token or a VM's user-data.
	Log *slog.Logger
	// Now is the clock of the tags' creation times; nil is time.Now.
	Now func() time.Time
	// PollEvery is the wait between two polls of a long-running
	// operation; 0 is DefaultPollEvery.
	PollEvery time.Duration
}

// DefaultPollEvery is how often an IP's or a NIC's operation is polled:
// ARM makes either in a few seconds.
const DefaultPollEvery = 2 * time.Second

// DefaultPollInterval is how often the reconciler asks a booting VM
// whether its proxy serves (provider.Polled): a VM's status door opens in
// about a minute, and each ask is one VM read and one public IP read.
const DefaultPollInterval = 10 * time.Second

// Clients are the ARM clients the provider calls: the only ones, so the
// custom role of deploy/terraform/azure grants exactly their operations.
type Clients struct {
	VMs   *armcompute.VirtualMachinesClient
	Disks *armcompute.DisksClient
	NICs  *armnetwork.InterfacesClient
	IPs   *armnetwork.PublicIPAddressesClient
	// ComputeUsage and NetworkUsage read the subscription's quotas of a
	// location (Quotas).
	ComputeUsage *armcompute.UsageClient
	NetworkUsage *armnetwork.UsagesClient
}

// Retry is the retry policy of every client: azcore's (it retries 408,
// 429, 500, 502, 503 and 504, waiting what Retry-After says), with a cap
// on the wait a function spends asleep; a longer Retry-After is returned
// as KindRateLimited with its wait, for the reconciler to honour.
var Retry = policy.RetryOptions{MaxRetries: 3, RetryDelay: time.Second, MaxRetryDelay: 10 * time.Second}

// NewClients makes the clients for subscription with cred. endpoint
// replaces Azure's Resource Manager (a fake on this machine); transport,
// when not nil, replaces the HTTP client (the SDK's fakes in tests).
func NewClients(subscription string, cred azcore.TokenCredential, endpoint string, transport policy.Transporter) (Clients, error) {
	opts := &arm.ClientOptions{ClientOptions: azcore.ClientOptions{
		Retry:     Retry,
		Telemetry: policy.TelemetryOptions{ApplicationID: "egress-proxies"},
	}}
	if transport != nil {
		opts.Transport = transport
	}
	if endpoint != "" {
		opts.Cloud = azcloud.Configuration{Services: map[azcloud.ServiceName]azcloud.ServiceConfiguration{
			azcloud.ResourceManager: {Endpoint: endpoint, Audience: azcloud.AzurePublic.Services[azcloud.ResourceManager].Audience},
		}}
		// A fake on loopback may serve plain HTTP: the token it is sent
		// is LocalToken's, no account's.
		opts.InsecureAllowCredentialWithHTTP = true
	}
	var c Clients
	var err error
	if c.VMs, err = armcompute.NewVirtualMachinesClient(subscription, cred, opts); err != nil {
		return Clients{}, fmt.Errorf("azure virtual machines client: %w", err)
	}
	if c.Disks, err = armcompute.NewDisksClient(subscription, cred, opts); err != nil {
		return Clients{}, fmt.Errorf("azure disks client: %w", err)
	}
	if c.NICs, err = armnetwork.NewInterfacesClient(subscription, cred, opts); err != nil {
		return Clients{}, fmt.Errorf("azure network interfaces client: %w", err)
	}
	if c.IPs, err = armnetwork.NewPublicIPAddressesClient(subscription, cred, opts); err != nil {
		return Clients{}, fmt.Errorf("azure public IP addresses client: %w", err)
	}
	if c.ComputeUsage, err = armcompute.NewUsageClient(subscription, cred, opts); err != nil {
		return Clients{}, fmt.Errorf("azure compute usage client: %w", err)
	}
	if c.NetworkUsage, err = armnetwork.NewUsagesClient(subscription, cred, opts); err != nil {
		return Clients{}, fmt.Errorf("azure network usages client: %w", err)
	}
	return c, nil
}

// Provider is the Azure provider.
type Provider struct {
	c   Clients
	cfg Config
	// lros are the resume tokens of operations this process started and
	// did not see finish (lro.go).
	lros *lros
}

// New returns a provider over the clients (NewClients).
func New(c Clients, cfg Config) (*Provider, error) {
	switch {
	case c.VMs == nil || c.Disks == nil || c.NICs == nil || c.IPs == nil:
		return nil, errors.New("azure provider: a client is missing (NewClients makes them)")
	case cfg.SubscriptionID == "" || cfg.ResourceGroup == "":
		return nil, errors.New("azure provider: the subscription and the resource group are required (AZURE_SUBSCRIPTION_ID, AZURE_RESOURCE_GROUP)")
	case cfg.Renderer == nil || cfg.Prober == nil:
		return nil, errors.New("azure provider: a Renderer (the VMs' user-data) and a Prober (their readiness) are required")
	case len(cfg.Subnets) == 0:
		return nil, errors.New("azure provider: no subnet: AZURE_SUBNET_IDS names one per location")
	}
	if cfg.Deployment == "" {
		cfg.Deployment = provider.DefaultDeployment
	}
	if err := provider.ValidateDeployment(cfg.Deployment); err != nil {
		return nil, fmt.Errorf("azure provider: %w", err)
	}
	for loc, id := range cfg.Subnets {
		if err := checkSubnet(loc, id); err != nil {
			return nil, fmt.Errorf("azure provider: %w", err)
		}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.PollEvery <= 0 {
		cfg.PollEvery = DefaultPollEvery
	}
	return &Provider{c: c, cfg: cfg, lros: &lros{tokens: map[string]string{}}}, nil
}

var (
	_ provider.Provider     = (*Provider)(nil)
	_ provider.Reconfigurer = (*Provider)(nil)
	_ provider.Polled       = (*Provider)(nil)
	_ provider.Scoped       = (*Provider)(nil)
)

// PollInterval makes the provider a provider.Polled: its VMs cannot call
// home.
func (p *Provider) PollInterval() time.Duration { return DefaultPollInterval }

// lros holds resume tokens by resource id and operation.
type lros struct {
	mu     sync.Mutex
	tokens map[string]string
}

// The VM side's interfaces (package vmside), as the other cloud-init
// clouds' providers take them.
type (
	Prober   = vmside.Prober
	Status   = vmside.Status
	Renderer = vmside.Renderer
)
