package aws

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/provider/aws/pricelistfake"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

// TestPrices reads the Price List fake through the SDK for the
// placements a policy allows in two regions, and a type and a region the
// Price List has none of; a region's IPv4 and egress are asked once.
func TestPrices(t *testing.T) {
	fake := pricelistfake.New()
	t.Cleanup(fake.Close)
	src := Prices{Client: NewPricesClient(ClientOptions{Credentials: localCredentials, Endpoint: fake.URL})}
	keys := pricedPlacements(plugin.Settings{"AWS_ALLOWED_REGIONS": "us-east-1,eu-central-1", "AWS_ALLOWED_INSTANCE_TYPES": "t3.micro"})
	keys = append(keys, pricing.Key{Provider: Type, Region: "us-east-1", Zone: "us-east-1a", MachineType: "x9.huge"},
		pricing.Key{Provider: Type, Region: "mars-1", MachineType: "t3.micro"})
	prices, errs, err := src.Prices(context.Background(), keys)
	if err != nil {
		t.Fatal(err)
	}
	usd := func(s string) pricing.Money { m, _ := pricing.ParseMoney(s, "USD"); return m }
	price := func(region, hour string) pricing.Price {
		return pricing.Price{Provider: Type, Region: region, MachineType: "t3.micro", VMPerHour: usd(hour), IPv4PerHour: usd("0.005"),
			EgressPerGB: usd("0.09"), EgressUnitBytes: 1 << 30, Source: PricesSource}
	}
	type seen struct {
		Prices  []pricing.Price
		Unknown []string
		Calls   int
	}
	got := seen{Prices: prices, Calls: fake.Calls()}
	for _, e := range errs {
		var u *pricing.UnknownError
		switch {
		case errors.As(e, &u):
			got.Unknown = append(got.Unknown, u.Reason)
		case e != nil:
			t.Errorf("not an UnknownError: %v", e)
		}
	}
	want := seen{
		Prices: []pricing.Price{price("us-east-1", "0.0104"), price("eu-central-1", "0.012"), {}, {}},
		Unknown: []string{
			"GetProducts AmazonEC2 instanceType=x9.huge regionCode=us-east-1 operatingSystem=Linux tenancy=Shared preInstalledSw=NA capacitystatus=Used: no on-demand USD price a Hrs",
			"GetProducts AmazonVPC regionCode=mars-1: no on-demand USD price a Hrs",
		},
		// Two regions of two questions each, a VM each, the unknown
		// type's VM, the unknown region's IPv4.
		Calls: 2*2 + 2 + 1 + 1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestPricesUnreachable: a Price List that fails is an error of the
// whole read, naming the question.
func TestPricesUnreachable(t *testing.T) {
	fake := pricelistfake.New()
	t.Cleanup(fake.Close)
	fake.Fail(http.StatusInternalServerError)
	src := Prices{Client: NewPricesClient(ClientOptions{Credentials: localCredentials, Endpoint: fake.URL})}
	_, _, err := src.Prices(context.Background(), []pricing.Key{{Provider: Type, Region: "us-east-1", MachineType: "t3.micro"}})
	if err == nil || !strings.Contains(err.Error(), "GetProducts AmazonVPC regionCode=us-east-1") {
		t.Fatalf("err = %v; want one naming the question", err)
	}
}
