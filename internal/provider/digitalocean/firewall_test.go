package digitalocean

import (
	"testing"

	"github.com/digitalocean/godo"
	"github.com/google/go-cmp/cmp"
)

// TestFirewallInbound: each proxy port admits the tenants' ranges and the
// control plane's on TCP, and the tenants' alone on UDP (SOCKS5's relay,
// spec.socks5UDP): the control plane never sends a datagram.
func TestFirewallInbound(t *testing.T) {
	for _, tc := range []struct {
		name string
		fw   Firewall
		want []godo.InboundRule
	}{
		{
			name: "TenantsAndControlPlane",
			fw:   Firewall{ProxyPorts: []string{"3128", "1080"}, SourceRanges: []string{"203.0.113.0/24", "2001:db8::/32", "203.0.113.0/24"}, StatusSourceRanges: []string{"198.51.100.7/32"}},
			want: []godo.InboundRule{
				{Protocol: "tcp", PortRange: "3128", Sources: &godo.Sources{Addresses: []string{"198.51.100.7/32", "2001:db8::/32", "203.0.113.0/24"}}},
				{Protocol: "tcp", PortRange: "1080", Sources: &godo.Sources{Addresses: []string{"198.51.100.7/32", "2001:db8::/32", "203.0.113.0/24"}}},
				{Protocol: "udp", PortRange: "3128", Sources: &godo.Sources{Addresses: []string{"2001:db8::/32", "203.0.113.0/24"}}},
				{Protocol: "udp", PortRange: "1080", Sources: &godo.Sources{Addresses: []string{"2001:db8::/32", "203.0.113.0/24"}}},
			},
		},
		{
			name: "NoTenantRange",
			fw:   Firewall{ProxyPorts: []string{"3128"}, StatusSourceRanges: []string{"198.51.100.7/32"}},
			want: []godo.InboundRule{
				{Protocol: "tcp", PortRange: "3128", Sources: &godo.Sources{Addresses: []string{"198.51.100.7/32"}}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.fw.Request("egress").InboundRules); diff != "" {
				t.Errorf("inbound rules (-want +got):\n%s", diff)
			}
		})
	}
}
