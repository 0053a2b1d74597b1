package store_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/egress-proxies/egress/emulators/emulatortest"
	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/pacing"
	"github.com/egress-proxies/egress/internal/pacing/pacingtest"
	"github.com/egress-proxies/egress/internal/store"
)

// TestFirestorePacing runs the budgets' store contract against the
// Firestore emulator, one project per case.
func TestFirestorePacing(t *testing.T) {
	emulatortest.Firestore(t)
	pacingtest.Run(t, func(t *testing.T) pacing.Store {
		return store.NewPacing(client(t, emulatortest.ProjectID(t)))
	})
}

// TestFirestorePacingAcrossInstances: function instances each with a
// client of their own (so that no process's queue orders them, and
// only Firestore's transactions do) fill the windows of a scaled-down
// budget exactly, and no window holds more.
func TestFirestorePacingAcrossInstances(t *testing.T) {
	emulatortest.Firestore(t)
	project := emulatortest.ProjectID(t)
	stores := make([]pacing.Store, pacingtest.Instances)
	for i := range stores {
		stores[i] = store.NewPacing(client(t, project))
	}
	pacingtest.WindowsFillAndHold(t, stores)
}

func client(t *testing.T, project string) *firestore.Client {
	t.Helper()
	c, err := firestore.NewClient(context.Background(), project)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// BenchmarkFirestorePacing measures reservations in a budget of
// Compute's default rate (1,500 a minute, so 50 shards) by 1 and by 8
// instances, each with a client of its own and at least two requests at
// once (GOMAXPROCS goroutines in all), against the emulator: how
// many calls a second the store lets through, which must be above the
// rate (25 a second) for the budget, not the store, to be what paces.
func BenchmarkFirestorePacing(b *testing.B) {
	emulatortest.Firestore(b)
	for _, instances := range []int{1, 8} {
		b.Run(fmt.Sprintf("Instances%d", instances), func(b *testing.B) { benchPacing(b, instances) })
	}
}

func benchPacing(b *testing.B, instances int) {
	project := emulatortest.ProjectID(b)
	clk := clock.NewFake(time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC))
	rate := pacing.Rate{Calls: 1500, Window: time.Minute}
	pacers := make([]*pacing.Pacer, instances)
	for i := range instances {
		c, err := firestore.NewClient(context.Background(), project)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		// Every slot of the next hour is near: the benchmark books, it
		// never waits.
		p, err := pacing.New(store.NewPacing(c), pacing.Key{Type: "demo"}, rate, clk, pacing.Options{MaxAhead: 60, Near: time.Hour, Seed: uint64(i + 1)})
		if err != nil {
			b.Fatal(err)
		}
		pacers[i] = p
	}
	b.SetParallelism((instances + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		// The goroutines (at least GOMAXPROCS) are the instances'
		// concurrent requests, round the instances.
		p := pacers[int(next.Add(1))%instances]
		for pb.Next() {
			if s, err := p.Reserve(context.Background(), 1); err != nil || !s.Reserved {
				b.Errorf("reserve: %+v, %v", s, err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reservations/s")
}
