package rules

import (
	"fmt"
	"hash/fnv"
	"time"

	"github.com/google/uuid"

	"github.com/egress-proxies/egress/internal/proxy"
)

// Field paths of a pool member's document.
const (
	ClaimedByField  = "claimedBy"
	StatusField     = "status"
	ReconcilerField = "reconciler"
)

// LiveMember reports whether a pool's member counts towards its size: not
// claimed, not on its way out, not failed.
func LiveMember(m *proxy.Proxy) bool {
	return m.ClaimedBy == nil && m.DeleteRequestTime == nil && m.Status.Phase != proxy.PhaseFailed
}

// Warm reports whether a member's VM may be claimed: booted and proven
// (Ready, with a providerID), unclaimed and not being deleted.
func Warm(m *proxy.Proxy) bool {
	return m.ClaimedBy == nil && m.DeleteRequestTime == nil && m.Status.Phase == proxy.PhaseReady && m.Status.ProviderID != ""
}

// MissingMembers returns the member documents to create so that pool has
// its size of live members (LiveMember) among members: none for a pool
// being deleted. Each is Pending at generation 0 (its VM serves no one
// until a proxy claims it) with a new uid, named "w-" and the
// first 12 characters of the uid, its spec the pool's MemberSpec, its
// progress time now (so the sweep catches a lost first event).
func MissingMembers(pool *proxy.Pool, members []*proxy.Proxy, now time.Time) []*proxy.Proxy {
	if pool.DeleteRequestTime != nil {
		return nil
	}
	live := 0
	for _, m := range members {
		if LiveMember(m) {
			live++
		}
	}
	var out []*proxy.Proxy
	for range max(pool.Spec.Size-live, 0) {
		uid := uuid.NewString()
		out = append(out, &proxy.Proxy{
			Name: "w-" + uid[:12], UID: uid, Pool: pool.Name,
			Spec:       pool.Spec.MemberSpec(),
			Status:     proxy.Status{Phase: proxy.PhasePending},
			CreateTime: now,
			Reconciler: proxy.Bookkeeping{ProgressTime: now},
		})
	}
	return out
}

// UIDField is the member documents' uid, by which a claim draws one.
const UIDField = "uid"

// Claimable reports whether a member is one a claim's query returns: Ready
// and unclaimed. The claim's transaction then holds it to Warm.
func Claimable(m *proxy.Proxy) bool {
	return m.Status.Phase == proxy.PhaseReady && m.ClaimedBy == nil
}

// PickWarm returns the member a claim draws for the proxy of uid after
// among members: of the claimable ones (Claimable), the first by uid at or
// after it, or else the first. Member uids are random, so this is a member
// drawn at random, and claims that run at once take different ones: each
// claim's transaction then reads and writes that one member only, and two
// rarely meet. Nil when none is claimable.
func PickWarm(members []*proxy.Proxy, after string) *proxy.Proxy {
	var first, pick *proxy.Proxy
	for _, m := range members {
		if !Claimable(m) {
			continue
		}
		if first == nil || m.UID < first.UID {
			first = m
		}
		if m.UID >= after && (pick == nil || m.UID < pick.UID) {
			pick = m
		}
	}
	if pick == nil {
		return first
	}
	return pick
}

// ClaimAttempts is how often a claim draws again when the member it drew
// was taken by another claim in the meantime.
const ClaimAttempts = 4

// DrawAfter is where a claim's attempt-th draw starts: the proxy's uid,
// then points derived from it, so that a claim that lost its member to
// another draws elsewhere rather than next to it.
func DrawAfter(uid string, attempt int) string {
	if attempt == 0 {
		return uid
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", uid, attempt)
	return fmt.Sprintf("%016x", h.Sum64())[:8] + uid[min(8, len(uid)):]
}

// Claim passes member's VM to p at now: member.ClaimedBy names p, and p's
// status takes the VM (providerID, ip, zone, state), phase Provisioning,
// BootStart now and SentGeneration 0 (the VM serves no one yet), with
// credentials of its own if it had none. What else p's caller set
// (Retiring, the lease, conditions) is kept. A p being deleted takes none
// (proxy.ErrBeingDeleted).
func Claim(p, member *proxy.Proxy, now time.Time) error {
	if p.DeleteRequestTime != nil {
		return fmt.Errorf("%s: %w", p.Key(), proxy.ErrBeingDeleted)
	}
	if p.Reconciler.Retiring != "" && member.Status.Account != p.Status.Account {
		// The VM a make-before-break rotation retires is deleted through
		// the proxy's account once the new one serves: a rotation stays
		// in its account, and breaks before it makes rather than take a
		// warm VM of another.
		return fmt.Errorf("%s: %w in its account: the pool's warm VM %s is in account %q, the VM it would retire in %q", p.Key(), proxy.ErrNoWarmVM, member.Status.ProviderID, member.Status.Account, p.Status.Account)
	}
	member.ClaimedBy = &proxy.ClaimRef{Namespace: p.Namespace, Name: p.Name, UID: p.UID, Time: now}
	member.Status.Message = "VM claimed by " + p.Key().Path() + "."
	s := &p.Status
	s.ProviderID, s.IP, s.IPv6, s.Zone, s.State = member.Status.ProviderID, member.Status.IP, member.Status.IPv6, member.Status.Zone, member.Status.State
	s.IPv6Prefix = member.Status.IPv6Prefix
	// The VM lives in the member's account, and so does the proxy now.
	s.Account = member.Status.Account
	s.Endpoint = ""
	s.Phase = proxy.PhaseProvisioning
	b := &p.Reconciler
	b.SentGeneration = 0
	b.BootStart = now
	b.CreatePending, b.CreateRequestID = "", ""
	b.NotFoundSince = time.Time{}
	b.ProgressTime = now
	if b.Credentials.IsZero() {
		creds, err := proxy.NewCredentials()
		if err != nil {
			return err
		}
		b.Credentials = creds
	}
	return nil
}

// PoolServing returns the first pool of pools that serves spec
// (proxy.PoolSpec.Serves) and is not being deleted, or nil.
func PoolServing(pools []*proxy.Pool, spec proxy.Spec) *proxy.Pool {
	for _, p := range pools {
		if p.DeleteRequestTime == nil && p.Spec.Size > 0 && p.Spec.Serves(spec) {
			return p
		}
	}
	return nil
}
