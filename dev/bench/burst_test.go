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
// Get), none refused by the Compute fake (the budget held, across the
// function instances), at least one proxy shown a queued wait and none an
// error. It asserts no time: the rate and the floor are make bench's to
// hold.
func TestBurst(t *testing.T) {
	emulatortest.Firestore(t)
	const proxies = 12
	// The pacer's Near shortened to a few windows, so that most of the
	// burst's 6 s of calls (two a proxy, four a second) are queued and
	// come back, as a burst larger than Near's 10 s is.
	s := burstSettings{proxies: proxies, limit: 4, interval: time.Second, instances: 3, project: emulatortest.ProjectID(t), near: time.Second}
	// A bound against a hang, far above any run; no measure.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := runBurst(ctx, s, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	type counts struct {
		Accounts, Proxies, Ready, Calls, Refused, UserVisibleErrors int
		Errors                                                      []string
		Queued                                                      bool
	}
	for _, c := range []struct {
		run  burstRun
		want counts
	}{
		{res.OneAccount, counts{Accounts: 1, Proxies: proxies, Ready: proxies, Calls: proxies * burstCallsPerProxy, Queued: true}},
		{res.TwoAccounts, counts{Accounts: 2, Proxies: proxies, Ready: proxies, Calls: proxies * burstCallsPerProxy, Queued: true}},
	} {
		x := c.run
		got := counts{Accounts: x.Accounts, Proxies: x.Proxies, Ready: x.Ready, Calls: x.Calls, Refused: x.Refused, UserVisibleErrors: x.UserVisibleErrors,
			Errors: x.Errors, Queued: x.Queued > 0}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("the burst through %d account(s) (-want +got):\n%s", c.want.Accounts, diff)
		}
		// Every figure is measured, whatever it is.
		if x.ReadySeconds <= 0 || x.FloorSeconds <= 0 || x.AchievedRate <= 0 || x.LimitPerSecond != float64(x.Accounts*s.limit) {
			t.Errorf("the burst through %d account(s): %+v, want every figure measured and the limit %d calls a second an account", x.Accounts, x, s.limit)
		}
	}
	if res.TwoAccountsToOne <= 0 {
		t.Errorf("two accounts' time to one's: %v, want it measured", res.TwoAccountsToOne)
	}
}
