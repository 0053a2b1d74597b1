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

// ClaimChoices is how many unclaimed Ready members a claim reads: the
// claims that run at once spread over that many, rather than all taking
// the first and retrying their transactions one after another.
const ClaimChoices = 4

// PickWarm returns a warm member (Warm) of members for the proxy of uid
// claimUID, or nil: the one the uid's hash picks among the warm ones, so
// that concurrent claims pick different members.
func PickWarm(members []*proxy.Proxy, claimUID string) *proxy.Proxy {
	var warm []*proxy.Proxy
	for _, m := range members {
		if Warm(m) {
			warm = append(warm, m)
		}
	}
	if len(warm) == 0 {
		return nil
	}
	h := fnv.New32a()
	h.Write([]byte(claimUID))
	return warm[int(h.Sum32()%uint32(len(warm)))]
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
	member.ClaimedBy = &proxy.ClaimRef{Namespace: p.Namespace, Name: p.Name, UID: p.UID, Time: now}
	member.Status.Message = "VM claimed by " + p.Key().Path() + "."
	s := &p.Status
	s.ProviderID, s.IP, s.Zone, s.State = member.Status.ProviderID, member.Status.IP, member.Status.Zone, member.Status.State
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

// PoolServing returns the name of the first pool of pools that serves
// spec (proxy.PoolSpec.Serves) and is not being deleted, or "".
func PoolServing(pools []*proxy.Pool, spec proxy.Spec) string {
	for _, p := range pools {
		if p.DeleteRequestTime == nil && p.Spec.Size > 0 && p.Spec.Serves(spec) {
			return p.Name
		}
	}
	return ""
}
