package reconcile_test

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
	"github.com/egress-proxies/egress/internal/store/storefake"
)

// reconfigureDelay is how long the mock's VMs take to apply a
// Reconfigure in the revocation tests: long enough that a claimed VM is
// still applying its proxy's configuration when the credentials change.
const reconfigureDelay = time.Minute

// revocationWorld is a world whose mock VMs take reconfigureDelay to apply
// a Reconfigure (and report, and call home), behind p (the mock itself
// when nil), and whose reconciler renders the engine's configuration.
func revocationWorld(t *testing.T, wrap func(*mock.Provider) provider.Provider) *world {
	t.Helper()
	w := newWorld(t, reconcile.Options{})
	w.mock = mock.New(mock.Options{Clock: w.clock, ProvisioningDelay: boot, ReconfigureDelay: reconfigureDelay, CallHome: func(c mock.CallHome) {
		w.queue.Publish(context.Background(), callHomeMessage(c))
	}})
	var p provider.Provider = w.mock
	if wrap != nil {
		p = wrap(w.mock)
	}
	w.r = reconcile.New(w.store, providers{p}, w.queue, secrets{}, w.clock, slog.New(slog.DiscardHandler),
		reconcile.Options{Rand: rand.New(rand.NewPCG(1, 2)), Bootstrap: engineOf})
	return w
}

// deliverProxies is deliver for the runs of proxies and members: a pool's
// own requests (a refill after a claim) are the pool reconciler's, which
// these tests do not run.
func (w *world) deliverProxies() {
	w.t.Helper()
	for range 20 {
		msgs := w.queue.take()
		if len(msgs) == 0 {
			return
		}
		for _, m := range msgs {
			key, err := m.Key()
			if err != nil {
				continue // pools/{pool}
			}
			if err := w.r.Reconcile(context.Background(), key, reconcile.TriggerOf(m)); err != nil {
				w.t.Fatalf("Reconcile of %+v: %v", m, err)
			}
		}
	}
	w.t.Fatal("still requeueing after 20 rounds")
}

// run is one reconcile, then the runs of proxies and members it asks for.
func (w *world) run(t reconcile.Trigger) {
	w.t.Helper()
	if err := w.r.Reconcile(context.Background(), w.key, t); err != nil {
		w.t.Fatalf("Reconcile: %v", err)
	}
	w.deliverProxies()
}

// said is one status write of the proxy: its phase and Ready condition.
type said struct {
	Phase           proxy.Phase
	Reason, Message string
}

// sayings records every status write of the proxy from now on.
func (w *world) sayings() *[]said {
	var out []said
	w.store.Watch(func(c storefake.Change) {
		if c.New == nil || c.Key != w.key {
			return
		}
		s := said{Phase: c.New.Status.Phase}
		for _, cond := range c.New.Status.Conditions {
			if cond.Type == proxy.ConditionReady {
				s.Reason, s.Message = cond.Reason, cond.Message
			}
		}
		if len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	})
	return &out
}

// TestRefusedChangeSaidAtOnce: a VM whose agent refuses a new generation
// (it puts back the configuration it served, writes egress/error and calls
// home) is seen at once: its call-home's run says why in the proxy's
// status and replaces it by a VM made with that generation, without
// waiting RECONFIGURE_TIMEOUT, so old credentials do not keep working
// for minutes after a :rotateCredentials. Before, the proxy stayed
// Reconfiguring, saying nothing, until the timeout.
func TestRefusedChangeSaidAtOnce(t *testing.T) {
	w := revocationWorld(t, nil)
	w.readyWith(proxy.Spec{})
	w.mock.RefuseReconfigures(1, "the self-test's CONNECT to www.google.com:443 got 403")
	rotated := proxy.Credentials{Username: "rotated", Password: "rotatedPassword000000000"}
	w.change(func(p *proxy.Proxy) { p.Reconciler.Credentials = rotated })
	writes := w.sayings()
	w.written()
	handed := w.doc()
	// The agent tries the new generation, refuses it and calls home:
	// seconds, far within the reconfigure timeout.
	w.clock.Advance(reconfigureDelay)
	w.deliverProxies()
	if w.clock.Now().Sub(handed.Reconciler.ReconfigureStart) >= reconcile.DefaultReconfigureTimeout {
		t.Fatalf("the test waited out the reconfigure timeout: it proves nothing")
	}
	w.boot()
	ready := w.doc()

	// The run of the refusal's call-home says why, then replaces the VM
	// (its name comes back as the new VM's: the same providerID).
	id := handed.Status.ProviderID
	refusal := "Instance " + id + " could not serve generation 2 of the configuration " +
		"(the self-test's CONNECT to www.google.com:443 got 403; the configuration served before is served still) and serves generation 1 still. " +
		"Replacing it with an instance made with that generation."
	var phases [][2]string
	message := ""
	for _, s := range *writes {
		phases = append(phases, [2]string{string(s.Phase), s.Reason})
		if s.Reason == "ConfigurationRefused" {
			message = s.Message
		}
	}
	wantPhases := [][2]string{
		{"Ready", "Ready"}, // the lease, taken before the Reconfigure
		{"Reconfiguring", "Reconfiguring"},
		{"Replacing", "ConfigurationRefused"},
		{"Replacing", "Replacing"},
		{"Provisioning", "Provisioning"},
		{"Ready", "Ready"},
	}
	if diff := cmp.Diff(wantPhases, phases); diff != "" {
		t.Errorf("the proxy's status, write by write: [phase, Ready reason] (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(refusal, message); diff != "" {
		t.Errorf("what the proxy said of the refusal (-want +got):\n%s", diff)
	}
	type end struct {
		Observed, Replacements int64
		Creates                int
		User                   string
	}
	got := end{Observed: ready.Status.ObservedGeneration, Replacements: ready.Reconciler.Replacements, Creates: w.mock.Calls(mock.MethodCreate),
		User: givenUser(w.mock, ready.Status.ProviderID)}
	if diff := cmp.Diff(end{Observed: 2, Replacements: 1, Creates: 2, User: rotated.Username}, got); diff != "" {
		t.Errorf("served by a new VM made with the rotated credentials (-want +got):\n%s", diff)
	}
}

// TestRefusedClaimIsAFailedBoot: a warm VM that refuses its claiming
// proxy's configuration never served the proxy: it counts as a failed
// boot, at once, and is replaced.
func TestRefusedClaimIsAFailedBoot(t *testing.T) {
	w := revocationWorld(t, nil)
	spec := proxy.Spec{Placement: proxy.Placement{Region: "us-central1", Zone: "us-central1-a"}}
	warm := w.warmPool(spec)
	w.mock.RefuseReconfigures(1, "the engine did not reload")
	w.create(spec)
	writes := w.sayings()
	w.run(reconcile.Trigger{})
	if p := w.doc(); p.Status.ProviderID != warm {
		t.Fatalf("setting up: the proxy has %s, want the warm VM %s", p.Status.ProviderID, warm)
	}
	w.clock.Advance(reconfigureDelay)
	w.deliverProxies()
	p := w.doc()
	message := ""
	for _, s := range *writes {
		if s.Reason == "ConfigurationRefused" {
			message = s.Message
		}
	}
	want := "Instance " + warm + " could not serve generation 1 of the configuration (the engine did not reload; the configuration served before is served still) " +
		"and serves generation 0 still. Replacing it (1 of 3 boots failed)."
	got := []any{p.Status.Phase, p.Reconciler.BootFailures, message}
	if diff := cmp.Diff([]any{proxy.PhaseProvisioning, int64(1), want}, got); diff != "" {
		t.Errorf("[phase, boot failures, what the status said] after the claimed VM refused (-want +got):\n%s", diff)
	}
	if p.Status.ProviderID == warm {
		t.Errorf("the refusing warm VM %s still serves the proxy", warm)
	}
}

// TestRetiringVMTakesNewCredentials: while a make-before-break rotation
// keeps the old VM (Retiring) serving until the new one is Ready, new
// credentials reach both VMs at once: the old password must not keep
// working on the VM on its way out. A retiring VM that cannot take them
// is deleted at once instead. Before, the retiring VM kept the old
// password until the new VM was Ready.
func TestRetiringVMTakesNewCredentials(t *testing.T) {
	rotated := proxy.Credentials{Username: "rotated", Password: "rotatedPassword000000000"}
	type seen struct {
		// RetiringUser is the user the retiring VM was last given ("" when
		// it is gone or going).
		RetiringUser       string
		Retiring           bool
		RetiringGeneration int64
		CurrentUser        string
	}
	for name, tc := range map[string]struct {
		reason string
		refuse bool // the retiring VM's Reconfigure fails
		want   seen
	}{
		"GivenToBoth": {
			reason: "the new credentials are handed to the claimed VM and to the retiring one",
			want:   seen{RetiringUser: rotated.Username, Retiring: true, RetiringGeneration: 2, CurrentUser: rotated.Username},
		},
		"DeletedIfItCannot": {
			reason: "a retiring VM that cannot take them is deleted at once, and forgotten",
			refuse: true,
			want:   seen{CurrentUser: rotated.Username},
		},
	} {
		t.Run(name, func(t *testing.T) {
			var refusing *refusingVM
			w := revocationWorld(t, func(m *mock.Provider) provider.Provider {
				refusing = &refusingVM{Provider: m}
				return refusing
			})
			spec := proxy.Spec{Placement: proxy.Placement{Region: "us-central1", Zone: "us-central1-a"}}
			old := w.readyWith(spec)
			warm := w.warmPool(spec)
			w.requestRotation(w.clock.Now())
			w.run(reconcile.Trigger{Reason: proxy.ReasonSweep})
			rotating := w.doc()
			if rotating.Reconciler.Retiring != old.Status.ProviderID || rotating.Status.ProviderID != warm {
				t.Fatalf("setting up: VM %s retiring %s, want the warm %s, retiring %s",
					rotating.Status.ProviderID, rotating.Reconciler.Retiring, warm, old.Status.ProviderID)
			}
			if tc.refuse {
				refusing.refuse = old.Status.ProviderID
			}
			w.change(func(p *proxy.Proxy) { p.Reconciler.Credentials = rotated })
			w.written()
			p := w.doc()
			got := seen{Retiring: p.Reconciler.Retiring != "", RetiringGeneration: p.Reconciler.RetiringGeneration,
				RetiringUser: givenUser(w.mock, old.Status.ProviderID), CurrentUser: givenUser(w.mock, warm)}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
			// Once the new VM serves, the retiring one goes as before.
			w.clock.Advance(reconfigureDelay)
			w.deliverProxies()
			if p := w.doc(); p.Status.Phase != proxy.PhaseReady || p.Reconciler.Retiring != "" || p.Reconciler.RetiringGeneration != 0 || givenUser(w.mock, old.Status.ProviderID) != "" {
				t.Errorf("once the new VM serves: phase %s, retiring %q at %d, the old VM given %q; want Ready, none, and the old VM gone",
					p.Status.Phase, p.Reconciler.Retiring, p.Reconciler.RetiringGeneration, givenUser(w.mock, old.Status.ProviderID))
			}
		})
	}
}

// refusingVM is the mock whose Reconfigure of one VM fails, as a VM
// Compute will not change.
type refusingVM struct {
	*mock.Provider
	refuse string
}

func (r *refusingVM) Reconfigure(ctx context.Context, id string, req provider.ReconfigureRequest) error {
	if id == r.refuse {
		return provider.NewError(provider.KindPermanent, "reconfigure", id, errors.New("400 the instance cannot be modified"))
	}
	return r.Provider.Reconfigure(ctx, id, req)
}

// givenUser is the user of the engine configuration the mock's VM id was
// last given, or "" when the VM is gone or being deleted.
func givenUser(m *mock.Provider, id string) string {
	for _, in := range m.Instances() {
		if in.ID != id || in.State == provider.StateStopped {
			continue
		}
		if req, ok := m.CreateRequest(id); ok && req.Engine != nil && len(req.Engine.Users) == 1 {
			return req.Engine.Users[0].Name
		}
	}
	return ""
}

// warmPool makes a pool of one member that serves spec and boots its VM to
// warm, as the pool's reconciler would, and returns the VM's providerID.
func (w *world) warmPool(spec proxy.Spec) string {
	w.t.Helper()
	ctx := context.Background()
	if _, _, err := w.store.PutPool(ctx, "warm", proxy.PoolSpec{Provider: mock.Type, Placement: spec.Placement, Size: 1}, w.clock.Now()); err != nil {
		w.t.Fatal(err)
	}
	members, err := w.store.EnsureMembers(ctx, "warm", w.clock.Now())
	if err != nil || len(members) != 1 {
		w.t.Fatalf("the pool's members: %d, %v", len(members), err)
	}
	key := members[0].Key()
	if err := w.r.Reconcile(ctx, key, reconcile.Trigger{}); err != nil {
		w.t.Fatal(err)
	}
	w.clock.Advance(boot)
	w.deliverProxies()
	m, err := w.store.Get(ctx, key)
	if err != nil || m.Status.Phase != proxy.PhaseReady {
		w.t.Fatalf("the pool's member: %+v, %v; want it Ready", m.Status, err)
	}
	if g := w.mockGeneration(m.Status.ProviderID); g != 0 {
		w.t.Fatalf("the warm VM serves generation %d, want 0", g)
	}
	return m.Status.ProviderID
}

func (w *world) mockGeneration(id string) int64 {
	in, err := w.mock.Get(context.Background(), id)
	if err != nil {
		w.t.Fatal(err)
	}
	return in.Generation
}

// TestReplacedClaimRetiresFirst: when the VM a make-before-break rotation
// claimed is lost before it is Ready, its replacement is created under
// the proxy's own name, which the retiring VM may carry (it was created
// under it): the retiring VM is deleted and forgotten first, so the create
// makes a new VM rather than adopting the old one, and the proxy ends
// Ready on a VM that exists. Before, the create adopted the retiring VM,
// and the proxy, once Ready, deleted it as the retiring one: Ready on no VM.
func TestReplacedClaimRetiresFirst(t *testing.T) {
	w := revocationWorld(t, nil)
	spec := proxy.Spec{Placement: proxy.Placement{Region: "us-central1", Zone: "us-central1-a"}}
	old := w.readyWith(spec)
	warm := w.warmPool(spec)
	w.requestRotation(w.clock.Now())
	w.run(reconcile.Trigger{Reason: proxy.ReasonSweep})
	if p := w.doc(); p.Reconciler.Retiring != old.Status.ProviderID || p.Status.ProviderID != warm {
		t.Fatalf("setting up: VM %s retiring %s, want the warm %s retiring %s", p.Status.ProviderID, p.Reconciler.Retiring, warm, old.Status.ProviderID)
	}
	w.mock.Lose(warm)
	w.run(reconcile.Trigger{Reason: proxy.ReasonSweep})
	w.clock.Advance(reconcile.DefaultNotFoundGrace + time.Second)
	w.run(reconcile.Trigger{Reason: proxy.ReasonSweep})
	w.boot()
	w.clock.Advance(time.Minute)
	w.run(reconcile.Trigger{Reason: proxy.ReasonSweep})
	p := w.doc()
	var vms []string
	for _, in := range w.mock.Instances() {
		if in.UID == uid {
			vms = append(vms, in.ID)
		}
	}
	type end struct {
		Phase    proxy.Phase
		Retiring string
		VMs      []string
		Creates  int
	}
	want := end{Phase: proxy.PhaseReady, VMs: []string{p.Status.ProviderID}, Creates: 3} // the first VM, the warm one, the replacement
	if diff := cmp.Diff(want, end{p.Status.Phase, p.Reconciler.Retiring, vms, w.mock.Calls(mock.MethodCreate)}); diff != "" {
		t.Errorf("after the claimed VM was lost mid-rotation (-want +got):\n%s", diff)
	}
}
