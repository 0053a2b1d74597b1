// Package clock is the time source that domain logic takes by injection, so
// that tests and the simulation control time instead of sleeping through it.
package clock

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Clock tells the time, waits, and calls back later.
type Clock interface {
	Now() time.Time
	// Sleep waits for d or until ctx is done, whichever comes first, and
	// returns ctx's error in the second case.
	Sleep(ctx context.Context, d time.Duration) error
	// AfterFunc calls f once d has passed — the wall clock in a goroutine
	// of its own, a fake one in the goroutine that moves it past — and
	// returns a function that cancels the call if it has not happened yet
	// (reporting whether it did cancel it).
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// Sleep waits on a timer.
func (Real) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// AfterFunc is time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// Fake is a clock that moves only when told to. It is safe for concurrent use.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	seq    int
}

type fakeTimer struct {
	at  time.Time
	seq int
	f   func()
}

// NewFake returns a fake clock set to t.
func NewFake(t time.Time) *Fake { return &Fake{now: t} }

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Advance moves the clock forward by d and runs the calls that came due.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
	f.fire()
}

// Set moves the clock to t and runs the calls that came due.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	f.now = t
	f.mu.Unlock()
	f.fire()
}

// Sleep advances the fake time by d at once instead of waiting, so code that
// waits (a reconcile retrying a provider) runs through its waits instantly
// and deterministically in tests.
func (f *Fake) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.Advance(d)
	return nil
}

// AfterFunc schedules f for when the clock reaches now+d. Unlike Real's,
// the call runs in the goroutine that moves the clock there (Advance, Set,
// Sleep), in the order the calls came due, so a test or the simulation
// replays exactly; a call due already runs at once.
func (f *Fake) AfterFunc(d time.Duration, fn func()) func() bool {
	f.mu.Lock()
	f.seq++
	t := &fakeTimer{at: f.now.Add(d), seq: f.seq, f: fn}
	f.timers = append(f.timers, t)
	f.mu.Unlock()
	if d <= 0 {
		f.fire()
	}
	return func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		n := len(f.timers)
		f.timers = slices.DeleteFunc(f.timers, func(x *fakeTimer) bool { return x == t })
		return len(f.timers) < n
	}
}

// fire runs, one at a time and outside the lock, every call that is due.
func (f *Fake) fire() {
	for {
		f.mu.Lock()
		i := -1
		for j, t := range f.timers {
			if !t.at.After(f.now) && (i < 0 || t.at.Before(f.timers[i].at) || (t.at.Equal(f.timers[i].at) && t.seq < f.timers[i].seq)) {
				i = j
			}
		}
		if i < 0 {
			f.mu.Unlock()
			return
		}
		t := f.timers[i]
		f.timers = slices.Delete(f.timers, i, i+1)
		f.mu.Unlock()
		t.f()
	}
}
