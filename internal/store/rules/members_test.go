package rules_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store/rules"
)

// TestPickWarm: a claim draws the claimable member whose uid is the first
// at or after the draw's start, wrapping round, so that claims of random
// uids spread over the pool; a claimed, booting or failed member is never
// drawn.
func TestPickWarm(t *testing.T) {
	member := func(uid string, phase proxy.Phase, claimed bool) *proxy.Proxy {
		m := &proxy.Proxy{Name: "w-" + uid, UID: uid, Pool: "ci", Status: proxy.Status{Phase: phase, ProviderID: "vm-" + uid}}
		if claimed {
			m.ClaimedBy = &proxy.ClaimRef{Namespace: "a", Name: "b", UID: "x"}
		}
		return m
	}
	pool := []*proxy.Proxy{
		member("9f", proxy.PhaseReady, false),
		member("1a", proxy.PhaseReady, false),
		member("5c", proxy.PhaseReady, false),
		member("60", proxy.PhaseReady, true),
		member("70", proxy.PhaseProvisioning, false),
		member("80", proxy.PhaseFailed, false),
	}
	cases := map[string]struct {
		after string
		want  string
	}{
		"Between":        {after: "4", want: "5c"},
		"Exact":          {after: "5c", want: "5c"},
		"SkipsClaimed":   {after: "6", want: "9f"},
		"SkipsNotReady":  {after: "7", want: "9f"},
		"WrapsRound":     {after: "a", want: "1a"},
		"BeforeTheFirst": {after: "0", want: "1a"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := rules.PickWarm(pool, tc.after)
			if got == nil {
				t.Fatalf("PickWarm(after %q) = nil, want %s", tc.after, tc.want)
			}
			if diff := cmp.Diff(tc.want, got.UID); diff != "" {
				t.Errorf("PickWarm(after %q) (-want +got):\n%s", tc.after, diff)
			}
		})
	}
	if got := rules.PickWarm(pool[3:], "0"); got != nil {
		t.Errorf("PickWarm of no claimable member = %s, want nil", got.UID)
	}
	if a, b := rules.DrawAfter("6c1f0a5e-8d1b-4c59-9a53-1b7a2f3d4e5f", 1), rules.DrawAfter("6c1f0a5e-8d1b-4c59-9a53-1b7a2f3d4e5f", 2); a == b {
		t.Errorf("the second and third draws of a claim start at the same point %q", a)
	}
}
