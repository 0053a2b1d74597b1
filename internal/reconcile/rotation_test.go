package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// rotated is what a rotation case checks.
type rotated struct {
	Phase proxy.Phase
	// SameEndpoint: the endpoint is the first VM's.
	SameEndpoint            bool
	Rotations, Replacements int64
	// Creates counts every Create since the proxy was asked for;
	// Instances, the VMs left.
	Creates, Instances int
	SameCredentials    bool
	NewRequestID       bool
}

// TestRotation: a rotate request newer than the VM, or a VM older than
// maxAge, gives the proxy a new VM (break before make: the old one goes
// first), and a new address unless it is Static, with the same
// credentials and a request id of its own; anything else leaves it be.
func TestRotation(t *testing.T) {
	for name, tc := range map[string]struct {
		reason string
		spec   proxy.Spec
		run    func(w *world, first *proxy.Proxy)
		want   rotated
	}{
		"RotateRequest": {
			reason: "A rotate request after the VM was made: a new VM and a new IP, counted as a rotation.",
			run: func(w *world, _ *proxy.Proxy) {
				w.requestRotation(w.clock.Now())
				w.reconcile(reconcile.Trigger{Reason: proxy.ReasonWritten})
				w.boot()
			},
			want: rotated{Phase: proxy.PhaseReady, Rotations: 1, Creates: 2, Instances: 1, SameCredentials: true, NewRequestID: true},
		},
		"RotateRequestOlderThanTheVM": {
			reason: "A rotate request from before the VM was made was served by that VM: nothing to do.",
			run: func(w *world, first *proxy.Proxy) {
				w.requestRotation(first.Reconciler.BootStart.Add(-time.Second))
				w.reconcile(reconcile.Trigger{Reason: proxy.ReasonWritten})
				w.boot()
			},
			want: rotated{Phase: proxy.PhaseReady, SameEndpoint: true, Creates: 1, Instances: 1, SameCredentials: true},
		},
		"StaticKeepsItsAddress": {
			reason: "A Static proxy's rotation gives it a new VM on the same address.",
			spec:   proxy.Spec{IPPolicy: proxy.IPStatic},
			run: func(w *world, _ *proxy.Proxy) {
				w.requestRotation(w.clock.Now())
				w.reconcile(reconcile.Trigger{Reason: proxy.ReasonWritten})
				w.boot()
			},
			want: rotated{Phase: proxy.PhaseReady, SameEndpoint: true, Rotations: 1, Creates: 2, Instances: 1, SameCredentials: true, NewRequestID: true},
		},
		"MaxAgeReached": {
			reason: "A VM as old as maxAge is rotated when the collector's look (age) comes.",
			spec:   proxy.Spec{MaxAge: "1h"},
			run: func(w *world, _ *proxy.Proxy) {
				w.clock.Advance(time.Hour)
				w.reconcile(reconcile.Trigger{Reason: proxy.ReasonAge})
				w.boot()
			},
			want: rotated{Phase: proxy.PhaseReady, Rotations: 1, Creates: 2, Instances: 1, SameCredentials: true, NewRequestID: true},
		},
		"MaxAgeNotReached": {
			reason: "A VM younger than maxAge stays, whatever looks at it.",
			spec:   proxy.Spec{MaxAge: "1h"},
			run: func(w *world, _ *proxy.Proxy) {
				w.clock.Advance(30 * time.Minute)
				w.sweep()
			},
			want: rotated{Phase: proxy.PhaseReady, SameEndpoint: true, Creates: 1, Instances: 1, SameCredentials: true},
		},
		"FailedIsNotRotated": {
			reason: "A Failed proxy stays Failed until it is deleted, rotation or not: no new VM is made, and the one it still names is deleted.",
			run: func(w *world, _ *proxy.Proxy) {
				// Asked for while Ready: the API refuses a Failed proxy's.
				w.requestRotation(w.clock.Now())
				w.update(func(p *proxy.Proxy) { p.Status.Phase = proxy.PhaseFailed })
				w.sweep()
			},
			want: rotated{Phase: proxy.PhaseFailed, Creates: 1, Instances: 0, SameCredentials: true},
		},
		"LostDuringRotation": {
			reason: "A VM lost as it is rotated is one replacement of the proxy's, counted once, as a rotation.",
			run: func(w *world, first *proxy.Proxy) {
				w.requestRotation(w.clock.Now())
				w.mock.Lose(first.Status.ProviderID)
				w.reconcile(reconcile.Trigger{Reason: proxy.ReasonWritten})
				w.boot()
			},
			want: rotated{Phase: proxy.PhaseReady, Rotations: 1, Creates: 2, Instances: 1, SameCredentials: true, NewRequestID: true},
		},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, reconcile.Options{})
			first := w.readyWith(tc.spec)
			firstReq, _ := w.mock.CreateRequest(first.Status.ProviderID)
			tc.run(w, first)
			p := w.doc()
			got := rotated{
				Phase: p.Status.Phase, SameEndpoint: p.Status.Endpoint == first.Status.Endpoint,
				Rotations: p.Status.Rotations, Replacements: p.Reconciler.Replacements,
				Creates: w.mock.Calls(mock.MethodCreate), Instances: len(w.mock.Instances()),
				SameCredentials: p.Reconciler.Credentials == first.Reconciler.Credentials,
			}
			if req, ok := w.mock.CreateRequest(p.Status.ProviderID); ok {
				got.NewRequestID = req.RequestID != firstReq.RequestID
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// readyWith drives a new document of this spec to Ready.
func (w *world) readyWith(spec proxy.Spec) *proxy.Proxy {
	w.t.Helper()
	w.create(spec)
	w.reconcile(reconcile.Trigger{})
	w.boot()
	p := w.doc()
	if p.Status.Phase != proxy.PhaseReady {
		w.t.Fatalf("setting up: phase %s (%s), want Ready", p.Status.Phase, p.Status.Message)
	}
	return p
}

func (w *world) requestRotation(at time.Time) {
	w.t.Helper()
	if _, err := w.store.RequestRotation(context.Background(), w.key, at, tenancy.Limits{}); err != nil {
		w.t.Fatal(err)
	}
}
