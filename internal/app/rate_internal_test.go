package app

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/pacing"
	"github.com/egress-proxies/egress/internal/provider"
)

// TestAccountRate: an account's budget is its cloud's documented rate,
// or the calls its document sets (limits.callsPerWindow) in the cloud's
// window, named as the budget's source; a cloud without a rate (the
// mock's) stays unpaced whatever the document says.
func TestAccountRate(t *testing.T) {
	cloud := pacing.Rate{Calls: 1500, Window: time.Minute, Source: "https://cloud.google.com/compute/api-quota"}
	cases := map[string]struct {
		rate pacing.Rate
		acct provider.AccountSpec
		want pacing.Rate
	}{
		"Default":       {rate: cloud, acct: provider.AccountSpec{}, want: cloud},
		"AccountNoRate": {rate: cloud, acct: provider.AccountSpec{ID: "second"}, want: cloud},
		"Raised": {rate: cloud, acct: provider.AccountSpec{ID: "second", CallsPerWindow: 3000},
			want: pacing.Rate{Calls: 3000, Window: time.Minute, Source: "accounts/second: limits.callsPerWindow"}},
		"Unpaced": {rate: pacing.Rate{}, acct: provider.AccountSpec{ID: "mocks", CallsPerWindow: 10}, want: pacing.Rate{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, accountRate(tc.rate, tc.acct)); diff != "" {
				t.Errorf("accountRate (-want +got):\n%s", diff)
			}
		})
	}
}
