package pacing_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/pacing"
	"github.com/egress-proxies/egress/internal/pacing/pacingtest"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
)

// TestMemory runs the stores' contract against the in-memory store.
func TestMemory(t *testing.T) {
	pacingtest.Run(t, func(*testing.T) pacing.Store { return pacing.NewMemory() })
}

// t0 starts a minute, so a minute's window starts at it.
var t0 = time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC)

// TestSlotsSpreadInTheWindow: one shard of 4 calls a minute gives its
// calls slots a quarter of a minute apart, books the next window's first
// slot while it is near, and turns away the call whose slot is not,
// with the calls booked before that slot.
func TestSlotsSpreadInTheWindow(t *testing.T) {
	type slot struct {
		Reserved bool
		At       time.Duration // after t0
		Ahead    int
	}
	clk := clock.NewFake(t0)
	p, err := pacing.New(pacing.NewMemory(), pacing.Key{Type: "demo"}, pacing.Rate{Calls: 4, Window: time.Minute}, clk, pacing.Options{Shards: 1, Near: time.Minute, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var got []slot
	var refusedRetry time.Duration
	for range 6 {
		s, err := p.Reserve(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, slot{s.Reserved, s.At.Sub(t0), s.Ahead})
		if !s.Reserved {
			refusedRetry = s.RetryAfter
		}
	}
	want := []slot{
		{true, 0, 0}, {true, 15 * time.Second, 1}, {true, 30 * time.Second, 2}, {true, 45 * time.Second, 3},
		{true, time.Minute, 4},
		// 75 s away, past Near: not booked, so the next asks the same.
		{false, 75 * time.Second, 5},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("slots of six calls at once (-want +got):\n%s", diff)
	}
	// Back when the slot is near (75 s - Near), and up to Near/2 later.
	if refusedRetry < 15*time.Second || refusedRetry >= 45*time.Second {
		t.Errorf("the turned-away call comes back after %v, want within [15s, 45s)", refusedRetry)
	}
}

// TestAPassedSlotGoesNow: a window's slots that passed unused are
// given out at once, and the calls booked are counted in the current
// window's share.
func TestAPassedSlotGoesNow(t *testing.T) {
	clk := clock.NewFake(t0.Add(50 * time.Second))
	m := pacing.NewMemory()
	p, err := pacing.New(m, pacing.Key{Type: "demo"}, pacing.Rate{Calls: 4, Window: time.Minute}, clk, pacing.Options{Shards: 1, Near: time.Second, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	for range 5 {
		s, err := p.Reserve(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		if s.Reserved {
			waits = append(waits, s.At.Sub(clk.Now()))
		}
	}
	if diff := cmp.Diff([]time.Duration{0, 0, 0, 0}, waits); diff != "" {
		t.Errorf("waits of the calls booked 50 s into an unused minute (-want +got):\n%s", diff)
	}
}

// TestNew holds the budget's rules: a rate that is one, and shards that
// each get a call a window.
func TestNew(t *testing.T) {
	cases := map[string]struct {
		reason string
		rate   pacing.Rate
		opts   pacing.Options
		shards int
		err    bool
	}{
		"PerMinute1500": {reason: "1,500 a minute is 25 a second: 50 shards keep each under half a write a second.", rate: pacing.Rate{Calls: 1500, Window: time.Minute}, shards: 50},
		"PerMinute60":   {reason: "60 a minute is 1 a second: 2 shards.", rate: pacing.Rate{Calls: 60, Window: time.Minute}, shards: 2},
		"Small":         {reason: "3 a second would want 6 shards, but each needs a call a window.", rate: pacing.Rate{Calls: 3, Window: time.Second}, shards: 3},
		"Given":         {reason: "Shards given are taken.", rate: pacing.Rate{Calls: 10, Window: time.Minute}, opts: pacing.Options{Shards: 4}, shards: 4},
		"TooManyGiven":  {reason: "More shards than calls a window leave a shard without one.", rate: pacing.Rate{Calls: 3, Window: time.Minute}, opts: pacing.Options{Shards: 4}, err: true},
		"NoRate":        {reason: "No calls is no budget.", rate: pacing.Rate{Window: time.Minute}, err: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := pacing.New(pacing.NewMemory(), pacing.Key{Type: "demo"}, tc.rate, clock.NewFake(t0), tc.opts)
			if (err != nil) != tc.err {
				t.Fatalf("%s\nerror %v, want error %v", tc.reason, err, tc.err)
			}
			if err == nil && p.Shards() != tc.shards {
				t.Errorf("%s\n%d shards, want %d", tc.reason, p.Shards(), tc.shards)
			}
		})
	}
}

// TestRateScaled: a scale keeps at least one call, and 0 turns pacing
// off.
func TestRateScaled(t *testing.T) {
	r := pacing.Rate{Calls: 1500, Window: time.Minute}
	got := []int{r.Scaled(1).Calls, r.Scaled(0.5).Calls, r.Scaled(0.0001).Calls, r.Scaled(0).Calls}
	if diff := cmp.Diff([]int{1500, 750, 1, 0}, got); diff != "" {
		t.Errorf("calls of the rate scaled by 1, 0.5, 0.0001, 0 (-want +got):\n%s", diff)
	}
}

// TestProvider: the decorator lets a call through when its slot is near
// (sleeping until it on the clock), refuses one whose slot is far before
// it reaches the cloud, as rate limited with the queue in its message,
// and lets the free methods through unpaced.
func TestProvider(t *testing.T) {
	clk := clock.NewFake(t0)
	backend := mock.New(mock.Options{Clock: clk})
	p, err := pacing.New(pacing.NewMemory(), pacing.Key{Type: "mock"}, pacing.Rate{Calls: 2, Window: time.Minute}, clk, pacing.Options{Shards: 1, Near: 10 * time.Second, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	paced := pacing.Provider(backend, p, pacing.Calls{Create: 1, Get: 1, Delete: 1}, nil)
	ctx := context.Background()
	req := func(name string) provider.CreateRequest {
		return provider.CreateRequest{Name: name, UID: name, Placement: provider.Placement{Region: "r"}}
	}
	type outcome struct {
		Kind    provider.Kind
		Message string
		Creates int
		Clock   time.Duration
	}
	var got []outcome
	record := func(err error) {
		o := outcome{Kind: provider.KindOf(err), Creates: backend.Calls(mock.MethodCreate), Clock: clk.Now().Sub(t0)}
		var q *pacing.Queued
		if errors.As(err, &q) {
			o.Message = q.Error()
		}
		got = append(got, o)
	}
	_, err = paced.Create(ctx, req("a"))
	record(err)
	// The second slot is half a minute away: queued.
	_, err = paced.Create(ctx, req("b"))
	record(err)
	if ra := provider.RetryAfter(err); ra < 20*time.Second {
		t.Errorf("the queued create is to come back after %v, want at least 20s (its slot 30s away, less Near)", ra)
	}
	// 25 s on, it is near: the call sleeps 5 s and goes.
	clk.Advance(25 * time.Second)
	_, err = paced.Create(ctx, req("b"))
	record(err)
	// ListByTag costs nothing here: never queued.
	_, err = paced.ListByTag(ctx)
	record(err)
	want := []outcome{
		{Creates: 1},
		{Kind: provider.KindRateLimited, Message: "queued: 1 calls ahead", Creates: 1},
		{Creates: 2, Clock: 30 * time.Second},
		{Creates: 2, Clock: 30 * time.Second},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
}

// TestProviderKeepsTheInterfaces: the decorator is a Reconfigurer where
// its backend is one, and reads the console through it; the budget is
// spent by those calls too.
func TestProviderKeepsTheInterfaces(t *testing.T) {
	clk := clock.NewFake(t0)
	backend := mock.New(mock.Options{Clock: clk})
	p, err := pacing.New(pacing.NewMemory(), pacing.Key{Type: "mock"}, pacing.Rate{Calls: 2, Window: time.Minute}, clk, pacing.Options{Shards: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	paced := pacing.Provider(backend, p, pacing.Calls{Reconfigure: 1, Console: 1}, nil)
	r, ok := paced.(provider.Reconfigurer)
	if !ok {
		t.Fatal("the decorator of a Reconfigurer is none")
	}
	if _, ok := provider.AsQuotaReader(paced); ok {
		t.Error("the decorator of a backend without quotas reads quotas")
	}
	if provider.Unwrap(paced) != backend {
		t.Error("Unwrap does not reach the backend")
	}
	ctx := context.Background()
	kinds := []provider.Kind{
		provider.KindOf(func() error { _, err := provider.ReadConsole(ctx, paced, "mock://absent"); return err }()),
		provider.KindOf(r.Reconfigure(ctx, "mock://absent", provider.ReconfigureRequest{UID: "u"})),
	}
	// The console's read takes the slot at 0 and reaches the mock (which
	// finds no such VM); the Reconfigure's, 30 s away, is queued.
	want := []provider.Kind{provider.KindNotFound, provider.KindRateLimited}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("kinds of Console, Reconfigure (-want +got):\n%s", diff)
	}
}

// quotaMock is the mock with quotas to read, as a cloud with a quota API.
type quotaMock struct {
	*mock.Provider
	reads int
}

func (q *quotaMock) Quotas(context.Context, string) (provider.Quotas, error) {
	q.reads++
	return provider.Quotas{Instances: provider.Quota{Limit: 10}}, nil
}

// TestProviderPacesQuotas: the decorator of a backend that reads quotas
// (and reconfigures) reads them too, through the budget: the second read
// of a budget of one a minute is queued and never reaches the backend.
func TestProviderPacesQuotas(t *testing.T) {
	clk := clock.NewFake(t0)
	backend := &quotaMock{Provider: mock.New(mock.Options{Clock: clk})}
	p, err := pacing.New(pacing.NewMemory(), pacing.Key{Type: "demo"}, pacing.Rate{Calls: 1, Window: time.Minute}, clk, pacing.Options{Shards: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	paced := pacing.Provider(backend, p, pacing.Calls{Quotas: 1}, nil)
	q, ok := paced.(provider.QuotaReader)
	if _, reconfigures := paced.(provider.Reconfigurer); !ok || !reconfigures {
		t.Fatalf("the decorator of a backend that reads quotas and reconfigures: QuotaReader %t, Reconfigurer %t; want both", ok, reconfigures)
	}
	var kinds []provider.Kind
	for range 2 {
		_, err := q.Quotas(context.Background(), "r")
		kinds = append(kinds, provider.KindOf(err))
	}
	if diff := cmp.Diff([]provider.Kind{"", provider.KindRateLimited}, kinds); diff != "" || backend.reads != 1 {
		t.Errorf("kinds of two reads (-want +got):\n%s\nreads that reached the backend: %d, want 1", diff, backend.reads)
	}
}

// slowStore is a store whose transactions take their time: before
// (and after, when afterwards) each Update it moves the clock on by the
// next of delays, as a contended or slow Firestore would.
type slowStore struct {
	inner      *pacing.Memory
	clk        *clock.Fake
	delays     []time.Duration
	afterwards bool
}

func (s *slowStore) Update(ctx context.Context, shard pacing.Shard, change func(pacing.Counts) (pacing.Counts, bool)) error {
	var d time.Duration
	if len(s.delays) > 0 {
		d, s.delays = s.delays[0], s.delays[1:]
	}
	if !s.afterwards {
		s.clk.Advance(d)
	}
	err := s.inner.Update(ctx, shard, change)
	if s.afterwards {
		s.clk.Advance(d)
	}
	return err
}

// TestSlotsAreInTheWindowTheCallGoesIn: a call's slot is booked in the
// window it goes in, so that no window of the cloud counts more than the
// rate: a reservation whose transaction ends in a later window than it
// began books that later window (the time is read in the transaction),
// and a call near a window's end is booked into the next window, not the
// last moment of this one (the guard), where it would reach the cloud
// after the window ended. Before the fix, both were booked in the
// earlier window and called in the later one.
func TestSlotsAreInTheWindowTheCallGoesIn(t *testing.T) {
	cases := map[string]struct {
		reason string
		start  time.Duration // after t0, a minute's start
		delay  time.Duration // the transaction's
		// want is when the slot is, after t0.
		want time.Duration
	}{
		"SlowTransaction": {reason: "begun at 59.9 s, the transaction ends at 60.4 s: the call goes in the second minute, booked there",
			start: 59*time.Second + 900*time.Millisecond, delay: 500 * time.Millisecond, want: 60*time.Second + 400*time.Millisecond},
		"LastMoment": {reason: "at 59.9 s, within the guard of the minute's end: the next minute's first slot",
			start: 59*time.Second + 900*time.Millisecond, want: time.Minute},
		"InTime": {reason: "at 59 s, a passed slot of the minute goes at once",
			start: 59 * time.Second, want: 59 * time.Second},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clock.NewFake(t0.Add(c.start))
			store := &slowStore{inner: pacing.NewMemory(), clk: clk, delays: []time.Duration{c.delay}}
			p, err := pacing.New(store, pacing.Key{Type: "gcp"}, pacing.Rate{Calls: 4, Window: time.Minute}, clk, pacing.Options{Shards: 1, Near: time.Minute, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			s, err := p.Reserve(context.Background(), 1)
			if err != nil {
				t.Fatal(err)
			}
			type slot struct {
				Reserved bool
				At       time.Duration
				// Window is the slot's window counted from t0's.
				Window int64
			}
			got := slot{s.Reserved, s.At.Sub(t0), s.Window - t0.UnixNano()/int64(time.Minute)}
			want := slot{true, c.want, int64(c.want / time.Minute)}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", c.reason, diff)
			}
		})
	}
}

// TestALostSlotIsBookedAgain: a slot whose window ended before its call
// could go (the store committed late) is not used: the decorator books
// again, in the window the call goes in, and the call goes once.
func TestALostSlotIsBookedAgain(t *testing.T) {
	clk := clock.NewFake(t0.Add(59 * time.Second))
	backend := mock.New(mock.Options{Clock: clk})
	mem := pacing.NewMemory()
	// The first transaction commits 1.5 s after it read: past the
	// minute's end.
	store := &slowStore{inner: mem, clk: clk, delays: []time.Duration{1500 * time.Millisecond}, afterwards: true}
	p, err := pacing.New(store, pacing.Key{Type: "mock"}, pacing.Rate{Calls: 4, Window: time.Minute}, clk, pacing.Options{Shards: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	paced := pacing.Provider(backend, p, pacing.Calls{Create: 1}, nil)
	_, err = paced.Create(context.Background(), provider.CreateRequest{Name: "a", UID: "a", Placement: provider.Placement{Region: "r"}})
	type outcome struct {
		Kind           provider.Kind
		Creates, Books int
	}
	got := outcome{provider.KindOf(err), backend.Calls(mock.MethodCreate), mem.Writes()}
	if diff := cmp.Diff(outcome{Creates: 1, Books: 2}, got); diff != "" {
		t.Errorf("a create whose first slot passed before it could go (-want +got):\n%s", diff)
	}
}

// TestTheEarliestOfTheShardsAsked: a caller whose first shard has only a
// later slot asks others and books the earliest, whichever shard it
// last booked in (its seed decides): of two shards of 4 calls a minute
// (slots 30 s apart), shard 0 has its next slot in the next minute (its
// share spent) or 30 s on (its first slot taken), shard 1 now. With the
// first slot taken, a pacer that started in shard 0 booked that slot 30 s
// on before slots had to be due to be booked at once.
func TestTheEarliestOfTheShardsAsked(t *testing.T) {
	for _, taken := range []int{2, 1} {
		for seed := range uint64(8) {
			clk := clock.NewFake(t0)
			mem := pacing.NewMemory()
			if err := mem.Update(context.Background(), pacing.Shard{Key: pacing.Key{Type: "gcp"}, Index: 0}, func(pacing.Counts) (pacing.Counts, bool) {
				return pacing.Counts{t0.UnixNano() / int64(time.Minute): taken}, true
			}); err != nil {
				t.Fatal(err)
			}
			p, err := pacing.New(mem, pacing.Key{Type: "gcp"}, pacing.Rate{Calls: 4, Window: time.Minute}, clk, pacing.Options{Shards: 2, Near: 2 * time.Minute, Seed: seed + 1})
			if err != nil {
				t.Fatal(err)
			}
			s, err := p.Reserve(context.Background(), 1)
			if err != nil {
				t.Fatal(err)
			}
			type slot struct {
				Reserved bool
				Shard    int
				At       time.Duration
			}
			if diff := cmp.Diff(slot{true, 1, 0}, slot{s.Reserved, s.Shard, s.At.Sub(t0)}); diff != "" {
				t.Errorf("shard 0 with %d of its 2 slots taken, seed %d: the slot (-want +got):\n%s", taken, seed+1, diff)
			}
		}
	}
}

// countingStore counts the Updates in it at once, each held a moment.
type countingStore struct {
	inner    *pacing.Memory
	mu       sync.Mutex
	now, max int
}

func (s *countingStore) Update(ctx context.Context, shard pacing.Shard, change func(pacing.Counts) (pacing.Counts, bool)) error {
	s.mu.Lock()
	s.now++
	s.max = max(s.max, s.now)
	s.mu.Unlock()
	time.Sleep(time.Millisecond)
	defer func() {
		s.mu.Lock()
		s.now--
		s.mu.Unlock()
	}()
	return s.inner.Update(ctx, shard, change)
}

// TestInFlight: a pacer has at most Options.InFlight reservations in
// the store at once, however many of its callers ask together: a burst
// of one process's callers would otherwise contend in the store's
// transactions with each other and with the other processes', and the
// store's client backs off a second and more on each contention.
func TestInFlight(t *testing.T) {
	for _, inFlight := range []int{1, 3} {
		store := &countingStore{inner: pacing.NewMemory()}
		p, err := pacing.New(store, pacing.Key{Type: "gcp"}, pacing.Rate{Calls: 100, Window: time.Minute}, clock.NewFake(t0), pacing.Options{Shards: 10, InFlight: inFlight, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				if _, err := p.Reserve(context.Background(), 1); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if store.max > inFlight {
			t.Errorf("InFlight %d: %d reservations in the store at once", inFlight, store.max)
		}
	}
}

// racingStore books a call in shard race of the memory store before the
// pacer's second read of it: another instance that took the slot the
// pacer noted there, between its asking and its booking.
type racingStore struct {
	*pacing.Memory
	race  int
	reads int
}

func (s *racingStore) Update(ctx context.Context, shard pacing.Shard, change func(pacing.Counts) (pacing.Counts, bool)) error {
	if shard.Index == s.race {
		if s.reads++; s.reads == 2 {
			if err := s.Memory.Update(ctx, shard, func(c pacing.Counts) (pacing.Counts, bool) {
				c[t0.UnixNano()/int64(time.Minute)]++
				return c, true
			}); err != nil {
				return err
			}
		}
	}
	return s.Memory.Update(ctx, shard, change)
}

// TestANotedSlotTakenSinceAsksAgain: when the slot a reservation noted
// as the earliest is taken before it books it, it does not book that
// shard's next slot, a spacing later, but asks the shards again and
// books the earliest there is.
func TestANotedSlotTakenSinceAsksAgain(t *testing.T) {
	minute := t0.UnixNano() / int64(time.Minute)
	for seed := range uint64(8) {
		clk := clock.NewFake(t0.Add(time.Second))
		// Three shards of 2 calls a minute (slots at 0 s and 30 s): the
		// first slot of each is taken, so every shard's next is at 30 s.
		// Then the noted shard's 30 s slot goes to another instance.
		store := &racingStore{Memory: pacing.NewMemory(), race: -1}
		for s := range 3 {
			if err := store.Memory.Update(context.Background(), pacing.Shard{Key: pacing.Key{Type: "gcp"}, Index: s}, func(pacing.Counts) (pacing.Counts, bool) {
				return pacing.Counts{minute: 1}, true
			}); err != nil {
				t.Fatal(err)
			}
		}
		p, err := pacing.New(store, pacing.Key{Type: "gcp"}, pacing.Rate{Calls: 6, Window: time.Minute}, clk, pacing.Options{Shards: 3, Near: 2 * time.Minute, Seed: seed + 1})
		if err != nil {
			t.Fatal(err)
		}
		// The first shard asked, the pacer's home, is the one noted (every
		// shard's slot is alike) and taken between: a pacer of the same
		// seed books its home on an empty store.
		probe, err := pacing.New(pacing.NewMemory(), pacing.Key{Type: "gcp"}, pacing.Rate{Calls: 6, Window: time.Minute}, clk, pacing.Options{Shards: 3, Seed: seed + 1})
		if err != nil {
			t.Fatal(err)
		}
		home, err := probe.Reserve(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		store.race = home.Shard
		got, err := p.Reserve(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		type slot struct {
			Reserved bool
			At       time.Duration
			Other    bool
		}
		if diff := cmp.Diff(slot{true, 30 * time.Second, true}, slot{got.Reserved, got.At.Sub(t0), got.Shard != store.race}); diff != "" {
			t.Errorf("seed %d: the call after its noted slot (shard %d) was taken (-want +got):\n%s", seed+1, store.race, diff)
		}
	}
}
