package proxy

import (
	"time"

	"github.com/egress-proxies/egress/internal/pricing"
)

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
	// Account is the status's: the account the VM lives in ("" the
	// default). The collector keeps an instance only for the claim of its
	// own account.
	Account string
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
	// Cost is the part of status.cost the collector reads: its month and
	// age, by which it asks for a settled proxy's to be computed again,
	// and its two sums, which it adds up per namespace. Nil where the
	// status has none.
	Cost *ClaimCost
}

// ClaimCost is a claim's status.cost, without what the collector does
// not read (VM, address and traffic apart): small, as the claims of a
// whole fleet are held at once.
type ClaimCost struct {
	Month, Currency       string
	AsOf                  time.Time
	MonthToDate, Forecast int64 // nanos of Currency
	Unknown               bool
}

// ClaimCostOf is c as a claim holds it, or nil.
func ClaimCostOf(c *pricing.Cost) *ClaimCost {
	if c == nil {
		return nil
	}
	return &ClaimCost{Month: c.Month, Currency: c.Currency, AsOf: c.AsOf, MonthToDate: c.MonthToDate.Nanos, Forecast: c.Forecast.Nanos, Unknown: c.Unknown != ""}
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
