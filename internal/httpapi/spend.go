package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// ReasonBudgetExceeded: the request's forecast would take its namespace's
// month over the namespace's budget.
const ReasonBudgetExceeded = "BUDGET_EXCEEDED"

// ReasonBudgetInvalid: a PATCH's budget is not an amount in the
// deployment's currency, or names no known atBudget.
const ReasonBudgetInvalid = "BUDGET_INVALID"

// errBudgetUnread stops a create's transaction when the namespace has a
// budget and its proxies' month was not read yet: it is read outside the
// transaction (a query of the namespace's proxies) and the create tried
// again with it.
var errBudgetUnread = errors.New("the namespace's month is needed")

// proxiesMonth is the month, as of now, of the namespace's proxies as
// they are stored: each one's cost from the catalog, summed. What its
// deleted proxies spent (tenancy.Namespace.DeletedSpend) is not in it.
func (a *API) proxiesMonth(ctx context.Context, namespace string) (pricing.Cost, error) {
	m, _, err := a.proxiesMonthBut(ctx, namespace, "")
	return m, err
}

// proxiesMonthBut is proxiesMonth, and whether a proxy named name is
// among them: a create repeated for it makes nothing, so no budget
// refuses it (the store answers with the proxy).
func (a *API) proxiesMonthBut(ctx context.Context, namespace, name string) (pricing.Cost, bool, error) {
	found := false
	now := a.now()
	month, _, _ := pricing.Month(now)
	var costs []pricing.Cost
	token := ""
	for {
		page, next, err := a.store.List(ctx, namespace, MaxPageSize, token)
		if err != nil {
			return pricing.Cost{}, false, err
		}
		for _, p := range page {
			found = found || p.Name == name
			costs = append(costs, a.opts.Costs.Proxy(ctx, p, now))
		}
		if next == "" {
			break
		}
		token = next
	}
	sum, err := pricing.Sum(month, a.opts.Costs.Rates.Currency, costs...)
	return sum, found, err
}

// withDeleted is month with what the namespace's deleted proxies spent in
// it added: spent, so in the month so far and in its forecast alike.
func withDeleted(month pricing.Cost, ns *tenancy.Namespace) pricing.Cost {
	n := ns.DeletedSpend[month.Month]
	month.MonthToDate.Nanos += n
	month.Forecast.Nanos += n
	return month
}

// budgetHolds is whether the namespace's budget, if it has one, is held
// by this process: it has a price catalog to cost proxies from.
func (a *API) budgetHolds(ns *tenancy.Namespace) bool {
	return ns != nil && ns.Budget != nil && a.opts.Costs.Catalog != nil
}

// overBudget is the refusal of a request that adds add to the namespace's
// month (its proxies' and its deleted proxies'), when the forecast would
// exceed its budget; nil when it fits. A cost that is unknown (no price,
// no rate) adds nothing it cannot name: the log says so.
func (a *API) overBudget(ctx context.Context, ns *tenancy.Namespace, month, add pricing.Cost, what string) *apiError {
	budget, err := ns.Budget.Amount()
	if err != nil {
		return nil // Validated when set: an old document's, held to nothing.
	}
	forecast := pricing.Money{Currency: budget.Currency, Nanos: month.Forecast.Nanos + add.Forecast.Nanos}
	if add.Unknown != "" || month.Unknown != "" {
		a.log.WarnContext(ctx, "budget: a cost is unknown and not counted", slog.String("namespace", ns.Name),
			slog.String("unknown", add.Unknown+month.Unknown))
	}
	if forecast.Nanos <= budget.Nanos {
		return nil
	}
	e := newError(http.StatusTooManyRequests, ReasonBudgetExceeded,
		"namespace %q's forecast for %s would be %s with %s, over its monthly budget of %s; delete a proxy, or ask a platform admin for a larger budget",
		ns.Name, month.Month, forecast, what, budget)
	e.metadata = map[string]string{"namespace": ns.Name, "month": month.Month, "forecast": forecast.String(), "budget": budget.String()}
	return e
}

// newProxyCost is what p, created now, is forecast to cost in the month.
func (a *API) newProxyCost(ctx context.Context, p *proxy.Proxy) pricing.Cost {
	return a.opts.Costs.Proxy(ctx, p, a.now())
}

// budgetFields checks a PATCH's budget against the deployment's currency.
func (a *API) budgetFields(b *tenancy.Budget) proxy.FieldErrors {
	if b == nil {
		return nil
	}
	var errs proxy.FieldErrors
	for _, d := range b.Validate(a.opts.Costs.Rates.Currency) {
		errs = append(errs, proxy.FieldError{Field: "budget", Reason: ReasonBudgetInvalid, Description: d})
	}
	return errs
}

// monthOf is the namespace's month as GET shows it: nil where the process
// costs nothing (no catalog).
func (a *API) monthOf(ctx context.Context, ns *tenancy.Namespace) (*pricing.Cost, error) {
	if a.opts.Costs.Catalog == nil {
		return nil, nil
	}
	m, err := a.proxiesMonth(ctx, ns.Name)
	if err != nil {
		return nil, fmt.Errorf("the month of namespace %s: %w", ns.Name, err)
	}
	m = withDeleted(m, ns)
	return &m, nil
}
