package reconcile_test

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// generations is the mock provider whose VMs report the generation of the
// proxy engine's configuration they serve, as a gcp VM does in its guest
// attribute egress/ready: the one they were created with. It embeds the
// mock as a provider.Provider only, so that Reconfigure is the test's own
// (reconfigurer) or none.
type generations struct {
	provider.Provider
	mock   *mock.Provider
	mu     sync.Mutex
	served map[string]int64 // providerID → generation
	// prefix is the routed IPv6 prefix every VM reports, as a cloud that
	// gives one does; "" for none.
	prefix string
	// created are the engine configurations VMs were created with.
	created []vmconfig.Config
}

func (p *generations) Create(ctx context.Context, req provider.CreateRequest) (string, error) {
	id, err := p.Provider.Create(ctx, req)
	if err == nil && req.Engine != nil {
		p.mu.Lock()
		p.served[id] = req.Engine.Generation
		p.created = append(p.created, *req.Engine)
		p.mu.Unlock()
	}
	return id, err
}

func (p *generations) Get(ctx context.Context, id string) (*provider.Instance, error) {
	inst, err := p.Provider.Get(ctx, id)
	if err != nil || inst.State != provider.StateRunning {
		return inst, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c := *inst
	c.Generation = p.served[id]
	c.IPv6Prefix = p.prefix
	return &c, nil
}

// reconfigurer adds Reconfigure: the VM takes the configuration, reports
// its generation and calls home, unless hold keeps it applying.
type reconfigurer struct {
	*generations
	queue *queue
	hold  bool
	fail  []error // what the next calls return, first first
	calls []provider.ReconfigureRequest
}

func (p *reconfigurer) Reconfigure(_ context.Context, id string, req provider.ReconfigureRequest) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, req)
	if len(p.fail) > 0 {
		err := p.fail[0]
		p.fail = p.fail[1:]
		return err
	}
	if !slices.ContainsFunc(p.mock.Instances(), func(i provider.Instance) bool { return i.ID == id }) {
		return provider.NewError(provider.KindNotFound, "reconfigure", id, provider.ErrNotFound)
	}
	if p.hold {
		return nil
	}
	p.served[id] = req.Engine.Generation
	return p.queue.Publish(context.Background(), proxy.ReconcileMessage{Namespace: req.Namespace, Name: req.ProxyName, UID: req.UID, Reason: proxy.ReasonReady})
}

func (p *reconfigurer) reconfigures() []provider.ReconfigureRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls)
}

// engineOf is the default bootstrap as the tests render it: what the
// cases check is the generation and the credentials it carries.
func engineOf(s proxy.Spec, c proxy.Credentials, generation int64) (string, *vmconfig.Config, error) {
	return "#!/bin/sh\n", &vmconfig.Config{Generation: generation, AllowedSourceRanges: s.AllowedSourceRanges,
		Users: []vmconfig.User{{Name: c.Username, PasswordHash: "test:" + c.Password}}}, nil
}

// reconfigureWorld is a world whose reconciler renders the default
// bootstrap and whose provider reports generations, and reconfigures
// unless plain.
func reconfigureWorld(t *testing.T, plain bool) (*world, *reconfigurer) {
	t.Helper()
	w := newWorld(t, reconcile.Options{})
	gens := &generations{Provider: w.mock, mock: w.mock, served: map[string]int64{}}
	rc := &reconfigurer{generations: gens, queue: w.queue}
	var p provider.Provider = rc
	if plain {
		p = gens
	}
	w.r = reconcile.New(w.store, providers{p}, w.queue, secrets{}, w.clock, slog.New(slog.DiscardHandler),
		reconcile.Options{Rand: rand.New(rand.NewPCG(1, 2)), Bootstrap: engineOf})
	return w, rc
}

// change writes a new generation as the API's PATCH and
// :rotateCredentials do (the store's UpdateSpec and RotateCredentials):
// the document as it is, with what change does, generation + 1 and a
// progress time for the sweep. The write's event is the case's to
// deliver.
func (w *world) change(change func(p *proxy.Proxy)) {
	w.t.Helper()
	p := w.doc()
	if err := w.store.Delete(context.Background(), w.key, p.UpdateTime); err != nil {
		w.t.Fatal(err)
	}
	change(p)
	p.Generation++
	p.Reconciler.ProgressTime = w.clock.Now()
	if _, err := w.store.Create(context.Background(), p, 20); err != nil {
		w.t.Fatal(err)
	}
	w.forget()
}

func patchRanges(p *proxy.Proxy) { p.Spec.AllowedSourceRanges = []string{"203.0.113.0/24"} }

// written is the event of the last write.
func (w *world) written() { w.reconcile(reconcile.Trigger{Reason: proxy.ReasonWritten}) }

// reconfigured is what a reconfiguration case checks.
type reconfigured struct {
	Phase       proxy.Phase
	ReadyReason string
	// SameEndpoint: the first VM's endpoint.
	SameEndpoint                                   bool
	Generation, ObservedGeneration, SentGeneration int64
	// Served is the generation the proxy's VM serves.
	Served int64
	// Reconfigures counts the Reconfigure calls since the change;
	// Creates, every Create; Instances, the VMs left.
	Reconfigures, Creates, Instances int
	Rotations, Replacements          int64
}

func TestReconfigure(t *testing.T) {
	for name, tc := range map[string]struct {
		reason string
		plain  bool // the provider is no Reconfigurer
		spec   proxy.Spec
		run    func(w *world, rc *reconfigurer, first *proxy.Proxy)
		want   reconfigured
	}{
		"PatchHandedOver": {
			reason: "A PATCH's event hands the VM the new generation once, and the proxy is Reconfiguring on the same endpoint until the VM serves it.",
			run: func(w *world, rc *reconfigurer, _ *proxy.Proxy) {
				rc.hold = true
				w.change(patchRanges)
				w.written()
			},
			want: reconfigured{Phase: proxy.PhaseReconfiguring, ReadyReason: "Reconfiguring", SameEndpoint: true,
				Generation: 2, ObservedGeneration: 1, SentGeneration: 2, Served: 1, Reconfigures: 1, Creates: 1, Instances: 1},
		},
		"CallHomeRecordsReady": {
			reason: "The VM's call-home once it serves the new generation brings the run that records Ready and observedGeneration: no new VM, no rotation.",
			run: func(w *world, _ *reconfigurer, _ *proxy.Proxy) {
				w.change(patchRanges)
				w.written()
			},
			want: reconfigured{Phase: proxy.PhaseReady, ReadyReason: "Ready", SameEndpoint: true,
				Generation: 2, ObservedGeneration: 2, SentGeneration: 2, Served: 2, Reconfigures: 1, Creates: 1, Instances: 1},
		},
		"DuplicateEvents": {
			reason: "Duplicates of the change's event, and the event of the run's own write, hand nothing over again.",
			run: func(w *world, rc *reconfigurer, _ *proxy.Proxy) {
				rc.hold = true
				w.change(patchRanges)
				w.written()
				w.written()
				w.written()
			},
			want: reconfigured{Phase: proxy.PhaseReconfiguring, ReadyReason: "Reconfiguring", SameEndpoint: true,
				Generation: 2, ObservedGeneration: 1, SentGeneration: 2, Served: 1, Reconfigures: 1, Creates: 1, Instances: 1},
		},
		"OldGenerationStaysReconfiguring": {
			reason: "A VM that still reports the old generation when the sweep looks keeps the proxy Reconfiguring, and is not handed the change again.",
			run: func(w *world, rc *reconfigurer, _ *proxy.Proxy) {
				rc.hold = true
				w.change(patchRanges)
				w.written()
				w.clock.Advance(time.Minute)
				w.sweep()
			},
			want: reconfigured{Phase: proxy.PhaseReconfiguring, ReadyReason: "Reconfiguring", SameEndpoint: true,
				Generation: 2, ObservedGeneration: 1, SentGeneration: 2, Served: 1, Reconfigures: 1, Creates: 1, Instances: 1},
		},
		"LostCallHomeLeftToTheSweep": {
			reason: "A call-home that is lost only delays Ready to the sweep's look.",
			run: func(w *world, rc *reconfigurer, _ *proxy.Proxy) {
				w.change(patchRanges)
				if err := w.r.Reconcile(context.Background(), w.key, reconcile.Trigger{Reason: proxy.ReasonWritten}); err != nil {
					w.t.Fatal(err)
				}
				w.queue.take()
				if !w.stalled(2 * time.Minute) {
					w.t.Error("a Reconfiguring proxy is not in the sweep's view")
				}
				w.clock.Advance(2 * time.Minute)
				w.sweep()
			},
			want: reconfigured{Phase: proxy.PhaseReady, ReadyReason: "Ready", SameEndpoint: true,
				Generation: 2, ObservedGeneration: 2, SentGeneration: 2, Served: 2, Reconfigures: 1, Creates: 1, Instances: 1},
		},
		"TimeoutReplaces": {
			reason: "A VM that does not serve the new generation within the reconfigure timeout is replaced by one made with it, counted as a replacement.",
			run: func(w *world, rc *reconfigurer, _ *proxy.Proxy) {
				rc.hold = true
				w.change(patchRanges)
				w.written()
				w.clock.Advance(reconcile.DefaultReconfigureTimeout + time.Second)
				w.sweep()
				w.boot()
			},
			want: reconfigured{Phase: proxy.PhaseReady, ReadyReason: "Ready",
				Generation: 2, ObservedGeneration: 2, SentGeneration: 2, Served: 2, Reconfigures: 1, Creates: 2, Instances: 1, Replacements: 1},
		},
		"ChangeOnAChange": {
			reason: "A second change while the VM applies the first is handed over too; the VM serving the last brings Ready.",
			run: func(w *world, rc *reconfigurer, _ *proxy.Proxy) {
				rc.hold = true
				w.change(patchRanges)
				w.written()
				rc.hold = false
				w.change(func(p *proxy.Proxy) { p.Spec.ConnectPorts = []int32{443} })
				w.written()
			},
			want: reconfigured{Phase: proxy.PhaseReady, ReadyReason: "Ready", SameEndpoint: true,
				Generation: 3, ObservedGeneration: 3, SentGeneration: 3, Served: 3, Reconfigures: 2, Creates: 1, Instances: 1},
		},
		"RetryableErrorRetried": {
			reason: "A Reconfigure that fails transiently is retried after a backoff.",
			run: func(w *world, rc *reconfigurer, _ *proxy.Proxy) {
				rc.fail = []error{provider.NewError(provider.KindTransient, "reconfigure", "", errors.New("503 backend error"))}
				w.change(patchRanges)
				w.written()
			},
			want: reconfigured{Phase: proxy.PhaseReady, ReadyReason: "Ready", SameEndpoint: true,
				Generation: 2, ObservedGeneration: 2, SentGeneration: 2, Served: 2, Reconfigures: 2, Creates: 1, Instances: 1},
		},
		"LostVMReplaced": {
			reason: "A VM gone when it is handed the change is a lost VM: replaced at once, by one made with the new generation.",
			run: func(w *world, _ *reconfigurer, first *proxy.Proxy) {
				w.mock.Lose(first.Status.ProviderID)
				w.change(patchRanges)
				w.written()
				w.boot()
			},
			want: reconfigured{Phase: proxy.PhaseReady, ReadyReason: "Ready",
				Generation: 2, ObservedGeneration: 2, SentGeneration: 2, Served: 2, Reconfigures: 1, Creates: 2, Instances: 1, Replacements: 1},
		},
		"NotAReconfigurer": {
			reason: "A provider without Reconfigure gets a new VM with the new generation, counted neither as a rotation nor as a replacement.",
			plain:  true,
			run: func(w *world, _ *reconfigurer, _ *proxy.Proxy) {
				w.change(patchRanges)
				w.written()
				w.boot()
			},
			want: reconfigured{Phase: proxy.PhaseReady, ReadyReason: "Ready",
				Generation: 2, ObservedGeneration: 2, SentGeneration: 2, Served: 2, Creates: 2, Instances: 1},
		},
		"OwnCloudInit": {
			reason: "A spec with its own cloud-init gets a new VM for a new generation: the reconciler cannot configure what it did not install.",
			spec:   proxy.Spec{CloudInit: "#cloud-config\n"},
			run: func(w *world, _ *reconfigurer, _ *proxy.Proxy) {
				w.change(func(p *proxy.Proxy) { p.Reconciler.Credentials = proxy.Credentials{Username: "u2", Password: "p2"} })
				w.written()
				w.boot()
				w.sweep()
			},
			want: reconfigured{Phase: proxy.PhaseReady, ReadyReason: "Ready",
				Generation: 2, ObservedGeneration: 2, SentGeneration: 2, Creates: 2, Instances: 1},
		},
	} {
		t.Run(name, func(t *testing.T) {
			w, rc := reconfigureWorld(t, tc.plain)
			// A VM of a spec's own cloud-init does not call home: the
			// sweep finds it running.
			w.create(tc.spec)
			w.reconcile(reconcile.Trigger{})
			w.boot()
			w.sweep()
			first := w.doc()
			if first.Status.Phase != proxy.PhaseReady || first.Status.ObservedGeneration != 1 || first.Reconciler.SentGeneration != 1 {
				t.Fatalf("setting up: phase %s, observedGeneration %d, sentGeneration %d; want Ready, 1 and 1", first.Status.Phase, first.Status.ObservedGeneration, first.Reconciler.SentGeneration)
			}
			tc.run(w, rc, first)
			p := w.doc()
			got := reconfigured{
				Phase: p.Status.Phase, SameEndpoint: p.Status.Endpoint == first.Status.Endpoint,
				Generation: p.Generation, ObservedGeneration: p.Status.ObservedGeneration, SentGeneration: p.Reconciler.SentGeneration,
				Served: rc.served[p.Status.ProviderID], Reconfigures: len(rc.reconfigures()),
				Creates: w.mock.Calls(mock.MethodCreate), Instances: len(w.mock.Instances()),
				Rotations: p.Status.Rotations, Replacements: p.Reconciler.Replacements,
			}
			for _, c := range p.Status.Conditions {
				if c.Type == proxy.ConditionReady {
					got.ReadyReason = c.Reason
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestNewCredentialsReachTheVM: the configuration a :rotateCredentials
// brings is rendered with the credentials the API wrote, which the
// reconciler keeps; the change costs two writes to hand over (the lease
// taken before the Reconfigure, and Reconfiguring), one Get and one write
// on the call-home.
// TestTrafficCarriedToANewVM: a proxy with a traffic quota whose change
// needs a new VM hands that VM what the VM before it last reported of the
// month, so a new VM is no fresh quota; its first VM, and a proxy without
// a quota, carry nothing.
func TestTrafficCarriedToANewVM(t *testing.T) {
	for name, quota := range map[string]int64{"with a quota": 500 << 30, "without": 0} {
		t.Run(name, func(t *testing.T) {
			w, rc := reconfigureWorld(t, true)
			w.r = reconcile.New(w.store, providers{rc.generations}, w.queue, secrets{}, w.clock, slog.New(slog.DiscardHandler),
				reconcile.Options{Rand: rand.New(rand.NewPCG(1, 2)), Bootstrap: func(s proxy.Spec, c proxy.Credentials, generation int64) (string, *vmconfig.Config, error) {
					script, cfg, err := engineOf(s, c, generation)
					cfg.TrafficQuotaBytes = quota
					return script, cfg, err
				}})
			w.readyWith(proxy.Spec{})
			w.update(func(p *proxy.Proxy) {
				p.Status.Traffic = &proxy.Traffic{ReportTime: w.clock.Now(), Month: "2026-12", MonthBytes: 123 << 30}
			})
			w.change(patchRanges)
			w.written()
			var got []*vmconfig.MonthCount
			for _, c := range rc.created {
				got = append(got, c.TrafficCarried)
			}
			want := []*vmconfig.MonthCount{nil, nil}
			if quota > 0 {
				want[1] = &vmconfig.MonthCount{Month: "2026-12", Bytes: 123 << 30}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the month carried by each VM's configuration, first VM first (-want +got):\n%s", diff)
			}
		})
	}
}

// TestIPv6EgressReachesTheVM: the VM's prefix is in the proxy's status
// once Ready, and a live change of spec.ipv6Egress hands the VM the mode
// with that prefix in its engine configuration, in place; the create's
// configuration has the mode and no prefix, which the cloud had not
// assigned yet.
func TestIPv6EgressReachesTheVM(t *testing.T) {
	w, rc := reconfigureWorld(t, false)
	rc.prefix = "2001:db8:1:2::/64"
	w.r = reconcile.New(w.store, providers{rc}, w.queue, secrets{}, w.clock, slog.New(slog.DiscardHandler),
		reconcile.Options{Rand: rand.New(rand.NewPCG(1, 2)), Bootstrap: func(s proxy.Spec, c proxy.Credentials, generation int64) (string, *vmconfig.Config, error) {
			script, cfg, err := engineOf(s, c, generation)
			cfg.IPv6Egress = string(s.IPv6Egress)
			return script, cfg, err
		}})
	first := w.readyWith(proxy.Spec{IPv6Egress: proxy.IPv6Single})
	w.change(func(p *proxy.Proxy) { p.Spec.IPv6Egress = proxy.IPv6PerConnection })
	w.written()
	p := w.doc()
	type engine struct{ Egress, Prefix string }
	type seen struct {
		Phase        proxy.Phase
		SameEndpoint bool
		StatusPrefix string
		Created      []engine
		Reconfigured []engine
	}
	got := seen{Phase: p.Status.Phase, SameEndpoint: p.Status.Endpoint == first.Status.Endpoint, StatusPrefix: p.Status.IPv6Prefix}
	for _, c := range rc.created {
		got.Created = append(got.Created, engine{c.IPv6Egress, c.IPv6Prefix})
	}
	for _, c := range rc.reconfigures() {
		got.Reconfigured = append(got.Reconfigured, engine{c.Engine.IPv6Egress, c.Engine.IPv6Prefix})
	}
	want := seen{Phase: proxy.PhaseReady, SameEndpoint: true, StatusPrefix: "2001:db8:1:2::/64",
		Created:      []engine{{Egress: "single"}},
		Reconfigured: []engine{{Egress: "perConnection", Prefix: "2001:db8:1:2::/64"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a live change of the IPv6 egress (-want +got):\n%s", diff)
	}
	if n := len(w.mock.Instances()); n != 1 {
		t.Errorf("%d instances, want the one, changed in place", n)
	}
}

func TestNewCredentialsReachTheVM(t *testing.T) {
	w, rc := reconfigureWorld(t, false)
	first := w.readyWith(proxy.Spec{})
	rotated := proxy.Credentials{Username: "u-rotated", Password: "p-rotated"}
	w.change(func(p *proxy.Proxy) { p.Reconciler.Credentials = rotated })
	w.written()
	p := w.doc()
	type cost struct {
		Phase         proxy.Phase
		Endpoint      string
		Users         []vmconfig.User
		Credentials   proxy.Credentials
		Writes        int
		Calls         map[mock.Method]int
		Reconfigures  int
		ReconfiguredU string
	}
	got := cost{Phase: p.Status.Phase, Endpoint: p.Status.Endpoint, Credentials: p.Reconciler.Credentials,
		Writes: w.writes, Calls: w.calls(), Reconfigures: len(rc.reconfigures())}
	if calls := rc.reconfigures(); len(calls) == 1 {
		got.Users, got.ReconfiguredU = calls[0].Engine.Users, calls[0].UID
	}
	want := cost{Phase: proxy.PhaseReady, Endpoint: first.Status.Endpoint,
		Users:       []vmconfig.User{{Name: "u-rotated", PasswordHash: "test:p-rotated"}},
		Credentials: rotated, Writes: 3, Calls: map[mock.Method]int{mock.MethodGet: 1}, Reconfigures: 1, ReconfiguredU: uid}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("new credentials (-want +got):\n%s", diff)
	}
}

// TestClaimedVMReconfigured: a VM claimed from a warm pool comes to its
// proxy's document in Provisioning, given no configuration of the proxy
// yet (sentGeneration 0) and serving generation 0: the claim's event hands
// it the proxy's, relabelled with the proxy's uid, and the proxy stays
// Provisioning until the VM serves it. No VM is created.
func TestClaimedVMReconfigured(t *testing.T) {
	w, rc := reconfigureWorld(t, false)
	rc.hold = true
	w.create(proxy.Spec{})
	warm, err := rc.Create(context.Background(), provider.CreateRequest{Name: "warm-1", UID: "member-uid",
		Engine: &vmconfig.Config{Generation: 0}})
	if err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(boot)
	w.queue.take() // the member's call-home
	w.update(func(p *proxy.Proxy) {
		p.Status.Phase, p.Status.ProviderID = proxy.PhaseProvisioning, warm
		p.Reconciler.SentGeneration, p.Reconciler.BootStart = 0, w.clock.Now()
		p.Reconciler.Credentials = proxy.Credentials{Username: "u", Password: "p"}
	})
	w.forget()

	// The claim's event, twice (a duplicate), then a sweep before the VM
	// serves: Provisioning, one Reconfigure.
	w.written()
	w.written()
	w.sweep()
	if p := w.doc(); p.Status.Phase != proxy.PhaseProvisioning || p.Reconciler.SentGeneration != 1 || len(rc.reconfigures()) != 1 {
		t.Errorf("after the claim's events: phase %s, sentGeneration %d, %d Reconfigures; want Provisioning, 1, 1",
			p.Status.Phase, p.Reconciler.SentGeneration, len(rc.reconfigures()))
	}
	if calls := rc.reconfigures(); len(calls) > 0 && (calls[0].UID != uid || calls[0].Engine.Generation != 1) {
		t.Errorf("Reconfigure of the claimed VM: uid %s, generation %d; want %s, 1", calls[0].UID, calls[0].Engine.Generation, uid)
	}
	// The VM applies it and calls home.
	rc.mu.Lock()
	rc.served[warm] = 1
	rc.mu.Unlock()
	w.reconcile(reconcile.Trigger{Reason: proxy.ReasonReady, UID: uid})
	p := w.doc()
	got := []any{p.Status.Phase, p.Status.ObservedGeneration, w.mock.Calls(mock.MethodCreate), len(rc.reconfigures())}
	if diff := cmp.Diff([]any{proxy.PhaseReady, int64(1), 1, 1}, got); diff != "" {
		t.Errorf("claimed VM serving its proxy's generation: [phase, observedGeneration, creates, reconfigures] (-want +got):\n%s", diff)
	}
}

// beforeGenerations is the mock as a provider from before generations:
// no Reconfigure, and VMs that report none.
type beforeGenerations struct{ provider.Provider }

func (p beforeGenerations) Get(ctx context.Context, id string) (*provider.Instance, error) {
	inst, err := p.Provider.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	c := *inst
	c.Generation = 0
	return &c, nil
}

// TestProviderWithoutGenerations: a provider that is no Reconfigurer and
// whose VMs report generation 0 reports no generations: its running VM is
// Ready, as before generations were.
func TestProviderWithoutGenerations(t *testing.T) {
	w := newWorld(t, reconcile.Options{})
	w.r = reconcile.New(w.store, providers{beforeGenerations{w.mock}}, w.queue, secrets{}, w.clock, slog.New(slog.DiscardHandler),
		reconcile.Options{Rand: rand.New(rand.NewPCG(1, 2)), Bootstrap: engineOf})
	p := w.readyWith(proxy.Spec{})
	if p.Status.ObservedGeneration != 1 {
		t.Errorf("observedGeneration %d, want 1", p.Status.ObservedGeneration)
	}
}

// TestNoConfigurationRendered: a reconciler that renders no configuration
// (no Options.Bootstrap) has none to hand over: a new generation is served
// at once, with no Reconfigure and no new VM.
func TestNoConfigurationRendered(t *testing.T) {
	w, rc := reconfigureWorld(t, false)
	w.r = reconcile.New(w.store, providers{rc}, w.queue, secrets{}, w.clock, slog.New(slog.DiscardHandler),
		reconcile.Options{Rand: rand.New(rand.NewPCG(1, 2))})
	w.readyWith(proxy.Spec{})
	w.change(patchRanges)
	w.written()
	p := w.doc()
	got := []any{p.Status.Phase, p.Status.ObservedGeneration, p.Reconciler.SentGeneration, len(rc.reconfigures()), w.mock.Calls(mock.MethodCreate)}
	if diff := cmp.Diff([]any{proxy.PhaseReady, int64(2), int64(2), 0, 1}, got); diff != "" {
		t.Errorf("[phase, observedGeneration, sentGeneration, reconfigures, creates] (-want +got):\n%s", diff)
	}
}

// TestReconfigurerReportingZeroIsNotReady: a Reconfigurer's VM that reports
// generation 0 does not serve its proxy's configuration: the proxy is not
// Ready on its call-home, and is once the VM reports it.
func TestReconfigurerReportingZeroIsNotReady(t *testing.T) {
	w, rc := reconfigureWorld(t, false)
	w.create(proxy.Spec{})
	w.reconcile(reconcile.Trigger{})
	p := w.doc()
	rc.mu.Lock()
	rc.served[p.Status.ProviderID] = 0
	rc.mu.Unlock()
	w.boot()
	if got := w.doc().Status.Phase; got != proxy.PhaseProvisioning {
		t.Errorf("VM reporting generation 0: phase %s, want Provisioning", got)
	}
	rc.mu.Lock()
	rc.served[p.Status.ProviderID] = 1
	rc.mu.Unlock()
	w.sweep()
	if got := w.doc(); got.Status.Phase != proxy.PhaseReady || got.Status.ObservedGeneration != 1 {
		t.Errorf("VM reporting generation 1: phase %s, observedGeneration %d; want Ready, 1", got.Status.Phase, got.Status.ObservedGeneration)
	}
}
