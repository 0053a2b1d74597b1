package spend

import (
	"context"
	"fmt"
	"time"

	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// The budget's rule, which the API's creates and the simulation's are
// held to alike: a request that adds to a namespace's month is refused
// when the month's forecast with it would exceed the namespace's budget.
//
// The month is its proxies' costs, summed, and what its deleted proxies
// spent (tenancy.Namespace.DeletedSpend). The proxies are read by a
// query outside the create's transaction: inside it, the query would
// read, and so lock, every proxy of the namespace, and every status write
// of the reconciler would contend with every create. The namespace
// document, which the transaction reads anyway, says instead whether
// what the query read still holds: ProxyCreates rises with each create,
// and a month read while it stood at n holds every create up to n. A
// deletion since makes the month read err high, never low (its proxy's
// forecast is more than what it spent, which DeletedSpend, read in the
// transaction, holds), so it needs no reading again; nor does time, as a
// proxy's forecast is its VM's to the month's end and does not grow
// (traffic aside, which no request adds).

// Read is a namespace's proxies' month, read outside a create's
// transaction, and the namespace's ProxyCreates as a transaction read it
// before the query began.
type Read struct {
	Month   pricing.Cost
	Creates int64
}

// Unread is Admit's answer when it needs the namespace's proxies' month
// (none was read, or one was and a create committed since): read it
// (Costs.Month), with Creates as Read's, and try the create again.
type Unread struct{ Creates int64 }

func (e *Unread) Error() string {
	return fmt.Sprintf("the namespace's month is needed, as of its create %d", e.Creates)
}

// OverBudget is Admit's refusal: the forecast with the request over the
// budget.
type OverBudget struct {
	Namespace, Month string
	Forecast, Budget pricing.Money
}

func (e *OverBudget) Error() string {
	return fmt.Sprintf("namespace %q's forecast for %s would be %s, over its monthly budget of %s", e.Namespace, e.Month, e.Forecast, e.Budget)
}

// Admit is the budget's rule, called inside a create's transaction with
// the namespace as the transaction read it and read, the proxies' month
// read outside it (nil when none was yet), for a request whose forecast
// is add: nil when the namespace has no budget or the forecast fits,
// *OverBudget when it does not, *Unread when the month must be read
// (again). A cost that is unknown (no price, no rate) adds nothing: the
// caller may say so.
func Admit(ns *tenancy.Namespace, read *Read, add pricing.Cost) error {
	if ns == nil || ns.Budget == nil {
		return nil
	}
	budget, err := ns.Budget.Amount()
	if err != nil {
		return nil // Validated when set: an old document's, held to nothing.
	}
	if read == nil || read.Creates != ns.ProxyCreates {
		return &Unread{Creates: ns.ProxyCreates}
	}
	month := WithDeleted(read.Month, ns)
	forecast := pricing.Money{Currency: budget.Currency, Nanos: month.Forecast.Nanos + add.Forecast.Nanos}
	if forecast.Nanos <= budget.Nanos {
		return nil
	}
	return &OverBudget{Namespace: ns.Name, Month: month.Month, Forecast: forecast, Budget: budget}
}

// WithDeleted is month with what the namespace's deleted proxies spent in
// it added: spent, so in the month so far and in its forecast alike.
func WithDeleted(month pricing.Cost, ns *tenancy.Namespace) pricing.Cost {
	n := ns.DeletedSpend[month.Month]
	month.MonthToDate.Nanos += n
	month.Forecast.Nanos += n
	return month
}

// Month is the month of now of proxies (a namespace's, as a listing read
// them): each one's cost, summed. What the namespace's deleted proxies
// spent is not in it (WithDeleted).
func (c Costs) Month(ctx context.Context, proxies []*proxy.Proxy, now time.Time) (pricing.Cost, error) {
	month, _, _ := pricing.Month(now)
	costs := make([]pricing.Cost, 0, len(proxies))
	for _, p := range proxies {
		costs = append(costs, c.Proxy(ctx, p, now))
	}
	return pricing.Sum(month, c.Rates.Currency, costs...)
}

// Lister lists a namespace's proxies a page at a time, their secrets left
// sealed: costing them needs none (store.Store.ListSealed).
type Lister interface {
	ListSealed(ctx context.Context, namespace string, pageSize int, pageToken string) ([]*proxy.Proxy, string, error)
}

// listPage is how many proxies one page of NamespaceMonth's listing reads.
const listPage = 500

// NamespaceMonth is ns's month as of now, as the namespace's GET shows it:
// its proxies, listed with l, costed and summed, and what its deleted
// proxies spent in it (WithDeleted). The collector's budget alerts and
// its stops at the budget both hold this figure to the budget; it returns
// the proxies it listed too.
func (c Costs) NamespaceMonth(ctx context.Context, l Lister, ns *tenancy.Namespace, now time.Time) ([]*proxy.Proxy, pricing.Cost, error) {
	var proxies []*proxy.Proxy
	for token := ""; ; {
		page, next, err := l.ListSealed(ctx, ns.Name, listPage, token)
		if err != nil {
			return nil, pricing.Cost{}, fmt.Errorf("listing the proxies of namespace %s: %w", ns.Name, err)
		}
		proxies = append(proxies, page...)
		if next == "" {
			break
		}
		token = next
	}
	month, err := c.Month(ctx, proxies, now)
	if err != nil {
		return nil, pricing.Cost{}, fmt.Errorf("the month of namespace %s: %w", ns.Name, err)
	}
	return proxies, WithDeleted(month, ns), nil
}
