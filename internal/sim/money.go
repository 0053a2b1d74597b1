package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/spend"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// The namespace's budget in money and its invariant: after any request
// it accepted, the namespace's month as the store records it (its
// proxies' forecasts, costed from the mock's price list, and what its
// deleted proxies spent) does not exceed its budget.
//
// A schedule's namespace has the budget one time in budgetedOneIn, drawn
// from a stream of its own: the budget refuses creates, and the races add
// proxies, which change what the scheduler draws for the rest of the
// schedule; the other schedules play as they did before the budget, so
// the planted bugs found in them stay where they were found (at 492 and
// 395 the rarest, which a budget in every schedule moved).
//
// The world's creates are held to it as the API's are: the month is read
// by a listing outside the create's transaction, and the transaction
// admits the create by spend.Admit, the API's own rule, against the
// namespace document it read. A third of the creates race another: a
// second user's create of another name commits between the first's
// listing and its transaction, as two API instances serving two requests
// at once would. BudgetReadOutsideTransaction takes the month read for
// the transaction's, whatever committed since, and the race then takes
// the namespace over.

// budgetMonthly is the sim namespace's budget: a mock proxy made at the
// schedule's start is forecast 10.80 USD for the month (720 hours of a
// VM and an address at 0.015 USD an hour), so two fit and a third does
// not. Proxies on the other clouds are costed unknown (the catalog holds
// the mock's prices only) and add nothing, as the API counts them.
const budgetMonthly = "25.00"

// budgetedOneIn: one schedule in budgetedOneIn has the budget.
const budgetedOneIn = 3

// budgetReads is how often a create reads the month before it gives up,
// as the API's.
const budgetReads = 5

// simCosts costs proxies at the mock's fixed prices, in their currency.
func simCosts() spend.Costs {
	keys := []pricing.Key{{Provider: mock.Type, Region: "us-central1"}}
	prices, errs, err := mock.Prices{}.Prices(context.Background(), keys)
	if err = errors.Join(append(errs, err)...); err != nil {
		panic(fmt.Sprintf("sim: the mock's prices: %v", err))
	}
	return spend.Costs{Catalog: spend.StaticCatalog{keys[0]: prices[0]}, Rates: pricing.Rates{Currency: mock.PriceVMPerHour.Currency}}
}

// simBudget is the budget the sim namespace is made with.
func simBudget() *tenancy.Budget {
	return &tenancy.Budget{Monthly: budgetMonthly, Currency: mock.PriceVMPerHour.Currency}
}

// create is a user's create of p, as the API makes it: held to limits
// and, in the same transaction, to the namespace's budget against its
// month read outside it. between, when set, runs once between the first
// listing and the transaction it is read for: another user's request.
func (w *World) create(ctx context.Context, p *proxy.Proxy, between func()) error {
	var read *spend.Read
	add := w.costs.Proxy(ctx, p, w.clock.Now())
	admit := func(ns *tenancy.Namespace) (tenancy.Limits, error) {
		if w.bug == BudgetReadOutsideTransaction && read != nil {
			// The month read is taken for the transaction's own.
			read.Creates = ns.ProxyCreates
		}
		return limits, spend.Admit(ns, read, add)
	}
	_, err := w.store.CreateInNamespace(ctx, p, admit)
	var unread *spend.Unread
	for reads := 0; errors.As(err, &unread) && reads < budgetReads; reads++ {
		month, merr := w.proxiesMonth(ctx)
		if merr != nil {
			return merr
		}
		read = &spend.Read{Month: month, Creates: unread.Creates}
		if between != nil {
			w.stats.BudgetRaces++
			between()
			between = nil
		}
		_, err = w.store.CreateInNamespace(ctx, p, admit)
	}
	var over *spend.OverBudget
	switch {
	case err == nil:
		w.checkMonth(ctx, "the create of "+p.Name)
	case errors.As(err, &over):
		w.stats.BudgetRefused++
	}
	return err
}

// proxiesMonth is the month of the namespace's proxies as the store lists
// them now.
func (w *World) proxiesMonth(ctx context.Context) (pricing.Cost, error) {
	var all []*proxy.Proxy
	token := ""
	for {
		page, next, err := w.store.List(ctx, namespace, 100, token)
		if err != nil {
			return pricing.Cost{}, err
		}
		all = append(all, page...)
		if token = next; token == "" {
			break
		}
	}
	return w.costs.Month(ctx, all, w.clock.Now())
}

// checkMonth states the invariant after an accepted request: the month's
// forecast the store records is within the namespace's budget.
func (w *World) checkMonth(ctx context.Context, after string) {
	if !w.budgeted {
		return
	}
	ns, err := w.store.GetNamespace(ctx, namespace)
	if err != nil {
		w.violation("namespace %s unread after %s: %v", namespace, after, err)
		return
	}
	month, err := w.proxiesMonth(ctx)
	if err != nil {
		w.violation("namespace %s's month unread after %s: %v", namespace, after, err)
		return
	}
	budget, err := ns.Budget.Amount()
	if err != nil {
		w.violation("namespace %s's budget %v: %v", namespace, ns.Budget, err)
		return
	}
	if f := spend.WithDeleted(month, ns).Forecast; f.Nanos > budget.Nanos {
		w.violation("namespace %s's forecast for %s is %s after %s at %s, over its budget of %s", namespace, month.Month, f, after,
			w.clock.Now().Format(time.TimeOnly), budget)
	}
}

// racer is, for a create of name, another user's create of another absent
// name that races it (a mock proxy, which the budget costs), or nil when
// the draw says none or every other name is taken. Its draws are the
// money stream's, so that the races leave the other draws as they were.
func (w *World) racer(ctx context.Context, name string) func() {
	if !w.budgeted || w.money.IntN(3) != 0 {
		return nil
	}
	for _, other := range names {
		if other == name {
			continue
		}
		if _, err := w.store.Get(ctx, proxy.Key{Namespace: namespace, Name: other}); !errors.Is(err, proxy.ErrNotFound) {
			continue
		}
		uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", w.money.Uint32(), w.money.Uint64()&0xffffffffffff)
		return func() {
			w.uids[other] = append(w.uids[other], uid)
			now := w.clock.Now()
			spec := proxy.Spec{Provider: mock.Type, Port: proxy.DefaultPort, AllowedSourceRanges: []string{"203.0.113.0/24"},
				IPPolicy: proxy.IPEphemeral, Placement: proxy.Placement{Region: "us-central1"}}
			switch err := w.create(ctx, &proxy.Proxy{
				Namespace: namespace, Name: other, UID: uid, Generation: 1, Spec: spec,
				Status:     proxy.Status{Phase: proxy.PhasePending},
				CreateTime: now, Reconciler: proxy.Bookkeeping{ProgressTime: now},
			}, nil); {
			case err == nil:
				w.caused(uid, "create")
			case errors.Is(err, proxy.ErrCreatesPerHour):
				w.stats.Refused429++
			}
		}
	}
	return nil
}
