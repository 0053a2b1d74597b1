package pacing

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/egress-proxies/egress/internal/clock"
)

// Rate is an account's budget as its cloud documents it: Calls in each
// Window. A cloud that meters by token bucket declares a short window
// whose calls its bucket refills in that time, so that a window spent at
// its start is never more than the bucket holds.
type Rate struct {
	Calls  int
	Window time.Duration
	// Source is the address of the cloud's page that gives the limit.
	Source string
}

// IsZero reports whether r is no budget (a cloud that publishes no limit,
// the mock): its calls are not paced.
func (r Rate) IsZero() bool { return r.Calls <= 0 || r.Window <= 0 }

// Scaled is r with f times its calls (rounded down, at least 1), for a
// deployment that leaves part of an account's limit to other callers, or
// a test against a fake with a scaled-down limit; f <= 0 is no budget.
func (r Rate) Scaled(f float64) Rate {
	if f <= 0 || r.IsZero() {
		return Rate{}
	}
	r.Calls = max(1, int(math.Floor(float64(r.Calls)*f)))
	return r
}

func (r Rate) String() string { return fmt.Sprintf("%d calls per %s", r.Calls, r.Window) }

// Calls is what each provider method costs, in the cloud's requests, as
// the cloud's plugin declares it (and a test of the cloud's holds to what
// its fake counted). 0 is a method that reaches no cloud API: not paced.
type Calls struct {
	Create, Get, Delete, ListByTag int
	// Reconfigure, Console and Quotas are the optional interfaces'
	// methods (provider.Reconfigurer, ConsoleReader, QuotaReader).
	Reconfigure, Console, Quotas int
}

// Key names a budget: a provider type and one of its accounts. Account
// "" is the deployment's default account (what PROVIDERS and the cloud's
// variables configure).
type Key struct {
	Type, Account string
}

func (k Key) String() string {
	if k.Account == "" {
		return k.Type + " (default account)"
	}
	return k.Type + " account " + k.Account
}

// Defaults of Options.
const (
	// DefaultNear is the longest a call sleeps for its slot: the
	// reconciler's longest backoff (reconcile.DefaultMaxBackoff), a wait
	// its run would take anyway.
	DefaultNear = 10 * time.Second
	// DefaultMaxAhead is how many windows past the current one a slot
	// may be found in.
	DefaultMaxAhead = 10
	// DefaultProbes is how many shards that have room only later are
	// asked at most before the earliest of them is booked, or the call is
	// told to come back: each costs a read. Most reservations ask fewer:
	// the asking stops when no shard left had a slot earlier than the
	// earliest noted when the pacer last read it.
	DefaultProbes = 8
	// MaxShardWritesPerSecond is the writes a second a shard sees at the
	// account's full rate, at most (ShardsFor): Firestore sustains about
	// one a document.
	MaxShardWritesPerSecond = 0.5
	// DefaultGuard is the end of a window in which no call is booked
	// into it (at most an eighth of the window): the update's
	// commit and the request's way to the cloud take that long at most,
	// and a call booked later would reach the cloud in the next window,
	// counted there over that window's full share.
	DefaultGuard = 250 * time.Millisecond
	// DefaultInFlight is how many reservations of one process are in the
	// store at once.
	DefaultInFlight = 1
)

// Options tune a Pacer; zero fields take the defaults.
type Options struct {
	// Shards is how many shard documents the budget is kept in
	// (ShardsFor the rate when 0). Every instance of the fleet must use
	// the same number: the shares of a window are cut by it.
	Shards int
	// MaxAhead, Near, Probes and Guard: DefaultMaxAhead, DefaultNear,
	// DefaultProbes, DefaultGuard (at most an eighth of the window).
	MaxAhead int
	Near     time.Duration
	Probes   int
	Guard    time.Duration
	// InFlight bounds the reservations of this pacer (this process) in
	// the store at once: DefaultInFlight.
	InFlight int
	// Seed seeds the choice of shards and the spread of retries, for a
	// test that replays; 0 is a random seed.
	Seed uint64
}

// ShardsFor is how many shards keep r's budget so that none is written
// more than MaxShardWritesPerSecond at the full rate, and each has at
// least one call a window.
func ShardsFor(r Rate) int {
	if r.IsZero() {
		return 1
	}
	perSecond := float64(r.Calls) / r.Window.Seconds()
	return max(1, min(r.Calls, int(math.Ceil(perSecond/MaxShardWritesPerSecond))))
}

// Pacer is one budget (Key) at its Rate, kept in a Store: what every
// provider call of the account reserves before it goes. It is safe for
// concurrent use; instances that share the store share the budget.
type Pacer struct {
	store    Store
	key      Key
	rate     Rate
	clock    clock.Clock
	shards   int
	maxAhead int
	near     time.Duration
	probes   int
	guard    time.Duration

	// gate bounds this pacer's updates in flight (Options.InFlight).
	gate chan struct{}

	mu  sync.Mutex
	rnd *rand.Rand
	// home is the shard the pacer last booked in, tried first.
	home int
	// seen are the shards' counts as this pacer last read them, to ask
	// first the shards that had room earliest (order).
	seen map[int]Counts
}

// New is the pacer of key's budget at rate in store.
func New(store Store, key Key, rate Rate, clk clock.Clock, opts Options) (*Pacer, error) {
	if rate.IsZero() {
		return nil, fmt.Errorf("pacing %s: the rate %s is no budget: want calls > 0 in a window > 0", key, rate)
	}
	p := &Pacer{store: store, key: key, rate: rate, clock: clk, shards: opts.Shards, maxAhead: opts.MaxAhead, near: opts.Near, probes: opts.Probes, guard: opts.Guard}
	if p.shards == 0 {
		p.shards = ShardsFor(rate)
	}
	if p.shards < 1 || p.shards > rate.Calls {
		return nil, fmt.Errorf("pacing %s: %d shards for %s: want 1 to %d, so that each shard has a call a window", key, p.shards, rate, rate.Calls)
	}
	if p.maxAhead <= 0 {
		p.maxAhead = DefaultMaxAhead
	}
	if p.near <= 0 {
		p.near = DefaultNear
	}
	if p.probes <= 0 {
		p.probes = DefaultProbes
	}
	if p.guard <= 0 {
		p.guard = DefaultGuard
	}
	p.guard = min(p.guard, rate.Window/8)
	inFlight := opts.InFlight
	if inFlight <= 0 {
		inFlight = DefaultInFlight
	}
	p.gate = make(chan struct{}, inFlight)

	seed := opts.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	p.rnd = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	p.home = p.rnd.IntN(p.shards)
	p.seen = map[int]Counts{}
	return p, nil
}

// Key is the budget's key.
func (p *Pacer) Key() Key { return p.key }

// Rate is the budget's rate.
func (p *Pacer) Rate() Rate { return p.rate }

// Shards is how many shards keep the budget.
func (p *Pacer) Shards() int { return p.shards }

// Near is the longest a reserved call waits for its slot.
func (p *Pacer) Near() time.Duration { return p.near }

// Slot is the answer to a reservation.
type Slot struct {
	// Reserved says the slot is booked: the call goes at At (now, when
	// its slot passed already). Otherwise the call must not go, and
	// comes back after RetryAfter.
	Reserved   bool
	At         time.Time
	RetryAfter time.Duration
	// Ahead is how many calls of the account are booked before the
	// slot: the shard's, times the shards.
	Ahead int
	// Window and Shard say where the slot is (Window is the window's
	// index since the Unix epoch); Shard is -1 when every shard was
	// full.
	Window int64
	Shard  int
}

// share is shard s's part of a window's calls: the rate cut in equal
// parts, the remainder one each to the first shards, so that the shares
// add up to the rate exactly.
func (p *Pacer) share(s int) int {
	n := p.rate.Calls / p.shards
	if s < p.rate.Calls%p.shards {
		n++
	}
	return n
}

// window is the index of the window t is in.
func (p *Pacer) window(t time.Time) int64 {
	w := int64(p.rate.Window)
	n := t.UnixNano()
	if n < 0 {
		return (n - w + 1) / w
	}
	return n / w
}

// start is when window w starts.
func (p *Pacer) start(w int64) time.Time { return time.Unix(0, w*int64(p.rate.Window)) }

// slotAt is the time of position k of a window of share calls.
func (p *Pacer) slotAt(w int64, k, share int) time.Time {
	return p.start(w).Add(time.Duration(int64(k) * int64(p.rate.Window) / int64(share)))
}

// Queued is the error of a call that was not let through: the budget's
// calls ahead of it fill the time until RetryAfter. Its text is what a
// user reads in the proxy's status.
type Queued struct {
	Key   Key
	Ahead int
}

func (q *Queued) Error() string { return fmt.Sprintf("queued: %d calls ahead", q.Ahead) }

// QueuedAhead is the calls ahead, for a caller that tells a queued call
// by this method without importing the package (the reconciler).
func (q *Queued) QueuedAhead() int { return q.Ahead }
