package pacing

import (
	"context"
	"errors"
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
	// asked before the call is told to come back: each costs a
	// transaction's read.
	DefaultProbes = 3
	// MaxShardWritesPerSecond is the writes a second a shard sees at the
	// account's full rate, at most (ShardsFor): Firestore sustains about
	// one a document.
	MaxShardWritesPerSecond = 0.5
	// DefaultGuard is the end of a window in which no call is booked
	// into it (at most an eighth of the window): the transaction's
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

	// gate bounds this pacer's transactions in flight (Options.InFlight).
	gate chan struct{}

	mu  sync.Mutex
	rnd *rand.Rand
	// home is the shard the pacer last booked in, tried first.
	home int
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
} // Reserve books cost calls of the budget: the earliest slot with room in
// a shard, when it is near (within Options.Near); otherwise it books
// nothing and says when to come back. A cost larger than a shard's share
// books the whole share of a window. The error is the store's.
//
// The time is read in each try of each shard's transaction, not once
// for the reservation: a reservation that met contention, or asked
// several shards, may end in a later window than it began in, and a slot
// booked in the window it began in would then be called in the next one,
// over that window's share. For the same reason no slot is booked in the
// last moment of its window (Options.Guard), and a slot whose window
// ended before its call could go is lost (Lost), the call booked again.
func (p *Pacer) Reserve(ctx context.Context, cost int) (Slot, error) {
	select {
	case p.gate <- struct{}{}:
	case <-ctx.Done():
		return Slot{}, fmt.Errorf("pacing %s: waiting for this process's reservations before it: %w", p.key, ctx.Err())
	}
	defer func() { <-p.gate }()
	now := p.clock.Now()
	// The shard this pacer last booked in first, then the others from a
	// random one on: an instance keeps to a shard while it has room, so
	// that instances seldom meet on one (a transaction that meets
	// another's waits, or is aborted and tried again, seconds on the
	// emulator), and moves to another when it is full or held.
	home, start := p.pick()
	var (
		best   *Slot
		probed int
	)
	// First, a shard whose earliest slot is early: within one slot's
	// spacing of now, as early as a shard's slots come. The shards are
	// filled unevenly by callers that each take one at random, and a
	// caller that took the first shard with a near slot would be booked
	// seconds after slots of other shards that stay free: a burst would
	// end later than its calls need. So a later slot is only noted, and
	// up to Probes shards are asked; then the earliest noted is booked.
	for i, j := 0, 0; i < p.shards; i++ {
		s := home
		if i > 0 {
			if s = (start + j) % p.shards; s == home {
				j++
				s = (start + j) % p.shards
			}
			j++
		}
		got, err := p.book(ctx, s, cost, func(at, now time.Time) bool {
			return !at.After(now.Add(min(p.near, p.rate.Window/time.Duration(p.share(s)))))
		})
		if errors.Is(err, ErrContended) && i < p.shards-1 {
			// Other instances hold this shard: ask the next.
			continue
		}
		if err != nil {
			return Slot{}, err
		}
		now = got.now
		if got.Reserved {
			p.setHome(s)
			return got.Slot, nil
		}
		if got.found {
			if best == nil || got.At.Before(best.At) {
				g := got.Slot
				best = &g
			}
			if probed++; probed >= p.probes {
				break
			}
		}
	}
	if best == nil {
		// Every shard is full up to MaxAhead windows: come back when the
		// window after them starts to be near.
		cur := p.window(now)
		at := p.start(cur + int64(p.maxAhead) + 1)
		return Slot{At: at, Window: cur + int64(p.maxAhead) + 1, Shard: -1, Ahead: p.rate.Calls * (p.maxAhead + 1), RetryAfter: p.retryAfter(now, at)}, nil
	}
	if best.At.Sub(now) <= p.near {
		// The earliest noted is near: book it (or the shard's earliest
		// now, which another caller may have moved on since).
		got, err := p.book(ctx, best.Shard, cost, func(at, now time.Time) bool { return at.Sub(now) <= p.near })
		switch {
		case errors.Is(err, ErrContended):
			// Held by others since it was asked: the caller comes back
			// for the slot noted.
		case err != nil:
			return Slot{}, err
		case got.Reserved:
			p.setHome(best.Shard)
			return got.Slot, nil
		default:
			now = got.now
			if got.found {
				best = &got.Slot
			}
		}
	}
	best.RetryAfter = p.retryAfter(now, best.At)
	return *best, nil
}

// booking is a shard's answer to a reservation: the slot, booked or
// not; found, whether the shard has room within MaxAhead; now, the time
// the transaction read.
type booking struct {
	Slot
	found bool
	now   time.Time
}

// book books cost calls in shard s, in one transaction: its earliest
// slot, when accept takes it; else nothing, and the slot it would have
// been.
func (p *Pacer) book(ctx context.Context, s, cost int, accept func(at, now time.Time) bool) (booking, error) {
	share := p.share(s)
	n := min(max(cost, 1), share)
	var got booking
	err := p.store.Update(ctx, Shard{Key: p.key, Index: s}, func(c Counts) (Counts, bool) {
		now := p.clock.Now()
		got = booking{now: now}
		cur := p.window(now)
		for w := cur; w <= cur+int64(p.maxAhead); w++ {
			k := c[w]
			if k+n > share {
				continue
			}
			at := p.slotAt(w, k, share)
			if goes := laterOf(at, now); !goes.Before(p.start(w + 1).Add(-p.guard)) {
				// Too late in its window to reach the cloud in it.
				continue
			}
			got.Slot = Slot{At: at, Window: w, Shard: s, Ahead: p.shards * p.booked(c, cur, now, at, share)}
			if at.Before(now) {
				got.At = now
			}
			got.found = true
			if !accept(got.At, now) {
				return nil, false
			}
			next := Counts{}
			for v, calls := range c {
				if v >= cur {
					next[v] = calls
				}
			}
			next[w] = k + n
			got.Reserved = true
			return next, true
		}
		return nil, false
	})
	if err != nil {
		return booking{}, fmt.Errorf("pacing %s: reserving %d calls in shard %d: %w", p.key, n, s, err)
	}
	return got, nil
}

// laterOf is the later of two times.
func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Lost reports whether slot s's window ended before now, when its call
// was to go: the store or the caller's scheduling was slower than the
// guard, and a call sent now would be counted in a later window than the
// one it was booked in. The booking stays, unused (the budget is safe);
// the call books again.
func (p *Pacer) Lost(s Slot, now time.Time) bool {
	return s.Reserved && !now.Before(p.start(s.Window+1))
}

// retryAfter is how long a caller whose slot is at at waits before it
// asks again: until the slot is near, and a random part of Near more, so
// that the callers told to wait at once do not all come back at once.
func (p *Pacer) retryAfter(now, at time.Time) time.Duration {
	d := max(at.Sub(now)-p.near, 0)
	return d + time.Duration(p.float()*float64(p.near/2))
}

// booked counts the calls the shard's counts c hold with slots from now
// until at (windows from cur on).
func (p *Pacer) booked(c Counts, cur int64, now, at time.Time, share int) int {
	total := 0
	for w, calls := range c {
		if w < cur {
			continue
		}
		from := p.position(w, now, share)
		to := p.position(w, at, share)
		total += max(0, min(calls, to)-min(calls, from))
	}
	return total
}

// position is the first position of window w whose slot is at t or
// later, within [0, share].
func (p *Pacer) position(w int64, t time.Time, share int) int {
	d := t.Sub(p.start(w))
	if d <= 0 {
		return 0
	}
	k := int((int64(d)*int64(share) + int64(p.rate.Window) - 1) / int64(p.rate.Window))
	return min(k, share)
}

// pick is where a reservation looks: the shard the pacer last booked in
// (a random one at first), and a random shard to go on from.
func (p *Pacer) pick() (home, start int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.home, p.rnd.IntN(p.shards)
}

func (p *Pacer) setHome(s int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.home = s
}

func (p *Pacer) float() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rnd.Float64()
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
