package proxy

import "time"

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

// TrafficStop is a stop of a proxy's traffic for the rest of a calendar
// month, its namespace's budget spent (vmconfig.TrafficStop).
type TrafficStop struct {
	// Month is the month stopped, UTC, "2006-01".
	Month string `firestore:"month"`
	// Reason is the one-line why.
	Reason string `firestore:"reason,omitempty"`
}
