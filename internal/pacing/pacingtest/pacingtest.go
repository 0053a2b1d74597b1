// Package pacingtest is the behaviour every store of the budgets
// (pacing.Store) must have: Firestore's against the emulator
// (internal/store) and the in-memory one of the simulation and the unit
// tests (pacing.Memory) run the same operations through Run and must
// agree, so that what the simulation proves of the budget holds for the
// fleet's.
package pacingtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/pacing"
)

// Instances is how many function instances the concurrent cases play,
// each a goroutine with a Pacer of its own over the one store.
const Instances = 6

// Run runs the contract against the stores newStore makes: each case
// gets a new, empty one.
func Run(t *testing.T, newStore func(t *testing.T) pacing.Store) {
	t.Run("Shards", func(t *testing.T) { shards(t, newStore) })
	t.Run("NoLostUpdate", func(t *testing.T) { noLostUpdate(t, newStore(t)) })
	t.Run("WindowsFillAndHold", func(t *testing.T) { WindowsFillAndHold(t, same(newStore(t))) })
	t.Run("CostsNeverOverfill", func(t *testing.T) { costsNeverOverfill(t, same(newStore(t))) })
}

// same is Instances times s: instances of one process.
func same(s pacing.Store) []pacing.Store {
	out := make([]pacing.Store, Instances)
	for i := range out {
		out[i] = s
	}
	return out
}

// shards: a shard reads as written, a change that writes nothing leaves
// it, and shards of other indexes, types and accounts are apart.
func shards(t *testing.T, newStore func(t *testing.T) pacing.Store) {
	ctx := context.Background()
	a := pacing.Shard{Key: pacing.Key{Type: "demo"}, Index: 0}
	others := []pacing.Shard{
		{Key: pacing.Key{Type: "demo"}, Index: 1},
		{Key: pacing.Key{Type: "demo", Account: "second"}, Index: 0},
		{Key: pacing.Key{Type: "other"}, Index: 0},
	}
	cases := map[string]struct {
		reason string
		writes []pacing.Counts
		want   pacing.Counts
	}{
		"Empty":     {reason: "A shard never written reads as empty.", want: pacing.Counts{}},
		"Written":   {reason: "A shard reads as last written.", writes: []pacing.Counts{{100: 3, 101: 1}}, want: pacing.Counts{100: 3, 101: 1}},
		"Rewritten": {reason: "A write replaces the counts: a pruned window is gone.", writes: []pacing.Counts{{100: 3, 101: 1}, {101: 2, 102: 5}}, want: pacing.Counts{101: 2, 102: 5}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := newStore(t)
			for _, w := range tc.writes {
				if err := s.Update(ctx, a, func(pacing.Counts) (pacing.Counts, bool) { return w, true }); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Update(ctx, a, func(c pacing.Counts) (pacing.Counts, bool) { return pacing.Counts{1: 1}, false }); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, read(t, s, a)); diff != "" {
				t.Errorf("%s\ncounts (-want +got):\n%s", tc.reason, diff)
			}
			for _, o := range others {
				if got := read(t, s, o); len(got) != 0 {
					t.Errorf("%s\nshard %+v reads %v after writes of shard %+v alone, want it empty", tc.reason, o, got, a)
				}
			}
		})
	}
}

// noLostUpdate: Instances goroutines each add one to the same window of
// the same shard, many times: the count is every addition, as a store
// whose read and write are not one transaction would not make it.
func noLostUpdate(t *testing.T, s pacing.Store) {
	const each = 8
	shard := pacing.Shard{Key: pacing.Key{Type: "demo"}}
	var wg sync.WaitGroup
	errs := make(chan error, Instances)
	for range Instances {
		wg.Go(func() {
			for range each {
				if err := s.Update(context.Background(), shard, func(c pacing.Counts) (pacing.Counts, bool) {
					c[7]++
					return c, true
				}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if diff := cmp.Diff(pacing.Counts{7: Instances * each}, read(t, s, shard)); diff != "" {
		t.Errorf("counts after %d instances added %d each (-want +got):\n%s", Instances, each, diff)
	}
}

// t0 is the start of a minute: window starts are aligned to the epoch.
var t0 = time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC)

// WindowsFillAndHold: Instances instances, each with its own pacer over
// its store of the one database (stores, Instances of them: one store
// shared, or one client each as the fleet's processes have), reserve one call at a time at a scaled-down rate (24 a
// minute in 4 shards), every slot of 3 windows near, until the budget
// turns each away: every window holds exactly the rate, never more, and
// each instance is turned away once.
func WindowsFillAndHold(t *testing.T, stores []pacing.Store) {
	rate := pacing.Rate{Calls: 24, Window: time.Minute}
	opts := pacing.Options{Shards: 4, MaxAhead: 2, Near: 3 * time.Minute}
	booked, refused := reserveUntilFull(t, stores, rate, opts, 1)
	cur := t0.UnixNano() / int64(time.Minute)
	want := map[int64]int{cur: 24, cur + 1: 24, cur + 2: 24}
	if diff := cmp.Diff(want, windows(t, stores[0], pacing.Key{Type: "demo"}, opts.Shards)); diff != "" {
		t.Errorf("calls booked by window over all shards (-want +got):\n%s", diff)
	}
	if booked != 72 || refused != Instances {
		t.Errorf("%d reservations booked and %d turned away, want 72 (3 windows of 24) and %d (one per instance)", booked, refused, Instances)
	}
}

// costsNeverOverfill: calls of cost 3 in shares of 10 (30 a minute in 3
// shards) book 9 of each share, never the 10th and past it.
func costsNeverOverfill(t *testing.T, stores []pacing.Store) {
	rate := pacing.Rate{Calls: 30, Window: time.Minute}
	opts := pacing.Options{Shards: 3, MaxAhead: 1, Near: 2 * time.Minute}
	booked, _ := reserveUntilFull(t, stores, rate, opts, 3)
	cur := t0.UnixNano() / int64(time.Minute)
	want := map[int64]int{cur: 27, cur + 1: 27}
	if diff := cmp.Diff(want, windows(t, stores[0], pacing.Key{Type: "demo"}, opts.Shards)); diff != "" {
		t.Errorf("calls booked by window over all shards (-want +got):\n%s", diff)
	}
	if booked != 18 {
		t.Errorf("%d reservations of 3 calls booked, want 18 (3 a share, 3 shards, 2 windows)", booked)
	}
}

// reserveUntilFull plays Instances instances reserving cost calls until
// each is turned away, and counts the bookings and the refusals.
func reserveUntilFull(t *testing.T, stores []pacing.Store, rate pacing.Rate, opts pacing.Options, cost int) (booked, refused int) {
	t.Helper()
	clk := clock.NewFake(t0)
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	for i := range Instances {
		opts.Seed = uint64(i + 1)
		p, err := pacing.New(stores[i], pacing.Key{Type: "demo"}, rate, clk, opts)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for {
				slot, err := p.Reserve(context.Background(), cost)
				mu.Lock()
				switch {
				case err != nil:
					errs = append(errs, err)
				case slot.Reserved:
					booked++
				default:
					refused++
				}
				mu.Unlock()
				if err != nil || !slot.Reserved {
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	return booked, refused
}

// windows sums the calls booked in each window over key's shards.
func windows(t *testing.T, s pacing.Store, key pacing.Key, shards int) map[int64]int {
	t.Helper()
	out := map[int64]int{}
	for i := range shards {
		for w, n := range read(t, s, pacing.Shard{Key: key, Index: i}) {
			out[w] += n
		}
	}
	return out
}

// read is a shard's counts.
func read(t *testing.T, s pacing.Store, shard pacing.Shard) pacing.Counts {
	t.Helper()
	var got pacing.Counts
	if err := s.Update(context.Background(), shard, func(c pacing.Counts) (pacing.Counts, bool) {
		got = c
		return nil, false
	}); err != nil {
		t.Fatalf("reading shard %+v: %v", shard, err)
	}
	return got
}
