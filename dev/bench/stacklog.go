package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/proxy"
)

// tally is a sum of invocation lines.
type tally struct {
	// ByFunction counts invocations by function name.
	ByFunction map[string]int
	// Written counts the Reconcile invocations a document write triggered:
	// the emulator pushes one event per committed write of a proxy
	// document, so they count the document writes.
	Written int
	Usage   metering.Usage
	// Latency sums the invocations' latencies; Billed rounds each up to
	// Cloud Run's billing unit first, by function too.
	Latency          time.Duration
	Billed           time.Duration
	BilledByFunction map[string]time.Duration
}

// stackLog reads the functions' JSON log lines as the stack writes them,
// and passes every line on. It sums the invocation lines (package
// metering), and notes when each proxy was first Ready and when it was
// deleted from the reconciler's own "proxy ready" and "proxy deleted"
// lines, logged as each write returns.
//
// The times come from the log rather than from a Firestore listener because
// the emulator slows every write down while a listener on the collection
// group is open: 1,000 creates by 64 clients took 5 s without one and 90 s
// with one. They come from the log rather than from polling the API because
// a poll is an invocation, which is what the benchmark counts.
type stackLog struct {
	rest io.Writer

	mu      sync.Mutex
	partial []byte
	sum     tally
	last    time.Time
	readyAt map[string]time.Time
	goneAt  map[string]time.Time
	// reconfiguredAt is when each document first served a generation
	// after a reconfiguration, by generationKey.
	reconfiguredAt map[string]time.Time
	// claims counts the reconciler's "warm VM claimed" lines.
	claims int
	// callHomeRun is, by document, the first run a call-home brought (a
	// Reconcile of trigger "ready"): when it started and how long it took.
	callHomeRun map[string]invocation
	// changed is closed and replaced whenever a proxy's time is noted.
	changed chan struct{}
}

func newStackLog(rest io.Writer) *stackLog {
	return &stackLog{
		rest:           rest,
		sum:            tally{ByFunction: map[string]int{}, BilledByFunction: map[string]time.Duration{}},
		last:           time.Now(),
		readyAt:        map[string]time.Time{},
		goneAt:         map[string]time.Time{},
		reconfiguredAt: map[string]time.Time{},
		callHomeRun:    map[string]invocation{},
		changed:        make(chan struct{}),
	}
}

// line is the part of a log line the benchmark reads.
type line struct {
	Time     time.Time `json:"time"`
	Message  string    `json:"message"`
	Document string    `json:"document"`
	Function string    `json:"function"`
	Trigger  string    `json:"trigger"`
	// Generation is the generation a "proxy reconfigured" line's proxy
	// now serves.
	Generation int64          `json:"generation"`
	Usage      metering.Usage `json:"usage"`
	// LatencyMs is an invocation's latency.
	LatencyMs float64 `json:"latencyMs"`
}

// Write takes output in chunks of any size and reads it line by line.
func (l *stackLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.take(l.partial[:i+1])
		l.partial = l.partial[i+1:]
	}
}

// take reads one line; l.mu is held.
func (l *stackLog) take(b []byte) {
	l.rest.Write(b)
	var ln line
	if json.Unmarshal(b, &ln) != nil {
		return
	}
	switch ln.Message {
	case metering.Message:
		l.sum.ByFunction[ln.Function]++
		if ln.Function == "Reconcile" && ln.Trigger == "written" {
			l.sum.Written++
		}
		l.sum.Usage = l.sum.Usage.Plus(ln.Usage)
		took := time.Duration(ln.LatencyMs * float64(time.Millisecond))
		billed := (took + billingUnit - 1) / billingUnit * billingUnit
		l.sum.Latency += took
		l.sum.Billed += billed
		l.sum.BilledByFunction[ln.Function] += billed
		l.last = time.Now()
		if ln.Function == "Reconcile" && ln.Trigger == string(proxy.ReasonReady) {
			if _, seen := l.callHomeRun[ln.Document]; !seen {
				l.callHomeRun[ln.Document] = invocation{start: ln.Time.Add(-took), took: took}
			}
		}
	case "proxy ready":
		if _, seen := l.readyAt[ln.Document]; !seen {
			l.readyAt[ln.Document] = ln.Time
			l.notify()
		}
	case "warm VM claimed":
		l.claims++
	case "proxy reconfigured":
		if k := generationKey(ln.Document, ln.Generation); l.reconfiguredAt[k].IsZero() {
			l.reconfiguredAt[k] = ln.Time
			l.notify()
		}
	case "proxy deleted":
		l.goneAt[ln.Document] = ln.Time
		l.notify()
	}
}

// notify wakes the waiters of await; l.mu is held.
func (l *stackLog) notify() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// invocation is one run of a function: when it started, and how long it took.
type invocation struct {
	start time.Time
	took  time.Duration
}

// callHomeRuns returns the first call-home run of each document of paths
// (a zero run for one that had none).
func (l *stackLog) callHomeRuns(paths []string) []invocation {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]invocation, len(paths))
	for i, p := range paths {
		out[i] = l.callHomeRun[p]
	}
	return out
}

// snapshot returns the sum of the invocations so far.
func (l *stackLog) snapshot() tally {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.sum
	t.ByFunction = maps.Clone(l.sum.ByFunction)
	t.BilledByFunction = maps.Clone(l.sum.BilledByFunction)
	return t
}

// quietFor reports how long ago the last invocation line came.
func (l *stackLog) quietFor() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return time.Since(l.last)
}

// Which times await waits for.
const (
	ready = "Ready"
	gone  = "gone"
	// reconfigured is a Ready proxy Ready again with a new generation (the
	// reconciler's "proxy reconfigured" line); await's paths are then
	// generationKeys.
	reconfigured = "reconfigured"
)

// generationKey names a document at a generation, for await(reconfigured).
func generationKey(path string, generation int64) string {
	return fmt.Sprintf("%s@%d", path, generation)
}

// readyUnder counts the documents under prefix (a path and a slash) that
// have been Ready: a warm pool's members, pools/{pool}/.
func (l *stackLog) readyUnder(prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for p := range l.readyAt {
		if strings.HasPrefix(p, prefix) {
			n++
		}
	}
	return n
}

// claimCount is how many warm VMs proxies have claimed.
func (l *stackLog) claimCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.claims
}

// awaitReadyUnder waits until n documents under prefix have been Ready.
func (l *stackLog) awaitReadyUnder(ctx context.Context, prefix string, n int, timeout time.Duration) error {
	deadline := time.After(timeout)
	for {
		l.mu.Lock()
		changed := l.changed
		l.mu.Unlock()
		got := l.readyUnder(prefix)
		if got >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("%d of %d documents under %s Ready within %s", got, n, prefix, timeout)
		}
	}
}

// await waits until every document of paths is Ready (or gone), or the
// timeout passes, and returns when each became so.
func (l *stackLog) await(ctx context.Context, what string, paths []string, timeout time.Duration) ([]time.Time, error) {
	deadline := time.After(timeout)
	for {
		l.mu.Lock()
		times := l.readyAt
		switch what {
		case gone:
			times = l.goneAt
		case reconfigured:
			times = l.reconfiguredAt
		}
		out := make([]time.Time, len(paths))
		missing := 0
		for i, p := range paths {
			if out[i] = times[p]; out[i].IsZero() {
				missing++
			}
		}
		changed := l.changed
		l.mu.Unlock()
		if missing == 0 {
			return out, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline:
			return nil, fmt.Errorf("%d of %d proxies not %s within %s", missing, len(paths), what, timeout)
		}
	}
}

// minus returns what t counts beyond u.
func (t tally) minus(u tally) tally {
	d := tally{ByFunction: map[string]int{}, BilledByFunction: map[string]time.Duration{}, Written: t.Written - u.Written,
		Usage: t.Usage.Minus(u.Usage), Latency: t.Latency - u.Latency, Billed: t.Billed - u.Billed}
	for k, v := range t.ByFunction {
		if v != u.ByFunction[k] {
			d.ByFunction[k] = v - u.ByFunction[k]
		}
	}
	for k, v := range t.BilledByFunction {
		if v != u.BilledByFunction[k] {
			d.BilledByFunction[k] = v - u.BilledByFunction[k]
		}
	}
	return d
}

// plus returns the sum of t and u.
func (t tally) plus(u tally) tally {
	s := tally{ByFunction: map[string]int{}, BilledByFunction: map[string]time.Duration{}, Written: t.Written + u.Written,
		Usage: t.Usage.Plus(u.Usage), Latency: t.Latency + u.Latency, Billed: t.Billed + u.Billed}
	for _, x := range []tally{t, u} {
		for k, v := range x.ByFunction {
			s.ByFunction[k] += v
		}
		for k, v := range x.BilledByFunction {
			s.BilledByFunction[k] += v
		}
	}
	return s
}

// total is the number of invocations of every function.
func (t tally) total() int {
	n := 0
	for _, v := range t.ByFunction {
		n += v
	}
	return n
}
