// Package provider defines the contract every cloud provider backend
// implements: Create/Get/Delete/ListByTag for a single VM, keyed by an
// opaque providerID. Concrete implementations live in subpackages (mock,
// gcp, hetzner); this package has no dependency on any of them, so a type→
// constructor registry (Registry) can be assembled at the composition root
// (internal/app) without an import cycle.
//
// The contract is kept as the original Kubernetes operator defined it: five
// more providers must satisfy the same interface. Where the operator spoke of
// a Proxy CR, this product has a proxy document in Firestore
// (namespaces/{ns}/proxies/{name}); its uid plays the CR UID's role.
package provider

import (
	"context"
	"time"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// InstanceState is a provider's lifecycle state for a single VM.
type InstanceState string

const (
	StateProvisioning InstanceState = "Provisioning"
	StateRunning      InstanceState = "Running"
	StateStopped      InstanceState = "Stopped"
	StateTerminated   InstanceState = "Terminated"
)

// GC contract: every cloud resource a provider creates must carry these two
// labels/tags. Orphan GC (internal/gc) relies on both — Managed to find
// resources it owns at all, UID to decide whether a resource is still
// claimed by a live proxy document.
const (
	LabelManaged    = "proxy-operator-managed"
	LabelManagedYes = "true"
	LabelUID        = "proxy-operator-uid"
)

// LabelDeployment, added to the original contract, says which deployment
// of this product made a resource, since several share one project
// (staging and production, a team's own) and the original Kubernetes
// operator used the two labels above too. Every resource a provider
// creates carries it beside them, valued with the provider's deployment
// name (DEPLOYMENT, an RFC 1035 label; DefaultDeployment when unset).
// ListByTag returns this deployment's resources, and the managed ones
// that carry no deployment label at all (made before the label, by this
// deployment or by anything else using the two labels): never another
// deployment's. The garbage collector deletes only its own deployment's.
const (
	LabelDeployment   = "egress-deployment"
	DefaultDeployment = "egress"
)

// Instance is a provider's view of a single VM.
type Instance struct {
	// ID is the opaque providerID, stable for the life of the VM.
	ID string
	// IP is the VM's current address, empty until it's assigned one.
	IP string
	// State is the VM's current lifecycle state.
	State InstanceState
	// UID is the LabelUID value read back off the resource — the owning
	// proxy document's uid, or "" if the resource predates this label (shouldn't
	// happen for anything this operator created, but Get/ListByTag callers
	// must tolerate it rather than panic).
	UID string
	// CreatedAt is when the provider created the resource. Orphan GC uses
	// this to skip young instances that may still be mid-create, avoiding a
	// race with an in-flight Create whose status write hasn't landed yet.
	CreatedAt time.Time

	// BootError, added to the original contract, is the reason the VM's
	// bootstrap reported that it cannot serve (the gcp provider reads it
	// from the guest attribute egress/error). A VM with a BootError and no
	// RefusedGeneration stays in StateProvisioning and will not become
	// Running by itself. Empty when nothing went wrong or the provider
	// cannot tell.
	BootError string
	// RefusedGeneration, added with Reconfigurer, is the generation of a
	// configuration the VM was handed and could not serve: it put back the
	// one it served before, and serves that still (Generation, Running),
	// and BootError says why. 0 when it refused none since its last
	// successful apply.
	RefusedGeneration int64
	// Zone, added to the original contract, is where the VM runs, when the
	// provider has zones: the one it chose for a placement that names only
	// a region.
	Zone string
	// AddressID, added to the original contract, is the providerID of the
	// static address the VM uses (CreateRequest.StaticIP); Delete of it
	// releases the address. Empty for an ephemeral address.
	AddressID string
	// Deployment, added to the original contract, is the LabelDeployment
	// value read back off the resource: the provider's own deployment, or
	// "" for a managed resource without the label, which the garbage
	// collector reports and never deletes.
	Deployment string
	// Traffic, added to the original contract, is what the VM last
	// reported of the traffic its proxy carried since it started (the gcp
	// provider reads the guest attribute egress/traffic); nil when the VM
	// reported nothing or the provider cannot tell.
	Traffic *Traffic
	// IPv6, added to the original contract, is the VM's external IPv6
	// address, when it has one (gcp: a dual-stack interface's
	// ipv6AccessConfigs); "" when it has none or the provider cannot tell.
	IPv6 string
	// IPv6Prefix, added with IPv6, is the VM's routed IPv6 prefix as a
	// CIDR ("2001:db8:1:2::/64"), the addresses its engine may pick
	// sources from (spec.ipv6Egress): a Hetzner server's /64, a GCE
	// dual-stack interface's /96, an EC2 interface's delegated /80, a
	// Droplet's /124. "" when it has none or the provider cannot tell.
	IPv6Prefix string
	// Generation, added with Reconfigurer, is the generation of the proxy
	// engine's configuration the VM last reported serving (the gcp provider
	// reads it from the guest attribute egress/ready); 0 when it reported
	// none or the provider cannot tell. A warm pool's unclaimed VM serves
	// generation 0.
	Generation int64
	// StatusPort, added with the clouds whose VMs boot by cloud-init
	// (package vmside), is the port on which the VM's proxy answers the
	// control plane's status request: the control plane reads such a VM
	// by asking it, its readiness and its access lines. 0 for a VM that
	// runs no default bootstrap, and for a provider whose VMs report
	// otherwise (gcp: guest attributes and the call-home).
	StatusPort int32
	// StatusID, added with StatusPort, is the VM's status id (its label
	// vmside.LabelStatusID), from which the control plane derives the
	// VM's own status credential and the key it signs its answers with
	// (package vmstatus). "" for a VM without one.
	StatusID string
}

// Traffic is a proxy VM's report of its traffic since its proxy started.
type Traffic struct {
	// BytesIn are the bytes received from clients, BytesOut those sent to
	// them; Connections the client connections accepted.
	BytesIn, BytesOut, Connections int64
	// ReportTime is when the VM made the report.
	ReportTime time.Time
	// Month and MonthBytes, added with spec.trafficQuota, are the
	// calendar month (UTC, "2006-01") of the report and the bytes the VM
	// carried in it, both ways together, across its engine's restarts
	// (vmconfig.Stats.MonthBytes): what the quota bounds.
	Month      string
	MonthBytes int64
}

// Placement is the provider-opaque placement/size configuration a Create
// call needs. It deliberately does not import the proxy domain types — this
// package stays independent of them; the reconciler maps proxy.Placement to
// this struct when calling Create. Providers may
// ignore fields that don't apply to them.
type Placement struct {
	Region      string
	Zone        string
	MachineType string
	Image       string
}

// CreateRequest carries everything a provider needs to create a VM.
type CreateRequest struct {
	// Name is the deterministic instance name, already derived from the
	// owning document's uid via NameFromUID. Create must be idempotent keyed on
	// this name: a repeat call after a crash must find the existing
	// instance rather than create a duplicate.
	Name string
	// UID is the owning proxy document's uid. Create must tag/label the created
	// resource with LabelUID=UID and LabelManaged=LabelManagedYes.
	UID string

	Namespace string
	ProxyName string
	// Pool, added to the original contract, is set for a warm pool's VM
	// (its document is pools/{Pool}/proxies/{ProxyName}, with no
	// namespace): the VM's call-home names it so.
	Pool string

	Placement Placement
	// CloudInit is the already-resolved user-data (a Secret reference, if
	// used, has already been read by the caller).
	CloudInit string
	Port      int32

	// StartupScript, added to the original contract, is the default
	// bootstrap (package bootstrap): a shell script the VM runs as root at
	// every boot, which sets up the proxy and reports when it serves. It is
	// empty when the spec brings its own CloudInit. A provider sends it the
	// way its images run one (gcp: the startup-script metadata) and, when
	// it is set, reports StateRunning only once the script said the proxy
	// serves.
	StartupScript string
	// Engine, added with StartupScript, is the proxy engine's
	// configuration the startup script applies (package bootstrap), which
	// holds password hashes, never a password. A provider sends it beside
	// the script (gcp: the egress-config metadata item, as JSON); the mock,
	// for the local stack, serves it on loopback. Nil with a custom
	// cloud-init.
	Engine *vmconfig.Config

	// The fields below are added to the original contract too.

	// RequestID names this create attempt: a new one for each new attempt
	// (the first create, each replacement, each rotation), the same for a
	// retry of one attempt (after a crash or a 503). A provider whose API
	// de-duplicates requests (gcp: the insert's requestId) passes it on, so
	// a retry never makes a second VM and a new attempt is never ignored.
	// Empty: the provider derives one from UID and Name.
	RequestID string
	// StaticIP asks for an address that outlives the VM: reserved (named
	// and labelled from the uid) before the VM if it does not exist yet,
	// and attached to it, so every VM of the proxy has the same one. It is
	// released by Delete of the Instance's AddressID, and an unused one is
	// listed by ListByTag for the garbage collector.
	StaticIP bool
	// AvoidZones are zones of the placement's region found out of capacity
	// for this proxy: a provider that chooses the zone (the placement names
	// none) chooses another.
	AvoidZones []string
	// IPv6Prefix asks for a routed IPv6 prefix on the VM (its length is
	// the plugin's IPv6Prefix), which Get reports as Instance.IPv6Prefix:
	// the spec's ipv6Egress picks sources from it. A provider whose VMs
	// get one at no cost whatever is asked (hetzner, digitalocean; gcp on
	// a dual-stack subnet) may ignore it; one where asking has a cost or
	// a condition (aws: a Nitro instance, a subnet with IPv6) asks only
	// when it is set.
	IPv6Prefix bool
}

// Provider is the contract every cloud backend implements. Kept
// deliberately minimal: this is the same interface five future providers
// must satisfy.
type Provider interface {
	// Create starts VM creation and returns as soon as the request is
	// submitted — it does not block until the VM is running. Must be
	// idempotent by req.Name, so a repeat call after a crash finds the
	// existing VM instead of duplicating it.
	Create(ctx context.Context, req CreateRequest) (providerID string, err error)

	// Get returns the current state of a previously created instance.
	// Returning (nil, ErrNotFound) is a normal, expected outcome — it
	// drives the reconciler's replacement and adoption logic, not an
	// exceptional condition.
	Get(ctx context.Context, providerID string) (*Instance, error)

	// Delete is idempotent: deleting an instance that no longer exists is
	// not an error.
	Delete(ctx context.Context, providerID string) error

	// ListByTag returns every instance this operator has ever tagged with
	// LabelManaged=LabelManagedYes, for orphan GC.
	//
	// Of those, only the provider's own deployment's and the ones without
	// a LabelDeployment (see there): never another deployment's.
	ListByTag(ctx context.Context) ([]Instance, error)
}

// Scoped, an optional interface beside Provider, is a provider whose
// ListByTag covers only some of the providerIDs its Get and Delete act on.
// The gcp provider lists one project (GCP_PROJECT), while each providerID
// names its own: the VMs of proxies made before the project changed are
// served, replaced and deleted through their providerIDs, but never
// listed. The garbage collector asks, so that it does not take such a VM
// for lost, and says how many there are.
type Scoped interface {
	// Lists reports whether ListByTag would list the resource providerID
	// names, were it there.
	Lists(providerID string) bool
}

// Lists reports whether p's ListByTag would list what providerID names,
// looking beneath p's decorators (Unwrap) for a Scoped provider; a
// provider that is not Scoped lists everything it made.
func Lists(p Provider, providerID string) bool {
	for {
		if s, ok := p.(Scoped); ok {
			return s.Lists(providerID)
		}
		d, ok := p.(interface{ Unwrap() Provider })
		if !ok {
			return true
		}
		p = d.Unwrap()
	}
}
