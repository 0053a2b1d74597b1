// Package budgetstop is the collector's tick's look at the namespaces
// whose budget stops traffic at it (tenancy.StopTraffic): it computes
// each one's month so far (its proxies' costs, as package spend computes
// them, and what its deleted proxies spent: the figure the API shows),
// decides with tenancy.StopFor, writes the decision on the namespace
// (tenancy.Namespace.TrafficStopped) when it changed, and asks each of the
// namespace's proxies for a reconcile (proxy.ReasonTrafficStop), whose run
// hands the VM the stop, or its end, without replacing it
// (internal/reconcile, stop.go).
//
// The tick asks those proxies at every tick while the namespace has such
// a budget or a record, not only when the record changes: a run that
// could not reach its VM (it did not answer, a change was pending) is
// asked again minutes later, and a run with nothing to hand over costs
// two reads. The record is cleared when the month turns (the engines
// let a stop of a past month lapse by themselves, at 00:00 UTC on the
// first), when the budget is raised above the month so far, or when the
// budget no longer stops traffic; the tick that clears it asks the
// proxies once more, so their VMs carry again.
//
// The package is pure logic: it sees the store, the reconcile queue and
// the clock through narrow interfaces, and prices only through
// spend.Costs.
package budgetstop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/spend"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// Store is the part of the document store the look reads and writes.
// *store.Store and *storefake.Store satisfy it.
type Store interface {
	// ListSealed lists a namespace's proxies, a page at a time, their
	// secrets sealed: the month needs none.
	ListSealed(ctx context.Context, namespace string, pageSize int, pageToken string) ([]*proxy.Proxy, string, error)
	// UpdateNamespace changes a namespace in a transaction.
	UpdateNamespace(ctx context.Context, name string, update func(*tenancy.Namespace) error) (*tenancy.Namespace, error)
}

// Requeuer asks for a proxy's reconcile. *queue.Publisher satisfies it.
type Requeuer interface {
	Publish(ctx context.Context, msg proxy.ReconcileMessage) error
}

// Look is the tick's look at the budgets that stop traffic.
type Look struct {
	Store    Store
	Requeuer Requeuer
	Costs    spend.Costs
	Log      *slog.Logger
}

// Summary is what one look did.
type Summary struct {
	// Watched are the namespaces with a budget that stops traffic, or a
	// record of a stop; Stopped, those stopped after the look.
	Watched, Stopped int
	// Changed are the records written (set, moved or cleared).
	Changed int
	// Asked are the proxies asked for a run; Failed the namespaces whose
	// month, record or requests failed (logged; the next tick tries).
	Asked, Failed int
}

// Run looks once, at now, at namespaces (every one: tenancy.All). Its
// error is that the look has no price catalog; a namespace's failure is
// logged and counted, and the others go on.
func (l *Look) Run(ctx context.Context, namespaces []*tenancy.Namespace, now time.Time) (Summary, error) {
	var s Summary
	if l.Costs.Catalog == nil {
		// No cost is known, so none reaches a budget; a record written
		// before stays until a process that costs looks.
		return s, errors.New("budgetstop: no price catalog: no namespace's month is known")
	}
	month, _, _ := pricing.Month(now)
	for _, ns := range namespaces {
		if !watched(ns) {
			continue
		}
		s.Watched++
		stopped, changed, asked, err := l.namespace(ctx, ns, month, now)
		s.Asked += asked
		if changed {
			s.Changed++
		}
		if stopped {
			s.Stopped++
		}
		if err != nil {
			s.Failed++
			l.Log.WarnContext(ctx, "budget stop: namespace not looked at; the next tick tries again", slog.String("namespace", ns.Name), slog.Any("error", err))
		}
	}
	l.Log.InfoContext(ctx, "budget stop summary", slog.Int("watched", s.Watched), slog.Int("stopped", s.Stopped), slog.Int("changed", s.Changed),
		slog.Int("asked", s.Asked), slog.Int("failed", s.Failed))
	return s, nil
}

// watched reports whether the look is about ns: its budget stops traffic,
// or it has a record to clear.
func watched(ns *tenancy.Namespace) bool {
	return ns.TrafficStopped != nil || (ns.Budget != nil && ns.Budget.At() == tenancy.StopTraffic)
}

// namespace decides for one namespace, writes its record when it
// changed, and asks its proxies for a run.
func (l *Look) namespace(ctx context.Context, ns *tenancy.Namespace, month string, now time.Time) (stopped, changed bool, asked int, err error) {
	proxies, m, err := l.Costs.NamespaceMonth(ctx, l.Store, ns, now)
	if err != nil {
		return ns.TrafficStopped != nil, false, 0, err
	}
	toDate := m.MonthToDate
	want := tenancy.StopFor(ns.Budget, month, toDate)
	if !sameMonth(want, ns.TrafficStopped) {
		if _, err := l.Store.UpdateNamespace(ctx, ns.Name, func(cur *tenancy.Namespace) error {
			if cur == nil {
				return tenancy.ErrNamespaceNotFound
			}
			cur.TrafficStopped = want
			return nil
		}); err != nil {
			return ns.TrafficStopped != nil, false, 0, fmt.Errorf("writing the record of the stop: %w", err)
		}
		changed = true
		if want != nil {
			l.Log.WarnContext(ctx, "budget reached: the namespace's traffic stops", slog.String("namespace", ns.Name), slog.String("month", month),
				slog.String("monthToDate", toDate.String()), slog.String("reason", want.Reason))
		} else {
			l.Log.InfoContext(ctx, "the namespace's traffic is carried again", slog.String("namespace", ns.Name), slog.String("month", month),
				slog.String("monthToDate", toDate.String()))
		}
	}
	if want == nil && !changed {
		// Nothing stopped and nothing lifted: no run has anything to do.
		return false, false, 0, nil
	}
	for _, p := range proxies {
		if p.DeleteRequestTime != nil {
			continue
		}
		if err := l.Requeuer.Publish(ctx, proxy.ReconcileMessage{Document: p.Key().Path(), Reason: proxy.ReasonTrafficStop}); err != nil {
			return want != nil, changed, asked, fmt.Errorf("asking %s for a run: %w", p.Key().Path(), err)
		}
		asked++
	}
	return want != nil, changed, asked, nil
}

// sameMonth reports whether two records stop the same month, or both
// none: a reason that reads differently (the month so far grew) is no
// new record.
func sameMonth(a, b *tenancy.TrafficStopped) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Month == b.Month
}
