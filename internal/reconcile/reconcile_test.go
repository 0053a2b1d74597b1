package reconcile_test

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
	"github.com/egress-proxies/egress/internal/store/storefake"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

var start = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

const (
	uid  = "6c1f0a5e-8d1b-4c59-9a53-1b7a2f3d4e5f"
	boot = 10 * time.Second
)

// world is one document, its store, a mock provider whose VMs call home,
// and a fake clock.
type world struct {
	t      *testing.T
	clock  *sleepCountingClock
	store  *storefake.Store
	mock   *mock.Provider
	queue  *queue
	r      *reconcile.Reconciler
	key    proxy.Key
	writes int // status writes and deletes after the document was set up
	// reads0 and calls0 are the counts at the last forget.
	reads0 int
	calls0 map[mock.Method]int
}

// sleepCountingClock is the fake clock, counting the waits of the runs.
type sleepCountingClock struct {
	*clock.Fake
	mu     sync.Mutex
	sleeps int
	slept  []time.Duration
}

func (c *sleepCountingClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps++
	c.slept = append(c.slept, d)
	c.mu.Unlock()
	return c.Fake.Sleep(ctx, d)
}

func (c *sleepCountingClock) takeSleeps() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.sleeps
	c.sleeps = 0
	return n
}

// providers hands out the one mock provider.
type providers struct{ p provider.Provider }

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

// queue is proxy-reconcile: what runs publish (hand-offs) and what VMs
// publish (call-homes).
type queue struct {
	mu   sync.Mutex
	msgs []proxy.ReconcileMessage
	err  error
}

func (q *queue) Publish(_ context.Context, m proxy.ReconcileMessage) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err != nil {
		return q.err
	}
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

type secrets map[string]string

func (s secrets) Access(_ context.Context, version string) (string, error) {
	v, ok := s[version]
	if !ok {
		return "", &secretsErr{version}
	}
	return v, nil
}

// secretsErr is a version that does not exist, as Secret Manager says it.
type secretsErr struct{ version string }

func (e *secretsErr) Error() string     { return "reading secret version " + e.version + ": NotFound" }
func (e *secretsErr) IsPermanent() bool { return true }

func newWorld(t *testing.T, opts reconcile.Options) *world {
	t.Helper()
	clk := &sleepCountingClock{Fake: clock.NewFake(start)}
	w := &world{
		t:      t,
		clock:  clk,
		store:  storefake.New(clk),
		queue:  &queue{},
		key:    proxy.Key{Namespace: "team-a", Name: "egress-1"},
		calls0: map[mock.Method]int{},
	}
	w.mock = mock.New(mock.Options{Clock: clk, ProvisioningDelay: boot, CallHome: func(c mock.CallHome) {
		w.queue.Publish(context.Background(), callHomeMessage(c))
	}})
	if opts.Rand == nil {
		opts.Rand = rand.New(rand.NewPCG(1, 2))
	}
	w.r = reconcile.New(w.store, providers{w.mock}, w.queue, secrets{"projects/p/secrets/ci/versions/1": "#cloud-config\n"},
		clk, slog.New(slog.DiscardHandler), opts)
	return w
}

// callHomeMessage is what a VM publishes, as the composition root sends it
// for the mock's VMs.
func callHomeMessage(c mock.CallHome) proxy.ReconcileMessage {
	m := proxy.ReconcileMessage{Namespace: c.Namespace, Pool: c.Pool, Name: c.Name, UID: c.UID, Reason: proxy.ReasonReady}
	if c.BootError != "" {
		m.Reason = proxy.ReasonBootFailed
	}
	return m
}

// create writes a new document as the API does.
func (w *world) create(spec proxy.Spec) {
	w.t.Helper()
	if spec.Provider == "" {
		spec.Provider = mock.Type
	}
	_, err := w.store.Create(context.Background(), &proxy.Proxy{
		Namespace: w.key.Namespace, Name: w.key.Name, UID: uid,
		Generation: 1, Spec: spec, Status: proxy.Status{Phase: proxy.PhasePending}, CreateTime: w.clock.Now(),
	}, 20)
	if err != nil {
		w.t.Fatal(err)
	}
	w.store.Watch(func(c storefake.Change) { w.writes++ })
}

// reconcile runs one reconcile, then every run the queue asks for (the
// runs' own hand-offs, VMs calling home), as Pub/Sub would deliver them.
func (w *world) reconcile(t reconcile.Trigger) {
	w.t.Helper()
	if err := w.r.Reconcile(context.Background(), w.key, t); err != nil {
		w.t.Fatalf("Reconcile: %v", err)
	}
	w.deliver()
}

func (w *world) deliver() {
	w.t.Helper()
	for i := 0; ; i++ {
		msgs := w.queue.take()
		if len(msgs) == 0 {
			return
		}
		if i > 20 {
			w.t.Fatalf("still requeueing after 20 rounds: %+v", msgs)
		}
		for _, m := range msgs {
			key, err := m.Key()
			if err != nil {
				w.t.Fatal(err)
			}
			if err := w.r.Reconcile(context.Background(), key, reconcile.TriggerOf(m)); err != nil {
				w.t.Fatalf("Reconcile of %+v: %v", m, err)
			}
		}
	}
}

// boot lets time pass until the VMs have booted (and called home), and
// delivers what they published.
func (w *world) boot() {
	w.t.Helper()
	w.clock.Advance(boot)
	w.deliver()
}

// sweep is the garbage collector re-driving the document.
func (w *world) sweep() { w.reconcile(reconcile.Trigger{Reason: proxy.ReasonSweep}) }

func (w *world) doc() *proxy.Proxy {
	w.t.Helper()
	p, err := w.store.Get(context.Background(), w.key)
	if errors.Is(err, proxy.ErrNotFound) {
		return nil
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return p
}

func (w *world) update(change func(p *proxy.Proxy)) {
	w.t.Helper()
	p := w.doc()
	change(p)
	if _, err := w.store.UpdateStatus(context.Background(), p); err != nil {
		w.t.Fatal(err)
	}
}

// ready drives a new document to Ready and forgets the calls and writes it
// took.
func (w *world) ready() *proxy.Proxy {
	w.t.Helper()
	w.create(proxy.Spec{})
	w.reconcile(reconcile.Trigger{})
	w.boot()
	p := w.doc()
	if p.Status.Phase != proxy.PhaseReady {
		w.t.Fatalf("setting up: phase %s, want Ready", p.Status.Phase)
	}
	w.forget()
	return p
}

// forget starts counting writes, reads, provider calls and waits afresh.
func (w *world) forget() {
	w.writes = 0
	w.reads()
	w.calls()
	w.clock.takeSleeps()
}

// reads returns the document reads since the last call.
func (w *world) reads() int {
	r, _ := w.store.Counts()
	n := r - w.reads0
	w.reads0 = r
	return n
}

// calls returns the provider calls since the last call, by method.
func (w *world) calls() map[mock.Method]int {
	out := map[mock.Method]int{}
	for _, m := range []mock.Method{mock.MethodCreate, mock.MethodGet, mock.MethodDelete} {
		if d := w.mock.Calls(m) - w.calls0[m]; d > 0 {
			out[m] = d
		}
		w.calls0[m] = w.mock.Calls(m)
	}
	return out
}

func (w *world) requestDeletion() {
	w.t.Helper()
	if _, err := w.store.RequestDeletion(context.Background(), w.key, w.clock.Now()); err != nil {
		w.t.Fatal(err)
	}
	w.writes = 0
}

// outcome is what a case checks after its runs.
type outcome struct {
	Phase        proxy.Phase
	Endpoint     string
	Message      string
	Instances    int
	Creates      int
	Replacements int64
	BootFailures int64
	Writes       int
	Gone         bool
	Leased       bool
}

func (w *world) outcome() outcome {
	o := outcome{Instances: len(w.mock.Instances()), Creates: w.mock.Calls(mock.MethodCreate), Writes: w.writes}
	p := w.doc()
	if p == nil {
		o.Gone = true
		return o
	}
	o.Phase, o.Endpoint, o.Message = p.Status.Phase, p.Status.Endpoint, p.Status.Message
	o.Replacements, o.BootFailures = p.Reconciler.Replacements, p.Reconciler.BootFailures
	o.Leased = p.Reconciler.LeaseHolder != ""
	return o
}

func TestReconcile(t *testing.T) {
	transient := provider.NewError(provider.KindTransient, "create", "", errors.New("503 backend error"))
	cases := map[string]struct {
		reason string
		run    func(w *world)
		want   outcome
	}{
		"NewProxyCreatedOnce": {
			reason: "A new document gets one Create; its VM's call-home brings it Ready, with the floor of writes: Creating, Provisioning, Ready.",
			run: func(w *world) {
				w.create(proxy.Spec{})
				w.reconcile(reconcile.Trigger{})
				w.boot()
			},
			want: outcome{Phase: proxy.PhaseReady, Endpoint: "192.0.2.1:3128", Instances: 1, Creates: 1, Writes: 3},
		},
		"TransientCreateErrorRetried": {
			reason: "A Create that fails transiently is retried after a backoff and makes no duplicate.",
			run: func(w *world) {
				w.create(proxy.Spec{Port: 8888})
				w.mock.FailNext(mock.MethodCreate, 2, transient)
				w.reconcile(reconcile.Trigger{})
				w.boot()
			},
			// Creating, the error message (once: the second identical
			// failure costs no write), Provisioning, Ready.
			want: outcome{Phase: proxy.PhaseReady, Endpoint: "192.0.2.1:8888", Instances: 1, Creates: 3, Writes: 4},
		},
		"CreateSucceededButReturnedError": {
			reason: "A Create whose response is lost is retried, and the retry adopts the VM by name.",
			run: func(w *world) {
				w.create(proxy.Spec{})
				w.mock.FailNextAfterEffect(mock.MethodCreate, 1, transient)
				w.reconcile(reconcile.Trigger{})
				w.boot()
			},
			want: outcome{Phase: proxy.PhaseReady, Endpoint: "192.0.2.1:3128", Instances: 1, Creates: 2, Writes: 4},
		},
		"CrashAfterCreateAdopts": {
			reason: "A run that crashed after Create and before storing the providerID left createPending; the sweep's run adopts the same VM.",
			run: func(w *world) {
				w.create(proxy.Spec{})
				w.update(func(p *proxy.Proxy) {
					p.Status.Phase = proxy.PhaseCreating
					p.Reconciler.CreatePending = provider.NameFromUID(p.UID)
					p.Reconciler.LeaseHolder = "crashed-run"
					p.Reconciler.LeaseExpireTime = start.Add(time.Minute)
				})
				if _, err := w.mock.Create(context.Background(), provider.CreateRequest{Name: provider.NameFromUID(uid), UID: uid, Namespace: w.key.Namespace, ProxyName: w.key.Name}); err != nil {
					w.t.Fatal(err)
				}
				// The crashed run's lease keeps others off until it expires;
				// the sweep comes after that.
				w.reconcile(reconcile.Trigger{})
				w.clock.Advance(2 * time.Minute)
				w.writes = 0
				w.sweep()
			},
			// The takeover's create intent, Provisioning, and Ready on the
			// call-home the VM had sent meanwhile.
			want: outcome{Phase: proxy.PhaseReady, Endpoint: "192.0.2.1:3128", Instances: 1, Creates: 2, Writes: 3},
		},
		"LostVMReplaced": {
			reason: "A Ready proxy's VM that is gone is replaced at once, and the replacement is counted.",
			run: func(w *world) {
				p := w.ready()
				w.mock.Lose(p.Status.ProviderID)
				w.reconcile(reconcile.Trigger{Reason: proxy.ReasonDrift})
				w.boot()
			},
			// Replacing, the create intent, Provisioning, Ready.
			want: outcome{Phase: proxy.PhaseReady, Endpoint: "192.0.2.2:3128", Instances: 1, Creates: 2, Replacements: 1, Writes: 4},
		},
		"StoppedVMReplaced": {
			reason: "A stopped VM is deleted and replaced, and the replacement is counted once.",
			run: func(w *world) {
				p := w.ready()
				w.mock.Stop(p.Status.ProviderID, provider.StateStopped)
				w.reconcile(reconcile.Trigger{Reason: proxy.ReasonDrift})
				w.boot()
			},
			want: outcome{Phase: proxy.PhaseReady, Endpoint: "192.0.2.2:3128", Instances: 1, Creates: 2, Replacements: 1, Writes: 4},
		},
		"TerminatedVMReplaced": {
			reason: "A terminated VM is replaced like a stopped one.",
			run: func(w *world) {
				p := w.ready()
				w.mock.Stop(p.Status.ProviderID, provider.StateTerminated)
				w.reconcile(reconcile.Trigger{Reason: proxy.ReasonDrift})
				w.boot()
			},
			want: outcome{Phase: proxy.PhaseReady, Endpoint: "192.0.2.2:3128", Instances: 1, Creates: 2, Replacements: 1, Writes: 4},
		},
		"DeletionWithProviderID": {
			reason: "Deletion deletes the VM first, and the document once Get says it is gone.",
			run: func(w *world) {
				w.ready()
				w.requestDeletion()
				w.reconcile(reconcile.Trigger{})
			},
			want: outcome{Gone: true, Creates: 1, Writes: 1},
		},
		"DeletionWithoutProviderID": {
			reason: "A document deleted before any VM was recorded goes at once.",
			run: func(w *world) {
				w.create(proxy.Spec{})
				w.requestDeletion()
				w.reconcile(reconcile.Trigger{})
			},
			want: outcome{Gone: true, Writes: 1},
		},
		"DeletionWhileLeased": {
			reason: "Deletion does not wait for another run's lease.",
			run: func(w *world) {
				w.ready()
				w.update(func(p *proxy.Proxy) {
					p.Reconciler.LeaseHolder, p.Reconciler.LeaseExpireTime = "other", start.Add(time.Hour)
				})
				w.requestDeletion()
				w.reconcile(reconcile.Trigger{})
			},
			want: outcome{Gone: true, Creates: 1, Writes: 1},
		},
		"DeletionWhileProvisioning": {
			reason: "A proxy deleted before its VM is ready loses the VM, and its late call-home finds nothing.",
			run: func(w *world) {
				w.create(proxy.Spec{})
				w.reconcile(reconcile.Trigger{})
				w.requestDeletion()
				w.reconcile(reconcile.Trigger{})
				w.boot()
			},
			want: outcome{Gone: true, Creates: 1, Writes: 1},
		},
		"PermanentErrorFails": {
			reason: "A permanent provider error settles the proxy in Failed with the provider's message, and later events do nothing.",
			run: func(w *world) {
				w.create(proxy.Spec{})
				w.mock.FailNext(mock.MethodCreate, 1, provider.NewError(provider.KindPermanent, "create", "", errors.New("machine type n9-huge does not exist")))
				w.reconcile(reconcile.Trigger{})
				w.reconcile(reconcile.Trigger{})
				w.sweep()
			},
			want: outcome{Phase: proxy.PhaseFailed, Creates: 1, Writes: 2,
				Message: "creating instance proxy-6c1f0a5e-8d1b-4c59-9a53-1b7a2f3d4e5f: create: Permanent: machine type n9-huge does not exist"},
		},
		"MissingSecretFails": {
			reason: "A cloudInitSecret that cannot be read fails the proxy, naming the secret, without a Create.",
			run: func(w *world) {
				w.create(proxy.Spec{CloudInitSecret: "projects/p/secrets/absent/versions/1"})
				w.reconcile(reconcile.Trigger{})
			},
			want: outcome{Phase: proxy.PhaseFailed, Writes: 2,
				Message: "resolving the bootstrap: reading secret version projects/p/secrets/absent/versions/1: NotFound"},
		},
		"SilentVMFoundBySweep": {
			reason: "A VM whose call-home is lost is found ready by the sweep.",
			run: func(w *world) {
				w.create(proxy.Spec{})
				w.mock.SkipCallHome(1)
				w.reconcile(reconcile.Trigger{})
				w.boot()
				w.sweep()
			},
			want: outcome{Phase: proxy.PhaseReady, Endpoint: "192.0.2.1:3128", Instances: 1, Creates: 1, Writes: 3},
		},
		"SlowBootWithinTimeout": {
			reason: "A sweep of a VM still booting within the boot timeout changes nothing.",
			run: func(w *world) {
				w.create(proxy.Spec{})
				w.mock.NeverReady(1)
				w.reconcile(reconcile.Trigger{})
				w.clock.Advance(5 * time.Minute)
				w.sweep()
			},
			want: outcome{Phase: proxy.PhaseProvisioning, Instances: 1, Creates: 1, Writes: 2},
		},
		"BootTimeoutReplaces": {
			reason: "A VM not ready within the boot timeout is replaced, the failure counted; a ready replacement clears the count.",
			run: func(w *world) {
				w.create(proxy.Spec{})
				w.mock.NeverReady(1)
				w.reconcile(reconcile.Trigger{})
				w.clock.Advance(reconcile.DefaultBootTimeout + time.Second)
				w.sweep()
				if p := w.doc(); p.Status.Phase != proxy.PhaseProvisioning || p.Reconciler.BootFailures != 1 {
					w.t.Fatalf("after the timeout: phase %s, %d boot failures; want Provisioning (the replacement) after 1", p.Status.Phase, p.Reconciler.BootFailures)
				}
				w.boot()
			},
			// Creating, Provisioning; Replacing, the create intent,
			// Provisioning; Ready.
			want: outcome{Phase: proxy.PhaseReady, Endpoint: "192.0.2.2:3128", Instances: 1, Creates: 2, Replacements: 1, Writes: 6},
		},
		"BootErrorReplaces": {
			reason: "A VM whose bootstrap reports an error is replaced at the next look, without waiting for the timeout.",
			run: func(w *world) {
				w.create(proxy.Spec{})
				w.reconcile(reconcile.Trigger{})
				w.mock.FailBoot(w.doc().Status.ProviderID, "tinyproxy does not answer on port 3128")
				w.clock.Advance(time.Minute)
				w.sweep()
				w.boot()
			},
			want: outcome{Phase: proxy.PhaseReady, Endpoint: "192.0.2.2:3128", Instances: 1, Creates: 2, Replacements: 1, Writes: 6},
		},
		"LeaseHeldByAnotherRun": {
			reason: "A run that finds another's lease does nothing.",
			run: func(w *world) {
				w.create(proxy.Spec{})
				w.update(func(p *proxy.Proxy) {
					p.Reconciler.LeaseHolder, p.Reconciler.LeaseExpireTime = "other", start.Add(time.Minute)
				})
				w.writes = 0
				w.reconcile(reconcile.Trigger{})
			},
			want: outcome{Phase: proxy.PhasePending, Leased: true},
		},
		"ExpiredLeaseTakenOver": {
			reason: "A lease past its expiry (its run crashed) does not stop the next run.",
			run: func(w *world) {
				w.create(proxy.Spec{})
				w.update(func(p *proxy.Proxy) {
					p.Reconciler.LeaseHolder, p.Reconciler.LeaseExpireTime = "crashed", start.Add(-time.Second)
				})
				w.writes = 0
				w.reconcile(reconcile.Trigger{})
				w.boot()
			},
			want: outcome{Phase: proxy.PhaseReady, Endpoint: "192.0.2.1:3128", Instances: 1, Creates: 1, Writes: 3},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, reconcile.Options{})
			tc.run(w)
			if diff := cmp.Diff(tc.want, w.outcome()); diff != "" {
				t.Errorf("%s\noutcome (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestWhatALookCosts counts what each kind of run costs on a settled or
// booting proxy: a stale or foreign message must cost one read and nothing
// else, and a look at a booting VM one Get and no write.
func TestWhatALookCosts(t *testing.T) {
	type cost struct {
		Reads, Writes int
		Calls         map[mock.Method]int
		Phase         proxy.Phase
	}
	cases := map[string]struct {
		reason string
		setup  func(w *world) // leaves the world to look at
		look   func(w *world)
		want   cost
	}{
		"ReadyMessageForAStaleUID": {
			reason: "a VM of the name's predecessor calls home: one read",
			setup:  func(w *world) { w.ready() },
			look: func(w *world) {
				w.reconcile(reconcile.Trigger{Reason: proxy.ReasonReady, UID: "0f0f0f0f-0000-4000-8000-000000000000"})
			},
			want: cost{Reads: 1, Calls: map[mock.Method]int{}, Phase: proxy.PhaseReady},
		},
		"ReadyMessageForADeletedDocument": {
			reason: "a call-home for a proxy deleted since: one read",
			setup: func(w *world) {
				w.ready()
				w.requestDeletion()
				w.reconcile(reconcile.Trigger{})
			},
			look: func(w *world) { w.reconcile(reconcile.Trigger{Reason: proxy.ReasonReady, UID: uid}) },
			want: cost{Reads: 1, Calls: map[mock.Method]int{}},
		},
		"ForgedReadyMessage": {
			reason: "a call-home for a VM that is not ready (forged, or early): one read and one Get, no write",
			setup: func(w *world) {
				w.create(proxy.Spec{})
				w.reconcile(reconcile.Trigger{})
			},
			look: func(w *world) { w.reconcile(reconcile.Trigger{Reason: proxy.ReasonReady, UID: uid}) },
			want: cost{Reads: 1, Calls: map[mock.Method]int{mock.MethodGet: 1}, Phase: proxy.PhaseProvisioning},
		},
		"DuplicateReadyMessage": {
			reason: "the call-home again, once Ready: one read, one Get, no write",
			setup:  func(w *world) { w.ready() },
			look:   func(w *world) { w.reconcile(reconcile.Trigger{Reason: proxy.ReasonReady, UID: uid}) },
			want:   cost{Reads: 1, Calls: map[mock.Method]int{mock.MethodGet: 1}, Phase: proxy.PhaseReady},
		},
		"EventOfAProvisioningWrite": {
			reason: "the event of the run's own Provisioning write: one read, no Get",
			setup: func(w *world) {
				w.create(proxy.Spec{})
				w.reconcile(reconcile.Trigger{})
			},
			look: func(w *world) { w.reconcile(reconcile.Trigger{}) },
			want: cost{Reads: 1, Calls: map[mock.Method]int{}, Phase: proxy.PhaseProvisioning},
		},
		"StaleEventsOfAReadyProxy": {
			reason: "late or duplicate events of a Ready document: a read each, no provider call",
			setup:  func(w *world) { w.ready() },
			look: func(w *world) {
				for range 5 {
					w.reconcile(reconcile.Trigger{})
				}
			},
			want: cost{Reads: 5, Calls: map[mock.Method]int{}, Phase: proxy.PhaseReady},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, reconcile.Options{})
			tc.setup(w)
			w.forget()
			tc.look(w)
			got := cost{Reads: w.reads(), Writes: w.writes, Calls: w.calls()}
			if p := w.doc(); p != nil {
				got.Phase = p.Status.Phase
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\ncost (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestNoRunWaitsForABoot: the run that creates a VM returns once it has
// recorded Provisioning, and a look at a booting VM returns at once; no run
// sleeps on the clock while a VM boots.
// TestARateLimitIsWaitedOut: a provider call refused for the rate limit,
// with the wait its cloud asked for (Hetzner's RateLimit-Reset), is tried
// again no sooner than that, even past the backoff's cap; without one,
// the backoff alone decides.
func TestARateLimitIsWaitedOut(t *testing.T) {
	for name, tc := range map[string]struct {
		retryAfter             time.Duration
		wantAtLeast, wantBelow time.Duration
	}{
		"CloudSaid":   {retryAfter: 40 * time.Second, wantAtLeast: 40 * time.Second, wantBelow: 41 * time.Second},
		"CloudSilent": {wantAtLeast: time.Second, wantBelow: 10 * time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, reconcile.Options{WaitBudget: time.Minute, InitialBackoff: 2 * time.Second, MaxBackoff: 10 * time.Second})
			e := provider.NewError(provider.KindRateLimited, "create", "", errors.New("rate_limit_exceeded"))
			e.RetryAfter = tc.retryAfter
			w.mock.FailNext(mock.MethodCreate, 1, e)
			w.create(proxy.Spec{})
			w.reconcile(reconcile.Trigger{})
			if len(w.clock.slept) != 1 || w.clock.slept[0] < tc.wantAtLeast || w.clock.slept[0] >= tc.wantBelow {
				t.Errorf("the run waited %v before the next create, want one wait in [%v, %v)", w.clock.slept, tc.wantAtLeast, tc.wantBelow)
			}
			if p := w.doc(); p.Status.ProviderID == "" {
				t.Errorf("no VM after the wait: %+v", p.Status)
			}
		})
	}
}

func TestNoRunWaitsForABoot(t *testing.T) {
	w := newWorld(t, reconcile.Options{})
	w.mock.NeverReady(1)
	w.create(proxy.Spec{})
	w.reconcile(reconcile.Trigger{})
	for range 3 {
		w.clock.Advance(time.Minute)
		w.sweep()
	}
	if n := w.clock.takeSleeps(); n != 0 {
		t.Errorf("runs slept %d times while the VM booted, want 0", n)
	}
	if p := w.doc(); p.Status.Phase != proxy.PhaseProvisioning {
		t.Errorf("phase %s, want Provisioning", p.Status.Phase)
	}
}

// TestThirdBootFailureFails: at the MaxBootFailures-th VM that does not
// become ready, the proxy is Failed with the last lines of that VM's
// console in status.consoleTail, and the VM is deleted: a failed proxy costs nothing.
func TestThirdBootFailureFails(t *testing.T) {
	w := newWorld(t, reconcile.Options{})
	w.mock.NeverReady(2)
	w.create(proxy.Spec{})
	w.reconcile(reconcile.Trigger{})
	for range 2 {
		w.clock.Advance(reconcile.DefaultBootTimeout + time.Second)
		w.sweep()
	}
	// The third boots, and its bootstrap fails.
	p := w.doc()
	w.mock.FailBoot(p.Status.ProviderID, "a CONNECT with credentials to www.google.com:443 got 000, want 200")
	w.sweep()
	p = w.doc()
	if p.Status.Phase != proxy.PhaseFailed || p.Reconciler.BootFailures != 3 || p.Status.ProviderID != "" {
		t.Fatalf("after three failed boots: phase %s, %d boot failures, providerID %q; want Failed after 3, no VM",
			p.Status.Phase, p.Reconciler.BootFailures, p.Status.ProviderID)
	}
	for _, want := range []string{
		"reported that it cannot serve: a CONNECT with credentials to www.google.com:443 got 000, want 200",
		"3 boots in a row failed",
		"The last lines of its serial console are in status.consoleTail",
	} {
		if !strings.Contains(p.Status.Message, want) {
			t.Errorf("message %q lacks %q", p.Status.Message, want)
		}
	}
	wantTail := []string{"mock: instance proxy-" + uid + " created; booting", "egress-bootstrap: FAILED: a CONNECT with credentials to www.google.com:443 got 000, want 200"}
	if diff := cmp.Diff(wantTail, p.Status.ConsoleTail); diff != "" {
		t.Errorf("status.consoleTail (-want +got):\n%s", diff)
	}
	if n := len(w.mock.Instances()); n != 0 {
		t.Errorf("%d instances remain for the Failed proxy, want 0", n)
	}
	if got := w.mock.Calls(mock.MethodCreate); got != 3 {
		t.Errorf("%d Creates, want 3", got)
	}
}

// TestSlowDeparturesHandOn: a replaced VM slower to go than one run's wait
// budget is waited for through the runs' own hand-offs, which pass the
// lease without a write; a duplicate hand-off does nothing.
func TestSlowDeparturesHandOn(t *testing.T) {
	w := newWorld(t, reconcile.Options{WaitBudget: 20 * time.Second})
	w.mock = mock.New(mock.Options{Clock: w.clock, ProvisioningDelay: boot, DeletionDelay: 70 * time.Second})
	w.r = reconcile.New(w.store, providers{w.mock}, w.queue, nil, w.clock, slog.New(slog.DiscardHandler),
		reconcile.Options{WaitBudget: 20 * time.Second, Rand: rand.New(rand.NewPCG(3, 4))})
	w.create(proxy.Spec{})
	w.reconcile(reconcile.Trigger{})
	w.clock.Advance(boot)
	w.sweep()
	p := w.doc()
	w.mock.Stop(p.Status.ProviderID, provider.StateStopped)
	w.writes = 0

	if err := w.r.Reconcile(context.Background(), w.key, reconcile.Trigger{Reason: proxy.ReasonDrift}); err != nil {
		t.Fatal(err)
	}
	runs := 1
	for msgs := w.queue.take(); len(msgs) > 0; msgs = w.queue.take() {
		if len(msgs) != 1 || msgs[0].Lease == "" || msgs[0].Document != w.key.Path() {
			t.Fatalf("hand-off %+v: want one message with the document and the lease", msgs)
		}
		if runs++; runs > 20 {
			t.Fatal("the replacement did not get made within 20 runs")
		}
		trigger := reconcile.TriggerOf(msgs[0])
		for range 2 { // the second delivery is a duplicate, and finds the new holder
			if err := w.r.Reconcile(context.Background(), w.key, trigger); err != nil {
				t.Fatal(err)
			}
		}
	}
	p = w.doc()
	if p.Status.Phase != proxy.PhaseProvisioning || len(w.mock.Instances()) != 1 || w.mock.Calls(mock.MethodCreate) != 2 {
		t.Fatalf("after %d runs: phase %s, %d instances, %d Creates; want the replacement provisioning", runs, p.Status.Phase, len(w.mock.Instances()), w.mock.Calls(mock.MethodCreate))
	}
	if runs < 3 {
		t.Errorf("took %d runs; a 70 s departure with a 20 s budget needs at least 3, so the budget was not kept", runs)
	}
	// Replacing, each taking-over run its lease once, then the create
	// intent and Provisioning; the duplicates wrote nothing.
	if want := 3 + runs - 1; w.writes != want {
		t.Errorf("%d writes over %d runs, want %d", w.writes, runs, want)
	}
}

// TestConditionsDoNotFlap checks that the Ready condition's transition time
// moves only when its status does, through retries whose messages repeat.
func TestConditionsDoNotFlap(t *testing.T) {
	w := newWorld(t, reconcile.Options{})
	w.create(proxy.Spec{})
	var seen []proxy.Condition
	w.store.Watch(func(c storefake.Change) {
		if c.New != nil && len(c.New.Status.Conditions) == 1 {
			seen = append(seen, c.New.Status.Conditions[0])
		}
	})
	w.mock.FailNext(mock.MethodCreate, 3, provider.NewError(provider.KindRateLimited, "create", "", errors.New("429 too many requests")))
	w.reconcile(reconcile.Trigger{})
	w.boot()

	var statuses []string
	for i, c := range seen {
		if i > 0 && seen[i-1].Status == c.Status && !seen[i-1].LastTransitionTime.Equal(c.LastTransitionTime) {
			t.Errorf("write %d: condition stayed %s but its transition time moved from %s to %s", i, c.Status, seen[i-1].LastTransitionTime, c.LastTransitionTime)
		}
		if i == 0 || seen[i-1].Status != c.Status {
			statuses = append(statuses, c.Status)
		}
	}
	if diff := cmp.Diff([]string{"False", "True"}, statuses); diff != "" {
		t.Errorf("Ready condition statuses over %d writes (-want +got):\n%s", len(seen), diff)
	}
	if len(seen) < 3 {
		t.Errorf("%d writes, want at least Creating, the rate-limit message and Ready", len(seen))
	}
}

// TestProviderCallsOfALifecycle counts the provider calls of one proxy from
// its creation to its deletion: one Create, one Get on the VM's call-home,
// one Delete, and one Get that finds the deleted VM gone — the floor the
// benchmark holds the local stack to.
func TestProviderCallsOfALifecycle(t *testing.T) {
	w := newWorld(t, reconcile.Options{})
	w.create(proxy.Spec{})
	w.reconcile(reconcile.Trigger{})
	// The events of the run's own writes.
	w.reconcile(reconcile.Trigger{})
	w.reconcile(reconcile.Trigger{})
	w.boot()
	w.reconcile(reconcile.Trigger{})
	w.requestDeletion()
	w.reconcile(reconcile.Trigger{})
	w.reconcile(reconcile.Trigger{})
	want := map[mock.Method]int{mock.MethodCreate: 1, mock.MethodGet: reconcile.GetsPerLifecycle, mock.MethodDelete: 1}
	if diff := cmp.Diff(want, w.calls()); diff != "" {
		t.Errorf("provider calls (-want +got):\n%s", diff)
	}
	if n := w.clock.takeSleeps(); n != 0 {
		t.Errorf("%d waits in a lifecycle with nothing to wait for, want 0", n)
	}
}

// TestCredentialsOutliveTheVM: the proxy's credentials are made with its
// first VM, reach the VM in its startup script, and stay the same for the
// VM that replaces a lost one.
func TestCredentialsOutliveTheVM(t *testing.T) {
	var rendered []proxy.Credentials
	w := newWorld(t, reconcile.Options{Bootstrap: func(s proxy.Spec, c proxy.Credentials, generation int64) (string, *vmconfig.Config, error) {
		rendered = append(rendered, c)
		return "#!/bin/bash\n# for " + c.Username + "\n", &vmconfig.Config{Generation: generation, Users: []vmconfig.User{{Name: c.Username}}}, nil
	}})
	first := w.ready()
	creds := first.Reconciler.Credentials
	if err := creds.Validate(); err != nil {
		t.Fatalf("the first VM's credentials: %v", err)
	}
	req, ok := w.mock.CreateRequest(first.Status.ProviderID)
	if !ok || req.StartupScript != "#!/bin/bash\n# for "+creds.Username+"\n" || req.CloudInit != "" {
		t.Errorf("the VM was created with startup script %q and user-data %q, want the rendered script and no user-data", req.StartupScript, req.CloudInit)
	}
	if req.Engine == nil || req.Engine.Users[0].Name != creds.Username {
		t.Errorf("the VM was created with engine configuration %+v, want the one made for %s", req.Engine, creds.Username)
	}

	w.mock.Lose(first.Status.ProviderID)
	w.reconcile(reconcile.Trigger{Reason: proxy.ReasonDrift})
	w.boot()
	second := w.doc()
	if second.Status.Phase != proxy.PhaseReady || second.Reconciler.Replacements != 1 {
		t.Fatalf("after the VM was lost: phase %s, %d replacements; want Ready after 1", second.Status.Phase, second.Reconciler.Replacements)
	}
	if diff := cmp.Diff(creds, second.Reconciler.Credentials); diff != "" {
		t.Errorf("credentials changed with the VM (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff([]proxy.Credentials{creds, creds}, rendered); diff != "" {
		t.Errorf("credentials the two VMs' scripts were rendered with (-want +got):\n%s", diff)
	}
}

// polledMock is the mock as a provider whose VMs cannot call home
// (provider.Polled), as Hetzner's.
type polledMock struct{ *mock.Provider }

func (polledMock) PollInterval() time.Duration { return 10 * time.Second }

// TestAVMThatCannotCallHomeIsAsked: a VM that cannot call home is asked
// every PollInterval by the run that created it, which writes Ready as
// soon as it serves, with no call-home and no sweep; one that does not
// serve within the run's wait budget is handed on to the next run, which
// goes on asking.
func TestAVMThatCannotCallHomeIsAsked(t *testing.T) {
	for name, neverReady := range map[string]bool{"serves": false, "still booting": true} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, reconcile.Options{})
			w.mock = mock.New(mock.Options{Clock: w.clock, ProvisioningDelay: boot})
			if neverReady {
				w.mock.NeverReady(1)
			}
			w.r = reconcile.New(w.store, providers{polledMock{w.mock}}, w.queue, secrets{}, w.clock, slog.New(slog.DiscardHandler),
				reconcile.Options{Rand: rand.New(rand.NewPCG(1, 2))})
			w.create(proxy.Spec{})
			if err := w.r.Reconcile(context.Background(), w.key, reconcile.Trigger{}); err != nil {
				t.Fatal(err)
			}
			w.clock.mu.Lock()
			slept := slices.Clone(w.clock.slept)
			w.clock.mu.Unlock()
			for _, d := range slept {
				if d != 10*time.Second {
					t.Errorf("the run waited %s between looks, want the poll interval 10s: %v", d, slept)
					break
				}
			}
			handoffs := w.queue.take()
			phase := w.doc().Status.Phase
			if !neverReady {
				if phase != proxy.PhaseReady || len(handoffs) != 0 || len(slept) == 0 {
					t.Errorf("after the create's run: phase %s, hand-offs %v, %d looks; want Ready in that run, asked at least once", phase, handoffs, len(slept))
				}
				return
			}
			if phase != proxy.PhaseProvisioning || len(handoffs) != 1 || handoffs[0].Reason != proxy.ReasonRequeue {
				t.Fatalf("a VM still booting past the budget: phase %s, hand-offs %+v; want Provisioning and one requeue", phase, handoffs)
			}
			before := len(slept)
			if err := w.r.Reconcile(context.Background(), w.key, reconcile.TriggerOf(handoffs[0])); err != nil {
				t.Fatal(err)
			}
			w.clock.mu.Lock()
			after := len(w.clock.slept)
			w.clock.mu.Unlock()
			if after <= before {
				t.Errorf("the run handed on to did not ask the VM again")
			}
		})
	}
}
