package aws

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
)

// TestIPv6Prefix: a request that asks for an IPv6 prefix has EC2 delegate
// a /80 to the instance's primary interface (AssignIpv6Addresses,
// Ipv6PrefixCount 1) in a subnet with an IPv6 range, and Get reports it
// from the interface's ipv6PrefixSet as the fake answers it; a request
// that does not ask makes no such call (an EC2 prefix needs a subnet with
// IPv6, which a default VPC has not); a repeated create of the attempt
// asks no second prefix; and where the subnet has no IPv6 range the
// instance is terminated and the create fails for good, naming the rule.
func TestIPv6Prefix(t *testing.T) {
	type seen struct {
		Assigns     int
		Prefixes    int
		Reported    bool // Get's IPv6Prefix is the fake's prefix
		State       string
		ErrKind     provider.Kind
		ErrSaysRule bool
	}
	for name, tc := range map[string]struct {
		reason  string
		ask     bool
		ipv6    bool // the zone's default subnet has an IPv6 range
		creates int
		want    seen
	}{
		"Delegated":         {reason: "a /80 on the primary interface, reported by Get", ask: true, ipv6: true, creates: 1, want: seen{Assigns: 1, Prefixes: 1, Reported: true, State: "pending"}},
		"NotAsked":          {reason: "no prefix unless the spec's ipv6Egress needs one", ask: false, ipv6: true, creates: 1, want: seen{State: "pending"}},
		"RepeatedCreate":    {reason: "the attempt's instance has its prefix: no second", ask: true, ipv6: true, creates: 2, want: seen{Assigns: 1, Prefixes: 1, Reported: true, State: "pending"}},
		"SubnetWithoutIPv6": {reason: "no IPv6 range: terminated, a permanent error", ask: true, ipv6: false, creates: 1, want: seen{Assigns: 1, State: "shutting-down", ErrKind: provider.KindPermanent, ErrSaysRule: true}},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			req := request()
			req.Placement.Zone = "us-east-1b"
			req.IPv6Prefix = tc.ask
			if tc.ipv6 {
				e.fake.SetIPv6Subnet("us-east-1b")
			}
			var (
				id  string
				err error
			)
			for range tc.creates {
				id, err = e.p.Create(context.Background(), req)
			}
			ins := e.fake.Instances()
			if len(ins) != 1 {
				t.Fatalf("%d instances, want 1", len(ins))
			}
			got := seen{Assigns: e.fake.Actions()["AssignIpv6Addresses"], Prefixes: len(ins[0].IPv6Prefixes), State: ins[0].State, ErrKind: provider.KindOf(err),
				ErrSaysRule: err != nil && strings.Contains(err.Error(), "only in a subnet with an IPv6 range") && strings.Contains(err.Error(), "us-east-1b")}
			if err == nil {
				in, gerr := e.p.Get(context.Background(), id)
				if gerr != nil {
					t.Fatal(gerr)
				}
				got.Reported = in.IPv6Prefix != "" && len(ins[0].IPv6Prefixes) > 0 && in.IPv6Prefix == ins[0].IPv6Prefixes[0] && strings.HasSuffix(in.IPv6Prefix, "/80")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
