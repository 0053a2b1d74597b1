package vmconfig_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// TestCheckIPv6Egress: the prefixes each cloud routes to a VM pass, in
// their network form; a prefix that is not an IPv6 one a cloud routes, or
// longer than /124, and a rotating mode without a prefix, are refused.
func TestCheckIPv6Egress(t *testing.T) {
	type result struct {
		Prefix string
		OK     bool
	}
	cases := map[string]struct {
		reason string
		prefix string
		mode   string
		want   result
	}{
		"none":              {"a VM without a prefix, the default mode", "", "", result{"invalid Prefix", true}},
		"none off":          {"off needs nothing", "", "off", result{"invalid Prefix", true}},
		"none single":       {"single is the kernel's choice, prefix or not", "", "single", result{"invalid Prefix", true}},
		"none perConn":      {"perConnection draws from the prefix", "", "perConnection", result{"invalid Prefix", false}},
		"none perSession":   {"perSession draws from the prefix", "", "perSession", result{"invalid Prefix", false}},
		"hetzner /64":       {"Hetzner's /64", "2a01:4f8:1c1c:a0b1::/64", "perConnection", result{"2a01:4f8:1c1c:a0b1::/64", true}},
		"gce /96":           {"GCE's /96", "2600:1900:4000:8c1d:0:1::/96", "perSession", result{"2600:1900:4000:8c1d:0:1::/96", true}},
		"ec2 /80":           {"EC2's delegated /80", "2600:1f18:abcd:1200:7e4a::/80", "perConnection", result{"2600:1f18:abcd:1200:7e4a::/80", true}},
		"/124":              {"the longest prefix taken, a /124 of 16 addresses", "2604:a880:400:d1::7a0/124", "perConnection", result{"2604:a880:400:d1::7a0/124", true}},
		"host bits":         {"an address with its length names its network", "2001:db8:7:1::1/64", "single", result{"2001:db8:7:1::/64", true}},
		"/125":              {"longer than /124", "2001:db8::8/125", "perConnection", result{"invalid Prefix", false}},
		"/128":              {"a single address is nothing to rotate", "2001:db8::1/128", "single", result{"invalid Prefix", false}},
		"ipv4":              {"an IPv4 prefix", "198.51.100.0/24", "single", result{"invalid Prefix", false}},
		"mapped":            {"IPv4-mapped", "::ffff:198.51.100.0/120", "single", result{"invalid Prefix", false}},
		"link-local":        {"link-local is not routed", "fe80::/64", "perConnection", result{"invalid Prefix", false}},
		"loopback":          {"loopback", "::1/124", "perConnection", result{"invalid Prefix", false}},
		"multicast":         {"multicast", "ff02::/64", "perConnection", result{"invalid Prefix", false}},
		"everything":        {"::/0 is no VM's", "::/0", "perConnection", result{"invalid Prefix", false}},
		"not a cidr":        {"an address without a length", "2001:db8::", "single", result{"invalid Prefix", false}},
		"zone":              {"a zone", "fe80::%eth0/64", "single", result{"invalid Prefix", false}},
		"unknown mode":      {"a mode the engine does not know", "2001:db8::/64", "perRequest", result{"invalid Prefix", false}},
		"mode in lowercase": {"modes are spelt as the API spells them", "2001:db8::/64", "perconnection", result{"invalid Prefix", false}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := vmconfig.CheckIPv6Egress(tc.prefix, tc.mode)
			if diff := cmp.Diff(tc.want, result{p.String(), err == nil}); diff != "" {
				t.Errorf("%s: CheckIPv6Egress(%q, %q) = %v, %v (-want +got):\n%s", tc.reason, tc.prefix, tc.mode, p, err, diff)
			}
		})
	}
}
