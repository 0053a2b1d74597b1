package digitalocean

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

// TestPrices reads the fake's /v2/sizes (checked against DigitalOcean's
// description by newEnv's transport) for the placements a policy allows,
// and a size DigitalOcean does not list.
func TestPrices(t *testing.T) {
	e := newEnv(t)
	keys := pricedPlacements(plugin.Settings{"DIGITALOCEAN_ALLOWED_REGIONS": "ams3", "DIGITALOCEAN_ALLOWED_SIZES": "s-1vcpu-1gb,s-2vcpu-2gb"})
	keys = append(keys, pricing.Key{Provider: Type, Region: "ams", Zone: "ams3", MachineType: "s-64vcpu-1tb"})
	prices, errs, err := (Prices{Client: e.p.c}).Prices(context.Background(), keys)
	if err != nil {
		t.Fatal(err)
	}
	usd := func(s string) pricing.Money { m, _ := pricing.ParseMoney(s, "USD"); return m }
	price := func(size, hour string, tb int64) pricing.Price {
		return pricing.Price{Provider: Type, Region: "ams", Zone: "ams3", MachineType: size, VMPerHour: usd(hour),
			IPv4PerHour: pricing.Money{Currency: "USD"}, EgressPerGB: usd("0.01"), EgressUnitBytes: 1 << 30,
			IncludedEgressBytes: tb * 1000 << 30, Source: PricesSource}
	}
	want := []pricing.Price{price("s-1vcpu-1gb", "0.00893", 1), price("s-2vcpu-2gb", "0.02679", 3), {}}
	if diff := cmp.Diff(want, prices); diff != "" {
		t.Errorf("prices (-want +got):\n%s", diff)
	}
	var u *pricing.UnknownError
	if errs[0] != nil || errs[1] != nil || !errors.As(errs[2], &u) || u.Reason != "GET /v2/sizes lists no size s-64vcpu-1tb" {
		t.Errorf("errs = %v; want the unlisted size's alone unknown", errs)
	}
}
