package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/egress-proxies/egress/internal/proxy"
)

// sleep waits the next backoff and reports whether the budget allowed it.
// A run waits only for what takes seconds — a VM on its way out, a provider
// call to retry — never for a boot. A cloud that said how long to wait (a
// rate limit's reset) is waited for at least that long: an earlier call
// would only be refused again, and spend the limit further. A turn the
// account's budget gave (its queue's RetryAfter, spread by the budget
// already) is waited for exactly, and grows no backoff: the call is no
// failure, and a run that came back later than its turn would leave its
// slot to no one and the burst's end later.
func (run *run) sleep(ctx context.Context) bool {
	d := backoff(run.r.opts.InitialBackoff, run.r.opts.MaxBackoff, run.waits+int(run.doc.Reconciler.Attempts), run.r.jitter.float())
	if run.poll > 0 {
		// Asking a booting VM is no retry of a failure: at its interval.
		d = run.poll
	}
	asked, turn := run.retryAfter, run.turn
	d, run.retryAfter, run.turn = max(d, asked), 0, false
	if turn {
		d = asked
	}
	if left := run.deadline.Sub(run.r.clock.Now()); d > left {
		if asked > left && left > 0 {
			// A turn past the budget (a queue, a cloud's reset): the
			// run waits out what it may of it before handing on, so
			// that the next run does not ask again at once, and again,
			// each asking the budget or the cloud for nothing.
			_ = run.r.clock.Sleep(ctx, left)
		}
		return false
	}
	if !turn {
		run.waits++
	}
	if err := run.r.clock.Sleep(ctx, d); err != nil {
		return false
	}
	// Look at the document again only through the provider: the next
	// write's precondition tells if it changed meanwhile.
	return true
}

// handOff asks for the next run to take over when the wait budget is spent.
func (run *run) handOff(ctx context.Context) error {
	msg := proxy.ReconcileMessage{Document: run.key.Path(), Reason: proxy.ReasonRequeue}
	if run.doc != nil && run.doc.Reconciler.LeaseHolder == run.holder {
		msg.Lease = run.holder
	}
	if err := run.r.requeuer.Publish(context.WithoutCancel(ctx), msg); err != nil {
		// Without the message nothing would wake the document before the
		// sweep; releasing the lease lets the event of that write do it.
		run.log.WarnContext(ctx, "cannot requeue; releasing the lease instead", slog.Any("error", err))
		if run.doc != nil && run.doc.Reconciler.LeaseHolder == run.holder {
			next := run.next()
			if werr := run.write(context.WithoutCancel(ctx), next, false); werr != nil && !errors.Is(werr, proxy.ErrConflict) {
				return fmt.Errorf("requeueing %s: %w; releasing its lease: %w", run.key, err, werr)
			}
		}
		return nil
	}
	run.log.InfoContext(ctx, "wait budget spent; handed on to the next run", slog.Int("waits", run.waits))
	return nil
}

// backoff is the capped exponential backoff with "equal jitter": half the
// step fixed, half random, so waits never collapse to zero and concurrent
// documents spread out.
func backoff(initial, max time.Duration, attempt int, jitter float64) time.Duration {
	d := initial
	for range attempt {
		if d >= max/2 {
			d = max
			break
		}
		d *= 2
	}
	d = min(d, max)
	return d/2 + time.Duration(jitter*float64(d/2))
}

// lockedRand shares one seeded source between concurrent runs.
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (l *lockedRand) float() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Float64()
}

func (l *lockedRand) uint64() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Uint64()
}
