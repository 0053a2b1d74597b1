package sim_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/sim"
)

// TestAccounts plays a small fleet across ten accounts under rate-limit
// and quota faults: every proxy Ready in the account its status names, no
// account past its limit of calls in any window or past its quota, and
// the faults met (calls refused by the clouds, quotas filled).
func TestAccounts(t *testing.T) {
	cfg := sim.AccountsConfig{Seed: 1, Accounts: 10, Proxies: 400}
	r := sim.RunAccounts(cfg)
	if len(r.Violations) > 0 {
		t.Errorf("%d violations:\n%s", len(r.Violations), strings.Join(r.Violations[:min(len(r.Violations), 10)], "\n"))
	}
	t.Log(r.Summary())
	// One invocation at a time, each parked in its sleeps: a seed
	// replays the same schedule.
	if diff := cmp.Diff(r, sim.RunAccounts(cfg)); diff != "" {
		t.Errorf("seed 1 played again differently (-first +second):\n%s", diff)
	}
	if r.Ready != 400 || r.Instances != 400 {
		t.Errorf("%d proxies Ready on %d VMs at the end, want 400 on 400", r.Ready, r.Instances)
	}
	// The fleet's burst met each account's budget, and the budget held:
	// the busiest window of any account's cloud is its limit, no more.
	if r.Busiest != r.Limit || r.RateLimited != 0 {
		t.Errorf("the busiest window of an account saw %d calls, %d refused past the limit, want the limit %d and none", r.Busiest, r.RateLimited, r.Limit)
	}
	if r.CloudFaults == 0 || r.SmallQuotas == 0 || r.FullAccounts == 0 {
		t.Errorf("the faults were not met: %d rate-limit faults, %d small quotas, %d accounts' quotas filled", r.CloudFaults, r.SmallQuotas, r.FullAccounts)
	}
}
