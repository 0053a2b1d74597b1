package pricing

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Rates are the deployment's own conversion rates into its cost currency
// (COST_CURRENCY), each dated (COST_RATES): the rate a sum across clouds
// is converted at is the latest one dated on or before the moment the sum
// is of, never a guessed one. A currency with no such rate has no
// converted amount, and the sum says so (Cost.Unknown).
type Rates struct {
	// Currency is the currency every cost is shown in.
	Currency string
	// ByCurrency holds each source currency's rates, oldest first.
	ByCurrency map[string][]Rate
}

// Rate is one unit of From in the deployment's currency, from Date on.
type Rate struct {
	From string
	// Per is what one unit of From is worth in the deployment's currency.
	Per  Money
	Date time.Time
}

// ParseRates reads COST_CURRENCY and COST_RATES: currency an ISO 4217 code,
// rates comma-separated "USD=0.92@2026-12-01" (one USD is 0.92 of
// currency from 2026-12-01, 00:00 UTC, on), any number of dates per
// currency. Empty rates are none: only costs already in currency are
// known.
func ParseRates(currency, rates string) (Rates, error) {
	if _, err := ParseMoney("0", currency); err != nil {
		return Rates{}, err
	}
	r := Rates{Currency: currency, ByCurrency: map[string][]Rate{}}
	for _, item := range strings.Split(rates, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		from, rest, ok1 := strings.Cut(item, "=")
		amount, date, ok2 := strings.Cut(rest, "@")
		if !ok1 || !ok2 {
			return Rates{}, fmt.Errorf("pricing: rate %q is not CURRENCY=AMOUNT@DATE such as USD=0.92@2026-12-01", item)
		}
		if _, err := ParseMoney("0", from); err != nil {
			return Rates{}, fmt.Errorf("pricing: rate %q: %w", item, err)
		}
		if from == currency {
			return Rates{}, fmt.Errorf("pricing: rate %q converts %s into itself", item, currency)
		}
		per, err := ParseMoney(amount, currency)
		if err != nil || per.Nanos <= 0 {
			return Rates{}, fmt.Errorf("pricing: rate %q: the amount must be a positive decimal such as 0.92", item)
		}
		d, err := time.Parse(time.DateOnly, date)
		if err != nil {
			return Rates{}, fmt.Errorf("pricing: rate %q: the date is not YYYY-MM-DD", item)
		}
		for _, o := range r.ByCurrency[from] {
			if o.Date.Equal(d) {
				return Rates{}, fmt.Errorf("pricing: rate %q: %s has two rates dated %s", item, from, date)
			}
		}
		r.ByCurrency[from] = append(r.ByCurrency[from], Rate{From: from, Per: per, Date: d})
	}
	for _, rs := range r.ByCurrency {
		slices.SortFunc(rs, func(a, b Rate) int { return a.Date.Compare(b.Date) })
	}
	return r, nil
}

// Convert is m in the deployment's currency at the rate in force at at:
// the latest dated on or before it. An error says which rate is missing.
func (r Rates) Convert(m Money, at time.Time) (Money, error) {
	if m.Currency == r.Currency || m.Nanos == 0 {
		return Money{Currency: r.Currency, Nanos: m.Nanos}, nil
	}
	var in *Rate
	for i, rate := range r.ByCurrency[m.Currency] {
		if !rate.Date.After(at) {
			in = &r.ByCurrency[m.Currency][i]
		}
	}
	if in == nil {
		return Money{}, fmt.Errorf("no rate from %s to %s dated on or before %s in COST_RATES", m.Currency, r.Currency, at.UTC().Format(time.DateOnly))
	}
	c := Money{Currency: m.Currency, Nanos: m.Nanos}.Times(in.Per.Nanos, Nano)
	c.Currency = r.Currency
	return c, nil
}
