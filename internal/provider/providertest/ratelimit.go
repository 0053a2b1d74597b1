package providertest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
)

// RateLimited is a provider over a fake that meters its requests as the
// cloud does, with the levers RunRateLimit needs.
type RateLimited struct {
	Provider provider.Provider
	// Request is a create the fake takes.
	Request provider.CreateRequest
	// Requests is how many requests the fake was sent, refused ones
	// too; Refused, how many it refused for the rate limit; Instances,
	// how many instances it holds.
	Requests, Refused, Instances func() int
	// Advance moves the clock the provider and the fake both read.
	Advance func(time.Duration)
}

// RunRateLimit holds a Create that meets the rate limit at any of its
// requests, the first or one after the instance was made, to the
// contract: RateLimited, so retryable and never a failure of the proxy,
// with the wait the cloud's headers give (wait); one request refused, so
// the SDK's own retries are off and the reconciler alone decides; and the
// reconciler's way on (wait as asked, create again) makes the one
// instance, adopting the one a cut Create had made. newTarget(t, n)
// returns a fresh provider over a fake with n requests left before its
// limit, or the fake's default limit for n < 0.
func RunRateLimit(t *testing.T, wait time.Duration, newTarget func(t *testing.T, remaining int) RateLimited) {
	ctx := context.Background()
	free := newTarget(t, -1)
	if _, err := free.Provider.Create(ctx, free.Request); err != nil {
		t.Fatal(err)
	}
	calls := free.Requests() // the requests of a Create the limit does not meet
	t.Logf("a Create spends %d requests", calls)
	type outcome struct {
		Kind               provider.Kind
		Retryable          bool
		Wait               time.Duration
		Refused, Instances int
	}
	var got, want []outcome
	for remaining := range calls {
		tg := newTarget(t, remaining)
		_, err := tg.Provider.Create(ctx, tg.Request)
		o := outcome{Kind: provider.KindOf(err), Retryable: provider.Retryable(err), Wait: provider.RetryAfter(err), Refused: tg.Refused()}
		retries := 0
		for ; provider.KindOf(err) == provider.KindRateLimited && retries <= calls; retries++ {
			tg.Advance(provider.RetryAfter(err))
			_, err = tg.Provider.Create(ctx, tg.Request)
		}
		if err != nil || retries > calls {
			t.Errorf("%d requests left: the Create after %d waits: %v", remaining, retries, err)
		}
		o.Instances = tg.Instances()
		got = append(got, o)
		want = append(want, outcome{Kind: provider.KindRateLimited, Retryable: true, Wait: wait, Refused: 1, Instances: 1})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a Create meeting the limit at each of its %d requests (-want +got):\n%s", calls, diff)
	}
}
