// Package budgetalert tells when a namespace's month crosses 80% and 100%
// of its budget: on a collector's tick it sums each budgeted namespace's
// month (its proxies' costs from the price catalog and what its deleted
// proxies spent), and logs one line (Message) for each threshold the
// month to date has reached and nobody was told of yet, which a
// log-based metric counts and an alert policy per threshold pages on
// (deploy/terraform: budget_thresholds).
//
// What crosses is the month to date, the money already spent: the
// forecast is what a request is refused on (BUDGET_EXCEEDED), so with
// the default refuseNew it stays within the budget, and an alert on it
// would tell of a month that may never be spent. The line carries the
// forecast beside it.
//
// Each threshold is told once a month: the thresholds told are recorded
// on the namespace document (budgetAlerts: month, budget, notified) in
// the transaction that decides them, so two ticks at once, or a tick
// delivered again, tell nothing twice; a new month, or a budget an admin
// changes, starts afresh. The collector's tick rather than the
// reconciler's status write, because only a sum over the namespace can
// cross, and the tick already runs once every few minutes whatever
// happens; a namespace is summed at most once an Interval (its proxy
// documents read), and not at all once both thresholds were told this
// month.
package budgetalert

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/spend"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// Message is the line logged for each threshold reached, which the
// log-based metric egress/budget_thresholds counts.
const Message = "budget threshold reached"

// Thresholds are the percents of a budget that are told, lowest first.
var Thresholds = []int{80, 100}

// Interval is how often a namespace's month is summed: its proxies'
// costs move by the hour (spend.Refresh), and each sum reads every one
// of its proxy documents.
const Interval = spend.Refresh

// Reached are the thresholds that spent (nanos) has reached of budget
// (nanos) and that rec has not told for month and budgetName: all it
// has reached when rec is of another month or budget. A budget of zero
// or less is reached by nothing (it refuses every request instead).
func Reached(rec *tenancy.BudgetAlerts, month, budgetName string, spent, budget int64) []int {
	var told []int
	if rec != nil && rec.Month == month && rec.Budget == budgetName {
		told = rec.Notified
	}
	var out []int
	for _, t := range Thresholds {
		// spent/budget ≥ t/100, in integers: no float rounds a cent.
		if budget > 0 && spent >= 0 && spent*100 >= budget*int64(t) && !slices.Contains(told, t) {
			out = append(out, t)
		}
	}
	return out
}

// Store is what the checker reads and writes: a namespace's proxies, and
// its update in a transaction.
type Store interface {
	// ListSealed: the month needs no proxy's secret.
	ListSealed(ctx context.Context, namespace string, pageSize int, pageToken string) ([]*proxy.Proxy, string, error)
	UpdateNamespace(ctx context.Context, name string, update func(*tenancy.Namespace) error) (*tenancy.Namespace, error)
}

// Checker sums the budgeted namespaces' months and tells the thresholds
// reached.
type Checker struct {
	Store Store
	Costs spend.Costs
	Log   *slog.Logger
}

// errNothing aborts an update that has nothing to write.
var errNothing = errors.New("nothing to record")

// Run checks the budgeted namespaces of namespaces (every one:
// tenancy.All) at now, and returns how many lines it logged. A namespace that cannot be summed or recorded is logged and
// skipped: the next tick tries again.
func (c Checker) Run(ctx context.Context, namespaces []*tenancy.Namespace, now time.Time) int {
	if c.Costs.Catalog == nil {
		return 0 // No price catalog: no month to hold to a budget.
	}
	month, _, _ := pricing.Month(now)
	told := 0
	for _, ns := range namespaces {
		n, err := c.check(ctx, ns, month, now)
		told += n
		if err != nil {
			c.Log.WarnContext(ctx, "budget alerts: a namespace's month could not be checked; the next tick tries again",
				slog.String("namespace", ns.Name), slog.Any("error", err))
		}
	}
	return told
}

// check sums ns's month when it is due, and records and tells the
// thresholds reached.
func (c Checker) check(ctx context.Context, ns *tenancy.Namespace, month string, now time.Time) (int, error) {
	if ns.Budget == nil {
		return 0, nil
	}
	budget, err := ns.Budget.Amount()
	if err != nil {
		return 0, nil // Validated when set: an old document's, held to nothing.
	}
	rec := ns.BudgetAlerts
	if rec != nil && rec.Month == month && rec.Budget == budget.String() &&
		(len(Reached(rec, month, rec.Budget, budget.Nanos, budget.Nanos)) == 0 || now.Sub(rec.CheckedAt) < Interval) {
		// Every threshold told this month (what the whole budget would
		// reach, none is left), or the month summed within the Interval.
		return 0, nil
	}
	_, sum, err := c.Costs.NamespaceMonth(ctx, c.Store, ns, now)
	if err != nil {
		return 0, err
	}
	var reached []int
	var at pricing.Money
	_, err = c.Store.UpdateNamespace(ctx, ns.Name, func(cur *tenancy.Namespace) error {
		reached = nil
		if cur == nil || cur.Budget == nil {
			return errNothing
		}
		if at, err = cur.Budget.Amount(); err != nil {
			return errNothing
		}
		// Decided on the document as this transaction reads it: a
		// threshold another tick recorded meanwhile is not told again.
		reached = Reached(cur.BudgetAlerts, month, at.String(), sum.MonthToDate.Nanos, at.Nanos)
		next := &tenancy.BudgetAlerts{Month: month, Budget: at.String(), CheckedAt: now}
		if old := cur.BudgetAlerts; old != nil && old.Month == month && old.Budget == next.Budget {
			next.Notified = slices.Clone(old.Notified)
		}
		next.Notified = append(next.Notified, reached...)
		cur.BudgetAlerts = next
		return nil
	})
	if errors.Is(err, errNothing) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("recording the budget alerts told: %w", err)
	}
	for _, t := range reached {
		c.Log.WarnContext(ctx, Message, slog.String("namespace", ns.Name), slog.String("month", month),
			slog.String("threshold", strconv.Itoa(t)), slog.String("monthToDate", sum.MonthToDate.String()),
			slog.String("forecast", sum.Forecast.String()), slog.String("budget", at.String()),
			slog.String("atBudget", string(ns.Budget.At())), slog.String("unknown", sum.Unknown),
			slog.Any("owners", owners(ns)))
	}
	return len(reached), nil
}

// owners are the namespace's owners by email: whom the operator tells.
func owners(ns *tenancy.Namespace) []string {
	var out []string
	for _, e := range ns.MemberEmails {
		if ns.Members[e] == tenancy.Owner {
			out = append(out, e)
		}
	}
	return out
}
