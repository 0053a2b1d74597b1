package gcp

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/gcp/computefake"
)

// TestDualStack: with StackDual the VM's interface asks for an external
// IPv6 address (stack type IPV4_IPV6, one DIRECT_IPV6 access config of the
// premium tier) and Get reports the address Compute gave it beside its
// IPv4 one, and the /96 it heads (externalIpv6PrefixLength) as the VM's
// prefix; in a subnet that is not dual-stack Compute refuses the insert,
// and no retry makes it. Without it the interface asks for none and Get
// reports none.
func TestDualStack(t *testing.T) {
	type insert struct {
		StackType          string
		IPv6Type, IPv6Tier string
	}
	type seen struct {
		Insert               insert
		IP, IPv6, IPv6Prefix string
	}
	for name, tc := range map[string]struct {
		reason    string
		stack     string
		dualStack bool // the subnet is dual-stack with external IPv6
		want      seen
		wantKind  provider.Kind
	}{
		"Dual": {
			reason: "A dual-stack VM in a dual-stack subnet has an external IPv6 address.",
			stack:  StackDual, dualStack: true,
			want: seen{Insert: insert{StackType: "IPV4_IPV6", IPv6Type: "DIRECT_IPV6", IPv6Tier: "PREMIUM"}, IP: "198.51.100.1", IPv6: "2001:db8:4000:1::", IPv6Prefix: "2001:db8:4000:1::/96"},
		},
		"IPv4Only": {
			reason: "The default asks for no IPv6, whatever the subnet.",
			stack:  "", dualStack: true,
			want: seen{IP: "198.51.100.1"},
		},
		"SubnetNotDualStack": {
			reason: "Compute refuses an external IPv6 address in a subnet without an IPv6 range: a permanent error, the subnet must change.",
			stack:  StackDual, dualStack: false,
			wantKind: provider.KindPermanent,
		},
	} {
		t.Run(name, func(t *testing.T) {
			fake := computefake.New()
			t.Cleanup(fake.Close)
			p, err := New(fakeClients(t, fake), Config{Project: project, Subnetwork: "proxies", StackType: tc.stack})
			if err != nil {
				t.Fatal(err)
			}
			if tc.dualStack {
				fake.SetDualStack("us-central1", "proxies")
			}
			ctx := context.Background()
			req := request()
			req.StartupScript = "" // Running once Compute says RUNNING: no readiness to fake
			id, err := p.Create(ctx, req)
			if tc.wantKind != "" {
				if provider.KindOf(err) != tc.wantKind || !strings.Contains(err.Error(), "dual-stack") {
					t.Errorf("%s\nCreate: %v, want a %s error naming the subnet", tc.reason, err, tc.wantKind)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			fake.Settle()
			inst, err := p.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			nic := fake.Inserts()[0].Instance.GetNetworkInterfaces()[0]
			got := seen{Insert: insert{StackType: nic.GetStackType()}, IP: inst.IP, IPv6: inst.IPv6, IPv6Prefix: inst.IPv6Prefix}
			if acs := nic.GetIpv6AccessConfigs(); len(acs) == 1 {
				got.Insert.IPv6Type, got.Insert.IPv6Tier = acs[0].GetType(), acs[0].GetNetworkTier()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
	fake := computefake.New()
	t.Cleanup(fake.Close)
	if _, err := New(fakeClients(t, fake), Config{Project: project, StackType: StackDual}); err == nil || !strings.Contains(err.Error(), "subnetwork") {
		t.Errorf("a dual stack without a subnetwork: %v, want it refused for want of a subnetwork", err)
	}
}
