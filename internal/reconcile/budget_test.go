package reconcile_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
	"github.com/egress-proxies/egress/internal/store/rules"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// budgeted is what a case of the namespace's budget checks.
type budgeted struct {
	Phase     proxy.Phase
	Rotations int64
	// Creates counts every Create since the proxy was asked for.
	Creates int
	// Counted are the namespace's creations after the first VM's hour,
	// as offsets from the start.
	Counted []time.Duration
	// WaitUntil is status.rotationWaitUntil, as an offset from the start.
	WaitUntil *time.Duration
}

// TestAgeRotationBudget: a rotation by maxAge is a VM its namespace
// causes: the reconciler counts it against NAMESPACE_CREATES_PER_HOUR in
// the write that starts it, and over the budget the VM serves on while the
// status says until when the rotation waits; neither events nor the sweep
// rotate it before then. A rotation a user asked for (counted by the
// request) and a lost VM's replacement are counted by no run.
func TestAgeRotationBudget(t *testing.T) {
	d := func(x time.Duration) *time.Duration { return &x }
	for name, tc := range map[string]struct {
		reason string
		// others are the namespace's other VMs, as offsets from the start.
		others []time.Duration
		run    func(w *world, first *proxy.Proxy)
		want   budgeted
	}{
		"Counted": {
			reason: "Within the budget, the rotation by age is made and counted.",
			run: func(w *world, _ *proxy.Proxy) {
				w.clock.Set(start.Add(time.Hour))
				w.reconcile(reconcile.Trigger{Reason: proxy.ReasonAge})
				w.boot()
			},
			want: budgeted{Phase: proxy.PhaseReady, Rotations: 1, Creates: 2, Counted: []time.Duration{time.Hour}},
		},
		"WaitsOverTheBudget": {
			reason: "Over the budget the VM serves on, and the status says when the oldest VM leaves the hour; nothing rotates it before.",
			others: []time.Duration{30 * time.Minute, 40 * time.Minute},
			run: func(w *world, _ *proxy.Proxy) {
				w.clock.Set(start.Add(time.Hour))
				w.reconcile(reconcile.Trigger{Reason: proxy.ReasonAge})
				w.clock.Set(start.Add(80 * time.Minute))
				w.reconcile(reconcile.Trigger{Reason: proxy.ReasonAge})
				w.sweep()
				w.reconcile(reconcile.Trigger{Reason: proxy.ReasonWritten})
			},
			want: budgeted{Phase: proxy.PhaseReady, Creates: 1, Counted: []time.Duration{30 * time.Minute, 40 * time.Minute}, WaitUntil: d(90 * time.Minute)},
		},
		"RotatesOnceItMay": {
			reason: "At the time the status gave, the rotation is counted and made.",
			others: []time.Duration{30 * time.Minute, 40 * time.Minute},
			run: func(w *world, _ *proxy.Proxy) {
				w.clock.Set(start.Add(time.Hour))
				w.reconcile(reconcile.Trigger{Reason: proxy.ReasonAge})
				w.clock.Set(start.Add(90 * time.Minute))
				w.reconcile(reconcile.Trigger{Reason: proxy.ReasonAge})
				w.boot()
			},
			want: budgeted{Phase: proxy.PhaseReady, Rotations: 1, Creates: 2, Counted: []time.Duration{40 * time.Minute, 90 * time.Minute}},
		},
		"RequestedIsNotCountedAgain": {
			reason: "A rotation a user asked for was counted by the request: the run makes it over a spent budget, and counts nothing.",
			others: []time.Duration{10 * time.Minute, 20 * time.Minute},
			run: func(w *world, _ *proxy.Proxy) {
				w.clock.Set(start.Add(30 * time.Minute))
				w.requestRotation(w.clock.Now())
				w.reconcile(reconcile.Trigger{Reason: proxy.ReasonWritten})
				w.boot()
			},
			want: budgeted{Phase: proxy.PhaseReady, Rotations: 1, Creates: 2, Counted: []time.Duration{10 * time.Minute, 20 * time.Minute}},
		},
		"LostIsNotCounted": {
			reason: "A VM lost through no action of the tenant is replaced over a spent budget, and counted nowhere.",
			others: []time.Duration{10 * time.Minute, 20 * time.Minute},
			run: func(w *world, first *proxy.Proxy) {
				w.clock.Set(start.Add(30 * time.Minute))
				w.mock.Lose(first.Status.ProviderID)
				w.sweep()
				w.boot()
			},
			want: budgeted{Phase: proxy.PhaseReady, Creates: 2, Counted: []time.Duration{10 * time.Minute, 20 * time.Minute}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, reconcile.Options{CreatesPerHour: 2})
			ctx := context.Background()
			if _, err := w.store.CreateNamespace(ctx, rules.NewNamespace(w.key.Namespace, nil, 20, 20, start)); err != nil {
				t.Fatal(err)
			}
			first := w.readyWith(proxy.Spec{MaxAge: "1h"})
			for i, at := range tc.others {
				other := &proxy.Proxy{Namespace: w.key.Namespace, Name: fmt.Sprintf("other-%d", i), UID: fmt.Sprintf("uid-other-%d", i), Generation: 1,
					Spec: proxy.Spec{Provider: mock.Type}, Status: proxy.Status{Phase: proxy.PhasePending}, CreateTime: start.Add(at)}
				if _, err := w.store.CreateInNamespace(ctx, other, func(*tenancy.Namespace) (tenancy.Limits, error) {
					return tenancy.Limits{Quota: 20, CreatesPerHour: 2}, nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			tc.run(w, first)
			p := w.doc()
			ns, err := w.store.GetNamespace(ctx, w.key.Namespace)
			if err != nil {
				t.Fatal(err)
			}
			got := budgeted{Phase: p.Status.Phase, Rotations: p.Status.Rotations, Creates: w.mock.Calls(mock.MethodCreate)}
			for _, c := range ns.Creations {
				got.Counted = append(got.Counted, c.Sub(start))
			}
			if u := p.Status.RotationWaitUntil; u != nil {
				got.WaitUntil = d(u.Sub(start))
				if p.Status.Message == "" {
					t.Errorf("the rotation waits until %s, and the status message does not say why", u)
				}
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
