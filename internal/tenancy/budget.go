package tenancy

import (
	"fmt"
	"time"

	"github.com/egress-proxies/egress/internal/pricing"
)

// AtBudget is what a namespace's proxies do once its month's cost reaches
// its budget.
type AtBudget string

const (
	// RefuseNew, the default: what would take the month's forecast over
	// the budget (a create, a PATCH, a claim) is refused; the proxies
	// carry on.
	RefuseNew AtBudget = "refuseNew"
	// StopTraffic: RefuseNew, and once the month's cost reaches the
	// budget the proxies carry no new connection until the month turns or
	// the budget is raised; their VMs stay, so nothing is lost.
	StopTraffic AtBudget = "stopTraffic"
)

// Budget is a namespace's monthly amount, which a platform admin gives
// it: the month's forecast (its proxies' and what its deleted proxies
// spent in the month) may not exceed it.
type Budget struct {
	// Monthly is the amount, a decimal ("200.00"), in Currency, which is
	// the deployment's (COST_CURRENCY): costs are held to it without a
	// conversion of their own.
	Monthly  string   `json:"monthly" firestore:"monthly"`
	Currency string   `json:"currency" firestore:"currency"`
	AtBudget AtBudget `json:"atBudget,omitempty" firestore:"atBudget,omitempty"`
}

// Amount is the budget as Money.
func (b Budget) Amount() (pricing.Money, error) { return pricing.ParseMoney(b.Monthly, b.Currency) }

// At is what happens at the budget, RefuseNew when unsaid.
func (b Budget) At() AtBudget {
	if b.AtBudget == "" {
		return RefuseNew
	}
	return b.AtBudget
}

// Validate holds a budget to its form: a positive amount in currency (the
// deployment's), and a known AtBudget. Each error names the field and the
// rule.
func (b Budget) Validate(currency string) []string {
	var errs []string
	if m, err := b.Amount(); err != nil || m.Nanos <= 0 {
		errs = append(errs, fmt.Sprintf("monthly: %q %s is not a positive amount of money such as \"200.00\" in an ISO 4217 currency", b.Monthly, b.Currency))
	}
	if b.Currency != currency {
		errs = append(errs, fmt.Sprintf("currency: %q is not the deployment's cost currency %s (COST_CURRENCY), which every cost is held in", b.Currency, currency))
	}
	switch b.AtBudget {
	case "", RefuseNew:
	case StopTraffic:
		// Enforced by the engines: the collector's tick records the stop
		// (StopFor) and the reconciler hands it to each VM in place
		// (internal/budgetstop, internal/reconcile's stop.go).
	default:
		errs = append(errs, fmt.Sprintf("atBudget: %q is neither %s nor %s", b.AtBudget, RefuseNew, StopTraffic))
	}
	return errs
}

// BudgetAlerts is what the collector told of a namespace's month against
// its budget (package budgetalert): the thresholds it logged for Month at
// Budget, so that each is told once a month, and when it last summed the
// month. Apart from the budget and from what enforces it: only the
// collector writes it.
type BudgetAlerts struct {
	// Month ("2006-01") and Budget ("200.00 EUR") are what Notified is
	// of: another month, or a budget an admin changed, starts afresh.
	Month  string `firestore:"month"`
	Budget string `firestore:"budget"`
	// Notified are the thresholds (percent of the budget) logged, in
	// the order they were.
	Notified []int `firestore:"notified,omitempty"`
	// CheckedAt is when the collector last summed the month.
	CheckedAt time.Time `firestore:"checkedAt"`
}

// TrafficStopped is a namespace's traffic stopped at its budget for the
// rest of a month (Namespace.TrafficStopped).
type TrafficStopped struct {
	// Month is the month stopped, UTC, "2006-01": the stop holds in it
	// alone, so the month's turn lifts it on every VM by itself.
	Month string `json:"month" firestore:"month"`
	// Reason says why, naming the month-to-date and the budget: what the
	// namespace's owners read, and the engines log.
	Reason string `json:"reason" firestore:"reason"`
}

// StopFor is whether a namespace with budget b, whose month so far is
// monthToDate (its proxies' and its deleted proxies', in month, a
// "2006-01"), has its traffic stopped: b stops traffic at the budget
// (StopTraffic) and monthToDate reached it. Nil: it carries. It is the
// month so far that counts, not the forecast: traffic stops when the
// money is spent, not when it is foreseen to be (a forecast over the
// budget is what RefuseNew refuses, for every budget). A budget without
// an amount it can read (an old document's) stops nothing.
func StopFor(b *Budget, month string, monthToDate pricing.Money) *TrafficStopped {
	if b == nil || b.At() != StopTraffic {
		return nil
	}
	amount, err := b.Amount()
	if err != nil || amount.Nanos <= 0 || monthToDate.Nanos < amount.Nanos {
		return nil
	}
	return &TrafficStopped{Month: month, Reason: fmt.Sprintf("the namespace's month %s is %s so far, at its monthly budget of %s, which stops traffic there",
		month, pricing.Money{Currency: amount.Currency, Nanos: monthToDate.Nanos}, amount)}
}
