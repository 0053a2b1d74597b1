package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/emulators/emulatortest"
)

// TestBurst runs the burst phase small on the Firestore emulator, with
// the limit's interval short and the limit low enough that the budget
// queues most calls: every proxy Ready through one account and through
// two, at the calls of the floor's path (its Create and its call-home's
// Get) passed by the Compute fake, and none shown an error (a call the
// cloud refused is a queued wait). Through two, the reconciler's placement
// spreads the proxies over the default account and the account document
// by the hash of their uids (fixed: so are the counts), reading each
// account's quotas at most once an instance. It asserts no time (the rate and the
// floor are make bench's to hold), nor how many proxies were queued or
// calls refused: those depend on how fast the machine is against the
// window's guard (a call slower than it from its reservation to the
// cloud, as under the race detector on a loaded machine, may be counted
// in the next window).
func TestBurst(t *testing.T) {
	emulatortest.Firestore(t)
	const proxies = 12
	// The pacer's Near shortened to a second, so that the burst's 6 s of
	// calls (two a proxy, 8 in 2 s) may be queued and come back, as a
	// burst larger than Near's 10 s is.
	s := burstSettings{proxies: proxies, limit: 8, interval: 2 * time.Second, instances: 3, project: emulatortest.ProjectID(t), near: time.Second}
	// A bound against a hang, far above any run; no measure.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := runBurst(ctx, s, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	type counts struct {
		Accounts, Proxies, Ready, Passed, UserVisibleErrors int
		Errors                                              []string
		Placed                                              map[string]int
		QuotaReadsWithin                                    bool
	}
	for _, c := range []struct {
		run  burstRun
		want counts
	}{
		{res.OneAccount, counts{Accounts: 1, Proxies: proxies, Ready: proxies, Passed: proxies * burstCallsPerProxy,
			Placed: map[string]int{"default": proxies}, QuotaReadsWithin: true}},
		{res.TwoAccounts, counts{Accounts: 2, Proxies: proxies, Ready: proxies, Passed: proxies * burstCallsPerProxy,
			Placed: map[string]int{"default": 7, "burst-2": 5}, QuotaReadsWithin: true}},
	} {
		x := c.run
		got := counts{Accounts: x.Accounts, Proxies: x.Proxies, Ready: x.Ready, Passed: x.Calls - x.Refused - x.QuotaReads, UserVisibleErrors: x.UserVisibleErrors,
			Errors: x.Errors, Placed: x.Placed, QuotaReadsWithin: x.QuotaReads <= burstQuotaReads(x)}
		t.Logf("the burst through %d account(s): %d proxies queued on their way, %d calls refused", x.Accounts, x.Queued, x.Refused)
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("the burst through %d account(s) (-want +got):\n%s", c.want.Accounts, diff)
		}
		// Every figure is measured, whatever it is.
		if x.ReadySeconds <= 0 || x.FloorSeconds <= 0 || x.AchievedRate <= 0 || x.LimitPerSecond != float64(x.Accounts*s.limit)/s.interval.Seconds() {
			t.Errorf("the burst through %d account(s): %+v, want every figure measured and the limit %d calls in %s an account", x.Accounts, x, s.limit, s.interval)
		}
	}
	if res.TwoAccountsToOne <= 0 {
		t.Errorf("two accounts' time to one's: %v, want it measured", res.TwoAccountsToOne)
	}
}
