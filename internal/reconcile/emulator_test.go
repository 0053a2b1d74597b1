package reconcile_test

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/emulators/emulatortest"
	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
	"github.com/egress-proxies/egress/internal/sealing"
	"github.com/egress-proxies/egress/internal/store"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

// countingStore counts the writes that reached Firestore.
type countingStore struct {
	*store.Store
	writes atomic.Int64
	// phases records each status write's phase, in order.
	mu     sync.Mutex
	phases []proxy.Phase
}

func (c *countingStore) UpdateStatus(ctx context.Context, p *proxy.Proxy) (time.Time, error) {
	t, err := c.Store.UpdateStatus(ctx, p)
	if err == nil {
		c.writes.Add(1)
		c.mu.Lock()
		c.phases = append(c.phases, p.Status.Phase)
		c.mu.Unlock()
	}
	return t, err
}

func (c *countingStore) Delete(ctx context.Context, key proxy.Key, ut time.Time, spent ...proxy.Spent) error {
	err := c.Store.Delete(ctx, key, ut, spent...)
	if err == nil {
		c.writes.Add(1)
	}
	return err
}

// firestoreWorld is a reconciler over the Firestore emulator and a mock
// provider whose VMs call home on the queue, on a fake clock so waits take
// no time.
func firestoreWorld(t *testing.T) (*reconcile.Reconciler, *countingStore, *mock.Provider, *queue, *clock.Fake) {
	t.Helper()
	emulatortest.Firestore(t)
	client, err := firestore.NewClient(context.Background(), emulatortest.ProjectID(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	st := &countingStore{Store: store.New(client, sealing.NewKeyring(sealing.LocalKEK(), sealing.Firestore{Client: client}))}
	clk := clock.NewFake(time.Now())
	q := &queue{}
	m := mock.New(mock.Options{Clock: clk, ProvisioningDelay: boot, CallHome: func(c mock.CallHome) {
		q.Publish(context.Background(), callHomeMessage(c))
	}})
	r := reconcile.New(st, providers{m}, q, nil, clk, slog.New(slog.DiscardHandler),
		reconcile.Options{Rand: rand.New(rand.NewPCG(5, 6))})
	return r, st, m, q, clk
}

// callHome lets the VM boot and delivers its call-home twice, as Pub/Sub
// may.
func callHome(t *testing.T, r *reconcile.Reconciler, q *queue, clk *clock.Fake) {
	t.Helper()
	clk.Advance(boot)
	msgs := q.take()
	if len(msgs) != 1 || msgs[0].Reason != proxy.ReasonReady {
		t.Fatalf("after the boot the queue holds %+v, want the VM's one call-home", msgs)
	}
	key, err := msgs[0].Key()
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := r.Reconcile(context.Background(), key, reconcile.TriggerOf(msgs[0])); err != nil {
			t.Fatal(err)
		}
	}
}

func createDoc(t *testing.T, st *countingStore, key proxy.Key) {
	t.Helper()
	_, err := st.Create(context.Background(), &proxy.Proxy{
		Namespace: key.Namespace, Name: key.Name, UID: uid, Generation: 1,
		Spec: proxy.Spec{Provider: mock.Type, Port: proxy.DefaultPort}, Status: proxy.Status{Phase: proxy.PhasePending},
		CreateTime: time.Now(),
	}, 20)
	if err != nil {
		t.Fatal(err)
	}
}

// TestDuplicateAndReorderedEvents delivers one document's event five
// times, then the echoes of every write in reverse order, then the VM's
// call-home twice: one VM, one consistent status, and only the floor of
// writes.
func TestDuplicateAndReorderedEvents(t *testing.T) {
	r, st, m, q, clk := firestoreWorld(t)
	ctx := context.Background()
	key := proxy.Key{Namespace: "team-a", Name: "dup"}
	createDoc(t, st, key)

	for range 5 {
		if err := r.Reconcile(ctx, key, reconcile.Trigger{Reason: proxy.ReasonWritten}); err != nil {
			t.Fatal(err)
		}
	}
	// Each status write is an event of its own; they come back late and in
	// reverse order, as Eventarc may deliver them.
	echoes := int(st.writes.Load())
	for range echoes {
		if err := r.Reconcile(ctx, key, reconcile.Trigger{Reason: proxy.ReasonWritten}); err != nil {
			t.Fatal(err)
		}
	}
	callHome(t, r, q, clk)
	checkSettled(t, st, m, q, key)
}

// TestConcurrentInvocations runs 20 reconciles of one new document at
// once, then the VM's call-home.
func TestConcurrentInvocations(t *testing.T) {
	r, st, m, q, clk := firestoreWorld(t)
	ctx := context.Background()
	key := proxy.Key{Namespace: "team-a", Name: "concurrent"}
	createDoc(t, st, key)

	var wg sync.WaitGroup
	errs := make([]error, 20)
	start := make(chan struct{})
	for i := range errs {
		wg.Go(func() {
			<-start
			errs[i] = r.Reconcile(ctx, key, reconcile.Trigger{Reason: proxy.ReasonWritten})
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("invocation %d: %v", i, err)
		}
	}
	callHome(t, r, q, clk)
	checkSettled(t, st, m, q, key)
}

// checkSettled checks one Ready document with one VM, reached with the
// floor of writes (Creating, Provisioning, Ready) and no echo write.
func checkSettled(t *testing.T, st *countingStore, m *mock.Provider, q *queue, key proxy.Key) {
	t.Helper()
	if got := len(m.Instances()); got != 1 {
		t.Errorf("mock provider holds %d instances, want 1", got)
	}
	if got := m.Calls(mock.MethodCreate); got != 1 {
		t.Errorf("%d Create calls, want 1", got)
	}
	p, err := st.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	ins := m.Instances()
	if p.Status.Phase != proxy.PhaseReady || len(ins) != 1 || p.Status.ProviderID != ins[0].ID || p.Status.Endpoint != ins[0].IP+":3128" {
		t.Errorf("document status %+v, want Ready on the one instance %+v", p.Status, ins)
	}
	if p.Reconciler.LeaseHolder != "" || !p.Reconciler.ProgressTime.IsZero() {
		t.Errorf("settled document keeps bookkeeping %+v, want no lease and no progress time", p.Reconciler)
	}
	st.mu.Lock()
	phases := slices.Clone(st.phases)
	st.mu.Unlock()
	if diff := cmp.Diff([]proxy.Phase{proxy.PhaseCreating, proxy.PhaseProvisioning, proxy.PhaseReady}, phases); diff != "" {
		t.Errorf("status writes (-want +got):\n%s", diff)
	}
	if msgs := q.take(); len(msgs) != 0 {
		t.Errorf("runs requeued %v, want none: nothing waits for a boot", msgs)
	}
}

// TestFailedVMLeftToTheSweep: over Firestore, a proxy that fails while its
// VM cannot be deleted stays Failed naming the VM, and the sweep's query
// (the collection-group query on the progress time) finds it until a run
// has deleted the VM; then it is settled, with the reason it failed for.
func TestFailedVMLeftToTheSweep(t *testing.T) {
	r, st, m, q, clk := firestoreWorld(t)
	ctx := context.Background()
	key := proxy.Key{Namespace: "team-a", Name: "failing"}
	createDoc(t, st, key)
	if err := r.Reconcile(ctx, key, reconcile.Trigger{Reason: proxy.ReasonWritten}); err != nil {
		t.Fatal(err)
	}
	callHome(t, r, q, clk)

	forbidden := func(op string) error {
		return provider.NewError(provider.KindPermanent, op, "", errors.New("403 the caller lacks compute.instances."+op))
	}
	m.FailNext(mock.MethodGet, 1, forbidden("get"))
	m.FailNext(mock.MethodDelete, 1, forbidden("delete"))
	if err := r.Reconcile(ctx, key, reconcile.Trigger{Reason: proxy.ReasonDrift}); err != nil {
		t.Fatal(err)
	}
	stalled := func() bool {
		t.Helper()
		keys, err := st.Stalled(ctx, clk.Now().Add(time.Hour), 10)
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(keys, key)
	}
	p, err := st.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != proxy.PhaseFailed || p.Status.ProviderID == "" || len(m.Instances()) != 1 || !stalled() {
		t.Fatalf("after the refused delete: phase %s, providerID %q, %d instances, stalled %v; want Failed naming its one VM, for the sweep",
			p.Status.Phase, p.Status.ProviderID, len(m.Instances()), stalled())
	}

	clk.Advance(time.Hour)
	if err := r.Reconcile(ctx, key, reconcile.Trigger{Reason: proxy.ReasonSweep}); err != nil {
		t.Fatal(err)
	}
	if p, err = st.Get(ctx, key); err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != proxy.PhaseFailed || p.Status.ProviderID != "" || len(m.Instances()) != 0 || stalled() ||
		!strings.Contains(p.Status.Message, "403 the caller lacks compute.instances.get") {
		t.Errorf("after the sweep's run: phase %s, providerID %q, %d instances, stalled %v, message %q; want Failed, no VM, settled, saying why",
			p.Status.Phase, p.Status.ProviderID, len(m.Instances()), stalled(), p.Status.Message)
	}
}
