package aws

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
)

// TestIPv6Prefix: a request that asks for an IPv6 prefix launches its
// instance with a primary interface of its own, in the zone's default
// subnet, with one IPv6 address and one delegated /80 of the subnet's
// IPv6 range, not around the address, in the deployment's group by id;
// Get reports the /80 from the interface's ipv6PrefixSet. A request that
// does not ask launches as before (no interface, the group by name, no
// lookup). A repeated create of the attempt gets the attempt's instance
// and prefix. A subnet without an IPv6 range is refused for good before
// any instance is made, the error naming the subnet and the rule.
func TestIPv6Prefix(t *testing.T) {
	type seen struct {
		Instances   int
		Lookups     int // DescribeSubnets calls
		Prefixes    int
		Addresses   int
		InSubnet    bool   // the /80 is of the subnet's range, and the address not in it
		Reported    bool   // Get's IPv6Prefix is the fake's /80
		Groups      string // the instance's groups, by name
		ElasticIPs  int
		ErrKind     provider.Kind
		ErrSaysRule bool
	}
	for name, tc := range map[string]struct {
		reason  string
		ask     bool
		ipv6    bool // the zone's default subnet has an IPv6 range
		static  bool
		creates int
		want    seen
	}{
		"Delegated": {reason: "a /80 and an address on the primary interface, reported by Get", ask: true, ipv6: true, creates: 1,
			want: seen{Instances: 1, Lookups: 1, Prefixes: 1, Addresses: 1, InSubnet: true, Reported: true, Groups: "egress-proxy-egress"}},
		"NotAsked": {reason: "no interface of its own unless the spec's ipv6Egress needs a prefix", ask: false, ipv6: true, creates: 1,
			want: seen{Instances: 1, Groups: "egress-proxy-egress"}},
		"RepeatedCreate": {reason: "the attempt's instance, with its prefix: no second", ask: true, ipv6: true, creates: 2,
			want: seen{Instances: 1, Lookups: 2, Prefixes: 1, Addresses: 1, InSubnet: true, Reported: true, Groups: "egress-proxy-egress"}},
		"SubnetWithoutIPv6": {reason: "no IPv6 range: refused before the launch, for good", ask: true, ipv6: false, creates: 1,
			want: seen{Lookups: 1, ErrKind: provider.KindPermanent, ErrSaysRule: true}},
		"StaticSubnetWithoutIPv6": {reason: "refused before the Elastic IP too: none to collect", ask: true, ipv6: false, static: true, creates: 1,
			want: seen{Lookups: 1, ErrKind: provider.KindPermanent, ErrSaysRule: true}},
		"StaticDelegated": {reason: "a Static proxy's instance gets its /80 as well", ask: true, ipv6: true, static: true, creates: 1,
			want: seen{Instances: 1, Lookups: 1, Prefixes: 1, Addresses: 1, InSubnet: true, Reported: true, Groups: "egress-proxy-egress", ElasticIPs: 1}},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			req := request()
			req.Placement.Zone = "us-east-1b"
			req.IPv6Prefix, req.StaticIP = tc.ask, tc.static
			var subnet6 netip.Prefix
			if tc.ipv6 {
				subnet6 = netip.MustParsePrefix(e.fake.SetIPv6Subnet("us-east-1b"))
			}
			var (
				id  string
				err error
			)
			for range tc.creates {
				id, err = e.p.Create(context.Background(), req)
			}
			ins := e.fake.Instances()
			got := seen{Instances: len(ins), Lookups: e.fake.Actions()["DescribeSubnets"], ErrKind: provider.KindOf(err), ElasticIPs: len(e.fake.Addresses())}
			if err != nil {
				msg := err.Error()
				got.ErrSaysRule = strings.Contains(msg, "only in a subnet with an IPv6 CIDR block") && strings.Contains(msg, "subnet-") && strings.Contains(msg, "us-east-1b")
			}
			if len(ins) == 1 {
				in := ins[0]
				got.Prefixes, got.Addresses, got.Groups = len(in.IPv6Prefixes), len(in.IPv6Addresses), strings.Join(in.SecurityGroups, ",")
				if got.Prefixes == 1 && got.Addresses == 1 {
					pfx, addr := netip.MustParsePrefix(in.IPv6Prefixes[0]), netip.MustParseAddr(in.IPv6Addresses[0])
					got.InSubnet = pfx.Bits() == PrefixBits && subnet6.Contains(pfx.Addr()) && subnet6.Contains(addr) && !pfx.Contains(addr)
				}
			}
			if err == nil {
				in, gerr := e.p.Get(context.Background(), id)
				if gerr != nil {
					t.Fatal(gerr)
				}
				got.Reported = len(ins) == 1 && len(ins[0].IPv6Prefixes) > 0 && in.IPv6Prefix == ins[0].IPv6Prefixes[0]
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (error: %v)\n(-want +got):\n%s", tc.reason, err, diff)
			}
		})
	}
}
