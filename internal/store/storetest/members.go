package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/proxy"
)

// Pools is the contract of a store's warm pools and their members
// (internal/store/members.go).
type Pools interface {
	Store
	Members(ctx context.Context, pool string) ([]*proxy.Proxy, error)
	EnsureMembers(ctx context.Context, pool string, now time.Time) ([]*proxy.Proxy, error)
	ClaimWarm(ctx context.Context, p *proxy.Proxy, pool *proxy.Pool, now time.Time, perHour int) (member, claimed *proxy.Proxy, err error)
	PoolServing(ctx context.Context, spec proxy.Spec) (*proxy.Pool, error)
	UpdatePoolStatus(ctx context.Context, p *proxy.Pool) (time.Time, error)
	DeletePool(ctx context.Context, name string, updateTime time.Time) error
}

func pools(t *testing.T, s Store) Pools {
	t.Helper()
	p, ok := s.(Pools)
	if !ok {
		t.Fatalf("%T keeps no warm pools", s)
	}
	return p
}

// NewPool returns a pool of size VMs of the placement New's proxies have.
func NewPool(name string, size int) *proxy.Pool {
	spec := New("x", "y").Spec
	return &proxy.Pool{Name: name, Spec: proxy.PoolSpec{Provider: spec.Provider, Placement: spec.Placement, Size: size}, CreateTime: base}
}

// PutPool puts p as the admins' API does, and returns it as written.
func PutPool(t *testing.T, s Store, p *proxy.Pool) *proxy.Pool {
	t.Helper()
	got, _, err := s.PutPool(context.Background(), p.Name, p.Spec, p.CreateTime)
	if err != nil {
		t.Fatalf("putting pool %s: %v", p.Name, err)
	}
	return got
}

// warmUp records every unclaimed member of the pool Ready with a VM.
func warmUp(t *testing.T, s Pools, pool string) {
	t.Helper()
	ctx := context.Background()
	ms, err := s.Members(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		m.Status = proxy.Status{Phase: proxy.PhaseReady, ProviderID: "vm-" + m.Name, IP: "198.51.100.7", Zone: "us-central1-a", State: "RUNNING"}
		m.Reconciler.ProgressTime = time.Time{}
		if _, err := s.UpdateStatus(ctx, m); err != nil {
			t.Fatalf("recording %s Ready: %v", m.Key(), err)
		}
	}
}

func testMembers(t *testing.T, s Pools) {
	ctx := context.Background()
	if _, err := s.EnsureMembers(ctx, "absent", base); !errors.Is(err, proxy.ErrNotFound) {
		t.Errorf("EnsureMembers of a pool that does not exist: %v, want ErrNotFound", err)
	}
	PutPool(t, s, NewPool("ci", 3))
	created, err := s.EnsureMembers(ctx, "ci", base)
	if err != nil {
		t.Fatalf("EnsureMembers: %v", err)
	}
	if len(created) != 3 {
		t.Fatalf("EnsureMembers of an empty pool of 3 created %d members, want 3", len(created))
	}
	again, err := s.EnsureMembers(ctx, "ci", base)
	if err != nil || len(again) != 0 {
		t.Errorf("EnsureMembers of a full pool created %d (%v), want none", len(again), err)
	}
	m := created[0]
	want := &proxy.Proxy{Name: "w-" + m.UID[:12], UID: m.UID, Pool: "ci", Spec: NewPool("ci", 3).Spec.MemberSpec(),
		Status: proxy.Status{Phase: proxy.PhasePending}, CreateTime: base, Reconciler: proxy.Bookkeeping{ProgressTime: base}}
	got, err := s.Get(ctx, proxy.Key{Pool: "ci", Name: m.Name})
	if err != nil {
		t.Fatalf("Get of a member: %v", err)
	}
	if diff := cmp.Diff(want, got, ignoreUpdateTime); diff != "" {
		t.Errorf("member document (-want +got):\n%s", diff)
	}
	// A member is seen by the collector's scans under its own key.
	uids, err := s.LiveUIDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := uids[m.UID]; c.Key != m.Key() {
		t.Errorf("LiveUIDs names member %s as %v, want its key", m.Key(), c.Key)
	}
	stalled, err := s.Stalled(ctx, base.Add(time.Minute), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(stalled) != 3 || !stalled[0].IsMember() {
		t.Errorf("Stalled found %v, want the 3 members", stalled)
	}
	// A member whose deletion was requested, or that failed, is not
	// counted: EnsureMembers makes another.
	if _, err := s.RequestDeletion(ctx, m.Key(), base); err != nil {
		t.Fatal(err)
	}
	if more, err := s.EnsureMembers(ctx, "ci", base); err != nil || len(more) != 1 {
		t.Errorf("EnsureMembers after a member's deletion request created %d (%v), want 1", len(more), err)
	}
	// Status writes and the deletion keep their preconditions, and count
	// against no namespace.
	if got, err = s.Get(ctx, created[1].Key()); err != nil {
		t.Fatal(err)
	}
	got.Status.Phase = proxy.PhaseCreating
	if _, err := s.UpdateStatus(ctx, got); err != nil {
		t.Errorf("UpdateStatus of a member: %v", err)
	}
	if err := s.Delete(ctx, got.Key(), got.UpdateTime); !errors.Is(err, proxy.ErrConflict) {
		t.Errorf("Delete of a member with a stale update time: %v, want ErrConflict", err)
	}
	fresh, err := s.Get(ctx, got.Key())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, got.Key(), fresh.UpdateTime); err != nil {
		t.Errorf("Delete of a member: %v", err)
	}
	if _, err := s.Get(ctx, got.Key()); !errors.Is(err, proxy.ErrNotFound) {
		t.Errorf("Get of a deleted member: %v, want ErrNotFound", err)
	}
	ms, err := s.Members(ctx, "ci")
	if err != nil || len(ms) != 3 {
		t.Errorf("Members: %d (%v), want 3 (4 made, 1 deleted)", len(ms), err)
	}
}

func testConcurrentEnsure(t *testing.T, s Pools) {
	ctx := context.Background()
	PutPool(t, s, NewPool("ci", 4))
	errs := parallel(4, func(int) error { _, err := s.EnsureMembers(ctx, "ci", base); return err })
	if n := count(errs, nil); n != 4 {
		t.Errorf("4 concurrent EnsureMembers: %d succeeded, want 4 (%v)", n, errs)
	}
	ms, err := s.Members(ctx, "ci")
	if err != nil || len(ms) != 4 {
		t.Errorf("a pool of 4 after 4 concurrent EnsureMembers has %d members (%v), want 4", len(ms), err)
	}
}

func testClaim(t *testing.T, s Pools) {
	ctx := context.Background()
	pool := PutPool(t, s, NewPool("ci", 2))
	if _, err := s.EnsureMembers(ctx, "ci", base); err != nil {
		t.Fatal(err)
	}
	warmUp(t, s, "ci")
	var proxies []*proxy.Proxy
	for i := range 5 {
		p, err := s.Create(ctx, New("team-w", fmt.Sprintf("p-%d", i)), 20)
		if err != nil {
			t.Fatal(err)
		}
		proxies = append(proxies, p)
	}
	stale := *proxies[0]
	stale.UpdateTime = stale.UpdateTime.Add(-time.Second)
	if _, _, err := s.ClaimWarm(ctx, &stale, pool, base, 0); !errors.Is(err, proxy.ErrConflict) {
		t.Errorf("ClaimWarm for a proxy read before its last write: %v, want ErrConflict", err)
	}
	// Five proxies race for two warm VMs: two win, each a VM of its own.
	type result struct{ member, claimed *proxy.Proxy }
	results := make([]result, 5)
	errs := parallel(5, func(i int) error {
		m, c, err := s.ClaimWarm(ctx, proxies[i], pool, base, 0)
		results[i] = result{m, c}
		return err
	})
	if n := count(errs, nil); n != 2 {
		t.Fatalf("5 concurrent claims of 2 warm VMs: %d succeeded, want 2 (%v)", n, errs)
	}
	if n := count(errs, proxy.ErrNoWarmVM); n != 3 {
		t.Errorf("5 concurrent claims of 2 warm VMs: %d ErrNoWarmVM, want 3 (%v)", n, errs)
	}
	vms := map[string]bool{}
	for i, r := range results {
		if errs[i] != nil {
			continue
		}
		p, err := s.Get(ctx, proxies[i].Key())
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.ProviderID != r.member.Status.ProviderID || p.Status.Phase != proxy.PhaseProvisioning || p.Reconciler.Credentials.IsZero() ||
			!p.Reconciler.BootStart.Equal(base) {
			t.Errorf("claiming proxy %s reads %+v, want the member's VM %s, Provisioning, credentials, bootStart", p.Key(), p.Status, r.member.Status.ProviderID)
		}
		m, err := s.Get(ctx, r.member.Key())
		if err != nil {
			t.Fatal(err)
		}
		want := &proxy.ClaimRef{Namespace: "team-w", Name: p.Name, UID: p.UID, Time: base}
		if diff := cmp.Diff(want, m.ClaimedBy); diff != "" {
			t.Errorf("member %s's claim (-want +got):\n%s", m.Key(), diff)
		}
		vms[m.Status.ProviderID] = true
		// A claimed member is never deleted by a request: the VM is the
		// proxy's.
		if _, err := s.RequestDeletion(ctx, m.Key(), base); err != nil {
			t.Errorf("RequestDeletion of a claimed member: %v", err)
		}
		if after, err := s.Get(ctx, m.Key()); err != nil || after.DeleteRequestTime != nil {
			t.Errorf("RequestDeletion of a claimed member marked it (%v): %+v", err, after)
		}
	}
	if len(vms) != 2 {
		t.Errorf("the two claims took VMs %v, want two distinct", vms)
	}
	// The collector reads a claimed member as one (its uid keeps the VM
	// until the relabel; its VM is not its own to check).
	claims, err := s.LiveUIDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	claimed := 0
	for _, c := range claims {
		if c.Claimed {
			claimed++
		}
	}
	if claimed != 2 {
		t.Errorf("LiveUIDs reads %d claimed members, want 2", claimed)
	}
}

func testPoolDocuments(t *testing.T, s Pools) {
	ctx := context.Background()
	pl := PutPool(t, s, NewPool("ci", 2))
	spec := New("a", "b").Spec
	if got, err := s.PoolServing(ctx, spec); err != nil || got == nil || got.Name != "ci" {
		t.Errorf("PoolServing of a matching spec: %+v (%v), want ci", got, err)
	}
	other := spec
	other.Placement.Zone = "us-central1-b"
	if got, err := s.PoolServing(ctx, other); err != nil || got != nil {
		t.Errorf("PoolServing of another zone: %+v (%v), want none", got, err)
	}
	pl.Status = proxy.PoolStatus{Warm: 1, Booting: 1, Message: "quota", ClaimsLastHour: 1, Claims: map[string]time.Time{"w-1": base}}
	ut, err := s.UpdatePoolStatus(ctx, pl)
	if err != nil {
		t.Fatalf("UpdatePoolStatus: %v", err)
	}
	if _, err := s.UpdatePoolStatus(ctx, pl); !errors.Is(err, proxy.ErrConflict) {
		t.Errorf("UpdatePoolStatus with a stale update time: %v, want ErrConflict", err)
	}
	got, err := s.GetPool(ctx, "ci")
	if err != nil || !got.Status.Equal(pl.Status) {
		t.Errorf("GetPool after UpdatePoolStatus: %+v (%v), want status %+v", got, err, pl.Status)
	}
	if err := s.DeletePool(ctx, "ci", pl.UpdateTime); !errors.Is(err, proxy.ErrConflict) {
		t.Errorf("DeletePool with a stale update time: %v, want ErrConflict", err)
	}
	if err := s.DeletePool(ctx, "ci", ut); err != nil {
		t.Errorf("DeletePool: %v", err)
	}
	if _, err := s.GetPool(ctx, "ci"); !errors.Is(err, proxy.ErrNotFound) || !strings.Contains(err.Error(), "pools/ci") {
		t.Errorf("GetPool of a deleted pool: %v, want ErrNotFound naming pools/ci", err)
	}
}
