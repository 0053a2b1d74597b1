package console

// What proxies and namespaces cost, as the pages show it: the API's own
// figures (a namespace GET's month, each proxy's status.cost), never
// computed here.

import (
	"github.com/egress-proxies/egress/internal/client"
	"github.com/egress-proxies/egress/internal/pricing"
)

// monthView is a namespace's month at a glance: what its GET answered,
// and its budget's share taken by the forecast.
type monthView struct {
	Cost *pricing.Cost
	// Deleted is the part of the month so far that the namespace's
	// deleted proxies spent: the API adds it to the month so far and the
	// forecast, not to the VM, address and traffic of its proxies now.
	Deleted pricing.Money
	// Budget is the namespace's monthly budget ("200.00 EUR"), AtBudget
	// what happens at it; empty where it has none.
	Budget, AtBudget string
	// Percent is the forecast's share of the budget, in whole percent
	// (above 100 past it); Meter the same held to the meter's 0 to 100.
	Percent, Meter int
}

// monthOf is n's month as the page shows it; nil where the API answered
// no month (a deployment that costs nothing has no price catalog).
func monthOf(n *client.Namespace) *monthView {
	if n.Month == nil {
		return nil
	}
	c := n.Month
	v := &monthView{Cost: c, Deleted: pricing.Money{Currency: c.Currency, Nanos: c.MonthToDate.Nanos - c.VM.Nanos - c.Address.Nanos - c.Traffic.Nanos}}
	if b := n.Budget; b != nil {
		v.AtBudget = b.AtBudget
		if v.AtBudget == "" {
			v.AtBudget = "refuseNew"
		}
		amount, err := pricing.ParseMoney(b.Monthly, b.Currency)
		v.Budget = b.Monthly + " " + b.Currency
		if err == nil && amount.Nanos > 0 && amount.Currency == n.Month.Currency {
			v.Percent = int(n.Month.Forecast.Nanos * 100 / amount.Nanos)
			v.Meter = min(100, max(0, v.Percent))
		}
	}
	return v
}

// cents is m to the cent without its currency: "3.91".
func cents(m pricing.Money) string { return m.ToCent() }
