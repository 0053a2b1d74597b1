package pricing

import (
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

var (
	amountPattern   = regexp.MustCompile(`^(-?)([0-9]{1,9})(?:\.([0-9]{1,9})[0-9]*)?$`)
	currencyPattern = regexp.MustCompile(`^[A-Z]{3}$`)
)

// ParseMoney reads a decimal amount as the clouds' price APIs write it
// ("0.0052000000", "6.00", "12") in currency (ISO 4217, upper case). Past
// the ninth decimal the digits are dropped (no cloud prices below a
// billionth); a currency that is not three upper-case letters, or an
// amount of a billion or more, is an error naming both.
func ParseMoney(amount, currency string) (Money, error) {
	if !currencyPattern.MatchString(currency) {
		return Money{}, fmt.Errorf("pricing: currency %q is not an ISO 4217 code such as EUR", currency)
	}
	m := amountPattern.FindStringSubmatch(strings.TrimSpace(amount))
	if m == nil {
		return Money{}, fmt.Errorf("pricing: amount %q (%s) is not a decimal number under a billion", amount, currency)
	}
	// Base 10 written out: a fraction's leading zeros are no octal.
	whole, _ := strconv.ParseInt(m[2], 10, 64)
	var frac int64
	if m[3] != "" {
		frac, _ = strconv.ParseInt((m[3] + "000000000")[:9], 10, 64)
	}
	n := whole*Nano + frac
	if m[1] == "-" {
		n = -n
	}
	return Money{Currency: currency, Nanos: n}, nil
}

// String writes m to the nano with its currency ("0.0052 EUR"), trailing
// zeros dropped, at least two decimals.
func (m Money) String() string {
	sign := ""
	n := m.Nanos
	if n < 0 {
		sign, n = "-", -n
	}
	frac := strings.TrimRight(fmt.Sprintf("%09d", n%Nano), "0")
	for len(frac) < 2 {
		frac += "0"
	}
	return fmt.Sprintf("%s%d.%s %s", sign, n/Nano, frac, m.Currency)
}

// Cents is m rounded to the cent, half away from zero, as a bill shows it.
func (m Money) Cents() int64 {
	const perCent = Nano / 100
	n := m.Nanos
	if n < 0 {
		return -((-n + perCent/2) / perCent)
	}
	return (n + perCent/2) / perCent
}

// ToCent writes m rounded to the cent without its currency ("3.91"), as
// a bill's column shows it.
func (m Money) ToCent() string {
	n := m.Cents()
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	return fmt.Sprintf("%s%d.%02d", sign, n/100, n%100)
}

// Add is m + o; both must be in one currency (or one of them zero).
func (m Money) Add(o Money) (Money, error) {
	switch {
	case o.Currency == "" && o.Nanos == 0:
		return m, nil
	case m.Currency == "" && m.Nanos == 0:
		return o, nil
	case m.Currency != o.Currency:
		return Money{}, fmt.Errorf("pricing: adding %s to %s: convert one first (Rates)", o, m)
	}
	return Money{Currency: m.Currency, Nanos: m.Nanos + o.Nanos}, nil
}

// Times is m × num / den, exact until the last nano, which is rounded half
// away from zero: a price an hour times seconds over 3600, a price a GB
// times bytes over a GB. The product is computed without overflow.
func (m Money) Times(num, den int64) Money {
	if den == 0 {
		panic("pricing: Times by a zero denominator")
	}
	p := new(big.Int).Mul(big.NewInt(m.Nanos), big.NewInt(num))
	d := big.NewInt(den)
	q, r := new(big.Int).QuoRem(p, d, new(big.Int))
	// Round half away from zero: |2r| >= |d|.
	r2 := new(big.Int).Abs(new(big.Int).Mul(r, big.NewInt(2)))
	if r2.Cmp(new(big.Int).Abs(d)) >= 0 {
		if p.Sign()*d.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return Money{Currency: m.Currency, Nanos: q.Int64()}
}
