package pricing

import (
	"fmt"
	"time"
)

// MonthLayout writes a calendar month (UTC) as the proxies' traffic
// reports and the costs name it.
const MonthLayout = "2006-01"

// Month is the calendar month (UTC) of t, and its first instant and the
// first of the next.
func Month(t time.Time) (name string, start, end time.Time) {
	t = t.UTC()
	start = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	return start.Format(MonthLayout), start, start.AddDate(0, 1, 0)
}

// ParseMonth reads a month as MonthLayout writes it.
func ParseMonth(month string) (start, end time.Time, err error) {
	start, err = time.Parse(MonthLayout, month)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("pricing: month %q is not YYYY-MM", month)
	}
	return start, start.AddDate(0, 1, 0), nil
}

// Use is what one proxy used, as its document tells it: what it is
// billed for is held from Since (its document's creation: a VM is made
// for it at once, and a Static proxy's address before that) until Until
// (its deletion; zero while it lives). The seconds between a create and
// its VM's first boot, or of a Failed proxy that holds no VM, are few
// beside a month and counted as held: the cost errs high, never low.
type Use struct {
	Since, Until time.Time
	// Month ("2006-01") and MonthBytes are the month of the proxy's last
	// traffic report and the bytes it carried in that month, both ways
	// together (status.traffic): every byte a proxy carries leaves its VM
	// once, towards a client or towards a destination, and is what a cloud
	// bills as egress. A report of another month counts nothing.
	Month      string
	MonthBytes int64
}

// Cost is a proxy's, or a namespace's, cost for one calendar month (UTC),
// in the deployment's currency (Rates.Currency).
type Cost struct {
	// Month is the calendar month, "2006-01".
	Month    string `json:"month" firestore:"month"`
	Currency string `json:"currency" firestore:"currency"`
	// AsOf is the moment the figures are of.
	AsOf time.Time `json:"asOf" firestore:"asOf"`
	// VM, Address and Traffic are the month so far, apart; MonthToDate
	// their sum.
	VM          Money `json:"vm" firestore:"vm"`
	Address     Money `json:"address" firestore:"address"`
	Traffic     Money `json:"traffic" firestore:"traffic"`
	MonthToDate Money `json:"monthToDate" firestore:"monthToDate"`
	// Forecast is the month's cost at its end if what runs now runs on:
	// the VM and the address to the month's end, the traffic at the
	// month's rate so far.
	Forecast Money `json:"forecast" firestore:"forecast"`
	// Unknown, when set, says why the cost cannot be known (no price was
	// read for the proxy's placement, no rate converts its currency): the
	// amounts are then zero, or for a namespace the sum of what is known.
	Unknown string `json:"unknown,omitempty" firestore:"unknown,omitempty"`
}

// MonthCost is the cost of a proxy that used u at price p in month
// ("2006-01", UTC), as of now, in rates' currency: past the month's end,
// the month is over and its forecast is what it cost.
//
// The VM and its address are billed by the second they were held within
// the month (a proxy that lived half the month pays half); the traffic by
// the bytes beyond the included egress, which is prorated by the share of
// the month the proxy held its VM (as Hetzner prorates a server's included
// traffic by its hours), in units of p.EgressUnitBytes. The forecast holds
// what still runs at now to the month's end: its VM and address, and its
// traffic at the bytes a second it carried so far in the month. A cloud's
// monthly cap on a VM's hourly price is not applied: the Price carries
// none, so a month of a capped VM errs high.
func MonthCost(p Price, u Use, month string, now time.Time, rates Rates) Cost {
	c := Cost{Month: month, Currency: rates.Currency, AsOf: now}
	start, end, err := ParseMonth(month)
	if err != nil {
		c.Unknown = err.Error()
		return c
	}
	held := func(until time.Time) int64 {
		from, to := u.Since, until
		if !u.Until.IsZero() && u.Until.Before(to) {
			to = u.Until
		}
		if from.Before(start) {
			from = start
		}
		if to.After(end) {
			to = end
		}
		if !to.After(from) {
			return 0
		}
		return int64(to.Sub(from) / time.Second)
	}
	soFar, forecast := held(now), held(end)
	monthSeconds := int64(end.Sub(start) / time.Second)
	bytes := int64(0)
	if u.Month == month {
		bytes = u.MonthBytes
	}
	bytesForecast := bytes
	if soFar > 0 && forecast > soFar {
		bytesForecast = Money{Nanos: bytes}.Times(forecast, soFar).Nanos
	}
	traffic := func(secs, b int64) Money {
		included := Money{Nanos: p.IncludedEgressBytes}.Times(secs, monthSeconds).Nanos
		unit := p.EgressUnitBytes
		if unit <= 0 {
			unit = 1_000_000_000
		}
		if b <= included {
			return Money{Currency: p.EgressPerGB.Currency}
		}
		return p.EgressPerGB.Times(b-included, unit)
	}
	hours := func(m Money, secs int64) Money { return m.Times(secs, 3600) }

	// The rate in force at the moment the figure is of.
	at := now
	if at.After(end) {
		at = end
	}
	conv := func(m Money) Money {
		if err != nil {
			return Money{}
		}
		var out Money
		out, err = rates.Convert(m, at)
		return out
	}
	c.VM = conv(hours(p.VMPerHour, soFar))
	c.Address = conv(hours(p.IPv4PerHour, soFar))
	c.Traffic = conv(traffic(soFar, bytes))
	fVM := conv(hours(p.VMPerHour, forecast))
	fAddress := conv(hours(p.IPv4PerHour, forecast))
	fTraffic := conv(traffic(forecast, bytesForecast))
	if err != nil {
		return Cost{Month: month, Currency: rates.Currency, AsOf: now, Unknown: fmt.Sprintf("%s %s %s: %v", p.Provider, p.Region, p.MachineType, err)}
	}
	c.MonthToDate = Money{Currency: rates.Currency, Nanos: c.VM.Nanos + c.Address.Nanos + c.Traffic.Nanos}
	c.Forecast = Money{Currency: rates.Currency, Nanos: fVM.Nanos + fAddress.Nanos + fTraffic.Nanos}
	return c
}

// UnknownCost is the cost in month of a proxy whose price could not be
// read, saying why.
func UnknownCost(month string, now time.Time, rates Rates, why error) Cost {
	return Cost{Month: month, Currency: rates.Currency, AsOf: now, Unknown: why.Error()}
}

// Sum adds costs of one month and currency (a namespace's proxies'):
// each part and the totals; an unknown one leaves its reason in Unknown
// (the first, and how many more), the rest still added. A cost of another
// month or currency is an error naming it.
func Sum(month, currency string, costs ...Cost) (Cost, error) {
	s := Cost{Month: month, Currency: currency}
	for _, c := range costs {
		if c.AsOf.After(s.AsOf) {
			s.AsOf = c.AsOf
		}
	}
	zero := Money{Currency: currency}
	s.VM, s.Address, s.Traffic, s.MonthToDate, s.Forecast = zero, zero, zero, zero, zero
	unknown := 0
	for _, c := range costs {
		if c.Month != month || c.Currency != currency {
			return Cost{}, fmt.Errorf("pricing: a cost of %s in %s added to a sum of %s in %s", c.Month, c.Currency, month, currency)
		}
		if c.Unknown != "" {
			if unknown == 0 {
				s.Unknown = c.Unknown
			}
			unknown++
			continue
		}
		s.VM.Nanos += c.VM.Nanos
		s.Address.Nanos += c.Address.Nanos
		s.Traffic.Nanos += c.Traffic.Nanos
		s.MonthToDate.Nanos += c.MonthToDate.Nanos
		s.Forecast.Nanos += c.Forecast.Nanos
	}
	if unknown > 1 {
		s.Unknown = fmt.Sprintf("%s (and %d more unknown)", s.Unknown, unknown-1)
	}
	return s, nil
}
