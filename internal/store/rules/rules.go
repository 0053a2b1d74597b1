// Package rules holds what the document stores decide alike, whatever the
// database: which fields a deletion or rotation request changes, what a
// page token is, when a create fits its namespace's quota, what a
// namespace's update writes and when a namespace may go. The Firestore
// store (internal/store) and the in-memory one (internal/store/storefake)
// both call these functions, and internal/store/storetest holds both to
// the same results, so the rules cannot drift apart between the two.
package rules

import (
	"encoding/base64"
	"fmt"
	"math"
	"time"

	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// Field is one field a rule changes: its path in the document (as
// Firestore names it) and its new value. The in-memory store applies the
// change to its copy instead; the Firestore store writes these.
type Field struct {
	Path  string
	Value any
}

// Field paths of a proxy document.
const (
	DeleteRequestTimeField = "deleteRequestTime"
	RotateRequestTimeField = "rotateRequestTime"
	PhaseField             = "status.phase"
	ProgressTimeField      = "reconciler.progressTime"
)

// RequestDeletion marks p for deletion at now and returns the fields that
// changed: deleteRequestTime, phase Deleting, and a progress time for the
// sweep. A proxy whose deletion was requested already keeps its first
// request: nothing changes and the result is nil. So does a pool's member
// whose VM a proxy claimed (ClaimedBy): the VM is the proxy's now, and a
// shrink or a deleted pool must not take it (the check is in the same
// transaction as the read, which a claim's transaction serialises with).
func RequestDeletion(p *proxy.Proxy, now time.Time) []Field {
	if p.DeleteRequestTime != nil || p.ClaimedBy != nil {
		return nil
	}
	p.DeleteRequestTime = &now
	p.Status.Phase = proxy.PhaseDeleting
	p.Reconciler.ProgressTime = now
	return []Field{
		{Path: DeleteRequestTimeField, Value: now},
		{Path: PhaseField, Value: string(proxy.PhaseDeleting)},
		{Path: ProgressTimeField, Value: now},
	}
}

// RequestRotation asks for p's VM to be rotated: rotateRequestTime is now,
// and the reconciler rotates a VM created before it. A proxy being deleted
// takes none (proxy.ErrBeingDeleted), nor one given a new VM at a user's
// request less than minInterval before now (Interval), nor one that is not
// Ready (proxy.ErrNotReady: its VM is still booting, or already being
// replaced).
func RequestRotation(p *proxy.Proxy, now time.Time, minInterval time.Duration) ([]Field, error) {
	if p.DeleteRequestTime != nil {
		return nil, fmt.Errorf("%s was asked to be deleted at %s: %w", p.Key(), p.DeleteRequestTime.Format(time.RFC3339), proxy.ErrBeingDeleted)
	}
	// The interval first: a proxy being replaced after its last rotation
	// is told when it may rotate again, not only that it is not Ready.
	if err := Interval(p, now, minInterval); err != nil {
		return nil, err
	}
	if p.Status.Phase != proxy.PhaseReady {
		return nil, fmt.Errorf("%s is %s: %w", p.Key(), p.Status.Phase, proxy.ErrNotReady)
	}
	p.RotateRequestTime = &now
	return []Field{{Path: RotateRequestTimeField, Value: now}}, nil
}

// Interval refuses a user's request for a new VM of p (a rotation, a live
// change that needs one) less than minInterval after the last
// (RotateRequestTime or ReplaceRequestTime, the later): a
// *proxy.RetryError wrapping proxy.ErrRotatedRecently, saying when.
func Interval(p *proxy.Proxy, now time.Time, minInterval time.Duration) error {
	last := p.RotateRequestTime
	if r := p.ReplaceRequestTime; r != nil && (last == nil || r.After(*last)) {
		last = r
	}
	if last == nil || !now.Before(last.Add(minInterval)) {
		return nil
	}
	return &proxy.RetryError{At: last.Add(minInterval),
		Err: fmt.Errorf("%s was given a new VM at its users' request at %s, less than %s ago: %w", p.Key(), last.Format(time.RFC3339), minInterval, proxy.ErrRotatedRecently)}
}

// CreationsField is the namespace document's log of the VMs it caused
// within the last hour (tenancy.Namespace.Creations).
const CreationsField = "creations"

// CountCreation counts a VM caused at now against ns's bound of perHour
// in any hour: the log keeps the creations of the last hour and this one,
// or, when it holds perHour already, the VM is refused with a
// *proxy.RetryError wrapping proxy.ErrCreatesPerHour, saying when the
// oldest leaves the hour. No bound (perHour 0) or no namespace document
// counts nothing.
func CountCreation(ns *tenancy.Namespace, now time.Time, perHour int) ([]Field, error) {
	if ns == nil || perHour <= 0 {
		return nil, nil
	}
	kept, err := withinHour(ns.Creations, now, perHour, func(n int) error {
		return fmt.Errorf("namespace %q caused %d VMs within the hour, its bound: %w", ns.Name, n, proxy.ErrCreatesPerHour)
	})
	if err != nil {
		return nil, err
	}
	ns.Creations = kept
	return []Field{{Path: CreationsField, Value: ns.Creations}}, nil
}

// withinHour is a log of times with now added, once the times of more
// than an hour before now are dropped, or, when it holds bound times
// already, refused (a *proxy.RetryError wrapping refused's error, saying
// when the oldest leaves the hour).
func withinHour(log []time.Time, now time.Time, bound int, refused func(n int) error) ([]time.Time, error) {
	var kept []time.Time
	for _, t := range log {
		if t.After(now.Add(-time.Hour)) {
			kept = append(kept, t)
		}
	}
	if len(kept) >= bound {
		return nil, &proxy.RetryError{At: kept[len(kept)-bound].Add(time.Hour), Err: refused(len(kept))}
	}
	return append(kept, now), nil
}

// PoolClaimsField is the namespace document's log of the warm VMs its
// proxies claimed within the last hour, by pool
// (tenancy.Namespace.PoolClaims).
const PoolClaimsField = "poolClaims"

// CountClaim counts a claim at now of a warm VM of pool by a proxy of ns
// against the pool's bound of ClaimsPerNamespacePerHour: the log of the
// pool's claims keeps those of the last hour and this one, or, when it
// holds the bound already, the claim is refused with a *proxy.RetryError
// wrapping proxy.ErrPoolClaimsPerHour. Every claim is logged, bound or
// not, so that a bound an admin sets holds from the claims of the hour
// before it. No namespace document counts nothing.
func CountClaim(ns *tenancy.Namespace, pool *proxy.Pool, now time.Time) ([]Field, error) {
	if ns == nil {
		return nil, nil
	}
	bound := pool.Spec.ClaimsPerNamespacePerHour
	if bound <= 0 {
		bound = math.MaxInt
	}
	kept, err := withinHour(ns.PoolClaims[pool.Name], now, bound, func(n int) error {
		return fmt.Errorf("namespace %q claimed %d VMs of %s within the hour, its bound for one namespace: %w", ns.Name, n, pool.Path(), proxy.ErrPoolClaimsPerHour)
	})
	if err != nil {
		return nil, err
	}
	claims := map[string][]time.Time{pool.Name: kept}
	for name, ts := range ns.PoolClaims {
		// Another pool's log keeps only its last hour's: a namespace's
		// document does not grow with the pools it once used.
		if name != pool.Name && len(ts) > 0 && ts[len(ts)-1].After(now.Add(-time.Hour)) {
			claims[name] = ts
		}
	}
	ns.PoolClaims = claims
	return []Field{{Path: PoolClaimsField, Value: claims}}, nil
}

// LiveReplaces reports whether a live change of p (a PATCH, new
// credentials) gives it a new VM: its VM, made or being made, cannot take
// the change in place (inPlace says its provider cannot, or the spec
// brings its own cloud-init), so the reconciler replaces it with one of
// the new generation. A proxy with no VM yet (Pending; a create refused by
// a quota and not yet tried again), or whose VM is being replaced anyway
// (the new one takes the document's generation), gets no VM more. Nil
// inPlace takes every change as made in place.
func LiveReplaces(p *proxy.Proxy, inPlace func(providerType string) bool) bool {
	if inPlace == nil {
		return false
	}
	made := p.Reconciler.CreatePending != "" || (p.Status.ProviderID != "" && p.Status.Phase != proxy.PhaseReplacing)
	return made && (!inPlace(p.Spec.Provider) || p.Spec.OwnCloudInit())
}

// LiveChange is a live change of p (change, its rule: UpdateSpec,
// RotateCredentials) that, when it changed anything, is held to limits if
// it gives p a new VM (LiveReplacement): the fields of p and of ns that
// change, which both stores write in one transaction.
func LiveChange(p *proxy.Proxy, ns *tenancy.Namespace, now time.Time, limits tenancy.Limits, change func() ([]Field, error)) (proxyFields, nsFields []Field, err error) {
	fields, err := change()
	if err != nil || len(fields) == 0 {
		return nil, nil, err
	}
	replaced, counted, err := LiveReplacement(p, ns, now, limits)
	if err != nil {
		return nil, nil, err
	}
	return append(fields, replaced...), counted, nil
}

// StatusUpdate is the reconciler's write of p's status and bookkeeping
// (as UpdateStatus makes it) as a rule's fields, for a store's
// transaction that writes more beside it.
func StatusUpdate(p *proxy.Proxy) []Field {
	return []Field{{Path: StatusField, Value: p.Status}, {Path: ReconcilerField, Value: p.Reconciler}}
}

// ReplaceRequestTimeField is when a live change last asked for a new VM.
const ReplaceRequestTimeField = "replaceRequestTime"

// LiveReplacement holds a live change of p, which its rule has made (it
// changed the generation), to limits when it gives p a new VM
// (LiveReplaces): no sooner than RotateMinInterval after the last VM a
// user asked for (Interval), and counted against ns's CreatesPerHour
// (CountCreation). It returns what changes of p (replaceRequestTime) and
// of ns (its creations); nothing when the change is made in place.
func LiveReplacement(p *proxy.Proxy, ns *tenancy.Namespace, now time.Time, limits tenancy.Limits) (proxyFields, nsFields []Field, err error) {
	if !LiveReplaces(p, limits.InPlace) {
		return nil, nil, nil
	}
	if err := Interval(p, now, limits.RotateMinInterval); err != nil {
		return nil, nil, err
	}
	if nsFields, err = CountCreation(ns, now, limits.CreatesPerHour); err != nil {
		return nil, nil, err
	}
	p.ReplaceRequestTime = &now
	return []Field{{Path: ReplaceRequestTimeField, Value: now}}, nsFields, nil
}

// PageToken is the token of the page after one that ended at name (a
// proxy or a namespace, both labels).
func PageToken(name string) string { return base64.RawURLEncoding.EncodeToString([]byte(name)) }

// ParsePageToken returns the name a page token says to start after, or
// proxy.ErrInvalidPageToken for a token no list made. The empty token is
// the first page: "".
func ParsePageToken(token string) (string, error) {
	if token == "" {
		return "", nil
	}
	after, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || !proxy.IsLabel(string(after)) {
		return "", fmt.Errorf("page token %q was not returned by a list: %w", token, proxy.ErrInvalidPageToken)
	}
	return string(after), nil
}

// Admit refuses a create in a namespace that holds count proxies under
// quota, with proxy.ErrQuotaExceeded.
func Admit(namespace string, count int64, quota int) error {
	if count >= int64(quota) {
		return fmt.Errorf("namespace %q holds %d proxies, its quota is %d: %w", namespace, count, quota, proxy.ErrQuotaExceeded)
	}
	return nil
}

// NewNamespace is the document of a namespace an admin creates at now:
// its members, and its quota, or def when the request gave none. It holds
// no proxies yet.
func NewNamespace(name string, members map[string]tenancy.Role, quota, def int, now time.Time) *tenancy.Namespace {
	if quota <= 0 {
		quota = def
	}
	ns := &tenancy.Namespace{Name: name, Members: members, Quota: quota, CreateTime: now}
	ns.Index()
	return ns
}

// NamespaceUpdate is what an update of ns writes: its members, their
// index, its quota, its budget and the budget alerts told. The proxy counter is never among them: only
// creates and deletes change it, in their own transactions.
func NamespaceUpdate(ns *tenancy.Namespace) []Field {
	ns.Index()
	members := map[string]string{}
	for e, r := range ns.Members {
		members[e] = string(r)
	}
	return []Field{
		{Path: "members", Value: members},
		{Path: "memberEmails", Value: ns.MemberEmails},
		{Path: "quota", Value: ns.Quota},
		// The budget is written whole: a PATCH replaces it.
		{Path: "budget", Value: ns.Budget},
		// As read in the same transaction, unless the collector's
		// budget alerts changed it (budgetalert).
		{Path: "budgetAlerts", Value: ns.BudgetAlerts},
		// The collector's record of the namespace's traffic stopped at
		// its budget (tenancy.StopFor), whole as well.
		{Path: "trafficStopped", Value: ns.TrafficStopped},
	}
}

// Deletable refuses to delete a namespace that holds proxies (those being
// deleted included: their documents are still there), with
// tenancy.ErrNamespaceNotEmpty and how many.
func Deletable(ns *tenancy.Namespace) error {
	if ns.ProxyCount > 0 {
		return fmt.Errorf("namespace %q holds %d proxies: %w", ns.Name, ns.ProxyCount, tenancy.ErrNamespaceNotEmpty)
	}
	return nil
}

// Decide calls decide with the namespace as the store read it (nil when
// there is none: decide says what its caller may learn of that, such as
// an outsider's 403 before a 404), then refuses a namespace that does not
// exist with tenancy.ErrNamespaceNotFound.
func Decide(name string, ns *tenancy.Namespace, decide func(*tenancy.Namespace) error) error {
	if err := decide(ns); err != nil {
		return err
	}
	if ns == nil {
		return fmt.Errorf("namespace %q: %w", name, tenancy.ErrNamespaceNotFound)
	}
	return nil
}
