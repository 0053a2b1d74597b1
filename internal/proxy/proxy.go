// Package proxy holds the domain types of the product: a proxy's spec and
// status, the phases it moves through, the key that names its document, the
// message that asks for it to be reconciled, and the errors every layer uses
// to speak about documents. It imports no cloud client, so the API, the
// reconciler and the GC share it without depending on Firestore.
package proxy

import (
	"net"
	"strconv"
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

// DefaultPort is the proxy port when a spec gives none.
const DefaultPort = 3128

// IPPolicy says what external address a proxy's VMs have.
type IPPolicy string

const (
	// IPEphemeral: each VM gets the address its provider gives it; a
	// replaced VM comes back with another.
	IPEphemeral IPPolicy = "Ephemeral"
	// IPStatic: a reserved regional address, made before the first VM and
	// kept across replacements and rotations, so an allowlist that names
	// it survives a lost VM; released after the last VM on deletion.
	IPStatic IPPolicy = "Static"
)

// IPv6Egress says how a proxy's connections to IPv6 destinations pick
// their source (spec.ipv6Egress).
type IPv6Egress string

const (
	// IPv6Off: no source of the prefix is chosen; the default where the
	// VM has no prefix.
	IPv6Off IPv6Egress = "off"
	// IPv6Single: one address, the VM's own, for every connection; the
	// default where the VM has a prefix.
	IPv6Single IPv6Egress = "single"
	// IPv6PerConnection: a fresh random address of the prefix for each
	// connection.
	IPv6PerConnection IPv6Egress = "perConnection"
	// IPv6PerSession: one address of the prefix per session (a client's
	// USER-session-ID), a fresh one per connection for plain USER.
	IPv6PerSession IPv6Egress = "perSession"
)

// IPv6Egresses are the modes, in the order the docs list them.
var IPv6Egresses = []IPv6Egress{IPv6Off, IPv6Single, IPv6PerConnection, IPv6PerSession}

// NeedsPrefix reports whether the mode picks addresses of a routed prefix
// beyond the VM's own, which only a cloud that gives one can serve.
func (m IPv6Egress) NeedsPrefix() bool { return m == IPv6PerConnection || m == IPv6PerSession }

// DefaultIPv6Egress is the mode of a spec that names none, on a cloud
// whose VMs get a routed IPv6 prefix of prefixLen bits (0: none).
func DefaultIPv6Egress(prefixLen int) IPv6Egress {
	if prefixLen > 0 {
		return IPv6Single
	}
	return IPv6Off
}

// Placement says where the VM runs and what it is made of.
type Placement struct {
	Region      string `json:"region,omitempty" firestore:"region,omitempty"`
	Zone        string `json:"zone,omitempty" firestore:"zone,omitempty"`
	MachineType string `json:"machineType,omitempty" firestore:"machineType,omitempty"`
	Image       string `json:"image,omitempty" firestore:"image,omitempty"`
}

// Spec is what the user asked for. A POST with another spec for an existing
// name is a conflict; a PATCH changes the reconfigurable fields
// (allowedSourceRanges, connectPorts, bandwidthLimit, accessLog, ipv6Egress) only, and
// counts a generation.
type Spec struct {
	// Provider is the registry type of the cloud backend ("mock", "gcp").
	Provider  string    `json:"provider,omitempty" firestore:"provider"`
	Placement Placement `json:"placement" firestore:"placement"`
	Port      int32     `json:"port,omitempty" firestore:"port"`
	// CloudInit is inline user-data for the VM.
	CloudInit string `json:"cloudInit,omitempty" firestore:"cloudInit,omitempty"`
	// CloudInitSecret is a Secret Manager version name
	// (projects/P/secrets/S/versions/V) whose payload is the user-data. Only
	// the name is stored; the reconciler reads the payload when it creates
	// the VM.
	CloudInitSecret string `json:"cloudInitSecret,omitempty" firestore:"cloudInitSecret,omitempty"`
	// AllowedSourceRanges are the CIDRs that may reach the proxy port.
	AllowedSourceRanges []string `json:"allowedSourceRanges,omitempty" firestore:"allowedSourceRanges,omitempty"`
	// ConnectPorts are the ports a CONNECT through the proxy may reach (and
	// the only ports it opens connections to); empty means
	// DefaultConnectPorts.
	ConnectPorts []int32 `json:"connectPorts,omitempty" firestore:"connectPorts,omitempty"`
	// IPPolicy is Ephemeral (the default) or Static.
	IPPolicy IPPolicy `json:"ipPolicy,omitempty" firestore:"ipPolicy,omitempty"`
	// MaxAge, a Go duration ("24h"), rotates the proxy's VM once it is
	// that old; empty never rotates by age. The API holds it to at least
	// ROTATE_MIN_INTERVAL, the least time between two rotations a user
	// asks for: a rotation by age is one the spec asks for, and counts
	// against the namespace's NAMESPACE_CREATES_PER_HOUR like one.
	MaxAge string `json:"maxAge,omitempty" firestore:"maxAge,omitempty"`
	// Socks5Port, when set, is a second port of the proxy's engine that
	// serves SOCKS5 (RFC 1928, with RFC 1929's username and password: the
	// proxy's credentials; CONNECT, and UDP ASSOCIATE with Socks5UDP) to
	// the same sources, destinations and CONNECT ports as HTTP. 0 serves
	// none. Like Port it must be a port the firewall opens (PROXY_PORTS),
	// and not Port itself.
	Socks5Port int32 `json:"socks5Port,omitempty" firestore:"socks5Port,omitempty"`
	// Socks5UDP, with Socks5Port, carries SOCKS5 UDP ASSOCIATE (RFC 1928
	// §7) too: the same users and sources, each datagram's destination
	// checked against the same deny ranges, the bandwidth limit and one
	// access line per association with its datagram counts; the relay is
	// the same port number over UDP (which the platform's firewall must
	// open for UDP too). False, the default: an ASSOCIATE is refused.
	Socks5UDP bool `json:"socks5UDP,omitempty" firestore:"socks5UDP,omitempty"`
	// IPv6Egress is how a connection to an IPv6 destination picks its
	// source address from the VM's routed IPv6 prefix (status.ipv6Prefix):
	// IPv6Off, IPv6Single, IPv6PerConnection or IPv6PerSession. The API
	// writes the default, single where the proxy's cloud gives its VMs a
	// prefix and off where it gives none (the plugin's IPv6Prefix), and
	// refuses perConnection and perSession on a cloud that gives none: a
	// proxy that cannot rotate its source must say so at the API, not at
	// boot. Empty, in a document from before the field, is what the VM
	// did then: one address. Connections to IPv4 destinations keep the
	// VM's IPv4 address whatever it says. A PATCH changes it: live where
	// the VM takes changes in place, with a new VM elsewhere.
	IPv6Egress IPv6Egress `json:"ipv6Egress,omitempty" firestore:"ipv6Egress,omitempty"`
	// BandwidthLimit bounds each direction of the proxy's traffic, every
	// tunnel and request together, as ParseBandwidth reads it ("100Mbit"); empty is no
	// bound. A PATCH changes it on the VM.
	BandwidthLimit string `json:"bandwidthLimit,omitempty" firestore:"bandwidthLimit,omitempty"`
	// TrafficQuota bounds the bytes the proxy carries in a calendar month
	// (UTC), both directions together, as ParseTrafficQuota reads it
	// ("500GB"); empty is no bound. The engine enforces it: once the
	// month's bytes reach it, new connections are refused (403
	// quota-exceeded; SOCKS5 reply 2) and the running ones finish; the
	// count starts again at 00:00 UTC on the first. A PATCH changes it on
	// the VM, as it does the bandwidth limit.
	TrafficQuota string `json:"trafficQuota,omitempty" firestore:"trafficQuota,omitempty"`
	// AccessLog says whether the proxy keeps one access line per tunnel
	// and per plain-HTTP request (who reached which host and port, when,
	// and how much): on unless a tenant that must not keep them turns it
	// off. Nil is on (WithDefaults writes it); a PATCH changes it on the
	// VM (AccessLogOn).
	AccessLog *bool `json:"accessLog,omitempty" firestore:"accessLog,omitempty"`
}

// AccessLogOn reports whether the proxy keeps an access log: the spec
// says so, or says nothing (a document from before the field).
func (s Spec) AccessLogOn() bool { return s.AccessLog == nil || *s.AccessLog }

// OwnCloudInit reports whether the spec brings its own cloud-init (inline
// or from a secret): its VM runs that, not the default bootstrap, so no
// live change reaches it in place and no warm pool serves it.
func (s Spec) OwnCloudInit() bool { return s.CloudInit != "" || s.CloudInitSecret != "" }

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
	IP         string `json:"ip,omitempty" firestore:"ip,omitempty"`
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

// Bookkeeping is the reconciler's private state in the document. It is never
// shown by the API.
type Bookkeeping struct {
	// LeaseHolder and LeaseExpireTime are the per-document lease: while an
	// unexpired lease is held, no other reconcile acts on the document.
	LeaseHolder     string    `firestore:"leaseHolder,omitempty"`
	LeaseExpireTime time.Time `firestore:"leaseExpireTime,omitempty"`
	// CreatePending is the instance name of a Create that was decided but
	// whose providerID is not yet stored.
	CreatePending string `firestore:"createPending,omitempty"`
	// CreateRequestID names the create attempt CreatePending is: a new one
	// for each new attempt (the first create, a replacement, a rotation,
	// another zone), the same for a retry of it, so the provider's request
	// de-duplication stops a duplicate and never swallows a new attempt.
	CreateRequestID string `firestore:"createRequestID,omitempty"`
	// NotBefore, after a quota or a stockout refused a create, is when the
	// next create may be tried: until then the document's events do
	// nothing, and the sweep brings the retry.
	NotBefore time.Time `firestore:"notBefore,omitempty"`
	// FullZones are the zones of the region found out of capacity since
	// the proxy was last Ready, for the provider to avoid.
	FullZones []string `firestore:"fullZones,omitempty"`
	// AddressID is the providerID of the proxy's static address, once a VM
	// was seen using it: released after the last VM on deletion.
	AddressID string `firestore:"addressID,omitempty"`
	// Replacements counts VMs replaced because they were lost or stopped.
	Replacements int64 `firestore:"replacements,omitempty"`
	// Attempts counts consecutive failed attempts, for backoff.
	Attempts int64 `firestore:"attempts,omitempty"`
	// BootStart is when the current VM was created: its boot timeout runs
	// from there.
	BootStart time.Time `firestore:"bootStart,omitempty"`
	// BootFailures counts the VMs in a row that did not become ready (a
	// boot past its timeout, or a bootstrap that reported an error); the
	// proxy fails at the configured maximum.
	BootFailures int64 `firestore:"bootFailures,omitempty"`
	// NotFoundSince is when Get first said ErrNotFound for the current
	// providerID, for the eventual-consistency grace before a replace.
	NotFoundSince time.Time `firestore:"notFoundSince,omitempty"`
	// Credentials are the proxy's username and password, made with its
	// first VM and kept for every VM after it.
	Credentials Credentials `firestore:"credentials,omitempty"`
	// SentGeneration is the generation of the proxy engine's configuration
	// the current VM was last given: at its Create, or by a Reconfigure
	// (provider.Reconfigurer). A document whose Generation differs has a
	// change the VM does not have yet. 0 for a VM claimed from a warm pool
	// that has not been given the proxy's configuration yet.
	SentGeneration int64 `firestore:"sentGeneration,omitempty"`
	// TrafficStop is the stop of the proxy's traffic at its namespace's
	// budget (tenancy.Namespace.TrafficStopped) the current VM was last
	// given, rendered into every configuration the reconciler makes for
	// the proxy (vmconfig.Config.TrafficStop): nil while none was. A
	// namespace's record whose month differs is one to hand over
	// (internal/reconcile, stop.go).
	TrafficStop *TrafficStop `firestore:"trafficStop,omitempty"`
	// ReconfigureStart is when the current VM was first handed a
	// configuration it does not serve yet (a Reconfigure): the reconfigure
	// timeout runs from there. Zero once it serves the document's
	// generation.
	ReconfigureStart time.Time `firestore:"reconfigureStart,omitempty"`
	// Retiring is the providerID of the VM a make-before-break rotation
	// replaced with a warm pool's VM: deleted once the new one is Ready,
	// and with the proxy.
	Retiring string `firestore:"retiring,omitempty"`
	// RetiringGeneration is the generation of the configuration the
	// Retiring VM was last given. It serves clients until it goes, so a
	// later generation (new credentials above all: a leaked password is
	// revoked on every VM that takes it) is handed to it too.
	RetiringGeneration int64 `firestore:"retiringGeneration,omitempty"`
	// ProgressTime is when the status last changed, kept only while the
	// phase is not settled (zero, and so absent from the document, once it
	// is). The GC sweep queries for an old ProgressTime to re-drive stuck
	// documents; settled ones have no such field and cost the query nothing.
	// The API sets it at creation, so a lost first event is caught too.
	ProgressTime time.Time `firestore:"progressTime,omitempty"`
}

// Proxy is one proxy document, as stored and as the API shows it.
type Proxy struct {
	Name       string `json:"name" firestore:"name"`
	Namespace  string `json:"namespace" firestore:"namespace"`
	UID        string `json:"uid" firestore:"uid"`
	Generation int64  `json:"generation" firestore:"generation"`
	Spec       Spec   `json:"spec" firestore:"spec"`
	Status     Status `json:"status" firestore:"status"`
	// RequestedBy is the verified email of the caller that created it, when
	// the platform passed an identity.
	RequestedBy string    `json:"requestedBy,omitempty" firestore:"requestedBy,omitempty"`
	CreateTime  time.Time `json:"createTime" firestore:"createTime"`
	// UpdateTime is the document's update time as Firestore reports it. It
	// is not a stored field: writes use it as their precondition.
	UpdateTime        time.Time  `json:"updateTime" firestore:"-"`
	DeleteRequestTime *time.Time `json:"deleteRequestTime,omitempty" firestore:"deleteRequestTime,omitempty"`
	// RotateRequestTime is when a rotation was last asked for (POST
	// …:rotate); the reconciler rotates a VM created before it.
	RotateRequestTime *time.Time `json:"rotateRequestTime,omitempty" firestore:"rotateRequestTime,omitempty"`
	// ReplaceRequestTime is when a live change (a PATCH, new credentials)
	// last asked for a new VM: one the proxy's VM cannot take in place (its
	// provider cannot reconfigure, or the spec brings its own cloud-init).
	// It and RotateRequestTime are held ROTATE_MIN_INTERVAL apart.
	ReplaceRequestTime *time.Time `json:"replaceRequestTime,omitempty" firestore:"replaceRequestTime,omitempty"`

	// Pool, set only on a warm pool's member document
	// (pools/{pool}/proxies/{name}), is the pool's name. A member's VM
	// serves no one: it waits, booted and proven, to be claimed.
	Pool string `json:"pool,omitempty" firestore:"pool,omitempty"`
	// ClaimedBy, set only on a pool's member, is the proxy that claimed its
	// VM. From the claim on, the VM is that proxy's: the member document
	// never deletes or replaces it, and stays (counted in the pool's
	// claimsLastHour) so that its uid claims the VM until the proxy has
	// relabelled it.
	//
	// It is stored as null while unclaimed (no omitempty), so that a
	// claim's query asks Firestore for unclaimed members only: a filter
	// on null matches a null field, never a missing one.
	ClaimedBy *ClaimRef `json:"claimedBy,omitempty" firestore:"claimedBy"`

	Reconciler Bookkeeping `json:"-" firestore:"reconciler"`
}

// Spent is what a deleted proxy cost in its last month, in nanos of the
// deployment's currency: what its document's deletion adds to its
// namespace's DeletedSpend.
type Spent struct {
	Month string
	Nanos int64
}

// ClaimRef names the proxy that claimed a pool member's VM, and when.
type ClaimRef struct {
	Namespace string    `json:"namespace" firestore:"namespace"`
	Name      string    `json:"name" firestore:"name"`
	UID       string    `json:"uid" firestore:"uid"`
	Time      time.Time `json:"time" firestore:"time"`
}

// Socks5Endpoint is "ip:socks5Port" once the proxy has an endpoint and
// its spec serves SOCKS5, else "".
func (p *Proxy) Socks5Endpoint() string {
	host, _, err := net.SplitHostPort(p.Status.Endpoint)
	if p.Spec.Socks5Port == 0 || err != nil {
		return ""
	}
	return net.JoinHostPort(host, strconv.Itoa(int(p.Spec.Socks5Port)))
}

// Key returns the key of the proxy's document.
func (p *Proxy) Key() Key { return Key{Namespace: p.Namespace, Name: p.Name, Pool: p.Pool} }

// Claim is what the garbage collector reads of each live document: whose
// uid it is, how far it got, where its VM is, and what it needs to tell a
// VM due for rotation. It reads nothing else, so memory stays small.
type Claim struct {
	Key   Key
	Phase Phase
	// Provider is the spec's provider type: the collector lists every
	// type a document names, and says which it cannot (one no longer in
	// PROVIDERS). ProviderID is the status's, for a provider whose listing
	// covers only some of its providerIDs (provider.Scoped).
	Provider, ProviderID string
	// MaxAge is the spec's, RotateRequestTime the last rotate request's,
	// and BootStart when the current VM was created: what RotationDue
	// needs.
	MaxAge            string
	RotateRequestTime *time.Time
	BootStart         time.Time
	// RotationWaitUntil is the status's: a rotation by age held back by
	// the namespace's budget is not due before it.
	RotationWaitUntil *time.Time
	// Claimed is set for a warm pool's member whose VM a proxy claimed (a
	// tombstone): its uid keeps the VM from the collector until the
	// proxy's Reconfigure relabels it, but the VM is the proxy's, so no
	// listing of it is the member's to act on.
	Claimed bool
}

// RotationDue reports whether a VM created at bootStart is due for
// rotation at now: a rotation was asked for (at rotateRequested) after it
// was created (RotationRequested), or it is older than maxAge and its
// namespace's budget does not hold the rotation back (waitUntil, the
// status's RotationWaitUntil, is after now). The reconciler rotates by
// this rule, and the garbage collector re-drives a settled proxy by it, so
// a rotate request whose event was lost is not lost with it, and a
// rotation that waited for the budget is tried again once it may be.
func RotationDue(maxAge string, rotateRequested *time.Time, bootStart, now time.Time, waitUntil *time.Time) bool {
	if bootStart.IsZero() {
		return false
	}
	if RotationRequested(rotateRequested, bootStart) {
		return true
	}
	if waitUntil != nil && now.Before(*waitUntil) {
		return false
	}
	d, err := time.ParseDuration(maxAge)
	return maxAge != "" && err == nil && now.Sub(bootStart) >= d
}

// RotationRequested reports whether a user asked for a rotation (at
// rotateRequested) after the VM created at bootStart: its rotation was
// counted against the namespace's budget by the request, where a rotation
// by age is counted by the reconciler.
func RotationRequested(rotateRequested *time.Time, bootStart time.Time) bool {
	return rotateRequested != nil && !bootStart.IsZero() && bootStart.Before(*rotateRequested)
}

// DefaultConnectPorts are the ports a CONNECT may reach when the spec names
// none: HTTPS and HTTP.
var DefaultConnectPorts = []int32{443, 80}

// TrafficStop is a stop of a proxy's traffic for the rest of a calendar
// month, its namespace's budget spent (vmconfig.TrafficStop).
type TrafficStop struct {
	// Month is the month stopped, UTC, "2006-01".
	Month string `firestore:"month"`
	// Reason is the one-line why.
	Reason string `firestore:"reason,omitempty"`
}
