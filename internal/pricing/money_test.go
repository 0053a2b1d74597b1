package pricing_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/pricing"
)

func TestParseMoney(t *testing.T) {
	for in, tc := range map[string]struct {
		currency string
		want     pricing.Money
		wantErr  bool
	}{
		"0.0052000000": {currency: "EUR", want: pricing.Money{Currency: "EUR", Nanos: 5_200_000}},
		"6.00":         {currency: "USD", want: pricing.Money{Currency: "USD", Nanos: 6 * pricing.Nano}},
		"12":           {currency: "USD", want: pricing.Money{Currency: "USD", Nanos: 12 * pricing.Nano}},
		"0.0000000011": {currency: "USD", want: pricing.Money{Currency: "USD", Nanos: 1}},
		"-1.5":         {currency: "USD", want: pricing.Money{Currency: "USD", Nanos: -1_500_000_000}},
		"1e3":          {currency: "USD", wantErr: true},
		"1000000000":   {currency: "USD", wantErr: true},
		"1.00 ":        {currency: "usd", wantErr: true},
	} {
		got, err := pricing.ParseMoney(in, tc.currency)
		if (err != nil) != tc.wantErr || !cmp.Equal(tc.want, got) {
			t.Errorf("ParseMoney(%q, %s) = %v, %v; want %v (error: %t)", in, tc.currency, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestMoneyArithmetic: a month of an hourly price is exact to the nano,
// rounds to the cent half away from zero, and never mixes currencies.
func TestMoneyArithmetic(t *testing.T) {
	hour := pricing.Money{Currency: "EUR", Nanos: 5_200_000} // 0.0052 EUR an hour
	month := hour.Times(730*3600, 3600)
	type seen struct {
		Month        string
		Cents        int64
		HalfCent     int64
		MinusHalf    int64
		PerGBOfBytes pricing.Money
		ToCent       string
		MinusToCent  string
	}
	got := seen{
		Month:        month.String(),
		Cents:        month.Cents(),
		HalfCent:     pricing.Money{Currency: "EUR", Nanos: 5_000_000}.Cents(),
		MinusHalf:    pricing.Money{Currency: "EUR", Nanos: -5_000_000}.Cents(),
		PerGBOfBytes: pricing.Money{Currency: "USD", Nanos: 90_000_000}.Times(1_500_000_000_000_000, 1_000_000_000), // 1.5 PB at 0.09 a GB
		ToCent:       month.ToCent(),
		MinusToCent:  pricing.Money{Currency: "EUR", Nanos: -1_054_000_000}.ToCent(),
	}
	want := seen{Month: "3.796 EUR", Cents: 380, HalfCent: 1, MinusHalf: -1, ToCent: "3.80", MinusToCent: "-1.05", PerGBOfBytes: pricing.Money{Currency: "USD", Nanos: 135_000 * pricing.Nano}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := hour.Add(pricing.Money{Currency: "USD", Nanos: 1}); err == nil {
		t.Error("EUR + USD added without a conversion")
	}
}
