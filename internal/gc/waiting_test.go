package gc_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/gc"
	"github.com/egress-proxies/egress/internal/logging"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
)

// TestAListingThatWaits: a listing the account's budget queued, or the
// cloud refused for its rate limit, is logged as a wait (WARNING, with
// when to retry), not as an error, and the run is incomplete only by
// waiting (gc.Waiting); any other failure of a listing, or of the run
// beside it, is an error as before.
func TestAListingThatWaits(t *testing.T) {
	queued := provider.NewError(provider.KindRateLimited, "list", "", errors.New("queued: 40 calls ahead"))
	queued.RetryAfter = 7 * time.Second
	type got struct {
		Severities map[string]string // of the listing's line, by provider
		Waiting    bool
		Incomplete bool
	}
	cases := map[string]struct {
		reason  string
		errA    error
		uidsErr error
		want    got
	}{
		"Queued": {
			reason: "A queued listing is a wait; the other provider is listed and collected.",
			errA:   queued,
			want:   got{Severities: map[string]string{"a": "WARNING"}, Waiting: true, Incomplete: true},
		},
		"Failed": {
			reason: "A listing that failed otherwise is an error.",
			errA:   errors.New("backend unavailable"),
			want:   got{Severities: map[string]string{"a": "ERROR"}, Incomplete: true},
		},
		"QueuedAndUIDsUnreadable": {
			reason:  "A wait beside a real failure is no mere wait.",
			errA:    queued,
			uidsErr: errors.New("firestore unavailable"),
			want:    got{Severities: map[string]string{"a": "WARNING"}, Incomplete: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clock.NewFake(epoch)
			a, b := mock.New(mock.Options{Clock: clk}), mock.New(mock.Options{Clock: clk})
			a.FailNext(mock.MethodListByTag, 1, tc.errA)
			var logs bytes.Buffer
			c := gc.New(providersOf(t, map[string]provider.Provider{"a": a, "b": b}), &fakeStore{uids: uidSet(elsewhere), uidsErr: tc.uidsErr}, &fakeRequeuer{}, clk,
				logging.New(&logs, slog.LevelInfo), gc.Options{})
			_, err := c.Run(context.Background())
			g := got{Severities: map[string]string{}, Waiting: gc.Waiting(err), Incomplete: errors.Is(err, gc.ErrIncomplete)}
			for _, l := range logLines(t, &logs) {
				if msg, _ := l["message"].(string); l["provider"] != nil && (msg == "cannot list instances; none of this provider's is collected this run" ||
					msg == "listing waits its turn under the account's rate limit; none of this provider's instances is collected this run") {
					g.Severities[l["provider"].(string)] = l["severity"].(string)
				}
			}
			if diff := cmp.Diff(tc.want, g); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
