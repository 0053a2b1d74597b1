// Package storetest is the behaviour every document store must have, for
// proxies and for namespaces: the Firestore store against the emulator and
// the in-memory store of the simulation and the API's tests run the same
// operations through Run and must agree, so the simulation's proofs and
// the API's tests hold for the real database.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"github.com/egress-proxies/egress/internal/account"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// Store is the contract of internal/store.
type Store interface {
	Create(ctx context.Context, p *proxy.Proxy, quota int) (*proxy.Proxy, error)
	CreateInNamespace(ctx context.Context, p *proxy.Proxy, admit tenancy.Admission) (*proxy.Proxy, error)
	Get(ctx context.Context, key proxy.Key) (*proxy.Proxy, error)
	List(ctx context.Context, namespace string, pageSize int, pageToken string) ([]*proxy.Proxy, string, error)
	ListSealed(ctx context.Context, namespace string, pageSize int, pageToken string) ([]*proxy.Proxy, string, error)
	RequestDeletion(ctx context.Context, key proxy.Key, now time.Time) (*proxy.Proxy, error)
	RequestRotation(ctx context.Context, key proxy.Key, now time.Time, limits tenancy.Limits) (*proxy.Proxy, error)
	UpdateSpec(ctx context.Context, key proxy.Key, now time.Time, limits tenancy.Limits, update func(proxy.Spec) (proxy.Spec, error)) (*proxy.Proxy, error)
	RotateCredentials(ctx context.Context, key proxy.Key, now time.Time, limits tenancy.Limits) (*proxy.Proxy, error)
	UpdateStatus(ctx context.Context, p *proxy.Proxy) (time.Time, error)
	UpdateStatusCounted(ctx context.Context, p *proxy.Proxy, at time.Time, perHour int) (time.Time, error)
	Delete(ctx context.Context, key proxy.Key, updateTime time.Time, spent ...proxy.Spent) error
	LiveUIDs(ctx context.Context) (map[string]proxy.Claim, error)
	Stalled(ctx context.Context, before time.Time, limit int) ([]proxy.Key, error)

	GetNamespace(ctx context.Context, name string) (*tenancy.Namespace, error)
	ListNamespaces(ctx context.Context, member string, pageSize int, pageToken string) ([]*tenancy.Namespace, string, error)
	CreateNamespace(ctx context.Context, ns *tenancy.Namespace) (*tenancy.Namespace, error)
	UpdateNamespace(ctx context.Context, name string, update func(*tenancy.Namespace) error) (*tenancy.Namespace, error)
	DeleteNamespace(ctx context.Context, name string, check func(*tenancy.Namespace) error) error

	PutPool(ctx context.Context, name string, spec proxy.PoolSpec, now time.Time) (*proxy.Pool, bool, error)
	GetPool(ctx context.Context, name string) (*proxy.Pool, error)
	ListPools(ctx context.Context, pageSize int, pageToken string) ([]*proxy.Pool, string, error)
	RequestPoolDeletion(ctx context.Context, name string, now time.Time) (*proxy.Pool, error)

	PutAccount(ctx context.Context, a account.Account, now time.Time) (*account.Account, error)
	GetAccount(ctx context.Context, id string) (*account.Account, error)
	ListAccounts(ctx context.Context) ([]account.Account, error)
	DeleteAccount(ctx context.Context, id string) error
	CountPlaced(ctx context.Context, typ, id, region string) (int, error)
}

// Run runs the contract against stores made by newStore, one empty store
// (its own project, for Firestore) per subtest.
func Run(t *testing.T, newStore func(t *testing.T) Store) {
	t.Run("CreateGetConflict", func(t *testing.T) { testCreate(t, newStore(t)) })
	t.Run("ListPages", func(t *testing.T) { testList(t, newStore(t)) })
	t.Run("StaleStatusRefused", func(t *testing.T) { testStale(t, newStore(t)) })
	t.Run("DeletionAndPrecondition", func(t *testing.T) { testDelete(t, newStore(t)) })
	t.Run("ConcurrentCreates", func(t *testing.T) { testConcurrent(t, newStore(t)) })
	t.Run("LiveUIDsAndStalled", func(t *testing.T) { testScans(t, newStore(t)) })
	t.Run("InvalidPageTokens", func(t *testing.T) { testPageTokens(t, newStore(t)) })
	t.Run("Rotation", func(t *testing.T) { testRotation(t, newStore(t)) })
	t.Run("CreatesPerHour", func(t *testing.T) { testCreatesPerHour(t, newStore(t)) })
	t.Run("Namespaces", func(t *testing.T) { testNamespaces(t, newStore(t)) })
	t.Run("NamespaceListPages", func(t *testing.T) { testNamespaceList(t, newStore(t)) })
	t.Run("CreateInNamespace", func(t *testing.T) { testCreateInNamespace(t, newStore(t)) })
	t.Run("NamespaceDeletion", func(t *testing.T) { testNamespaceDeletion(t, newStore(t)) })
	t.Run("DeletedSpend", func(t *testing.T) { testDeletedSpend(t, newStore(t)) })
	t.Run("BudgetAlerts", func(t *testing.T) { testBudgetAlerts(t, newStore(t)) })
	t.Run("LiveChanges", func(t *testing.T) { testLiveChanges(t, newStore(t)) })
	t.Run("LiveReplacements", func(t *testing.T) { testLiveReplacements(t, newStore(t)) })
	t.Run("StatusCounted", func(t *testing.T) { testStatusCounted(t, newStore(t)) })
	t.Run("Pools", func(t *testing.T) { testPools(t, newStore(t)) })
	t.Run("PoolMembers", func(t *testing.T) { testMembers(t, pools(t, newStore(t))) })
	t.Run("PoolMembersConcurrent", func(t *testing.T) { testConcurrentEnsure(t, pools(t, newStore(t))) })
	t.Run("PoolClaim", func(t *testing.T) { testClaim(t, pools(t, newStore(t))) })
	t.Run("PoolClaimBounds", func(t *testing.T) { testClaimBounds(t, pools(t, newStore(t))) })
	t.Run("PoolDocuments", func(t *testing.T) { testPoolDocuments(t, pools(t, newStore(t))) })
	t.Run("Accounts", func(t *testing.T) { testAccounts(t, newStore(t)) })
	t.Run("CountPlaced", func(t *testing.T) { testCountPlaced(t, newStore(t)) })
}

var base = time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)

// New returns a Pending document as the API creates it.
func New(ns, name string) *proxy.Proxy {
	return &proxy.Proxy{
		Namespace: ns, Name: name, UID: fmt.Sprintf("uid-%s-%s", ns, name), Generation: 1,
		Spec: proxy.Spec{Provider: "mock", Port: proxy.DefaultPort, Placement: proxy.Placement{Region: "us-central1", Zone: "us-central1-a"},
			AllowedSourceRanges: []string{"203.0.113.0/24"}},
		Status:     proxy.Status{Phase: proxy.PhasePending},
		CreateTime: base,
		Reconciler: proxy.Bookkeeping{ProgressTime: base},
	}
}

func testCreate(t *testing.T, s Store) {
	ctx := context.Background()
	p := New("team-a", "egress-1")
	got, err := s.Create(ctx, p, 20)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if got.UpdateTime.IsZero() {
		t.Error("Create returned no update time")
	}
	// Fields round-trip; the update time is the store's.
	if diff := cmp.Diff(p, got, ignoreUpdateTime); diff != "" {
		t.Errorf("created document (-want +got):\n%s", diff)
	}
	again, err := s.Get(ctx, p.Key())
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if diff := cmp.Diff(got, again); diff != "" {
		t.Errorf("Get after Create (-create +get):\n%s", diff)
	}
	other := New("team-a", "egress-1")
	other.UID = "another-uid"
	existing, err := s.Create(ctx, other, 20)
	if !errors.Is(err, proxy.ErrAlreadyExists) {
		t.Fatalf("second Create: %v, want ErrAlreadyExists", err)
	}
	if existing == nil || existing.UID != p.UID {
		t.Errorf("second Create returned %+v, want the existing document (uid %s)", existing, p.UID)
	}
	if _, err := s.Get(ctx, proxy.Key{Namespace: "team-a", Name: "absent"}); !errors.Is(err, proxy.ErrNotFound) {
		t.Errorf("Get of an absent document: %v, want ErrNotFound", err)
	}
	// A store keeps the fields it is given and makes none up.
	bare := New("team-a", "bare")
	bare.CreateTime = time.Time{}
	if _, err := s.Create(ctx, bare, 20); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, bare.Key()); err != nil || !got.CreateTime.IsZero() {
		t.Errorf("a document created without a create time reads back %v (%v), want none", got.CreateTime, err)
	}
}

var ignoreUpdateTime = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".UpdateTime" }, cmp.Ignore())

func testList(t *testing.T, s Store) {
	ctx := context.Background()
	var want []string
	for i := range 45 {
		p := New("team-l", fmt.Sprintf("p-%02d", i))
		if i%10 == 0 {
			// A few with credentials, which List opens and ListSealed
			// does not.
			c, err := proxy.NewCredentials()
			if err != nil {
				t.Fatal(err)
			}
			p.Reconciler.Credentials = c
		}
		if _, err := s.Create(ctx, p, 100); err != nil {
			t.Fatal(err)
		}
		want = append(want, p.Name)
	}
	if _, err := s.Create(ctx, New("team-other", "p-00"), 100); err != nil {
		t.Fatal(err)
	}
	var got []string
	pages, opened := 0, 0
	for token := ""; ; {
		page, next, err := s.List(ctx, "team-l", 20, token)
		if err != nil {
			t.Fatalf("List page %d: %v", pages+1, err)
		}
		pages++
		for _, p := range page {
			got = append(got, p.Name)
			if p.Reconciler.Credentials.Password != "" {
				opened++
			}
		}
		if next == "" {
			break
		}
		if pages > 5 {
			t.Fatal("List does not end")
		}
		token = next
	}
	if pages != 3 {
		t.Errorf("45 documents in pages of 20 took %d pages, want 3", pages)
	}
	if opened != 5 {
		t.Errorf("List opened %d passwords, want the 5 created with credentials", opened)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("listed names (-want +got):\n%s", diff)
	}

	// ListSealed lists the same, with no password open.
	got, pages = nil, 0
	for token := ""; ; {
		page, next, err := s.ListSealed(ctx, "team-l", 20, token)
		if err != nil {
			t.Fatalf("ListSealed page %d: %v", pages+1, err)
		}
		pages++
		for _, p := range page {
			got = append(got, p.Name)
			if p.Reconciler.Credentials.Password != "" {
				t.Errorf("ListSealed opened the password of %s", p.Name)
			}
		}
		if next == "" || pages > 5 {
			break
		}
		token = next
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("names ListSealed listed (-want +got):\n%s", diff)
	}
}

func testStale(t *testing.T, s Store) {
	ctx := context.Background()
	p, err := s.Create(ctx, New("team-s", "egress-1"), 20)
	if err != nil {
		t.Fatal(err)
	}
	first := *p
	first.Status.Phase = proxy.PhaseCreating
	if _, err := s.UpdateStatus(ctx, &first); err != nil {
		t.Fatalf("fresh UpdateStatus: %v", err)
	}
	after, err := s.Get(ctx, p.Key())
	if err != nil {
		t.Fatal(err)
	}
	stale := *p // still carries the first update time
	stale.Status.Phase = proxy.PhaseFailed
	stale.Status.Message = "written over a newer document"
	if _, err := s.UpdateStatus(ctx, &stale); !errors.Is(err, proxy.ErrConflict) {
		t.Fatalf("stale UpdateStatus: %v, want ErrConflict", err)
	}
	now, err := s.Get(ctx, p.Key())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(after, now); diff != "" {
		t.Errorf("the refused write changed the document (-before +after):\n%s", diff)
	}
	gone := *now
	gone.Name = "absent"
	if _, err := s.UpdateStatus(ctx, &gone); !errors.Is(err, proxy.ErrNotFound) && !errors.Is(err, proxy.ErrConflict) {
		t.Errorf("UpdateStatus of an absent document: %v, want ErrNotFound or ErrConflict", err)
	}
}

func testDelete(t *testing.T, s Store) {
	ctx := context.Background()
	p, err := s.Create(ctx, New("team-d", "egress-1"), 1)
	if err != nil {
		t.Fatal(err)
	}
	at := base.Add(time.Hour)
	d1, err := s.RequestDeletion(ctx, p.Key(), at)
	if err != nil {
		t.Fatalf("RequestDeletion: %v", err)
	}
	d2, err := s.RequestDeletion(ctx, p.Key(), at.Add(time.Minute))
	if err != nil {
		t.Fatalf("second RequestDeletion: %v", err)
	}
	if d1.Status.Phase != proxy.PhaseDeleting || d1.DeleteRequestTime == nil || !d1.DeleteRequestTime.Equal(at) {
		t.Errorf("after RequestDeletion: phase %s, deleteRequestTime %v; want Deleting at %s", d1.Status.Phase, d1.DeleteRequestTime, at)
	}
	if diff := cmp.Diff(d1, d2); diff != "" {
		t.Errorf("a repeated RequestDeletion changed the document (-first +second):\n%s", diff)
	}
	if again, err := s.Get(ctx, p.Key()); err != nil {
		t.Fatalf("Get after RequestDeletion: %v", err)
	} else if diff := cmp.Diff(d1, again); diff != "" {
		t.Errorf("RequestDeletion returned what a Get does not read (-returned +get):\n%s", diff)
	}
	if _, err := s.RequestDeletion(ctx, proxy.Key{Namespace: "team-d", Name: "absent"}, at); !errors.Is(err, proxy.ErrNotFound) {
		t.Errorf("RequestDeletion of an absent document: %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, p.Key(), p.UpdateTime); !errors.Is(err, proxy.ErrConflict) {
		t.Errorf("Delete with a stale update time: %v, want ErrConflict", err)
	}
	if _, err := s.Get(ctx, p.Key()); err != nil {
		t.Fatalf("the refused Delete removed the document: %v", err)
	}
	if err := s.Delete(ctx, p.Key(), d2.UpdateTime); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Get(ctx, p.Key()); !errors.Is(err, proxy.ErrNotFound) {
		t.Errorf("Get after Delete: %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, p.Key(), d2.UpdateTime); !errors.Is(err, proxy.ErrNotFound) {
		t.Errorf("second Delete: %v, want ErrNotFound", err)
	}
	// The quota of one is free again.
	if _, err := s.Create(ctx, New("team-d", "egress-2"), 1); err != nil {
		t.Errorf("Create after Delete in a namespace of quota 1: %v", err)
	}
	if _, err := s.Create(ctx, New("team-d", "egress-3"), 1); !errors.Is(err, proxy.ErrQuotaExceeded) {
		t.Errorf("Create past the quota: %v, want ErrQuotaExceeded", err)
	}
}

func testConcurrent(t *testing.T, s Store) {
	ctx := context.Background()
	// Two creates of one name: one document.
	errs := parallel(2, func(int) error { _, err := s.Create(ctx, New("team-c", "same"), 20); return err })
	if n := count(errs, nil); n != 1 {
		t.Errorf("two concurrent creates of one name: %d succeeded (errors %v), want 1", n, errs)
	}
	if n := count(errs, proxy.ErrAlreadyExists); n != 1 {
		t.Errorf("two concurrent creates of one name: %d ErrAlreadyExists, want 1: %v", n, errs)
	}
	// 25 creates of distinct names under a quota of 20: exactly 20.
	errs = parallel(25, func(i int) error { _, err := s.Create(ctx, New("team-q", fmt.Sprintf("p-%02d", i)), 20); return err })
	if n := count(errs, nil); n != 20 {
		t.Errorf("25 concurrent creates under quota 20: %d succeeded, want 20 (errors %v)", n, errs)
	}
	if n := count(errs, proxy.ErrQuotaExceeded); n != 5 {
		t.Errorf("25 concurrent creates under quota 20: %d ErrQuotaExceeded, want 5 (errors %v)", n, errs)
	}
	page, _, err := s.List(ctx, "team-q", 100, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 20 {
		t.Errorf("namespace holds %d documents, want 20", len(page))
	}
}

func parallel(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = fn(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

func count(errs []error, target error) int {
	n := 0
	for _, err := range errs {
		if (target == nil && err == nil) || (target != nil && errors.Is(err, target)) {
			n++
		}
	}
	return n
}

// scanCost is a Ready document's status.cost in testScans: what its claim
// carries of it is its month, currency, age, two sums and whether it is
// unknown.
var scanCost = pricing.Cost{Month: "2026-12", Currency: "EUR", AsOf: base,
	VM: pricing.Money{Currency: "EUR", Nanos: 20_000_000}, MonthToDate: pricing.Money{Currency: "EUR", Nanos: 20_000_000},
	Forecast: pricing.Money{Currency: "EUR", Nanos: 7_100_000_000}, Unknown: "a planted reason"}

func testScans(t *testing.T, s Store) {
	ctx := context.Background()
	var wantUIDs []string
	for i, ns := range []string{"team-x", "team-y", "team-z"} {
		for j := range 3 {
			p := New(ns, fmt.Sprintf("p-%d", j))
			p.Reconciler.ProgressTime = base.Add(time.Duration(i*3+j) * time.Minute)
			if j == 2 {
				p.Spec.MaxAge = "24h"
			}
			created, err := s.Create(ctx, p, 20)
			if err != nil {
				t.Fatal(err)
			}
			wantUIDs = append(wantUIDs, p.UID)
			if j == 2 {
				// Settled: no progress time, never stalled; on a VM, with
				// a rotation asked for since, what the claim carries.
				ready := *created
				ready.Status.Phase = proxy.PhaseReady
				ready.Status.ProviderID = "mock://proxy-" + ready.UID
				ready.Reconciler.ProgressTime = time.Time{}
				ready.Reconciler.BootStart = base
				ready.Status.Cost = &scanCost
				if _, err := s.UpdateStatus(ctx, &ready); err != nil {
					t.Fatal(err)
				}
				if _, err := s.RequestRotation(ctx, ready.Key(), base.Add(time.Hour), tenancy.Limits{}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	uids, err := s.LiveUIDs(ctx)
	if err != nil {
		t.Fatalf("LiveUIDs: %v", err)
	}
	var got []string
	for u, c := range uids {
		got = append(got, u)
		// The provider type, so the collector lists every type a document
		// names, and the providerID once there is one.
		want := proxy.Claim{Key: proxy.Key{Namespace: c.Key.Namespace, Name: c.Key.Name}, Phase: proxy.PhasePending, Provider: "mock"}
		if c.Key.Name == "p-2" {
			rotate := base.Add(time.Hour)
			want.Phase, want.MaxAge, want.BootStart, want.RotateRequestTime = proxy.PhaseReady, "24h", base, &rotate
			want.ProviderID = "mock://proxy-" + u
			want.Cost = &proxy.ClaimCost{Month: "2026-12", Currency: "EUR", AsOf: base, MonthToDate: 20_000_000, Forecast: 7_100_000_000, Unknown: true}
		}
		if u != fmt.Sprintf("uid-%s-%s", c.Key.Namespace, c.Key.Name) {
			t.Errorf("LiveUIDs[%s] is the claim of %s", u, c.Key)
		}
		if diff := cmp.Diff(want, c, cmpopts.EquateApproxTime(time.Microsecond)); diff != "" {
			t.Errorf("LiveUIDs[%s] (-want +got):\n%s", u, diff)
		}
	}
	sort.Strings(got)
	sort.Strings(wantUIDs)
	if diff := cmp.Diff(wantUIDs, got); diff != "" {
		t.Errorf("LiveUIDs (-want +got):\n%s", diff)
	}
	// Progress times 0,1 | 3,4 | 6,7 minutes; before 5m, at most 3: the
	// three oldest unsettled.
	keys, err := s.Stalled(ctx, base.Add(5*time.Minute), 3)
	if err != nil {
		t.Fatalf("Stalled: %v", err)
	}
	want := []proxy.Key{{Namespace: "team-x", Name: "p-0"}, {Namespace: "team-x", Name: "p-1"}, {Namespace: "team-y", Name: "p-0"}}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("Stalled (-want +got):\n%s", diff)
	}
	all, err := s.Stalled(ctx, base.Add(time.Hour), 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 6 {
		t.Errorf("Stalled before an hour found %d documents, want the 6 unsettled: %v", len(all), all)
	}
}
