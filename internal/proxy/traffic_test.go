package proxy_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/proxy"
)

func TestParseTrafficQuota(t *testing.T) {
	for in, tc := range map[string]struct {
		reason     string
		want       int64
		wantReason string
	}{
		"500GB":      {reason: "the issue's example", want: 500_000_000_000},
		"2TB":        {reason: "TB, SI as Hetzner counts its included traffic", want: 2_000_000_000_000},
		"100GiB":     {reason: "GiB, binary as Google Cloud bills", want: 100 << 30},
		"1MB":        {reason: "the least", want: proxy.MinTrafficQuota},
		"1000TB":     {reason: "the most", want: proxy.MaxTrafficQuota},
		"0GB":        {reason: "a quota of nothing is no proxy", wantReason: proxy.ReasonTrafficQuotaOutOfRange},
		"1001TB":     {reason: "above the most", wantReason: proxy.ReasonTrafficQuotaOutOfRange},
		"9999999TiB": {reason: "seven digits do not overflow", wantReason: proxy.ReasonTrafficQuotaOutOfRange},
		"500gb":      {reason: "units as written", wantReason: proxy.ReasonTrafficQuotaInvalid},
		"500 GB":     {reason: "no space", wantReason: proxy.ReasonTrafficQuotaInvalid},
		"1.5TB":      {reason: "whole numbers: 1500GB", wantReason: proxy.ReasonTrafficQuotaInvalid},
		"500G":       {reason: "a byte unit, not a bare multiple", wantReason: proxy.ReasonTrafficQuotaInvalid},
		"500Gbit":    {reason: "bits are the bandwidth limit's unit", wantReason: proxy.ReasonTrafficQuotaInvalid},
		"500":        {reason: "a unit is required", wantReason: proxy.ReasonTrafficQuotaInvalid},
		"-1GB":       {reason: "no sign", wantReason: proxy.ReasonTrafficQuotaInvalid},
		"10000000GB": {reason: "eight digits", wantReason: proxy.ReasonTrafficQuotaInvalid},
	} {
		t.Run(in, func(t *testing.T) {
			got, err := proxy.ParseTrafficQuota(in)
			var qe *proxy.TrafficQuotaError
			gotReason := ""
			if errors.As(err, &qe) {
				gotReason = qe.Reason
			} else if err != nil {
				t.Fatalf("ParseTrafficQuota(%q) error %v is not a *TrafficQuotaError", in, err)
			}
			if diff := cmp.Diff([]any{tc.want, tc.wantReason}, []any{got, gotReason}); diff != "" {
				t.Errorf("%s\nParseTrafficQuota(%q) [bytes, reason] (-want +got):\n%s", tc.reason, in, diff)
			}
			if err == nil {
				if back, _ := proxy.ParseTrafficQuota(proxy.FormatBytes(got)); back != got {
					t.Errorf("FormatBytes(%d) = %q, which reads back as %d", got, proxy.FormatBytes(got), back)
				}
			}
		})
	}
}
