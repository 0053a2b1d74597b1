package gcp

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/option"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/gcp/computefake"
	"github.com/egress-proxies/egress/internal/provider/providertest"
)

// newMeteredProvider is newProvider over a fake that meters Compute's
// rate quotas, the provider and the fake both reading *now.
func newMeteredProvider(t *testing.T, now *time.Time) (*Provider, *computefake.Server) {
	return newMeteredProviderEvery(t, now, 0)
}

// newMeteredProviderEvery is newMeteredProvider whose quotas count in
// interval (0: Compute's minute), the fake's and the provider's alike.
func newMeteredProviderEvery(t *testing.T, now *time.Time, interval time.Duration) (*Provider, *computefake.Server) {
	t.Helper()
	fake := computefake.New()
	t.Cleanup(fake.Close)
	fake.SetClock(func() time.Time { return *now })
	if interval > 0 {
		fake.SetRateLimitWindow(computefake.ComputeRateLimits, interval)
	} else {
		fake.SetRateLimits(computefake.ComputeRateLimits)
	}
	c, err := NewClients(context.Background(), option.WithEndpoint(fake.URL), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p, err := New(c, Config{Project: project, Now: func() time.Time { return *now }, RateInterval: interval})
	if err != nil {
		t.Fatal(err)
	}
	return p, fake
}

// TestRateLimitWaitsForTheNextMinute: Compute's 403 rateLimitExceeded is
// RateLimited, with the wait to the start of the next minute of the
// clock, when Compute's synchronized minute fills the group again; or to
// the next interval of a scaled-down one (Config.RateInterval).
func TestRateLimitWaitsForTheNextMinute(t *testing.T) {
	cases := map[string]struct {
		at       time.Time
		interval time.Duration
		want     time.Duration
	}{
		"EarlyInTheMinute": {at: time.Date(2026, 12, 7, 12, 0, 15, 0, time.UTC), want: 45 * time.Second},
		"LastSecond":       {at: time.Date(2026, 12, 7, 12, 0, 59, 500e6, time.UTC), want: 500 * time.Millisecond},
		"OnTheMinute":      {at: time.Date(2026, 12, 7, 12, 1, 0, 0, time.UTC), want: time.Minute},
		"ScaledInterval":   {at: time.Date(2026, 12, 7, 12, 0, 15, 0, time.UTC), interval: 4 * time.Second, want: time.Second},
	}
	type outcome struct {
		Kind provider.Kind
		Wait time.Duration
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			now := c.at
			p, fake := newMeteredProviderEvery(t, &now, c.interval)
			fake.SetRateLimitRemaining(0)
			_, err := p.Get(context.Background(), instanceID(project, "us-central1-a", "absent"))
			got := outcome{provider.KindOf(err), provider.RetryAfter(err)}
			if diff := cmp.Diff(outcome{provider.KindRateLimited, c.want}, got); diff != "" {
				t.Errorf("a Get past the read quota (-want +got):\n%s\n%v", diff, err)
			}
			if n := fake.Calls("rateLimited"); n != 1 {
				t.Errorf("%d requests refused, want 1: the client retried by itself", n)
			}
		})
	}
}

// TestCreateMeetsTheRateLimit: a Create that meets a rate quota at any of
// its requests is RateLimited with the wait to the next minute (the
// clock stands at 12:00:15), one request refused (the Compute client does
// not retry a 403), and the Create after the wait makes the one instance
// (providertest.RunRateLimit).
func TestCreateMeetsTheRateLimit(t *testing.T) {
	providertest.RunRateLimit(t, 45*time.Second, func(t *testing.T, remaining int) providertest.RateLimited {
		now := time.Date(2026, 12, 7, 12, 0, 15, 0, time.UTC)
		p, fake := newMeteredProvider(t, &now)
		if remaining >= 0 {
			fake.SetRateLimitRemaining(remaining)
		}
		// A zone of the region's choosing and a static address: the
		// Create reads the region, reserves the address and waits on it,
		// then inserts the instance, each a request the quota may meet.
		req := request()
		req.Placement.Zone, req.StaticIP = "", true
		return providertest.RateLimited{Provider: p, Request: req,
			Requests:  fake.Requests,
			Refused:   func() int { return fake.Calls("rateLimited") },
			Instances: fake.Instances,
			Advance:   func(d time.Duration) { now = now.Add(d) }}
	})
}
