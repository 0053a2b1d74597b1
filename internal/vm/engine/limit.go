package engine

import (
	"sync"
	"sync/atomic"
	"time"
)

// bucket is a token bucket of bytes: the bandwidth limit of one direction
// of the proxy's traffic, shared by every tunnel, SOCKS5 connection and
// plain request. A copy asks for up to the bytes it would move, moves at
// most what it was granted, and gives back what it did not use, so the
// bytes moved over any second are the rate, give or take a burst. The
// rate changes live (setRate, on a reload).
type bucket struct {
	// limited is whether rate is not 0: the unlimited case, every splice
	// of every tunnel, takes no lock.
	limited atomic.Bool
	mu      sync.Mutex
	rate    float64 // bytes a second; 0 is no limit
	burst   float64
	tokens  float64
	last    time.Time
	now     func() time.Time
	sleep   func(time.Duration)
}

func newBucket() *bucket {
	return &bucket{now: time.Now, sleep: time.Sleep}
}

// setRate sets the limit in bits a second; 0 lifts it.
func (b *bucket) setRate(bitsPerSecond int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	b.rate = float64(bitsPerSecond) / 8
	b.limited.Store(b.rate > 0)
	// What the bucket holds at most: 200 ms of the rate, between 64 KiB
	// and 16 MiB. A copy that could not run for a moment (a busy
	// machine) catches up within it instead of losing its share, and a
	// burst above the rate lasts no longer than it.
	b.burst = min(max(b.rate/5, 64<<10), 16<<20)
	b.tokens = min(b.tokens, b.burst)
}

func (b *bucket) refill() {
	now := b.now()
	if !b.last.IsZero() && b.rate > 0 {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	b.last = now
}

// take grants up to want bytes, at least one, waiting until the bucket
// holds some: what it grants is what it holds (at most want), so a copy
// that moves less than its grant and gives the rest back has waited for
// nothing it did not use. A wait is for a small quantum, so many copies
// share the rate in small turns.
func (b *bucket) take(want int) int {
	if !b.limited.Load() {
		return want
	}
	b.mu.Lock()
	for {
		if b.rate == 0 {
			b.mu.Unlock()
			return want
		}
		b.refill()
		if b.tokens >= 1 {
			grant := min(want, int(b.tokens))
			b.tokens -= float64(grant)
			b.mu.Unlock()
			return grant
		}
		quantum := min(float64(want), b.burst/8)
		wait := time.Duration((quantum - b.tokens) / b.rate * float64(time.Second))
		b.mu.Unlock()
		b.sleep(wait)
		b.mu.Lock()
	}
}

// giveBack returns the part of a grant that was not used.
func (b *bucket) giveBack(n int) {
	if n <= 0 || !b.limited.Load() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rate > 0 {
		b.tokens = min(b.burst, b.tokens+float64(n))
	}
}
