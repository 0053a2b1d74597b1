package pools_test

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/gc"
	"github.com/egress-proxies/egress/internal/pools"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
	"github.com/egress-proxies/egress/internal/store/storefake"
	"github.com/egress-proxies/egress/internal/store/storetest"
	"github.com/egress-proxies/egress/internal/tenancy"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

var start = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

const boot = 20 * time.Second

// reconfigurable is the mock provider with the Reconfigurer capability, as
// the prov engineer's mock has it: a VM serves the generation it was
// created or reconfigured with, and a Reconfigure relabels it.
type reconfigurable struct {
	*mock.Provider
	mu       sync.Mutex
	gen      map[string]int64
	uid      map[string]string
	reconfig int
}

func (r *reconfigurable) Create(ctx context.Context, req provider.CreateRequest) (string, error) {
	id, err := r.Provider.Create(ctx, req)
	if err == nil && req.Engine != nil {
		r.mu.Lock()
		r.gen[id] = req.Engine.Generation
		r.mu.Unlock()
	}
	return id, err
}

func (r *reconfigurable) Get(ctx context.Context, id string) (*provider.Instance, error) {
	inst, err := r.Provider.Get(ctx, id)
	if inst != nil {
		r.mu.Lock()
		inst.Generation = r.gen[id]
		if u, ok := r.uid[id]; ok {
			inst.UID = u
		}
		r.mu.Unlock()
	}
	return inst, err
}

func (r *reconfigurable) ListByTag(ctx context.Context) ([]provider.Instance, error) {
	insts, err := r.Provider.ListByTag(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range insts {
		if u, ok := r.uid[insts[i].ID]; ok {
			insts[i].UID = u
		}
	}
	return insts, err
}

func (r *reconfigurable) Reconfigure(ctx context.Context, id string, req provider.ReconfigureRequest) error {
	if _, err := r.Provider.Get(ctx, id); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen[id] = req.Engine.Generation
	r.uid[id] = req.UID
	r.reconfig++
	return nil
}

// providers hands out the one provider.
type providers struct{ p *reconfigurable }

func (s providers) Get(_ context.Context, typ string) (provider.Provider, error) {
	if typ != mock.Type {
		return nil, errors.New("unknown provider type " + typ)
	}
	return s.p, nil
}

// Account is Get's for the default account, and knows no other.
func (s providers) Account(ctx context.Context, typ, id string) (provider.Provider, error) {
	if id != "" {
		return nil, errors.New("unknown account " + id)
	}
	return s.Get(ctx, typ)
}

func (s providers) Types() []string { return []string{mock.Type} }

// queue keeps what runs publish.
type queue struct {
	mu   sync.Mutex
	msgs []proxy.ReconcileMessage
}

func (q *queue) Publish(_ context.Context, m proxy.ReconcileMessage) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.msgs = append(q.msgs, m)
	return nil
}

func (q *queue) take() []proxy.ReconcileMessage {
	q.mu.Lock()
	defer q.mu.Unlock()
	m := q.msgs
	q.msgs = nil
	return m
}

type world struct {
	t     *testing.T
	clock *clock.Fake
	store *storefake.Store
	prov  *reconfigurable
	queue *queue
	r     *reconcile.Reconciler
	pools *pools.Reconciler
}

func newWorld(t *testing.T) *world {
	clk := clock.NewFake(start)
	w := &world{t: t, clock: clk, store: storefake.New(clk), queue: &queue{}}
	w.prov = &reconfigurable{Provider: mock.New(mock.Options{Clock: clk, ProvisioningDelay: boot}), gen: map[string]int64{}, uid: map[string]string{}}
	log := slog.New(slog.DiscardHandler)
	w.r = reconcile.New(w.store, providers{w.prov}, w.queue, nil, clk, log, reconcile.Options{
		Rand: rand.New(rand.NewPCG(1, 2)),
		Bootstrap: func(_ proxy.Spec, _ proxy.Credentials, generation int64) (string, *vmconfig.Config, error) {
			return "#!/bin/sh\n", &vmconfig.Config{Generation: generation}, nil
		},
	})
	w.pools = pools.New(w.store, clk, log)
	return w
}

func (w *world) putPool(size int) *proxy.Pool {
	w.t.Helper()
	return storetest.PutPool(w.t, w.store, storetest.NewPool("ci", size))
}

// converge runs the pool's reconcile and every document's, the VMs'
// boots passing between rounds, until nothing changes.
func (w *world) converge() {
	w.t.Helper()
	ctx := context.Background()
	for range 20 {
		_, writes0 := w.store.Counts()
		if err := w.pools.Reconcile(ctx, "ci"); err != nil {
			w.t.Fatalf("pool reconcile: %v", err)
		}
		for _, k := range w.store.Keys() {
			if err := w.r.Reconcile(ctx, k, reconcile.Trigger{Reason: proxy.ReasonSweep}); err != nil {
				w.t.Fatalf("reconcile %s: %v", k, err)
			}
		}
		w.queue.take()
		w.clock.Advance(boot + time.Second)
		if _, writes := w.store.Counts(); writes == writes0 {
			return
		}
	}
	w.t.Fatal("the pool did not converge in 20 rounds")
}

func (w *world) members() []*proxy.Proxy {
	w.t.Helper()
	ms, err := w.store.Members(context.Background(), "ci")
	if err != nil {
		w.t.Fatal(err)
	}
	return ms
}

func (w *world) pool() *proxy.Pool {
	w.t.Helper()
	p, err := w.store.GetPool(context.Background(), "ci")
	if err != nil {
		w.t.Fatal(err)
	}
	return p
}

func (w *world) get(k proxy.Key) *proxy.Proxy {
	w.t.Helper()
	p, err := w.store.Get(context.Background(), k)
	if err != nil {
		w.t.Fatal(err)
	}
	return p
}

func (w *world) vms() map[string]bool {
	out := map[string]bool{}
	for _, inst := range w.prov.Instances() {
		out[inst.ID] = true
	}
	return out
}

func TestRefillShrinkDelete(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.putPool(3)
	w.converge()
	if diff := cmp.Diff(proxy.PoolStatus{Warm: 3}, w.pool().Status); diff != "" {
		t.Errorf("a pool of 3 after its members booted (-want +got):\n%s", diff)
	}
	if n := len(w.vms()); n != 3 {
		t.Errorf("a pool of 3 has %d VMs, want 3", n)
	}
	for _, m := range w.members() {
		if g := w.prov.gen[m.Status.ProviderID]; g != 0 {
			t.Errorf("member %s's VM serves generation %d, want 0 (no one)", m.Name, g)
		}
	}
	w.putPool(1)
	w.converge()
	if ms := w.members(); len(ms) != 1 || len(w.vms()) != 1 {
		t.Errorf("a pool shrunk to 1 has %d members and %d VMs, want 1 and 1", len(ms), len(w.vms()))
	}
	if diff := cmp.Diff(proxy.PoolStatus{Warm: 1}, w.pool().Status); diff != "" {
		t.Errorf("a pool shrunk to 1 (-want +got):\n%s", diff)
	}
	if _, err := w.store.RequestPoolDeletion(ctx, "ci", w.clock.Now()); err != nil {
		t.Fatal(err)
	}
	w.converge()
	if _, err := w.store.GetPool(ctx, "ci"); !errors.Is(err, proxy.ErrNotFound) {
		t.Errorf("a deleted pool's document: %v, want ErrNotFound", err)
	}
	if len(w.store.Keys()) != 0 || len(w.vms()) != 0 {
		t.Errorf("a deleted pool leaves documents %v and VMs %v, want none", w.store.Keys(), w.vms())
	}
}

// TestFailedMemberBacksOff: a pool whose members cannot be made (a create
// Compute accepts and then fails for good, as for a missing image) makes
// one, sees it fail, says why and makes no other until RefillBackoff has
// passed, rather than one per event.
func TestFailedMemberBacksOff(t *testing.T) {
	w := newWorld(t)
	w.prov.FailCreatesAsync("", 100, provider.KindPermanent, "RESOURCE_NOT_FOUND: The resource 'projects/debian-cloud/global/images/family/debian-99' was not found")
	w.putPool(1)
	w.converge()
	st := w.pool().Status
	if n := w.prov.Calls(mock.MethodCreate); n != 1 || !strings.Contains(st.Message, "debian-99") || st.Warm != 0 {
		t.Errorf("a pool whose member failed: %d creates, status %+v; want 1 create, 0 warm and the reason", n, st)
	}
	w.clock.Advance(pools.DefaultRefillBackoff)
	w.converge()
	if n := w.prov.Calls(mock.MethodCreate); n != 2 {
		t.Errorf("after RefillBackoff: %d creates, want a second try", n)
	}
}

func TestShrinkDeletesBootingFirst(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.putPool(2)
	w.converge()
	// One more member, still booting: a shrink to 2 takes it, not a warm one.
	w.putPool(3)
	if err := w.pools.Reconcile(ctx, "ci"); err != nil {
		t.Fatal(err)
	}
	var booting proxy.Key
	for _, m := range w.members() {
		if m.Status.Phase == proxy.PhasePending {
			booting = m.Key()
		}
	}
	if booting == (proxy.Key{}) {
		t.Fatal("no new member after growing the pool")
	}
	w.putPool(2)
	// Twice, as a duplicate event would: the same member, once.
	for range 2 {
		if err := w.pools.Reconcile(ctx, "ci"); err != nil {
			t.Fatal(err)
		}
	}
	deleting := 0
	for _, m := range w.members() {
		if m.DeleteRequestTime != nil {
			deleting++
			if m.Key() != booting {
				t.Errorf("shrink asked for the deletion of %s, want the booting %s", m.Key(), booting)
			}
		}
	}
	if deleting != 1 {
		t.Errorf("shrink by one asked for %d deletions, want 1", deleting)
	}
}

// newProxy creates a proxy a pool of storetest.NewPool serves.
func (w *world) newProxy(name string) proxy.Key {
	w.t.Helper()
	p := storetest.New("team-a", name)
	p.UID = "00000000-0000-4000-8000-0000000000" + name[len(name)-2:]
	if _, err := w.store.Create(context.Background(), p, 20); err != nil {
		w.t.Fatal(err)
	}
	return p.Key()
}

func TestClaim(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.putPool(1)
	w.converge()
	warm := w.members()[0]
	creates := w.prov.Calls(mock.MethodCreate)
	key := w.newProxy("p-01")
	if err := w.r.Reconcile(ctx, key, reconcile.Trigger{}); err != nil {
		t.Fatal(err)
	}
	p := w.get(key)
	if p.Status.ProviderID != warm.Status.ProviderID || p.Status.Phase != proxy.PhaseProvisioning || p.Reconciler.SentGeneration != p.Generation {
		t.Errorf("the new proxy reads %s %s sent %d, want the warm VM %s, Provisioning, sent %d",
			p.Status.ProviderID, p.Status.Phase, p.Reconciler.SentGeneration, warm.Status.ProviderID, p.Generation)
	}
	if n := w.prov.Calls(mock.MethodCreate) - creates; n != 0 {
		t.Errorf("a claim created %d VMs, want 0", n)
	}
	if w.prov.reconfig != 1 || w.prov.uid[p.Status.ProviderID] != p.UID {
		t.Errorf("%d Reconfigures, the VM's uid %q; want 1 and the proxy's", w.prov.reconfig, w.prov.uid[p.Status.ProviderID])
	}
	if diff := cmp.Diff([]proxy.ReconcileMessage{{Document: "pools/ci", Reason: proxy.ReasonClaimed}}, w.queue.take()); diff != "" {
		t.Errorf("messages after the claim (-want +got):\n%s", diff)
	}
	// The VM's call-home: Ready at the proxy's generation.
	if err := w.r.Reconcile(ctx, key, reconcile.Trigger{Reason: proxy.ReasonReady, UID: p.UID}); err != nil {
		t.Fatal(err)
	}
	if ph := w.get(key).Status.Phase; ph != proxy.PhaseReady {
		t.Errorf("after the call-home the proxy is %s, want Ready", ph)
	}
	w.converge()
	if st := w.pool().Status; st.Warm != 1 || st.ClaimsLastHour != 1 || !maps.Equal(st.ClaimsLastHourByNamespace, map[string]int{"team-a": 1}) {
		t.Errorf("the pool after a claim and its refill: %+v, want 1 warm and 1 claim, team-a's", st)
	}
	// The claimed member's document goes once the proxy relabelled the VM
	// (the pool's status counts the claim for the hour), and never the VM.
	if _, err := w.store.Get(ctx, warm.Key()); !errors.Is(err, proxy.ErrNotFound) {
		t.Errorf("the claimed member once its proxy relabelled the VM: %v, want gone", err)
	}
	if !w.vms()[warm.Status.ProviderID] {
		t.Error("the claimed VM was deleted with its member's document")
	}
	w.clock.Advance(time.Hour)
	w.converge()
	if st := w.pool().Status; st.ClaimsLastHour != 0 || len(st.Claims) != 0 || len(st.ClaimsLastHourByNamespace) != 0 || len(st.ClaimNamespaces) != 0 {
		t.Errorf("the pool an hour after the claim: %+v, want no claim counted or kept", st)
	}
}

// TestClaimsPerNamespaceBound: a pool that lets one namespace claim one VM
// an hour serves that namespace's first proxy warm and its second cold,
// and keeps its other warm VM for the other namespaces: their proxies
// claim it.
func TestClaimsPerNamespaceBound(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	pl := storetest.NewPool("ci", 2)
	pl.Spec.ClaimsPerNamespacePerHour = 1
	storetest.PutPool(t, w.store, pl)
	w.converge()
	warm := map[string]bool{}
	for _, m := range w.members() {
		warm[m.Status.ProviderID] = true
	}
	claimed := func(key proxy.Key) bool {
		t.Helper()
		if err := w.r.Reconcile(ctx, key, reconcile.Trigger{}); err != nil {
			t.Fatal(err)
		}
		return warm[w.get(key).Status.ProviderID]
	}
	first, second := w.newProxy("p-01"), w.newProxy("p-02")
	other := storetest.New("team-b", "p-03")
	other.UID = "00000000-0000-4000-8000-000000000003"
	if _, err := w.store.Create(ctx, other, 20); err != nil {
		t.Fatal(err)
	}
	type served struct{ First, Second, Other bool }
	got := served{claimed(first), claimed(second), claimed(other.Key())}
	if diff := cmp.Diff(served{First: true, Second: false, Other: true}, got); diff != "" {
		t.Errorf("which proxies a warm VM served (-want +got):\n%s", diff)
	}
	if ph := w.get(second).Status.Phase; ph != proxy.PhaseProvisioning {
		t.Errorf("team-a's second proxy, past the pool's bound: %s, want Provisioning on a VM of its own", ph)
	}
}

// TestDeletedPoolLetsGoOfItsClaims: a pool deleted just after a claim
// does not wait out the claimed member's hour: once the proxy has its VM
// relabelled, the member's document goes, and with it the pool's; the VM
// stays the proxy's until the proxy is deleted, and then nothing is left.
func TestDeletedPoolLetsGoOfItsClaims(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.putPool(1)
	w.converge()
	key := w.newProxy("p-01")
	if err := w.r.Reconcile(ctx, key, reconcile.Trigger{}); err != nil {
		t.Fatal(err)
	}
	vm := w.get(key).Status.ProviderID
	if _, err := w.store.RequestPoolDeletion(ctx, "ci", w.clock.Now()); err != nil {
		t.Fatal(err)
	}
	w.converge()
	if _, err := w.store.GetPool(ctx, "ci"); !errors.Is(err, proxy.ErrNotFound) {
		t.Errorf("a deleted pool's document minutes after a claim: %v, want gone", err)
	}
	if keys := w.store.Keys(); len(keys) != 1 || keys[0] != key {
		t.Errorf("documents left: %v, want only the proxy %s", keys, key)
	}
	if vms := w.vms(); len(vms) != 1 || !vms[vm] {
		t.Errorf("VMs left: %v, want only the proxy's %s", vms, vm)
	}
	if _, err := w.store.RequestDeletion(ctx, key, w.clock.Now()); err != nil {
		t.Fatal(err)
	}
	w.converge()
	if len(w.store.Keys()) != 0 || len(w.vms()) != 0 {
		t.Errorf("after the proxy's deletion: documents %v and VMs %v, want none", w.store.Keys(), w.vms())
	}
}

func TestRaceForOneWarmVM(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.putPool(1)
	w.converge()
	creates := w.prov.Calls(mock.MethodCreate)
	a, b := w.newProxy("p-01"), w.newProxy("p-02")
	var wg sync.WaitGroup
	for _, k := range []proxy.Key{a, b} {
		wg.Go(func() {
			if err := w.r.Reconcile(ctx, k, reconcile.Trigger{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	pa, pb := w.get(a), w.get(b)
	if pa.Status.ProviderID == "" || pb.Status.ProviderID == "" || pa.Status.ProviderID == pb.Status.ProviderID {
		t.Errorf("two proxies for one warm VM have VMs %q and %q, want two distinct", pa.Status.ProviderID, pb.Status.ProviderID)
	}
	if n := w.prov.Calls(mock.MethodCreate) - creates; n != 1 {
		t.Errorf("two proxies for one warm VM created %d VMs, want 1 (the loser's, cold)", n)
	}
}

func TestCrashBetweenClaimAndReconfigure(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.putPool(1)
	w.converge()
	key := w.newProxy("p-01")
	p := w.get(key)
	// What the claiming run's transaction wrote before it was cut short.
	pool, err := w.store.GetPool(ctx, "ci")
	if err != nil {
		t.Fatal(err)
	}
	member, _, err := w.store.ClaimWarm(ctx, p, pool, w.clock.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	// Mid-claim, the VM still carries the member's uid, which its tombstone
	// claims: the collector keeps it, however old it is.
	w.clock.Advance(time.Hour)
	col := gc.New(providers{w.prov}, w.store, w.queue, w.clock, slog.New(slog.DiscardHandler), gc.Options{GracePeriod: time.Minute, AllowEmptyDatabase: true})
	if _, err := col.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if !w.vms()[member.Status.ProviderID] {
		t.Fatal("the collector deleted a VM mid-claim")
	}
	// The sweep's run reconfigures it.
	if err := w.r.Reconcile(ctx, key, reconcile.Trigger{Reason: proxy.ReasonSweep}); err != nil {
		t.Fatal(err)
	}
	if w.prov.reconfig != 1 || w.prov.uid[member.Status.ProviderID] != p.UID {
		t.Errorf("after the crash: %d Reconfigures, VM uid %q; want 1 and the proxy's", w.prov.reconfig, w.prov.uid[member.Status.ProviderID])
	}
	if err := w.r.Reconcile(ctx, key, reconcile.Trigger{Reason: proxy.ReasonReady, UID: p.UID}); err != nil {
		t.Fatal(err)
	}
	if ph := w.get(key).Status.Phase; ph != proxy.PhaseReady {
		t.Errorf("after the call-home: %s, want Ready", ph)
	}
}

func TestMakeBeforeBreak(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	key := w.newProxy("p-01")
	// Cold, with no pool yet.
	for range 2 {
		if err := w.r.Reconcile(ctx, key, reconcile.Trigger{Reason: proxy.ReasonSweep}); err != nil {
			t.Fatal(err)
		}
		w.clock.Advance(boot + time.Second)
	}
	old := w.get(key)
	if old.Status.Phase != proxy.PhaseReady {
		t.Fatalf("cold proxy is %s, want Ready", old.Status.Phase)
	}
	w.putPool(1)
	w.converge()
	warm := w.members()[0]
	if _, err := w.store.RequestRotation(ctx, key, w.clock.Now(), tenancy.Limits{}); err != nil {
		t.Fatal(err)
	}
	if err := w.r.Reconcile(ctx, key, reconcile.Trigger{}); err != nil {
		t.Fatal(err)
	}
	p := w.get(key)
	if p.Status.ProviderID != warm.Status.ProviderID || p.Reconciler.Retiring != old.Status.ProviderID || p.Status.Rotations != 1 {
		t.Errorf("rotation: VM %s retiring %q rotations %d, want the warm %s, retiring %s, 1", p.Status.ProviderID, p.Reconciler.Retiring, p.Status.Rotations, warm.Status.ProviderID, old.Status.ProviderID)
	}
	if !w.vms()[old.Status.ProviderID] {
		t.Error("the old VM went before the new one was Ready")
	}
	// The old VM's Delete is refused when the new one is Ready: the proxy
	// is Ready, but not settled, so the sweep comes back for the old VM.
	w.prov.FailNext(mock.MethodDelete, 1, provider.NewError(provider.KindTransient, "delete", "", errors.New("503 backend unavailable")))
	if err := w.r.Reconcile(ctx, key, reconcile.Trigger{Reason: proxy.ReasonReady, UID: p.UID}); err != nil {
		t.Fatal(err)
	}
	p = w.get(key)
	if p.Status.Phase != proxy.PhaseReady || p.Reconciler.Retiring != old.Status.ProviderID {
		t.Errorf("after the new VM's call-home, the old one's Delete refused: %s retiring %q, want Ready and still %s", p.Status.Phase, p.Reconciler.Retiring, old.Status.ProviderID)
	}
	stalled, err := w.store.Stalled(ctx, w.clock.Now().Add(time.Hour), 10)
	if err != nil || !slices.Contains(stalled, key) {
		t.Fatalf("the sweep's stalled documents: %v (%v), want %s, whose old VM is left to retire", stalled, err, key)
	}
	if err := w.r.Reconcile(ctx, key, reconcile.Trigger{Reason: proxy.ReasonSweep}); err != nil {
		t.Fatal(err)
	}
	p = w.get(key)
	if p.Status.Phase != proxy.PhaseReady || p.Reconciler.Retiring != "" || !p.Reconciler.ProgressTime.IsZero() {
		t.Errorf("after the sweep: %s retiring %q progress %s, want Ready, none, settled", p.Status.Phase, p.Reconciler.Retiring, p.Reconciler.ProgressTime)
	}
	w.clock.Advance(time.Minute)
	if w.vms()[old.Status.ProviderID] {
		t.Error("the retired VM is still there once the new one is Ready")
	}
}

// gatedStore holds each pool read until the test lets it through, and
// counts them: one read a run.
type gatedStore struct {
	*storefake.Store
	reads chan struct{}
	gate  chan error
}

func (g *gatedStore) GetPool(ctx context.Context, name string) (*proxy.Pool, error) {
	g.reads <- struct{}{}
	if err := <-g.gate; err != nil {
		return nil, err
	}
	return g.Store.GetPool(ctx, name)
}

// TestRunsOfAPoolFold: while a pool's run runs, the runs asked for
// meanwhile return at once, and the run runs once more for all of them;
// after a failed run, none more (its event is delivered again).
func TestRunsOfAPoolFold(t *testing.T) {
	ctx := context.Background()
	st := &gatedStore{Store: storefake.New(clock.NewFake(start)), reads: make(chan struct{}), gate: make(chan error)}
	if _, _, err := st.PutPool(ctx, "warm", proxy.PoolSpec{Provider: mock.Type, Size: 0}, start); err != nil {
		t.Fatal(err)
	}
	r := pools.New(st, clock.NewFake(start), slog.New(slog.DiscardHandler))
	for name, tc := range map[string]struct {
		reason string
		first  error
		want   []error
		reads  int
	}{
		"Succeeded": {reason: "Three runs asked for during one make one more run.", want: []error{nil}, reads: 2},
		"Failed":    {reason: "A failed run runs no more: its event comes again.", first: errors.New("unavailable"), reads: 1},
	} {
		t.Run(name, func(t *testing.T) {
			done := make(chan error)
			go func() { done <- r.Reconcile(ctx, "warm") }()
			<-st.reads // the first run reads the pool, and waits
			for range 3 {
				if err := r.Reconcile(ctx, "warm"); err != nil {
					t.Fatalf("a run asked for during another: %v, want nil at once", err)
				}
			}
			reads := 1
			st.gate <- tc.first
			for _, err := range tc.want {
				<-st.reads
				reads++
				st.gate <- err
			}
			err := <-done
			if (err != nil) != (tc.first != nil) || reads != tc.reads {
				t.Errorf("%s\nthe first run: %v after %d reads of the pool, want error %v after %d", tc.reason, err, reads, tc.first, tc.reads)
			}
			// Nothing runs any more: the next run is a run of its own.
			go func() { done <- r.Reconcile(ctx, "warm") }()
			<-st.reads
			st.gate <- nil
			if err := <-done; err != nil {
				t.Errorf("a run after them: %v", err)
			}
		})
	}
}
