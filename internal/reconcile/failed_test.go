package reconcile_test

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
)

// failedEnd is what a Failed case checks: the proxy says why it failed,
// names no VM, and no VM is left; a Static proxy keeps its address.
type failedEnd struct {
	Phase proxy.Phase
	// Reason is the Ready condition's; MessageHasWhy, that the status
	// message holds what the case expects it to say.
	Reason        string
	MessageHasWhy bool
	// ConsoleTail is status.consoleTail, the console lines kept apart
	// from the message.
	ConsoleTail string
	ProviderID  string
	Endpoint    string
	Instances   int
	Addresses   int
	// Calls are the provider calls after the proxy was set up.
	Calls map[mock.Method]int
	// Stalled: the sweep would re-drive the document.
	Stalled bool
}

// TestFailedProxyHasNoVM: every way to Failed deletes the VM, so a Failed
// proxy bills no VM, and keeps in its status why it failed. A run cut short
// on the way (after the Failed write, or after the delete) leaves a
// document the next run finishes.
func TestFailedProxyHasNoVM(t *testing.T) {
	permanent := func(op string) error {
		return provider.NewError(provider.KindPermanent, op, "", errors.New("403 the caller lacks compute.instances."+op))
	}
	failedAs := func(w *world) {
		w.update(func(p *proxy.Proxy) {
			p.Status.Phase, p.Status.Message = proxy.PhaseFailed, "the reason it failed for"
			p.Status.Conditions = []proxy.Condition{{Type: proxy.ConditionReady, Status: "False", Reason: "ProviderPermanent", Message: p.Status.Message}}
		})
	}
	cases := map[string]struct {
		reason string
		spec   proxy.Spec
		// run leaves the world at the end of the case; the proxy is Ready
		// when it starts, and its calls forgotten.
		run  func(w *world, ready *proxy.Proxy)
		why  string
		want failedEnd
	}{
		"PermanentErrorOnObserve": {
			reason: "A permanent error of the Get that looks at a Ready proxy's VM fails it, and the VM is deleted: one Delete, one Get that finds it gone.",
			run: func(w *world, _ *proxy.Proxy) {
				w.mock.FailNext(mock.MethodGet, 1, permanent("get"))
				w.reconcile(reconcile.Trigger{Reason: proxy.ReasonDrift})
			},
			why:  "403 the caller lacks compute.instances.get",
			want: failedEnd{Phase: proxy.PhaseFailed, Reason: "ProviderPermanent", Calls: map[mock.Method]int{mock.MethodGet: 2, mock.MethodDelete: 1}},
		},
		"PermanentErrorOnReplace": {
			reason: "A permanent error of the Delete that replaces a stopped VM fails the proxy; the VM it still names is deleted again on the way to Failed.",
			run: func(w *world, ready *proxy.Proxy) {
				w.mock.Stop(ready.Status.ProviderID, provider.StateStopped)
				w.mock.FailNext(mock.MethodDelete, 1, permanent("delete"))
				w.reconcile(reconcile.Trigger{Reason: proxy.ReasonDrift})
			},
			why:  "403 the caller lacks compute.instances.delete",
			want: failedEnd{Phase: proxy.PhaseFailed, Reason: "ProviderPermanent", Calls: map[mock.Method]int{mock.MethodGet: 2, mock.MethodDelete: 2}},
		},
		"PermanentCreateFailureOfTheReplacement": {
			reason: "A replacement whose create Compute accepted and then failed for good (a missing image) fails the proxy, and its record goes.",
			run: func(w *world, ready *proxy.Proxy) {
				w.mock.FailCreatesAsync("", 1, provider.KindPermanent, "RESOURCE_NOT_FOUND: The resource 'projects/debian-cloud/global/images/family/debian-99' was not found")
				w.mock.Lose(ready.Status.ProviderID)
				w.reconcile(reconcile.Trigger{Reason: proxy.ReasonDrift})
				w.clock.Advance(time.Minute)
				w.sweep()
			},
			why: "debian-99' was not found",
			// The lost VM's Get; its replacement's Delete, Get, Create; the
			// sweep's Get that finds the create failed; the Delete and Get
			// of the VM that never was.
			want: failedEnd{Phase: proxy.PhaseFailed, Reason: "CreateFailed", Calls: map[mock.Method]int{mock.MethodCreate: 1, mock.MethodGet: 4, mock.MethodDelete: 2}},
		},
		"BootFailures": {
			reason: "The MaxBootFailures-th VM that does not become ready fails the proxy, with its console's last lines, and is deleted.",
			run: func(w *world, ready *proxy.Proxy) {
				w.mock.NeverReady(3)
				w.mock.Lose(ready.Status.ProviderID)
				w.reconcile(reconcile.Trigger{Reason: proxy.ReasonDrift})
				for range 3 {
					w.clock.Advance(reconcile.DefaultBootTimeout + time.Second)
					w.sweep()
				}
			},
			why: "3 boots in a row failed; the proxy is not retried. The last lines of its serial console are in status.consoleTail",
			// The lost VM's Get, and its replacement's Delete and Get; a
			// Get of each of the three VMs at its boot timeout, the first
			// two replaced (a Delete and a Get each), the last deleted and
			// found gone.
			want: failedEnd{Phase: proxy.PhaseFailed, Reason: "BootTimeout", ConsoleTail: "mock: instance proxy-" + uid + " created; booting", Calls: map[mock.Method]int{mock.MethodCreate: 3, mock.MethodGet: 8, mock.MethodDelete: 4}},
		},
		"StaticKeepsItsAddress": {
			reason: "A Static proxy that fails loses its VM and keeps its reserved address until it is deleted.",
			spec:   proxy.Spec{IPPolicy: proxy.IPStatic},
			run: func(w *world, _ *proxy.Proxy) {
				w.mock.FailNext(mock.MethodGet, 1, permanent("get"))
				w.reconcile(reconcile.Trigger{Reason: proxy.ReasonDrift})
			},
			why:  "403 the caller lacks compute.instances.get",
			want: failedEnd{Phase: proxy.PhaseFailed, Reason: "ProviderPermanent", Addresses: 1, Calls: map[mock.Method]int{mock.MethodGet: 2, mock.MethodDelete: 1}},
		},
		"CrashAfterTheFailedWrite": {
			reason: "A run that crashed after writing Failed and before the delete left a Failed document that names its VM: the event of that write deletes the VM, and the reason stays.",
			run: func(w *world, _ *proxy.Proxy) {
				failedAs(w)
				w.reconcile(reconcile.Trigger{Reason: proxy.ReasonWritten})
			},
			why:  "the reason it failed for",
			want: failedEnd{Phase: proxy.PhaseFailed, Reason: "ProviderPermanent", Calls: map[mock.Method]int{mock.MethodGet: 1, mock.MethodDelete: 1}},
		},
		"CrashAfterTheDelete": {
			reason: "A run that crashed after the delete and before forgetting the VM: the sweep's run finds it gone and forgets it.",
			run: func(w *world, ready *proxy.Proxy) {
				failedAs(w)
				if err := w.mock.Delete(context.Background(), ready.Status.ProviderID); err != nil {
					w.t.Fatal(err)
				}
				w.calls()
				w.sweep()
			},
			why:  "the reason it failed for",
			want: failedEnd{Phase: proxy.PhaseFailed, Reason: "ProviderPermanent", Calls: map[mock.Method]int{mock.MethodGet: 1, mock.MethodDelete: 1}},
		},
		"CrashHoldingTheLease": {
			reason: "The lease of a run that crashed on the way keeps the write's event off; the sweep, once the lease expired, deletes the VM.",
			run: func(w *world, _ *proxy.Proxy) {
				failedAs(w)
				w.update(func(p *proxy.Proxy) {
					p.Reconciler.LeaseHolder, p.Reconciler.LeaseExpireTime = "crashed", w.clock.Now().Add(time.Minute)
				})
				w.reconcile(reconcile.Trigger{Reason: proxy.ReasonWritten})
				if n := len(w.mock.Instances()); n != 1 {
					w.t.Fatalf("%d instances while the crashed run's lease holds, want its 1", n)
				}
				w.clock.Advance(2 * time.Minute)
				w.sweep()
			},
			why:  "the reason it failed for",
			want: failedEnd{Phase: proxy.PhaseFailed, Reason: "ProviderPermanent", Calls: map[mock.Method]int{mock.MethodGet: 1, mock.MethodDelete: 1}},
		},
		"RetiringVMGoesToo": {
			reason: "A proxy that fails while a make-before-break rotation still keeps its old VM (Retiring) deletes both: a Failed proxy bills no VM.",
			run: func(w *world, ready *proxy.Proxy) {
				old, err := w.mock.Create(context.Background(), provider.CreateRequest{Name: "retiring-" + uid[:8], UID: ready.UID})
				if err != nil {
					w.t.Fatal(err)
				}
				w.update(func(p *proxy.Proxy) { p.Reconciler.Retiring = old })
				w.forget()
				failedAs(w)
				w.reconcile(reconcile.Trigger{Reason: proxy.ReasonWritten})
			},
			why: "the reason it failed for",
			// The retiring VM's Delete; the VM's Delete and the Get that
			// finds it gone.
			want: failedEnd{Phase: proxy.PhaseFailed, Reason: "ProviderPermanent", Calls: map[mock.Method]int{mock.MethodGet: 1, mock.MethodDelete: 2}},
		},
		"DeleteRefusedLeftToTheSweep": {
			reason: "A Failed proxy whose VM cannot be deleted yet names it, and the sweep re-drives it until the VM is gone.",
			run: func(w *world, ready *proxy.Proxy) {
				w.mock.Stop(ready.Status.ProviderID, provider.StateStopped)
				w.mock.FailNext(mock.MethodDelete, 2, permanent("delete"))
				w.reconcile(reconcile.Trigger{Reason: proxy.ReasonDrift})
				if p := w.doc(); p.Status.Phase != proxy.PhaseFailed || p.Status.ProviderID == "" || !w.stalled(time.Hour) {
					w.t.Fatalf("after the refused deletes: phase %s, providerID %q, stalled %v; want Failed, naming the VM, for the sweep", p.Status.Phase, p.Status.ProviderID, w.stalled(time.Hour))
				}
				w.clock.Advance(time.Hour)
				w.sweep()
			},
			why: "403 the caller lacks compute.instances.delete",
			// The drift's Get and two refused Deletes; the sweep's Delete
			// and Get.
			want: failedEnd{Phase: proxy.PhaseFailed, Reason: "ProviderPermanent", Calls: map[mock.Method]int{mock.MethodGet: 2, mock.MethodDelete: 3}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, reconcile.Options{})
			ready := w.readyWith(tc.spec)
			w.forget()
			tc.run(w, ready)
			p := w.doc()
			got := failedEnd{
				Phase: p.Status.Phase, MessageHasWhy: strings.Contains(p.Status.Message, tc.why),
				ConsoleTail: strings.Join(p.Status.ConsoleTail, "\n"),
				ProviderID:  p.Status.ProviderID, Endpoint: p.Status.Endpoint,
				Instances: len(w.mock.Instances()), Addresses: len(w.mock.Addresses()),
				Calls: w.calls(), Stalled: w.stalled(time.Hour),
			}
			for _, c := range p.Status.Conditions {
				got.Reason = c.Reason
			}
			tc.want.MessageHasWhy = true
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s\nmessage: %s", tc.reason, diff, p.Status.Message)
			}
			// Deleting the proxy releases what it kept.
			w.requestDeletion()
			w.reconcile(reconcile.Trigger{})
			if w.doc() != nil || len(w.mock.Addresses()) != 0 {
				t.Errorf("after the Failed proxy was deleted: document %v, %d addresses; want neither", w.doc() != nil, len(w.mock.Addresses()))
			}
		})
	}
}

// stalled reports whether the sweep, looking for documents without
// progress for `after`, would re-drive the document then.
func (w *world) stalled(after time.Duration) bool {
	w.t.Helper()
	keys, err := w.store.Stalled(context.Background(), w.clock.Now().Add(after+time.Second), 10)
	if err != nil {
		w.t.Fatal(err)
	}
	return len(keys) == 1
}

// TestFailedVMSlowToGo: a Failed proxy's VM slower to go than one run's
// budget is waited for through the runs' hand-offs, and forgotten once
// gone.
func TestFailedVMSlowToGo(t *testing.T) {
	w := newWorld(t, reconcile.Options{})
	w.mock = mock.New(mock.Options{Clock: w.clock, ProvisioningDelay: boot, DeletionDelay: 70 * time.Second, CallHome: func(c mock.CallHome) {
		w.queue.Publish(context.Background(), callHomeMessage(c))
	}})
	w.r = reconcile.New(w.store, providers{w.mock}, w.queue, nil, w.clock, slog.New(slog.DiscardHandler),
		reconcile.Options{WaitBudget: 20 * time.Second, Rand: rand.New(rand.NewPCG(3, 4))})
	w.readyWith(proxy.Spec{})
	w.mock.FailNext(mock.MethodGet, 1, provider.NewError(provider.KindPermanent, "get", "", errors.New("403")))
	w.clock.takeSleeps()
	failedAt := w.clock.Now()
	w.reconcile(reconcile.Trigger{Reason: proxy.ReasonDrift})
	if n, waited := w.clock.takeSleeps(), w.clock.Now().Sub(failedAt); n == 0 || waited < 70*time.Second {
		t.Errorf("the runs waited %d times, %s in all; want the 70 s the VM takes to go", n, waited)
	}
	p := w.doc()
	if p.Status.Phase != proxy.PhaseFailed || p.Status.ProviderID != "" || p.Reconciler.LeaseHolder != "" {
		t.Errorf("phase %s, providerID %q, lease %q; want Failed, no VM named, no lease", p.Status.Phase, p.Status.ProviderID, p.Reconciler.LeaseHolder)
	}
	if n := len(w.mock.Instances()); n != 0 {
		t.Errorf("%d instances, want 0", n)
	}
}
