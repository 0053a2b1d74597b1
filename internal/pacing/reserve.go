package pacing

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// How a reservation finds and books its slot (Pacer.Reserve): which
// shards it asks and in what order, what it books at once and what it
// only notes, and what a caller told to come back is told. The budget,
// its shards' shares and the slots' times are in pacing.go.

// Reserve books cost calls of the budget: the earliest slot with room in
// a shard, when it is near (within Options.Near); otherwise it books
// nothing and says when to come back. A cost larger than a shard's share
// books the whole share of a window. The error is the store's.
//
// The time is read in each try of each shard's update, not once
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
	var best *Slot
	for range reserveRounds {
		var err error
		best, now, err = p.probe(ctx, cost, now)
		switch {
		case err != nil:
			return Slot{}, err
		case best == nil:
			// Every shard is full up to MaxAhead windows: come back when
			// the window after them starts to be near.
			cur := p.window(now)
			at := p.start(cur + int64(p.maxAhead) + 1)
			return Slot{At: at, Window: cur + int64(p.maxAhead) + 1, Shard: -1, Ahead: p.rate.Calls * (p.maxAhead + 1), RetryAfter: p.retryAfter(now, at)}, nil
		case best.Reserved:
			return *best, nil
		case best.At.Sub(now) > p.near:
			best.RetryAfter = p.retryAfter(now, best.At)
			return *best, nil
		}
		// The earliest noted is near: book it, unless another caller took
		// it since and the shard's next is later (then ask again, the
		// pacer's view of the shards now fresher).
		noted := best.At
		got, err := p.book(ctx, best.Shard, cost, func(at, now time.Time) bool { return !at.After(laterOf(noted, now).Add(p.due())) })
		switch {
		case errors.Is(err, ErrContended):
			// Held by others since it was asked.
			continue
		case err != nil:
			return Slot{}, err
		case got.Reserved:
			p.setHome(best.Shard)
			return got.Slot, nil
		}
		now = got.now
	}
	if best.At.Sub(now) <= p.near {
		// Still near after the rounds: the shard's earliest near slot.
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

// reserveRounds is how many times a reservation asks the shards again
// when the earliest slot it noted was taken before it could book it.
const reserveRounds = 2

// due is how soon a slot must come to be booked at once, without asking
// other shards: the guard's time, about a store's round trip.
func (p *Pacer) due() time.Duration { return min(p.near, p.guard) }

// probe asks the shards, from now, for a slot of cost calls: the shard
// the pacer last booked in first, booked when its slot is due; then the
// others in order (the slot each had when this pacer last read it),
// noting each one's earliest slot, until one is due (booked), or no
// shard left can have a slot earlier than the earliest noted (a shard's
// slot is never earlier than the pacer last saw it), or Probes shards
// were noted. It returns the slot booked (Reserved), else the earliest
// noted, or nil when every shard asked is full within MaxAhead; and the
// time the last update read.
//
// A caller that took the first shard with a near slot would be booked up
// to a slot's spacing (Window/share: 2 s on Compute) after slots of
// other shards that are free now, and the last calls of a burst would
// end that much later than its calls need: hence a later slot is only
// noted.
func (p *Pacer) probe(ctx context.Context, cost int, now time.Time) (*Slot, time.Time, error) {
	var (
		best   *Slot
		probed int
	)
	order := p.order(now, cost)
	for i, c := range order {
		if i > 0 && best != nil && !c.at.Before(best.At) {
			break
		}
		got, err := p.book(ctx, c.shard, cost, func(at, now time.Time) bool { return !at.After(now.Add(p.due())) })
		if errors.Is(err, ErrContended) && i < len(order)-1 {
			// Other instances hold this shard: ask the next.
			continue
		}
		if err != nil {
			return nil, now, err
		}
		now = got.now
		if got.Reserved {
			p.setHome(c.shard)
			return &got.Slot, now, nil
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
	return best, now, nil
}

// booking is a shard's answer to a reservation: the slot, booked or
// not; found, whether the shard has room within MaxAhead; now, the time
// the update read.
type booking struct {
	Slot
	found bool
	now   time.Time
}

// book books cost calls in shard s, in one update of the store: its earliest
// slot, when accept takes it; else nothing, and the slot it would have
// been.
func (p *Pacer) book(ctx context.Context, s, cost int, accept func(at, now time.Time) bool) (booking, error) {
	n := min(max(cost, 1), p.share(s))
	var (
		got  booking
		seen Counts
	)
	err := p.store.Update(ctx, Shard{Key: p.key, Index: s}, func(c Counts) (Counts, bool) {
		now := p.clock.Now()
		seen = c
		got = booking{now: now}
		slot, ok := p.earliest(c, s, n, now)
		if !ok {
			return nil, false
		}
		got.Slot, got.found = slot, true
		if !accept(got.At, now) {
			return nil, false
		}
		cur := p.window(now)
		next := Counts{}
		for v, calls := range c {
			if v >= cur {
				next[v] = calls
			}
		}
		next[slot.Window] += n
		got.Reserved = true
		seen = next
		return next, true
	})
	if err != nil {
		return booking{}, fmt.Errorf("pacing %s: reserving %d calls in shard %d: %w", p.key, n, s, err)
	}
	p.remember(s, seen)
	return got, nil
}

// earliest is shard s's earliest slot for n calls in its counts c, at
// now: in the earliest window, at most MaxAhead ahead, whose share has
// room and in which the call can still reach the cloud; false when none.
func (p *Pacer) earliest(c Counts, s, n int, now time.Time) (Slot, bool) {
	share := p.share(s)
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
		slot := Slot{At: at, Window: w, Shard: s, Ahead: p.shards * p.booked(c, cur, now, at, share)}
		if at.Before(now) {
			slot.At = now
		}
		return slot, true
	}
	return Slot{}, false
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

// candidate is a shard to ask, and the earliest slot it had when the
// pacer last read it.
type candidate struct {
	shard int
	at    time.Time
}

// order is the shards in the order a reservation of cost calls at now
// asks them: the shard the pacer last booked in (a random one at first),
// then the others by the earliest slot each had when the pacer last read
// it (a shard it never read first: it may be empty), ties in a random
// order, so that instances that saw the same do not all ask the same
// shard first. What others booked since makes a shard's slot later than
// seen, never earlier.
func (p *Pacer) order(now time.Time, cost int) []candidate {
	p.mu.Lock()
	defer p.mu.Unlock()
	never := now.Add(time.Duration(p.maxAhead+2) * p.rate.Window)
	out := make([]candidate, 0, p.shards)
	for s := range p.shards {
		c := candidate{shard: s, at: never}
		if slot, ok := p.earliest(p.seen[s], s, min(max(cost, 1), p.share(s)), now); ok {
			c.at = slot.At
		}
		out = append(out, c)
	}
	home := out[p.home]
	others := slices.Delete(out, p.home, p.home+1)
	p.rnd.Shuffle(len(others), func(i, j int) { others[i], others[j] = others[j], others[i] })
	slices.SortStableFunc(others, func(a, b candidate) int { return a.at.Compare(b.at) })
	return append([]candidate{home}, others...)
}

// remember keeps shard s's counts c as the pacer read (or wrote) them.
func (p *Pacer) remember(s int, c Counts) {
	if c == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[s] = c
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
