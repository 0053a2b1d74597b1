package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/spend"
)

// next returns a copy of the document to change.
func (run *run) next() *proxy.Proxy {
	c := *run.doc
	c.Status.Conditions = append([]proxy.Condition(nil), run.doc.Status.Conditions...)
	return &c
}

// write stores next's status and bookkeeping if they differ from the
// document's in anything but what rides along (see changed). hold says
// whether the run goes on acting afterwards, and so holds the lease;
// otherwise the write releases it.
func (run *run) write(ctx context.Context, next *proxy.Proxy, hold bool) error {
	return run.writeWith(ctx, next, hold, 0)
}

// writeCounted is the write, holding the lease, that starts a VM: with
// perHour positive it counts the VM against the namespace's bound of
// perHour in the same transaction (Store.UpdateStatusCounted), and past
// the bound writes nothing (an error wrapping proxy.ErrCreatesPerHour).
// Such a write always changes the document (its phase).
func (run *run) writeCounted(ctx context.Context, next *proxy.Proxy, perHour int) error {
	return run.writeWith(ctx, next, true, perHour)
}

// takeLease writes the lease in the document's name of this run, unless
// the run holds it already, before the run acts on a VM it did not decide
// to act on in a write of its own: a document found Replacing (a run cut
// short, a hand-off, the sweep), whose VM is deleted and then made again
// under the same name. Two runs that read the document at once, both past
// an expired lease or both carrying the same hand-off (a duplicated
// message), would otherwise both act: the slower one's Delete, sent after
// the faster one had made the new VM, would delete it where the
// providerID is the name made from the uid (Compute's, Azure's, the
// mock's). The write's update-time precondition lets one of them
// through; the other reads again and finds the lease held.
func (run *run) takeLease(ctx context.Context) error {
	if run.doc.Reconciler.LeaseHolder == run.holder {
		return nil
	}
	return run.write(ctx, run.next(), true)
}

func (run *run) writeWith(ctx context.Context, next *proxy.Proxy, hold bool, perHour int) error {
	now := run.r.clock.Now()
	if hold {
		next.Reconciler.LeaseHolder = run.holder
	} else {
		next.Reconciler.LeaseHolder, next.Reconciler.LeaseExpireTime = "", time.Time{}
	}
	// status.cost rides on a write at most once a Refresh: the cheapest
	// place that sees every proxy's traffic report (observe, on each of
	// the proxy's events and the sweep's), with no read or write of its
	// own but the catalog's price; a document rewritten for a cost that
	// moves by the second would never settle.
	if costs := run.r.opts.Costs; costs.Catalog != nil && next.Pool == "" && spend.Due(next, now) {
		c := costs.Proxy(ctx, next, now)
		next.Status.Cost = &c
	}
	if !changed(run.doc, next) {
		run.doc = next
		return nil
	}
	if hold {
		next.Reconciler.LeaseExpireTime = now.Add(run.r.opts.LeaseDuration)
	}
	if settled(next) {
		next.Reconciler.ProgressTime = time.Time{}
	} else {
		next.Reconciler.ProgressTime = now
	}
	var (
		ut  time.Time
		err error
	)
	if perHour > 0 {
		ut, err = run.r.store.UpdateStatusCounted(ctx, next, now, perHour)
	} else {
		ut, err = run.r.store.UpdateStatus(ctx, next)
	}
	if err != nil {
		return err
	}
	run.writes++
	next.UpdateTime = ut
	run.doc = next
	return nil
}

// settled reports whether a document needs nothing more until something
// changes: its status is settled (Status.Settled), its VM was given the
// document's generation, and no VM of a make-before-break rotation is
// left to retire. Only then is its progress time cleared; the sweep comes
// back to every other, so that a change whose Reconfigure failed, or a
// retiring VM whose Delete was refused, is not left behind by a run cut
// short.
func settled(p *proxy.Proxy) bool {
	return p.Status.Settled() && (p.Status.ProviderID == "" || p.Generation == sentGeneration(p)) && p.Reconciler.Retiring == ""
}

// changed reports whether a write would change what the document says: the
// whole status and bookkeeping are compared, so a field added to either
// counts without anyone listing it here. What rides along with other
// changes but makes none of its own: the retry count, the progress time and
// the lease's expiry — a retry that ends as the last one did costs no
// write.
func changed(old, next *proxy.Proxy) bool {
	a, b := old.Reconciler, next.Reconciler
	for _, r := range []*proxy.Bookkeeping{&a, &b} {
		r.Attempts, r.ProgressTime, r.LeaseExpireTime = 0, time.Time{}, time.Time{}
	}
	return !reflect.DeepEqual(canonical(a), canonical(b)) || !reflect.DeepEqual(canonical(old.Status), canonical(next.Status))
}

// canonical is v with every time.Time in it as UTC to the microsecond,
// the precision Firestore keeps: two times that name the same instant
// compare equal whatever their location or monotonic reading. v is a
// struct of the document's plain data.
func canonical[T any](v T) T {
	normalize(reflect.ValueOf(&v).Elem())
	return v
}

var timeType = reflect.TypeFor[time.Time]()

func normalize(v reflect.Value) {
	switch {
	case v.Type() == timeType:
		t := v.Interface().(time.Time)
		if !t.IsZero() {
			v.Set(reflect.ValueOf(t.UTC().Truncate(time.Microsecond)))
		} else {
			v.Set(reflect.ValueOf(time.Time{}))
		}
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				normalize(v.Field(i))
			}
		}
	case v.Kind() == reflect.Slice:
		if v.IsNil() {
			return
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(c, v)
		for i := range c.Len() {
			normalize(c.Index(i))
		}
		v.Set(c)
	case v.Kind() == reflect.Pointer && !v.IsNil():
		c := reflect.New(v.Type().Elem())
		c.Elem().Set(v.Elem())
		normalize(c.Elem())
		v.Set(c)
	}
}

// providerError classifies a provider error: a permanent one fails the
// proxy with the provider's message; any other is retried after a backoff.
func (run *run) providerError(ctx context.Context, what string, err error) (outcome, error) {
	kind := provider.KindOf(err)
	if kind == provider.KindRateLimited {
		return run.queued(ctx, what, err)
	}
	msg := fmt.Sprintf("%s: %v", what, err)
	if !provider.Retryable(err) {
		return run.fail(ctx, "Provider"+string(kind), msg)
	}
	next := run.next()
	next.Reconciler.Attempts++
	next.Status.Message = msg
	setReady(next, "False", "Provider"+string(kind), msg, run.r.clock.Now())
	run.retryAfter = provider.RetryAfter(err)
	run.log.WarnContext(ctx, "provider call failed; retrying after a backoff", slog.String("kind", string(kind)), slog.Any("error", err))
	if err := run.write(ctx, next, true); err != nil {
		return done, err
	}
	return wait, nil
}

// ReasonQueued is the Ready condition's reason while a provider call
// waits its turn: the account's budget of calls (package pacing) queued
// it, or the cloud refused it for its rate limit.
const ReasonQueued = "Queued"

// queued keeps the proxy where it is while a provider call waits its
// turn, and retries it after the wait it was given. It is no attempt:
// the proxy did nothing wrong, its backoff does not grow and nothing
// counts toward its failure. The user reads the queue (`queued: N calls
// ahead`, the budget's) or the cloud's wait, never a rate-limit error;
// a Ready proxy (a look at its VM queued) stays Ready, as it serves.
func (run *run) queued(ctx context.Context, what string, err error) (outcome, error) {
	msg := QueuedMessage(err)
	next := run.next()
	if next.Status.Phase != proxy.PhaseReady {
		next.Status.Message = msg
		setReady(next, "False", ReasonQueued, msg, run.r.clock.Now())
	}
	run.retryAfter = provider.RetryAfter(err)
	run.turn = queuedByBudget(err) && run.retryAfter > 0
	run.log.InfoContext(ctx, "provider call queued; retrying in its turn", slog.String("call", what), slog.String("queue", msg),
		slog.Duration("retryAfter", run.retryAfter))
	if err := run.write(ctx, next, true); err != nil {
		return done, err
	}
	return wait, nil
}

// queuedByBudget reports whether err is the account's budget's queue
// (pacing.Queued, told by its method), not the cloud's own refusal.
func queuedByBudget(err error) bool {
	var q interface{ QueuedAhead() int }
	return errors.As(err, &q)
}

// QueuedMessage is what a user reads of a rate-limited call: the
// budget's queue, as its error says it, or the cloud's own refusal with
// the wait it asked for.
func QueuedMessage(err error) string {
	var q interface {
		error
		QueuedAhead() int
	}
	if errors.As(err, &q) {
		return q.Error()
	}
	if d := provider.RetryAfter(err); d > 0 {
		if d >= time.Second {
			d = d.Round(time.Second)
		}
		return fmt.Sprintf("queued: the cloud asked to wait %s", d)
	}
	return "queued: the cloud asked to wait, without saying how long"
}
