package digitalocean

import (
	"context"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestIPv6Range: every Droplet is made with ipv6 true (the range costs
// nothing, so it is asked whatever the spec's ipv6Egress), and Get
// reports the /124 of 16 addresses DigitalOcean gives it, the range of
// the public networks.v6 address the fake answers (whose netmask, 64, is
// the link's): its own, apart from another Droplet's.
func TestIPv6Range(t *testing.T) {
	e := newEnv(t)
	type seen struct {
		AskedIPv6 bool
		Address   string
		Range     string
	}
	var got []seen
	for i, req := range []struct{ uid string }{{""}, {"aaaaaaaa"}} {
		r := request()
		if req.uid != "" {
			r = another(req.uid)
		}
		r.IPv6Prefix = i == 0
		id, err := e.p.Create(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		in, err := e.p.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, seen{AskedIPv6: e.fake.Creates()[i].IPv6, Address: in.IPv6, Range: in.IPv6Prefix})
	}
	ds := e.fake.Droplets()
	if len(ds) != 2 {
		t.Fatalf("%d droplets, want 2", len(ds))
	}
	var want []seen
	for _, d := range ds {
		v6 := d.Networks.V6[0]
		if v6.Netmask != 64 || v6.Type != "public" {
			t.Errorf("the fake's networks.v6: %+v, want a public address on a /64 as the description's example", v6)
		}
		a, err := netip.ParseAddr(v6.IPAddress)
		if err != nil {
			t.Fatalf("the fake's networks.v6 address %q: %v", v6.IPAddress, err)
		}
		want = append(want, seen{AskedIPv6: true, Address: v6.IPAddress, Range: netip.PrefixFrom(a, 124).Masked().String()})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got[0].Range == got[1].Range {
		t.Errorf("two Droplets share the range %s", got[0].Range)
	}
}
