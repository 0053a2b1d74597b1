package proxy

import (
	"time"

	"github.com/egress-proxies/egress/internal/pricing"
)

// Phase is where a proxy is in its life.
type Phase string

const (
	// PhasePending: the document exists; no reconcile has acted on it yet.
	PhasePending Phase = "Pending"
	// PhaseCreating: a Create is pending or submitted; no providerID yet.
	PhaseCreating Phase = "Creating"
	// PhaseProvisioning: the VM exists and is starting.
	PhaseProvisioning Phase = "Provisioning"
	// PhaseReady: the VM runs and status.endpoint is usable.
	PhaseReady Phase = "Ready"
	// PhaseReplacing: the VM is being replaced, after it was lost, stopped
	// or failed to boot, on a rotation, or for a change it cannot take in
	// place: the old VM is deleted, then a new one created.
	PhaseReplacing Phase = "Replacing"
	// PhaseReconfiguring: the VM serves and was handed a new
	// configuration (a PATCH, new credentials); the endpoint stays, and the
	// proxy is Ready again once the VM reports the new generation.
	PhaseReconfiguring Phase = "Reconfiguring"
	// PhaseDeleting: deletion was requested; the document goes once the VM
	// is gone.
	PhaseDeleting Phase = "Deleting"
	// PhaseFailed: a permanent provider error, or MaxBootFailures VMs in a
	// row that did not become ready; status.message says which. Its VM is
	// deleted (a Static proxy keeps its address until it is deleted).
	PhaseFailed Phase = "Failed"
)

// Phases lists every phase in the order of a proxy's life, for a reader
// that must name the phases with no proxy in them too (the GC's fleet
// line).
var Phases = []Phase{PhasePending, PhaseCreating, PhaseProvisioning, PhaseReady, PhaseReconfiguring, PhaseReplacing, PhaseDeleting, PhaseFailed}

// Settled reports whether a proxy in this phase needs no further work until
// something changes: Ready and Failed are settled, every other phase is on
// its way somewhere.
func (p Phase) Settled() bool { return p == PhaseReady || p == PhaseFailed }

// ConditionReady is the type of the condition that says whether the proxy
// serves, and why not.
const ConditionReady = "Ready"

// Condition is one aspect of the status, Kubernetes style. Messages carry no
// timestamps so that an unchanged condition compares equal and is not
// rewritten.
type Condition struct {
	Type               string    `json:"type" firestore:"type"`
	Status             string    `json:"status" firestore:"status"` // "True", "False", "Unknown"
	Reason             string    `json:"reason,omitempty" firestore:"reason,omitempty"`
	Message            string    `json:"message,omitempty" firestore:"message,omitempty"`
	LastTransitionTime time.Time `json:"lastTransitionTime" firestore:"lastTransitionTime"`
}

// Status is what the reconciler observed and did.
type Status struct {
	Phase      Phase  `json:"phase" firestore:"phase"`
	ProviderID string `json:"providerID,omitempty" firestore:"providerID,omitempty"`
	// Account is the cloud account (package account) the VM lives in:
	// placement's choice, written with the intent to create, before the
	// VM exists, and the account whose provider every later call about
	// the VM goes to. "" is the deployment's default account.
	Account string `json:"account,omitempty" firestore:"account,omitempty"`
	IP      string `json:"ip,omitempty" firestore:"ip,omitempty"`
	// Endpoint is "ip:port", set once the proxy is Ready.
	Endpoint string `json:"endpoint,omitempty" firestore:"endpoint,omitempty"`
	// ProxyURL is http://USER:PASSWORD@ip:port, what a client configures.
	// It is never stored: the API fills it in from the credentials in the
	// document's private part, for those allowed to see them.
	ProxyURL string `json:"proxyURL,omitempty" firestore:"-"`
	// Socks5URL, for a spec with a socks5Port, is
	// socks5h://USER:PASSWORD@ip:socks5Port, the form curl's -x and the
	// ALL_PROXY variable take (socks5h: the proxy resolves names, so its
	// destination filter sees what the name resolves to). Never stored,
	// and shown as ProxyURL is.
	Socks5URL string `json:"socks5URL,omitempty" firestore:"-"`
	// IPv6 is the current VM's external IPv6 address, when it has one (a
	// dual-stack subnet: GCP_STACK_TYPE=IPV4_IPV6): the proxy then
	// reaches IPv6 destinations from it, and clients may reach the proxy
	// there too.
	IPv6 string `json:"ipv6,omitempty" firestore:"ipv6,omitempty"`
	// IPv6Prefix is the current VM's routed IPv6 prefix (CIDR), when its
	// cloud gives one (a Hetzner server's /64, a GCE dual-stack
	// interface's /96, an EC2 interface's delegated /80, a Droplet's
	// /124): the addresses spec.ipv6Egress picks sources from.
	IPv6Prefix string `json:"ipv6Prefix,omitempty" firestore:"ipv6Prefix,omitempty"`
	// State is the provider's InstanceState as last observed.
	State              string      `json:"state,omitempty" firestore:"state,omitempty"`
	Conditions         []Condition `json:"conditions,omitempty" firestore:"conditions,omitempty"`
	ObservedGeneration int64       `json:"observedGeneration,omitempty" firestore:"observedGeneration,omitempty"`
	Message            string      `json:"message,omitempty" firestore:"message,omitempty"`
	// ConsoleTail, after the last boot failure of a Failed proxy, is the
	// last lines of its VM's serial console, any line that carried the
	// proxy's credentials or a value of its cloud-init removed before it
	// was stored. The API shows it to the namespace's editors and owners
	// only: it is the output of the VM's software, which a custom
	// cloud-init controls. It has no Firestore field: a project Viewer
	// reads every document, so the store keeps it sealed in
	// SealedConsoleTail, as it keeps the password (package store).
	ConsoleTail []string `json:"consoleTail,omitempty" firestore:"-"`
	// SealedConsoleTail is ConsoleTail sealed for this proxy's uid, as the
	// store keeps it; never shown by the API.
	SealedConsoleTail string `json:"-" firestore:"sealedConsoleTail,omitempty"`
	// Zone is where the current VM runs, the provider's choice when the
	// placement names only a region.
	Zone string `json:"zone,omitempty" firestore:"zone,omitempty"`
	// Rotations counts the VMs replaced on purpose: by a rotate request or
	// by maxAge.
	Rotations int64 `json:"rotations,omitempty" firestore:"rotations,omitempty"`
	// Traffic is what the current VM last reported of the traffic it
	// carried since its proxy started, as the reconciler last read it.
	Traffic *Traffic `json:"traffic,omitempty" firestore:"traffic,omitempty"`
	// Cost is what the proxy cost in the calendar month (UTC) so far and
	// its forecast for the month, VM, address and traffic apart, in the
	// deployment's currency, as the reconciler last computed it from the
	// price catalog (package spend): "unknown", with the reason, when its
	// price or a rate could not be had.
	Cost *pricing.Cost `json:"cost,omitempty" firestore:"cost,omitempty"`
	// RotationWaitUntil, set while the VM is past its maxAge but its
	// namespace asked for NAMESPACE_CREATES_PER_HOUR VMs within the last
	// hour, is when the rotation may be counted: the VM serves on until
	// then, and Message says why.
	RotationWaitUntil *time.Time `json:"rotationWaitUntil,omitempty" firestore:"rotationWaitUntil,omitempty"`
}

// Traffic is one VM's report of its proxy's traffic: bytes received from
// and sent to clients, and client connections, since the proxy started.
type Traffic struct {
	BytesIn     int64     `json:"bytesIn" firestore:"bytesIn"`
	BytesOut    int64     `json:"bytesOut" firestore:"bytesOut"`
	Connections int64     `json:"connections" firestore:"connections"`
	ReportTime  time.Time `json:"reportTime" firestore:"reportTime"`
	// Month and MonthBytes are the calendar month (UTC, "2006-01") of the
	// report and the bytes the VM carried in it, both ways together, kept
	// across its engine's restarts: what spec.trafficQuota bounds.
	Month      string `json:"month,omitempty" firestore:"month,omitempty"`
	MonthBytes int64  `json:"monthBytes,omitempty" firestore:"monthBytes,omitempty"`
}

// Settled reports whether a proxy with this status needs no further work
// until something changes. Its phase must be settled, and a Failed proxy
// must have no VM left: the VM it still names is deleted first, and the
// sweep comes back to one whose deletion was cut short.
func (s Status) Settled() bool {
	return s.Phase.Settled() && (s.Phase != PhaseFailed || s.ProviderID == "")
}
