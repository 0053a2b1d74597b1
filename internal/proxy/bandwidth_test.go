package proxy_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/proxy"
)

func TestParseBandwidth(t *testing.T) {
	for in, tc := range map[string]struct {
		reason     string
		want       int64
		wantReason string
	}{
		"100Mbit":           {reason: "the README's example", want: 100_000_000},
		"1500Kbit":          {reason: "Kbit, SI", want: 1_500_000},
		"2Gbit":             {reason: "Gbit, SI", want: 2_000_000_000},
		"1Mbit":             {reason: "the least", want: proxy.MinBandwidth},
		"100Gbit":           {reason: "the most", want: proxy.MaxBandwidth},
		"999Kbit":           {reason: "below the least", wantReason: proxy.ReasonBandwidthOutOfRange},
		"101Gbit":           {reason: "above the most", wantReason: proxy.ReasonBandwidthOutOfRange},
		"0Mbit":             {reason: "no bandwidth is no proxy", wantReason: proxy.ReasonBandwidthOutOfRange},
		"999999999999Gbit":  {reason: "twelve digits do not overflow", wantReason: proxy.ReasonBandwidthOutOfRange},
		"100MB":             {reason: "bytes are not taken: they would be read eight times apart", wantReason: proxy.ReasonBandwidthInvalid},
		"100mbit":           {reason: "units as written", wantReason: proxy.ReasonBandwidthInvalid},
		"100 Mbit":          {reason: "no space", wantReason: proxy.ReasonBandwidthInvalid},
		"1.5Gbit":           {reason: "whole numbers: 1500Mbit", wantReason: proxy.ReasonBandwidthInvalid},
		"-1Mbit":            {reason: "no sign", wantReason: proxy.ReasonBandwidthInvalid},
		"100":               {reason: "a unit is required", wantReason: proxy.ReasonBandwidthInvalid},
		"fast":              {reason: "nonsense", wantReason: proxy.ReasonBandwidthInvalid},
		"1000000000000Kbit": {reason: "thirteen digits", wantReason: proxy.ReasonBandwidthInvalid},
	} {
		t.Run(in, func(t *testing.T) {
			got, err := proxy.ParseBandwidth(in)
			var be *proxy.BandwidthError
			gotReason := ""
			if errors.As(err, &be) {
				gotReason = be.Reason
			} else if err != nil {
				t.Fatalf("ParseBandwidth(%q) error %v is not a *BandwidthError", in, err)
			}
			if diff := cmp.Diff([]any{tc.want, tc.wantReason}, []any{got, gotReason}); diff != "" {
				t.Errorf("%s\nParseBandwidth(%q) [bits/s, reason] (-want +got):\n%s", tc.reason, in, diff)
			}
			if err == nil {
				if back, _ := proxy.ParseBandwidth(proxy.FormatBandwidth(got)); back != got {
					t.Errorf("FormatBandwidth(%d) = %q, which reads back as %d", got, proxy.FormatBandwidth(got), back)
				}
			}
		})
	}
}

// TestDataPlaneFields: the rules of spec.socks5Port,
// spec.bandwidthLimit and spec.trafficQuota, each broken rule named by its field and reason.
func TestDataPlaneFields(t *testing.T) {
	pol := proxy.Policy{MinPrefixIPv4: 8, MinPrefixIPv6: 32, ProxyPorts: []proxy.PortRange{{First: 3128, Last: 3128}, {First: 1080, Last: 1081}}}
	enabled := func(string) bool { return true }
	base := proxy.Spec{Provider: "mock", Placement: proxy.Placement{Region: "us-central1"}, Port: 3128,
		AllowedSourceRanges: []string{"203.0.113.0/24"}, IPPolicy: proxy.IPEphemeral}
	type violation struct{ Field, Reason string }
	for name, tc := range map[string]struct {
		reason string
		change func(*proxy.Spec)
		want   []violation
	}{
		"Socks5Open":       {reason: "a port PROXY_PORTS opens", change: func(s *proxy.Spec) { s.Socks5Port = 1080 }},
		"Socks5Off":        {reason: "0 asks for none", change: func(s *proxy.Spec) { s.Socks5Port = 0 }},
		"Socks5NotOpen":    {reason: "the firewall's ports bind it as they bind port", change: func(s *proxy.Spec) { s.Socks5Port = 1082 }, want: []violation{{"spec.socks5Port", proxy.ReasonPortNotOpen}}},
		"Socks5IsPort":     {reason: "one port, one protocol", change: func(s *proxy.Spec) { s.Socks5Port = 3128 }, want: []violation{{"spec.socks5Port", proxy.ReasonSocks5PortIsPort}}},
		"Socks5Negative":   {reason: "a port is 1-65535", change: func(s *proxy.Spec) { s.Socks5Port = -1 }, want: []violation{{"spec.socks5Port", proxy.ReasonPortOutOfRange}}},
		"Socks5TooHigh":    {reason: "a port is 1-65535", change: func(s *proxy.Spec) { s.Socks5Port = 65536 }, want: []violation{{"spec.socks5Port", proxy.ReasonPortOutOfRange}}},
		"Socks5UDP":        {reason: "UDP ASSOCIATE on the SOCKS5 port", change: func(s *proxy.Spec) { s.Socks5Port, s.Socks5UDP = 1080, true }},
		"UDPWithoutSocks5": {reason: "UDP ASSOCIATE is a SOCKS5 command", change: func(s *proxy.Spec) { s.Socks5UDP = true }, want: []violation{{"spec.socks5UDP", proxy.ReasonSocks5UDPWithoutPort}}},
		"BandwidthGood":    {reason: "a limit in bits", change: func(s *proxy.Spec) { s.BandwidthLimit = "250Mbit" }},
		"BandwidthForm":    {reason: "nonsense is refused with the field named", change: func(s *proxy.Spec) { s.BandwidthLimit = "lots" }, want: []violation{{"spec.bandwidthLimit", proxy.ReasonBandwidthInvalid}}},
		"BandwidthTiny":    {reason: "below 1Mbit", change: func(s *proxy.Spec) { s.BandwidthLimit = "64Kbit" }, want: []violation{{"spec.bandwidthLimit", proxy.ReasonBandwidthOutOfRange}}},
		"QuotaGood":        {reason: "a month's bytes", change: func(s *proxy.Spec) { s.TrafficQuota = "500GB" }},
		"QuotaForm":        {reason: "bits are a bandwidth, not a quota", change: func(s *proxy.Spec) { s.TrafficQuota = "500Gbit" }, want: []violation{{"spec.trafficQuota", proxy.ReasonTrafficQuotaInvalid}}},
		"QuotaTiny":        {reason: "a self-test would spend it", change: func(s *proxy.Spec) { s.TrafficQuota = "0MB" }, want: []violation{{"spec.trafficQuota", proxy.ReasonTrafficQuotaOutOfRange}}},
		"BothBroken":       {reason: "every broken rule is told", change: func(s *proxy.Spec) { s.Socks5Port, s.BandwidthLimit = 3128, "1Tbit" }, want: []violation{{"spec.socks5Port", proxy.ReasonSocks5PortIsPort}, {"spec.bandwidthLimit", proxy.ReasonBandwidthInvalid}}},
	} {
		t.Run(name, func(t *testing.T) {
			s := base
			tc.change(&s)
			var got []violation
			for _, e := range s.Validate("team-a", pol, enabled) {
				got = append(got, violation{e.Field, e.Reason})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
