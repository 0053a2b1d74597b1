package reconcile_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
	"github.com/egress-proxies/egress/internal/store/memstore"
)

var start = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// world is one document, its store, a mock provider and a fake clock.
type world struct {
	t      *testing.T
	clock  *clock.Fake
	store  *memstore.Store
	mock   *mock.Provider
	queue  *queue
	r      *reconcile.Reconciler
	key    proxy.Key
	writes int // status writes and deletes after the document was set up
}

// providers hands out the one mock provider.
type providers struct{ p provider.Provider }

func (s providers) Get(_ context.Context, typ string) (provider.Provider, error) {
	if typ != mock.Type {
		return nil, errors.New("unknown provider type " + typ)
	}
	return s.p, nil
}

// queue records the reconcile requests a run publishes.
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
		return "", provider.NewError(provider.KindPermanent, "access secret version", version, errors.New("NotFound"))
	}
	return v, nil
}

func newWorld(t *testing.T, opts reconcile.Options) *world {
	t.Helper()
	clk := clock.NewFake(start)
	w := &world{
		t:     t,
		clock: clk,
		store: memstore.New(clk),
		mock:  mock.New(mock.Options{Clock: clk, ProvisioningDelay: 10 * time.Second}),
		queue: &queue{},
		key:   proxy.Key{Namespace: "team-a", Name: "egress-1"},
	}
	opts.Rand = rand.New(rand.NewPCG(1, 2))
	w.r = reconcile.New(w.store, providers{w.mock}, w.queue, secrets{"projects/p/secrets/ci/versions/1": "#cloud-config\n"},
		clk, slog.New(slog.NewTextHandler(io.Discard, nil)), opts)
	return w
}

// create writes a new document as the API does.
func (w *world) create(spec proxy.Spec) {
	w.t.Helper()
	if spec.Provider == "" {
		spec.Provider = mock.Type
	}
	_, err := w.store.Create(context.Background(), &proxy.Proxy{
		Namespace: w.key.Namespace, Name: w.key.Name, UID: "6c1f0a5e-8d1b-4c59-9a53-1b7a2f3d4e5f",
		Generation: 1, Spec: spec, Status: proxy.Status{Phase: proxy.PhasePending}, CreateTime: w.clock.Now(),
	}, 20)
	if err != nil {
		w.t.Fatal(err)
	}
	w.watchWrites()
}

func (w *world) watchWrites() {
	w.store.Watch(func(c memstore.Change) {
		w.writes++
		if c.New != nil {
			w.t.Logf("write %d: phase %s lease %q conditions %+v", w.writes, c.New.Status.Phase, c.New.Reconciler.LeaseHolder, c.New.Status.Conditions)
		} else {
			w.t.Logf("write %d: delete", w.writes)
		}
	})
}

func (w *world) reconcile(t reconcile.Trigger) {
	w.t.Helper()
	if t.Reason == "" {
		t.Reason = "written"
	}
	if err := w.r.Reconcile(context.Background(), w.key, t); err != nil {
		w.t.Fatalf("Reconcile: %v", err)
	}
	// Follow the runs' own hand-offs, as Pub/Sub would deliver them.
	for i := 0; ; i++ {
		msgs := w.queue.take()
		if len(msgs) == 0 {
			return
		}
		if i > 20 {
			w.t.Fatalf("still handing on after 20 runs: %+v", msgs)
		}
		for _, m := range msgs {
			if err := w.r.Reconcile(context.Background(), w.key, reconcile.Trigger{Reason: m.Reason, Requested: true, Handoff: m.Lease}); err != nil {
				w.t.Fatalf("Reconcile after hand-off: %v", err)
			}
		}
	}
}

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

// ready drives a new document to Ready and forgets the writes it took.
func (w *world) ready() *proxy.Proxy {
	w.t.Helper()
	w.create(proxy.Spec{})
	w.reconcile(reconcile.Trigger{})
	p := w.doc()
	if p.Status.Phase != proxy.PhaseReady {
		w.t.Fatalf("setting up: phase %s, want Ready", p.Status.Phase)
	}
	w.writes = 0
	return p
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
	o.Replacements = p.Reconciler.Replacements
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
			reason: "A new document gets one Create and reaches Ready in one run, with the floor of writes: Creating, Provisioning, Ready.",
			run: func(w *world) {
				w.create(proxy.Spec{})
				w.reconcile(reconcile.Trigger{})
			},
			want: outcome{Phase: proxy.PhaseReady, Endpoint: "192.0.2.1:3128", Instances: 1, Creates: 1, Writes: 3},
		},
		"TransientCreateErrorRetried": {
			reason: "A Create that fails transiently is retried after a backoff and makes no duplicate.",
			run: func(w *world) {
				w.create(proxy.Spec{Port: 8888})
				w.mock.FailNext(mock.MethodCreate, 2, transient)
				w.reconcile(reconcile.Trigger{})
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
			},
			want: outcome{Phase: proxy.PhaseReady, Endpoint: "192.0.2.1:3128", Instances: 1, Creates: 2, Writes: 4},
		},
		"CrashAfterCreateAdopts": {
			reason: "A run that crashed after Create and before storing the providerID left createPending; the next run adopts the same VM.",
			run: func(w *world) {
				w.create(proxy.Spec{})
				p := w.doc()
				p.Status.Phase = proxy.PhaseCreating
				p.Reconciler.CreatePending = provider.NameFromUID(p.UID)
				p.Reconciler.LeaseHolder = "crashed-run"
				p.Reconciler.LeaseExpireTime = start.Add(time.Minute)
				if _, err := w.store.UpdateStatus(context.Background(), p); err != nil {
					w.t.Fatal(err)
				}
				if _, err := w.mock.Create(context.Background(), provider.CreateRequest{Name: p.Reconciler.CreatePending, UID: p.UID}); err != nil {
					w.t.Fatal(err)
				}
				// The crashed run's lease keeps others off until it expires;
				// the sweep's request then finds the document.
				w.reconcile(reconcile.Trigger{})
				w.clock.Advance(2 * time.Minute)
				w.writes = 0
				w.reconcile(reconcile.Trigger{Reason: "sweep", Requested: true})
			},
			want: outcome{Phase: proxy.PhaseReady, Endpoint: "192.0.2.1:3128", Instances: 1, Creates: 2, Writes: 3},
		},
		"LostVMReplaced": {
			reason: "A VM that is gone is replaced after the not-found grace, and the replacement is counted.",
			run: func(w *world) {
				p := w.ready()
				w.mock.Lose(p.Status.ProviderID)
				w.reconcile(reconcile.Trigger{Reason: "sweep", Requested: true})
			},
			// Replacing, the create intent, Provisioning, Ready.
			want: outcome{Phase: proxy.PhaseReady, Endpoint: "192.0.2.2:3128", Instances: 1, Creates: 2, Replacements: 1, Writes: 4},
		},
		"StoppedVMReplaced": {
			reason: "A stopped VM is deleted and replaced, and the replacement is counted once.",
			run: func(w *world) {
				p := w.ready()
				w.mock.Stop(p.Status.ProviderID, provider.StateStopped)
				w.reconcile(reconcile.Trigger{Reason: "sweep", Requested: true})
			},
			want: outcome{Phase: proxy.PhaseReady, Endpoint: "192.0.2.2:3128", Instances: 1, Creates: 2, Replacements: 1, Writes: 4},
		},
		"TerminatedVMReplaced": {
			reason: "A terminated VM is replaced like a stopped one.",
			run: func(w *world) {
				p := w.ready()
				w.mock.Stop(p.Status.ProviderID, provider.StateTerminated)
				w.reconcile(reconcile.Trigger{Reason: "sweep", Requested: true})
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
				p := w.doc()
				p.Reconciler.LeaseHolder, p.Reconciler.LeaseExpireTime = "other", start.Add(time.Hour)
				if _, err := w.store.UpdateStatus(context.Background(), p); err != nil {
					w.t.Fatal(err)
				}
				w.requestDeletion()
				w.reconcile(reconcile.Trigger{})
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
				w.reconcile(reconcile.Trigger{Reason: "sweep", Requested: true})
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
				Message: "resolving the bootstrap: access secret version projects/p/secrets/absent/versions/1: Permanent: NotFound"},
		},
		"StaleEventDoesNothing": {
			reason: "A late or duplicate event for a Ready document costs one read: no provider call, no write.",
			run: func(w *world) {
				w.ready()
				for range 5 {
					w.reconcile(reconcile.Trigger{})
				}
			},
			want: outcome{Phase: proxy.PhaseReady, Endpoint: "192.0.2.1:3128", Instances: 1, Creates: 1},
		},
		"VerifiedReadyWritesNothing": {
			reason: "A request to look at a Ready document whose VM is fine reads the VM and writes nothing.",
			run: func(w *world) {
				w.ready()
				w.reconcile(reconcile.Trigger{Reason: "sweep", Requested: true})
			},
			want: outcome{Phase: proxy.PhaseReady, Endpoint: "192.0.2.1:3128", Instances: 1, Creates: 1},
		},
		"LeaseHeldByAnotherRun": {
			reason: "A run that finds another's lease does nothing.",
			run: func(w *world) {
				w.create(proxy.Spec{})
				p := w.doc()
				p.Reconciler.LeaseHolder, p.Reconciler.LeaseExpireTime = "other", start.Add(time.Minute)
				if _, err := w.store.UpdateStatus(context.Background(), p); err != nil {
					w.t.Fatal(err)
				}
				w.writes = 0
				w.reconcile(reconcile.Trigger{})
			},
			want: outcome{Phase: proxy.PhasePending, Leased: true},
		},
		"ExpiredLeaseTakenOver": {
			reason: "A lease past its expiry (its run crashed) does not stop the next run.",
			run: func(w *world) {
				w.create(proxy.Spec{})
				p := w.doc()
				p.Reconciler.LeaseHolder, p.Reconciler.LeaseExpireTime = "crashed", start.Add(-time.Second)
				if _, err := w.store.UpdateStatus(context.Background(), p); err != nil {
					w.t.Fatal(err)
				}
				w.writes = 0
				w.reconcile(reconcile.Trigger{})
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

// TestSlowProvisioningHandsOn checks that a VM slower than one run's wait
// budget reaches Ready through the runs' own hand-offs, with no event from
// outside, and that the hand-off passes the lease without a write.
func TestSlowProvisioningHandsOn(t *testing.T) {
	w := newWorld(t, reconcile.Options{WaitBudget: 20 * time.Second})
	w.mock = mock.New(mock.Options{Clock: w.clock, ProvisioningDelay: 70 * time.Second})
	w.r = reconcile.New(w.store, providers{w.mock}, w.queue, nil, w.clock, slog.New(slog.NewTextHandler(io.Discard, nil)),
		reconcile.Options{WaitBudget: 20 * time.Second, Rand: rand.New(rand.NewPCG(3, 4))})
	w.create(proxy.Spec{})
	if err := w.r.Reconcile(context.Background(), w.key, reconcile.Trigger{Reason: "written"}); err != nil {
		t.Fatal(err)
	}

	runs := 1
	for msgs := w.queue.take(); len(msgs) > 0; msgs = w.queue.take() {
		if len(msgs) != 1 {
			t.Fatalf("a run published %d requests, want 1: %+v", len(msgs), msgs)
		}
		m := msgs[0]
		if m.Lease == "" || m.Document != w.key.Path() {
			t.Fatalf("hand-off message %+v: want the document and the lease", m)
		}
		if runs++; runs > 20 {
			t.Fatal("the proxy did not get Ready within 20 runs")
		}
		if err := w.r.Reconcile(context.Background(), w.key, reconcile.Trigger{Reason: m.Reason, Requested: true, Handoff: m.Lease}); err != nil {
			t.Fatal(err)
		}
	}
	got := w.outcome()
	if got.Phase != proxy.PhaseReady || got.Instances != 1 || got.Creates != 1 {
		t.Fatalf("after %d runs: %+v, want Ready with one instance from one Create", runs, got)
	}
	if runs < 3 {
		t.Errorf("took %d runs; with a 70s boot and a 20s budget it needs at least 3, so the budget was not kept", runs)
	}
	// The first run writes Creating and Provisioning, each taking-over run
	// its lease once, and one of them Ready.
	if want := runs + 2; got.Writes > want {
		t.Errorf("%d writes over %d runs, want at most %d", got.Writes, runs, want)
	}
}

// TestDuplicateHandOffRunsOnlyOnce checks that two deliveries of the same
// hand-off message do not both take the lease.
func TestDuplicateHandOffRunsOnlyOnce(t *testing.T) {
	w := newWorld(t, reconcile.Options{WaitBudget: 10 * time.Second})
	w.create(proxy.Spec{})
	p := w.doc()
	p.Status.Phase = proxy.PhaseProvisioning
	p.Reconciler.LeaseHolder, p.Reconciler.LeaseExpireTime = "previous", start.Add(time.Minute)
	if _, err := w.store.UpdateStatus(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	// The first delivery takes the lease over (and, with no providerID,
	// creates); the second finds the new holder and stops.
	w.reconcile(reconcile.Trigger{Reason: "requeue", Requested: true, Handoff: "previous"})
	before := w.outcome()
	w.reconcile(reconcile.Trigger{Reason: "requeue", Requested: true, Handoff: "previous"})
	if diff := cmp.Diff(before, w.outcome()); diff != "" {
		t.Errorf("the duplicate hand-off changed something (-first +after duplicate):\n%s", diff)
	}
}

// TestConditionsDoNotFlap checks that the Ready condition's transition time
// moves only when its status does, through retries whose messages repeat.
func TestConditionsDoNotFlap(t *testing.T) {
	w := newWorld(t, reconcile.Options{})
	w.create(proxy.Spec{})
	var seen []proxy.Condition
	w.store.Watch(func(c memstore.Change) {
		if c.New != nil && len(c.New.Status.Conditions) == 1 {
			seen = append(seen, c.New.Status.Conditions[0])
		}
	})
	w.mock.FailNext(mock.MethodCreate, 3, provider.NewError(provider.KindRateLimited, "create", "", errors.New("429 too many requests")))
	w.reconcile(reconcile.Trigger{})

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

// constant is a random source that always draws the same value, to pin the
// jitter at one end of its range.
type constant uint64

func (c constant) Uint64() uint64 { return uint64(c) }

// TestProviderCallsOfALifecycle counts the provider calls of one proxy from
// its creation to its deletion, with a VM that boots in 25 s, at the two
// ends of the backoff's jitter. With the longest waits the Gets are the
// floor MinChecks states, plus the one Get that finds the deleted VM gone.
func TestProviderCallsOfALifecycle(t *testing.T) {
	const boot = 25 * time.Second
	cases := map[string]struct {
		reason string
		jitter constant
		want   map[mock.Method]int
	}{
		"LongestWaits": {
			reason: "Waits of 2, 4, 8, 10 and 10 s see the VM running at the fifth Get (34 s).",
			jitter: constant(^uint64(0)),
			want:   map[mock.Method]int{mock.MethodCreate: 1, mock.MethodGet: reconcile.MinChecks(reconcile.Options{}, boot) + 1, mock.MethodDelete: 1},
		},
		"ShortestWaits": {
			reason: "Waits of 1, 2, 4, 5, 5, 5 and 5 s see it at the seventh Get (27 s).",
			jitter: constant(0),
			want:   map[mock.Method]int{mock.MethodCreate: 1, mock.MethodGet: 7 + 1, mock.MethodDelete: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, reconcile.Options{})
			w.mock = mock.New(mock.Options{Clock: w.clock, ProvisioningDelay: boot})
			w.r = reconcile.New(w.store, providers{w.mock}, w.queue, nil, w.clock, slog.New(slog.DiscardHandler),
				reconcile.Options{Rand: rand.New(tc.jitter)})
			w.create(proxy.Spec{})
			w.reconcile(reconcile.Trigger{})
			if p := w.doc(); p.Status.Phase != proxy.PhaseReady {
				t.Fatalf("phase %s after the first run, want Ready", p.Status.Phase)
			}
			w.requestDeletion()
			w.reconcile(reconcile.Trigger{})
			if w.doc() != nil {
				t.Fatal("document still there after the deletion run")
			}
			got := map[mock.Method]int{}
			for _, m := range []mock.Method{mock.MethodCreate, mock.MethodGet, mock.MethodDelete} {
				got[m] = w.mock.Calls(m)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nprovider calls (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
	if got := reconcile.MinChecks(reconcile.Options{}, boot); got != 5 {
		t.Errorf("MinChecks(defaults, 25s) = %d, want 5 (waits of 2, 4, 8, 10 and 10 s)", got)
	}
}

// TestCredentialsOutliveTheVM: the proxy's credentials are made with its
// first VM, reach the VM in its startup script, and stay the same for the
// VM that replaces a lost one.
func TestCredentialsOutliveTheVM(t *testing.T) {
	var rendered []proxy.Credentials
	w := newWorld(t, reconcile.Options{Bootstrap: func(s proxy.Spec, c proxy.Credentials) (string, error) {
		rendered = append(rendered, c)
		return "#!/bin/bash\n# for " + c.Username + "\n", nil
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

	w.mock.Lose(first.Status.ProviderID)
	w.reconcile(reconcile.Trigger{Reason: "drift", Requested: true})
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
