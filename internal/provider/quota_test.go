package provider_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
)

func TestQuotaFree(t *testing.T) {
	cases := map[string]struct {
		reason string
		q      provider.Quota
		want   int
	}{
		"Room":        {"the limit less the usage", provider.Quota{Limit: 24, Usage: 6}, 18},
		"Full":        {"a quota used up has no room", provider.Quota{Limit: 8, Usage: 8}, 0},
		"Over":        {"a limit lowered below its usage is no room, not a negative one", provider.Quota{Limit: 4, Usage: 6}, 0},
		"NotReported": {"a limit of 0 is one the cloud does not report", provider.Quota{Usage: 3}, -1},
		"Zero":        {"nothing reported, nothing used", provider.Quota{}, -1},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, c.q.Free()); diff != "" {
				t.Errorf("%+v.Free(): %s (-want +got):\n%s", c.q, c.reason, diff)
			}
		})
	}
}
