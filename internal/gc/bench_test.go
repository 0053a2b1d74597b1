package gc_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/gc"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
)

// staticProvider lists a fixed set of instances and deletes nothing, so the
// benchmark measures the collector, not a provider.
type staticProvider struct {
	provider.Provider
	instances []provider.Instance
}

func (s staticProvider) ListByTag(context.Context) ([]provider.Instance, error) {
	return s.instances, nil
}

func (staticProvider) Delete(context.Context, string) error { return nil }

type staticStore struct{ uids map[string]proxy.Claim }

func (s staticStore) LiveUIDs(context.Context) (map[string]proxy.Claim, error) { return s.uids, nil }
func (staticStore) Stalled(context.Context, time.Time, int) ([]proxy.Key, error) {
	return nil, nil
}

// BenchmarkCollect100k runs the collector over 100,000 instances against
// 100,000 live uids: 98% claimed, 1% young orphans, 1% old orphans deleted.
func BenchmarkCollect100k(b *testing.B) {
	const n = 100_000
	now := epoch
	instances := make([]provider.Instance, n)
	uids := make(map[string]proxy.Claim, n)
	for i := range n {
		uid := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		inst := provider.Instance{ID: "mock://" + provider.NameFromUID(uid), UID: uid, State: provider.StateRunning, CreatedAt: now.Add(-time.Hour), Deployment: provider.DefaultDeployment}
		switch {
		case i%100 == 0: // old orphan
		case i%100 == 1: // young orphan
			inst.CreatedAt = now.Add(-time.Minute)
		default:
			uids[uid] = proxy.Claim{Key: proxy.Key{Namespace: "ns", Name: fmt.Sprint("p", i)}, Phase: proxy.PhaseReady}
		}
		instances[i] = inst
	}
	// Keep the uid set at 100,000: the rest are documents without a VM yet.
	for i := n; len(uids) < n; i++ {
		uids[fmt.Sprintf("00000000-0000-4000-8000-%012d", i)] = proxy.Claim{Key: proxy.Key{Namespace: "ns", Name: fmt.Sprint("p", i)}, Phase: proxy.PhaseCreating}
	}
	c := gc.New(providersOf(b, map[string]provider.Provider{"mock": staticProvider{instances: instances}}),
		staticStore{uids: uids}, &fakeRequeuer{}, clock.NewFake(now), slog.New(slog.DiscardHandler), gc.Options{MaxDeletes: n / 100})

	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		report, err := c.Run(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if s := report.Providers[0]; s.Scanned != n || s.Deleted != n/100 || s.TooYoung != n/100 {
			b.Fatalf("summary %+v, want %d scanned, %d deleted, %d too young", s, n, n/100, n/100)
		}
	}
}
