package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/spend"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// ReasonBudgetExceeded: the request's forecast would take its namespace's
// month over the namespace's budget.
const ReasonBudgetExceeded = "BUDGET_EXCEEDED"

// ReasonBudgetInvalid: a PATCH's budget is not an amount in the
// deployment's currency, or names no known atBudget.
const ReasonBudgetInvalid = "BUDGET_INVALID"

// budgetReads is how often a create reads its namespace's month before
// it gives up: each read is outdated by a create of the namespace that
// committed since (spend.Admit), so only a burst of creates in one
// namespace needs a second.
const budgetReads = 5

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
	var proxies []*proxy.Proxy
	token := ""
	for {
		page, next, err := a.store.List(ctx, namespace, MaxPageSize, token)
		if err != nil {
			return pricing.Cost{}, false, err
		}
		for _, p := range page {
			found = found || p.Name == name
		}
		proxies = append(proxies, page...)
		if next == "" {
			break
		}
		token = next
	}
	sum, err := a.opts.Costs.Month(ctx, proxies, a.now())
	return sum, found, err
}

// budgetHolds is whether the namespace's budget, if it has one, is held
// by this process: it has a price catalog to cost proxies from.
func (a *API) budgetHolds(ns *tenancy.Namespace) bool {
	return ns != nil && ns.Budget != nil && a.opts.Costs.Catalog != nil
}

// overBudget is spend.Admit's answer for a request that adds add to the
// namespace's month as read: an *apiError when the forecast would exceed
// the budget (429 BUDGET_EXCEEDED), *spend.Unread when the month is to be
// read (again), nil when it fits. A cost that is unknown (no price, no
// rate) adds nothing it cannot name: the log says so.
func (a *API) overBudget(ctx context.Context, ns *tenancy.Namespace, read *spend.Read, add pricing.Cost, what string) error {
	err := spend.Admit(ns, read, add)
	var over *spend.OverBudget
	if !errors.As(err, &over) {
		if err == nil && read != nil && (add.Unknown != "" || read.Month.Unknown != "") {
			a.log.WarnContext(ctx, "budget: a cost is unknown and not counted", slog.String("namespace", ns.Name),
				slog.String("unknown", add.Unknown+read.Month.Unknown))
		}
		return err
	}
	e := newError(http.StatusTooManyRequests, ReasonBudgetExceeded,
		"namespace %q's forecast for %s would be %s with %s, over its monthly budget of %s; delete a proxy, or ask a platform admin for a larger budget",
		ns.Name, over.Month, over.Forecast, what, over.Budget)
	e.metadata = map[string]string{"namespace": ns.Name, "month": over.Month, "forecast": over.Forecast.String(), "budget": over.Budget.String()}
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
	m = spend.WithDeleted(m, ns)
	return &m, nil
}
