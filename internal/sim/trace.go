package sim

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/egress-proxies/egress/internal/store/storefake"
)

// Trace plays the schedule, as Run does, and returns it line by line:
// each step of the scheduler (the time, the invocations parked, the
// deliveries waiting, the state of the scheduler's random source), each
// delivery started, each call an invocation parks at (where the code
// made it), each provider's answer and each document written. The same
// seed gives the same lines, run after run, in one process or in
// another: what a failing seed's replay rests on
// (TestASeedReplaysTheSame). Two traces of a seed that differ say where
// its schedules parted (diff them).
func (w *World) Trace() ([]string, []string, Stats) {
	w.trace = new([]string)
	errs, st := w.Run()
	return *w.trace, errs, st
}

// tracef adds a line to the trace, when the world is traced.
func (w *World) tracef(format string, args ...any) {
	if w.trace != nil {
		*w.trace = append(*w.trace, fmt.Sprintf(format, args...))
	}
}

// traceStep is a step's line.
func (w *World) traceStep() {
	if w.trace == nil {
		return
	}
	ids := make([]string, 0, len(w.active))
	for _, in := range w.active {
		ids = append(ids, fmt.Sprint(in.id))
	}
	state, _ := w.src.MarshalBinary()
	w.tracef("step %d at %s: parked [%s], %d waiting, rng %x", w.stats.Steps, w.clock.Now().Format("15:04:05.000"), strings.Join(ids, " "), len(w.pending), state)
}

// traceWrite is a written document's line.
func (w *World) traceWrite(c storefake.Change) {
	if w.trace == nil {
		return
	}
	if n := c.New; n != nil {
		w.tracef("  write %s: uid %s, generation %d, %s, VM %q, lease %q", c.Key, n.UID, n.Generation, n.Status.Phase, n.Status.ProviderID, n.Reconciler.LeaseHolder)
		return
	}
	w.tracef("  write %s: deleted", c.Key)
}

// traceYield is the line of an invocation parking at a call: the
// functions that made it, innermost first, from package sim's adapter
// to the invocation's own function.
func (w *World) traceYield(in *inv) {
	if w.trace == nil {
		return
	}
	pc := make([]uintptr, 16)
	frames := runtime.CallersFrames(pc[:runtime.Callers(3, pc)])
	var at []string
	for {
		f, more := frames.Next()
		if f.Function == "runtime.goexit" {
			break
		}
		at = append(at, fmt.Sprintf("%s:%d", f.Function[strings.LastIndex(f.Function, "/")+1:], f.Line))
		if !more {
			break
		}
	}
	w.tracef("  invocation %d parks at %s", in.id, strings.Join(at, " < "))
}

// String is a delivery as a trace names it.
func (d delivery) String() string {
	switch {
	case d.gc:
		return "GC run"
	case d.pool != "":
		return fmt.Sprintf("pool %s (%s), #%d due at %s", d.pool, d.trigger.Reason, d.seq, d.at.Format("15:04:05.000"))
	}
	return fmt.Sprintf("%s (%s, uid %q, handoff %q), #%d due at %s", d.key, d.trigger.Reason, d.trigger.UID, d.trigger.Handoff, d.seq, d.at.Format("15:04:05.000"))
}
