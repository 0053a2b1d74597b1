package reconcile_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/pacing"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
	"github.com/egress-proxies/egress/internal/store/storefake"
)

// rateLimited is a rate-limited create's error: the budget's queue when
// ahead is set, the cloud's own refusal otherwise.
func rateLimited(ahead int, retryAfter time.Duration) error {
	var cause error = errors.New("429 too many requests")
	if ahead > 0 {
		cause = &pacing.Queued{Key: pacing.Key{Type: mock.Type}, Ahead: ahead}
	}
	e := provider.NewError(provider.KindRateLimited, "create", "", cause)
	e.RetryAfter = retryAfter
	return e
}

// TestQueued: a create queued by the account's budget, or refused by the
// cloud's rate limit, is shown as Queued with the queue's words, never
// counted as an attempt, and tried again after the wait it was given,
// when the VM is made.
func TestQueued(t *testing.T) {
	type seen struct {
		Phase    proxy.Phase
		Reason   string
		Message  string
		Attempts int64
	}
	type end struct {
		Queued  []seen
		Waited  []time.Duration
		Phase   proxy.Phase
		Creates int
	}
	cases := map[string]struct {
		reason string
		err    error
		want   end
	}{
		"Budget": {
			reason: "The budget's queue says how many calls are ahead, and the run waits the turn it was given.",
			err:    rateLimited(12, 5*time.Second),
			want: end{Queued: []seen{{proxy.PhaseCreating, reconcile.ReasonQueued, "queued: 12 calls ahead", 0}},
				Waited: []time.Duration{5 * time.Second}, Phase: proxy.PhaseProvisioning, Creates: 1},
		},
		"CloudSaid": {
			reason: "The cloud's refusal says the wait it asked for.",
			err:    rateLimited(0, 40*time.Second),
			want: end{Queued: []seen{{proxy.PhaseCreating, reconcile.ReasonQueued, "queued: the cloud asked to wait 40s", 0}},
				Waited: []time.Duration{40 * time.Second}, Phase: proxy.PhaseProvisioning, Creates: 1},
		},
		"CloudSilent": {
			reason: "A cloud that said no wait is waited the backoff's first step (1 s to 2 s with the jitter).",
			err:    rateLimited(0, 0),
			want: end{Queued: []seen{{proxy.PhaseCreating, reconcile.ReasonQueued, "queued: the cloud asked to wait, without saying how long", 0}},
				Phase: proxy.PhaseProvisioning, Creates: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, reconcile.Options{WaitBudget: time.Minute, InitialBackoff: 2 * time.Second, MaxBackoff: 10 * time.Second})
			w.mock.FailNext(mock.MethodCreate, 1, tc.err)
			w.create(proxy.Spec{})
			var got end
			w.store.Watch(func(c storefake.Change) {
				if c.New == nil {
					return
				}
				for _, cond := range c.New.Status.Conditions {
					if cond.Reason == reconcile.ReasonQueued {
						got.Queued = append(got.Queued, seen{c.New.Status.Phase, cond.Reason, cond.Message, c.New.Reconciler.Attempts})
					}
				}
			})
			w.reconcile(reconcile.Trigger{})
			got.Phase = w.doc().Status.Phase
			got.Creates = w.mock.Calls(mock.MethodCreate) - 1 // the refused one reached the mock
			got.Waited = w.clock.slept
			if tc.err != nil && provider.RetryAfter(tc.err) == 0 {
				if len(got.Waited) != 1 || got.Waited[0] < time.Second || got.Waited[0] > 2*time.Second {
					t.Errorf("%s\nwaited %v, want one wait of the backoff's first step", tc.reason, got.Waited)
				}
				got.Waited = nil
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestQueuedReadyStaysReady: a look at a Ready proxy's VM that is queued
// leaves the proxy Ready: it serves, and nothing about it is the user's
// concern.
func TestQueuedReadyStaysReady(t *testing.T) {
	w := newWorld(t, reconcile.Options{})
	w.ready()
	w.mock.FailNext(mock.MethodGet, 1, provider.NewError(provider.KindRateLimited, "get", "", &pacing.Queued{Ahead: 3}))
	w.sweep()
	p := w.doc()
	var reasons []string
	for _, c := range p.Status.Conditions {
		reasons = append(reasons, c.Status+" "+c.Reason)
	}
	if p.Status.Phase != proxy.PhaseReady || p.Status.Message != "" || len(reasons) != 1 || reasons[0][:5] != "True " {
		t.Errorf("after a queued look: phase %s, message %q, conditions %v; want Ready, no message, Ready True", p.Status.Phase, p.Status.Message, reasons)
	}
}

// TestQueuedPastTheBudget: a turn later than the run's wait budget is
// waited out as far as the budget goes before the run hands on, so the
// next run does not ask again at once.
func TestQueuedPastTheBudget(t *testing.T) {
	w := newWorld(t, reconcile.Options{WaitBudget: time.Minute})
	w.mock.FailNext(mock.MethodCreate, 1, rateLimited(0, 90*time.Second))
	w.create(proxy.Spec{})
	w.reconcile(reconcile.Trigger{})
	var total time.Duration
	for _, d := range w.clock.slept {
		total += d
	}
	// The first run waits its minute and hands on; the next run's call
	// is 30 s early (the mock refuses once only, so it goes).
	if p := w.doc(); total < time.Minute || p.Status.Phase != proxy.PhaseProvisioning {
		t.Errorf("waited %v in all (%v), phase %s; want at least the budget's minute before the next call, then Provisioning", total, w.clock.slept, p.Status.Phase)
	}
}

// TestQueuedTurnIsWaitedExactly: the budget's turn is waited for as
// given, however often the call is queued, and grows no backoff: a run
// that came back later than its turn would leave its slot to no one, and
// a burst would end later than its calls need (make bench's burst). The
// turns here are shorter than the backoff's first step.
func TestQueuedTurnIsWaitedExactly(t *testing.T) {
	w := newWorld(t, reconcile.Options{WaitBudget: time.Minute, InitialBackoff: 2 * time.Second, MaxBackoff: 10 * time.Second})
	w.mock.FailNext(mock.MethodCreate, 3, rateLimited(5, 700*time.Millisecond))
	w.create(proxy.Spec{})
	w.reconcile(reconcile.Trigger{})
	type end struct {
		Waited  []time.Duration
		Phase   proxy.Phase
		Creates int
	}
	got := end{w.clock.slept, w.doc().Status.Phase, w.mock.Calls(mock.MethodCreate) - 3}
	want := end{[]time.Duration{700 * time.Millisecond, 700 * time.Millisecond, 700 * time.Millisecond}, proxy.PhaseProvisioning, 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a create queued three times (-want +got):\n%s", diff)
	}
}
