package engine

import (
	"sync"
	"time"
)

// bucket is a token bucket of bytes: the bandwidth limit of one direction
// of the proxy's traffic, shared by every tunnel, SOCKS5 connection and
// plain request. A copy asks for up to the bytes it would move, moves at
// most what it was granted, and gives back what it did not use, so the
// bytes moved over any second are the rate, give or take a burst. The
// rate changes live (SetRate, on a reload).
type bucket struct {
	mu     sync.Mutex
	rate   float64 // bytes a second; 0 is no limit
	burst  float64
	tokens float64
	last   time.Time
	now    func() time.Time
	sleep  func(time.Duration)
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
	// A burst of 50 ms of the rate, between 16 KiB and 1 MiB: a splice
	// of at most that, so a limit holds over a fraction of a second and a
	// high one costs few waits.
	b.burst = min(max(b.rate/20, 16<<10), 1<<20)
	b.tokens = min(b.tokens, b.burst)
}

func (b *bucket) refill() {
	now := b.now()
	if !b.last.IsZero() && b.rate > 0 {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	b.last = now
}

// take grants up to want bytes, waiting until the bucket can pay for
// them: a grant may leave the bucket in debt, which the wait then pays
// off, so many small copies and one large one see the same rate.
func (b *bucket) take(want int) int {
	b.mu.Lock()
	if b.rate == 0 {
		b.mu.Unlock()
		return want
	}
	b.refill()
	grant := min(want, int(b.burst))
	b.tokens -= float64(grant)
	var wait time.Duration
	if b.tokens < 0 {
		wait = time.Duration(-b.tokens / b.rate * float64(time.Second))
	}
	b.mu.Unlock()
	if wait > 0 {
		b.sleep(wait)
	}
	return grant
}

// giveBack returns the part of a grant that was not used.
func (b *bucket) giveBack(n int) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rate > 0 {
		b.tokens = min(b.burst, b.tokens+float64(n))
	}
}
