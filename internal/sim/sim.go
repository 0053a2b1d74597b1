// Package sim is a deterministic, seeded simulation of the whole system:
// the real reconciler and garbage collector (the code the functions run)
// over the in-memory store (which passes the same contract as Firestore)
// and the mock provider, under a scheduler that owns time, event delivery
// and the interleaving of concurrent invocations.
//
// Every store, provider, queue and clock call of an invocation is a step;
// only one invocation runs at a time, and the seeded scheduler picks which
// one takes the next step, so any schedule replays exactly from its seed.
// While faults are on, the scheduler drops, duplicates and delays events,
// crashes invocations before or after any step, injects provider errors
// (transient, rate limited, a Create that succeeds but reports failure),
// loses and stops VMs, and users create, delete and re-create the same
// names. Then faults stop, time runs on, and Check states the invariants.
package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/gc"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
	"github.com/egress-proxies/egress/internal/store/memstore"
)

// Bug is a safety rule switched off, to show the simulation catches it.
type Bug int

const (
	NoBug Bug = iota
	// NoPrecondition makes status writes blind: they overwrite whatever
	// the document says now.
	NoPrecondition
	// NoLease hides leases from the runs, so concurrent runs all act.
	NoLease
	// NoGracePeriod makes GC delete unclaimed VMs of any age.
	NoGracePeriod
	// NoCreatePending makes Create keyed on nothing recorded before it:
	// each try names its VM afresh, with no request id, so a retry after a
	// lost response or a crash cannot find the VM the first try made.
	NoCreatePending
	// OneRequestID gives every create attempt of a proxy the same request
	// id, derived from its uid (the gcp provider's old way): the provider
	// ignores the attempts after the first, so a replacement never comes.
	OneRequestID
)

func (b Bug) String() string {
	return [...]string{"none", "no update-time precondition", "no lease", "no GC grace period", "no create-pending record", "one request id per proxy"}[b]
}

// Stats counts what a schedule did.
type Stats struct {
	Steps, Invocations, Crashes, Dropped, Duplicated, ProviderFaults, Lost, Stopped, UserActions, GCRuns int
	// The VMs' call-homes: lost, duplicated, delayed by more than a few
	// seconds, and forged (a message no VM sent, for a real or a stale uid).
	CallHomesLost, CallHomesDuplicated, CallHomesDelayed, CallHomesForged int
	// NeverReady VMs hung in their boot; BootErrors reported that they
	// cannot serve.
	NeverReady, BootErrors int
	// AsyncCreateFailures were creates accepted and failed later (quota,
	// a bad image); Stockouts, zones out of capacity for a while.
	AsyncCreateFailures, Stockouts int
	// StaticProxies asked for a static address.
	StaticProxies int
	// ReadyAtEnd, FailedAtEnd and InstancesAtEnd are what the invariants
	// were checked over.
	ReadyAtEnd, FailedAtEnd, InstancesAtEnd int
}

// Faults is the number of faults the schedule injected.
func (s Stats) Faults() int {
	return s.Crashes + s.Dropped + s.Duplicated + s.ProviderFaults + s.Lost + s.Stopped +
		s.CallHomesLost + s.CallHomesDuplicated + s.CallHomesDelayed + s.CallHomesForged + s.NeverReady + s.BootErrors +
		s.AsyncCreateFailures + s.Stockouts
}

// Add sums schedules' stats.
func (s *Stats) Add(o Stats) {
	s.Steps += o.Steps
	s.Invocations += o.Invocations
	s.Crashes += o.Crashes
	s.Dropped += o.Dropped
	s.Duplicated += o.Duplicated
	s.ProviderFaults += o.ProviderFaults
	s.Lost += o.Lost
	s.Stopped += o.Stopped
	s.UserActions += o.UserActions
	s.GCRuns += o.GCRuns
	s.CallHomesLost += o.CallHomesLost
	s.CallHomesDuplicated += o.CallHomesDuplicated
	s.CallHomesDelayed += o.CallHomesDelayed
	s.CallHomesForged += o.CallHomesForged
	s.NeverReady += o.NeverReady
	s.BootErrors += o.BootErrors
	s.AsyncCreateFailures += o.AsyncCreateFailures
	s.Stockouts += o.Stockouts
	s.StaticProxies += o.StaticProxies
	s.ReadyAtEnd += o.ReadyAtEnd
	s.FailedAtEnd += o.FailedAtEnd
	s.InstancesAtEnd += o.InstancesAtEnd
}

const (
	namespace   = "sim"
	gracePeriod = 5 * time.Minute
	gcInterval  = time.Minute
	faultSteps  = 400
	// bootTimeout is short, so that boots that never end are replaced, and
	// fail a proxy, within the schedule.
	bootTimeout     = 3 * time.Minute
	maxBootFailures = 3
	quiesceFor      = 25 * time.Minute
)

var names = []string{"a", "b", "c"}

// zones are the zones of the one region the simulated proxies use.
var zones = []string{"us-central1-a", "us-central1-b", "us-central1-c"}

var errCrash = errors.New("sim: invocation crashed")

// delivery is an event or request waiting to reach Reconcile, or a GC tick.
type delivery struct {
	at      time.Time
	seq     int
	key     proxy.Key
	trigger reconcile.Trigger
	gc      bool
}

// inv is one running invocation, parked at a step or finished.
type inv struct {
	id      int
	grant   chan bool
	parked  chan struct{}
	done    chan struct{}
	crashed bool
	gc      bool
	// uids is a GC run's uid set, read when the run starts.
	uids map[string]proxy.Claim
	// booting is set while the last provider call of the run saw a VM
	// booting that it has not deleted (a Create, or a Get that said
	// Provisioning): a wait then is a wait for a boot, which no run may do.
	booting bool
	// deleted are the VMs the run deleted: waiting for one to go is no
	// wait for a boot.
	deleted map[string]bool
}

type invKey struct{}

// World is one schedule.
type World struct {
	rng     *rand.Rand
	bug     Bug
	clock   *clock.Fake
	store   *memstore.Store
	mock    *mock.Provider
	rec     *reconcile.Reconciler
	col     *gc.Collector
	pending []delivery
	seq     int
	active  []*inv
	nextID  int
	faults  bool
	stats   Stats
	nextGC  time.Time
	uids    map[string][]string // name → every uid it had
	obsGen  map[string]int64
	actor   map[string]*inv
	// lastUIDs is the uid set read at the last GC tick.
	lastUIDs map[string]proxy.Claim
	// staticEndpoint is the first endpoint each Static proxy was Ready at.
	staticEndpoint map[string]string
	// stockedOut are the zones out of capacity while faults are on.
	stockedOut []string
	errs       []string
}

// New builds the world of a seed.
func New(seed uint64, bug Bug) *World {
	start := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	w := &World{
		rng:            rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		bug:            bug,
		clock:          clock.NewFake(start),
		faults:         true,
		uids:           map[string][]string{},
		obsGen:         map[string]int64{},
		actor:          map[string]*inv{},
		staticEndpoint: map[string]string{},
	}
	w.store = memstore.New(w.clock)
	w.mock = mock.New(mock.Options{Clock: w.clock, ProvisioningDelay: time.Duration(5+w.rng.IntN(60)) * time.Second, CallHome: w.callHome})
	log := slog.New(slog.DiscardHandler)
	st := &simStore{w: w}
	prov := &simProvider{w: w}
	q := &simQueue{w: w}
	w.rec = reconcile.New(st, simProviders{prov}, q, nil, &simClock{w: w}, log,
		reconcile.Options{Rand: rand.New(rand.NewPCG(seed, 7)), BootTimeout: bootTimeout, MaxBootFailures: maxBootFailures})
	grace := gracePeriod
	if bug == NoGracePeriod {
		grace = time.Nanosecond
	}
	w.col = gc.New(simProviders{prov}, st, q, &simClock{w: w}, log, gc.Options{GracePeriod: grace, Parallelism: 1})
	w.nextGC = start.Add(gcInterval)
	w.store.Watch(w.changed)
	return w
}

// changed turns each write into a Firestore event, as Eventarc would: lost,
// duplicated or late while faults are on. It also records what the API
// shows, for the generation invariant.
func (w *World) changed(c memstore.Change) {
	if n := c.New; n != nil {
		if g := n.Status.ObservedGeneration; g < w.obsGen[n.UID] {
			w.violation("document %s (uid %s) went back from generation %d to %d", c.Key, n.UID, w.obsGen[n.UID], g)
		} else {
			w.obsGen[n.UID] = g
		}
		if n.Spec.IPPolicy == proxy.IPStatic && n.Status.Phase == proxy.PhaseReady {
			// A Static proxy's address survives every replacement.
			if first, ok := w.staticEndpoint[n.UID]; !ok {
				w.staticEndpoint[n.UID] = n.Status.Endpoint
			} else if first != n.Status.Endpoint {
				w.violation("Static proxy %s (uid %s) moved from %s to %s", c.Key, n.UID, first, n.Status.Endpoint)
			}
		}
	}
	copies := 1
	if w.faults {
		switch r := w.rng.Float64(); {
		case r < 0.08:
			w.stats.Dropped++
			return
		case r < 0.18:
			w.stats.Duplicated++
			copies = 2 + w.rng.IntN(2)
		}
	}
	for range copies {
		w.enqueue(delivery{key: c.Key, trigger: reconcile.Trigger{Reason: proxy.ReasonWritten}}, w.delay())
	}
}

// callHome is a VM's call-home on proxy-reconcile: lost, duplicated or
// late while faults are on, as a Pub/Sub message may be.
func (w *World) callHome(c mock.CallHome) {
	msg := proxy.ReconcileMessage{Namespace: c.Namespace, Name: c.Name, UID: c.UID, Reason: proxy.ReasonReady}
	if c.BootError != "" {
		msg.Reason = proxy.ReasonBootFailed
	}
	copies := 1
	if w.faults {
		switch r := w.rng.Float64(); {
		case r < 0.1:
			w.stats.CallHomesLost++
			return
		case r < 0.2:
			w.stats.CallHomesDuplicated++
			copies = 2
		}
	}
	for range copies {
		d := w.delay()
		if d > 5*time.Second {
			w.stats.CallHomesDelayed++
		}
		w.enqueue(delivery{key: proxy.Key{Namespace: c.Namespace, Name: c.Name}, trigger: reconcile.TriggerOf(msg)}, d)
	}
}

func (w *World) delay() time.Duration {
	if !w.faults {
		return time.Duration(w.rng.IntN(500)) * time.Millisecond
	}
	return time.Duration(w.rng.IntN(30_000)) * time.Millisecond
}

func (w *World) enqueue(d delivery, after time.Duration) {
	w.seq++
	d.seq = w.seq
	d.at = w.clock.Now().Add(after)
	w.pending = append(w.pending, d)
}

func (w *World) violation(format string, args ...any) {
	w.errs = append(w.errs, fmt.Sprintf(format, args...))
}

// Run plays the schedule: faults for a while, then none while time runs
// on, and returns the invariants' violations.
func (w *World) Run() ([]string, Stats) {
	for step := 0; step < faultSteps; step++ {
		w.maybeFault()
		w.tick()
	}
	w.faults = false
	w.mock.ClearCreateFailures()
	end := w.clock.Now().Add(quiesceFor)
	for guard := 0; guard < 200_000; guard++ {
		if !w.clock.Now().Before(end) && len(w.active) == 0 && len(w.duePending(true)) == 0 {
			break
		}
		w.tick()
	}
	w.check()
	return w.errs, w.stats
}

// duePending returns the indexes of deliveries due now (or all, if any).
func (w *World) duePending(any bool) []int {
	var out []int
	now := w.clock.Now()
	for i, d := range w.pending {
		if d.gc {
			continue
		}
		if any || !d.at.After(now) {
			out = append(out, i)
		}
	}
	return out
}

// tick does one thing: step a parked invocation, start a due delivery, or
// move time on to the next thing due.
func (w *World) tick() {
	w.stats.Steps++
	due := w.duePending(false)
	if !w.clock.Now().Before(w.nextGC) {
		w.nextGC = w.clock.Now().Add(gcInterval)
		w.start(delivery{gc: true})
		return
	}
	switch {
	case len(w.active) > 0 && (len(due) == 0 || w.rng.IntN(3) > 0):
		w.step(w.active[w.rng.IntN(len(w.active))])
	case len(due) > 0:
		i := due[w.rng.IntN(len(due))]
		d := w.pending[i]
		w.pending = slices.Delete(w.pending, i, i+1)
		w.start(d)
	default:
		// Nothing runs and nothing is due: time moves to the next
		// delivery or GC tick.
		next := w.nextGC
		for _, d := range w.pending {
			if d.at.Before(next) {
				next = d.at
			}
		}
		if next.After(w.clock.Now()) {
			w.clock.Set(next)
		}
	}
}

// start runs a delivery as a new invocation, parked at its first step.
func (w *World) start(d delivery) {
	w.nextID++
	in := &inv{id: w.nextID, grant: make(chan bool), parked: make(chan struct{}), done: make(chan struct{}), gc: d.gc}
	w.stats.Invocations++
	if d.gc {
		// The run sees the uid set of the previous tick: stale by up to a
		// GC interval, far less than the grace period.
		fresh, _ := w.store.LiveUIDs(context.Background())
		in.uids, w.lastUIDs = w.lastUIDs, fresh
		if in.uids == nil {
			in.uids = fresh
		}
	}
	ctx := context.WithValue(context.Background(), invKey{}, in)
	go func() {
		defer close(in.done)
		if d.gc {
			w.stats.GCRuns++
			w.col.Run(ctx)
			return
		}
		w.rec.Reconcile(ctx, d.key, d.trigger)
	}()
	w.wait(in)
}

// step lets an invocation take one step, or crashes it there.
func (w *World) step(in *inv) {
	proceed := true
	if w.faults && w.rng.Float64() < 0.03 {
		proceed = false
		w.stats.Crashes++
	}
	in.grant <- proceed
	w.wait(in)
}

// wait runs the invocation until it parks at its next step or finishes.
func (w *World) wait(in *inv) {
	select {
	case <-in.parked:
		if !slices.Contains(w.active, in) {
			w.active = append(w.active, in)
		}
	case <-in.done:
		w.active = slices.DeleteFunc(w.active, func(x *inv) bool { return x == in })
	}
}

// yield is every call's step point: the invocation parks until the
// scheduler lets it on; a crashed invocation does nothing more.
func (w *World) yield(ctx context.Context) error {
	in, _ := ctx.Value(invKey{}).(*inv)
	if in == nil {
		return nil
	}
	if in.crashed {
		return errCrash
	}
	in.parked <- struct{}{}
	if !<-in.grant {
		in.crashed = true
		return errCrash
	}
	return nil
}

// maybeFault injects at most one fault or user action.
func (w *World) maybeFault() {
	switch r := w.rng.Float64(); {
	case r < 0.04:
		w.userAction()
	case r < 0.05:
		w.stats.ProviderFaults++
		err := provider.NewError(provider.KindTransient, "sim", "", errors.New("503"))
		if w.rng.IntN(2) == 0 {
			err = provider.NewError(provider.KindRateLimited, "sim", "", errors.New("429"))
		}
		w.mock.FailNext([]mock.Method{mock.MethodCreate, mock.MethodGet, mock.MethodDelete}[w.rng.IntN(3)], 1, err)
	case r < 0.055:
		w.stats.ProviderFaults++
		w.mock.FailNextAfterEffect(mock.MethodCreate, 1, provider.NewError(provider.KindTransient, "sim", "", errors.New("response lost")))
	case r < 0.06:
		if ins := w.mock.Instances(); len(ins) > 0 {
			w.stats.Lost++
			w.mock.Lose(ins[w.rng.IntN(len(ins))].ID)
		}
	case r < 0.065:
		if ins := w.mock.Instances(); len(ins) > 0 {
			w.stats.Stopped++
			w.mock.Stop(ins[w.rng.IntN(len(ins))].ID, provider.StateStopped)
		}
	case r < 0.07:
		w.stats.NeverReady++
		w.mock.NeverReady(1)
	case r < 0.075:
		if ins := w.mock.Instances(); len(ins) > 0 {
			w.stats.BootErrors++
			w.mock.FailBoot(ins[w.rng.IntN(len(ins))].ID, "tinyproxy does not answer")
		}
	case r < 0.0875:
		w.stats.AsyncCreateFailures++
		kind, msg := provider.KindQuota, "QUOTA_EXCEEDED: Quota 'CPUS' exceeded. Limit: 8.0 in region us-central1."
		if w.rng.IntN(4) == 0 {
			kind, msg = provider.KindPermanent, "RESOURCE_NOT_FOUND: The resource 'projects/debian-cloud/global/images/family/debian-99' was not found"
		}
		w.mock.FailCreatesAsync("", 1, kind, msg)
	case r < 0.09:
		z := zones[w.rng.IntN(len(zones))]
		if !slices.Contains(w.stockedOut, z) {
			w.stats.Stockouts++
			w.stockedOut = append(w.stockedOut, z)
			w.mock.Stockout(z)
		}
	case r < 0.095:
		// A message no VM sent: for the name's uid, or for one it never had.
		w.stats.CallHomesForged++
		name := names[w.rng.IntN(len(names))]
		t := reconcile.Trigger{Reason: proxy.ReasonReady, UID: fmt.Sprintf("%08x-0000-4000-8000-000000000000", w.rng.Uint32())}
		if uids := w.uids[name]; len(uids) > 0 && w.rng.IntN(2) == 0 {
			t.UID = uids[len(uids)-1]
		}
		w.enqueue(delivery{key: proxy.Key{Namespace: namespace, Name: name}, trigger: t}, w.delay())
	}
}

// userAction creates an absent name (with a new uid, as the API does) or
// asks for a present one's deletion.
func (w *World) userAction() {
	w.stats.UserActions++
	name := names[w.rng.IntN(len(names))]
	key := proxy.Key{Namespace: namespace, Name: name}
	ctx := context.Background()
	if _, err := w.store.Get(ctx, key); errors.Is(err, proxy.ErrNotFound) {
		uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", w.rng.Uint32(), w.rng.Uint64()&0xffffffffffff)
		w.uids[name] = append(w.uids[name], uid)
		now := w.clock.Now()
		spec := proxy.Spec{Provider: mock.Type, Port: proxy.DefaultPort, AllowedSourceRanges: []string{"203.0.113.0/24"},
			IPPolicy: proxy.IPEphemeral, Placement: proxy.Placement{Region: "us-central1"}}
		if w.rng.IntN(3) == 0 {
			w.stats.StaticProxies++
			spec.IPPolicy = proxy.IPStatic
		}
		if w.rng.IntN(3) == 0 {
			// Pinned: no other zone is tried.
			spec.Placement.Zone = zones[w.rng.IntN(len(zones))]
		}
		w.store.Create(ctx, &proxy.Proxy{
			Namespace: namespace, Name: name, UID: uid, Generation: 1,
			Spec:       spec,
			Status:     proxy.Status{Phase: proxy.PhasePending},
			CreateTime: now, Reconciler: proxy.Bookkeeping{ProgressTime: now},
		}, 100)
		return
	}
	w.store.RequestDeletion(ctx, key, w.clock.Now())
}

func readyReason(p *proxy.Proxy) string {
	for _, c := range p.Status.Conditions {
		if c.Type == "Ready" {
			return c.Reason
		}
	}
	return ""
}

// check states the invariants once faults have stopped and time has run on.
func (w *World) check() {
	ctx := context.Background()
	instances := w.mock.Instances()
	w.stats.InstancesAtEnd = len(instances)
	byUID := map[string][]provider.Instance{}
	for _, in := range instances {
		byUID[in.UID] = append(byUID[in.UID], in)
	}
	live := map[string]bool{}
	for _, key := range w.store.Keys() {
		p, err := w.store.Get(ctx, key)
		if err != nil {
			continue
		}
		live[p.UID] = true
		if p.DeleteRequestTime != nil {
			w.violation("%s: deletion requested but the document remains (phase %s)", key, p.Status.Phase)
			continue
		}
		mine := byUID[p.UID]
		switch p.Status.Phase {
		case proxy.PhaseReady:
			w.stats.ReadyAtEnd++
		case proxy.PhaseFailed:
			w.stats.FailedAtEnd++
		}
		switch {
		case p.Status.Phase == proxy.PhaseFailed && (p.Reconciler.BootFailures >= maxBootFailures || readyReason(p) == "CreateFailed"):
			// A proxy whose VMs never became ready, or whose create can
			// never succeed (a missing image), ends Failed — never
			// stranded — and keeps no VM.
			if len(mine) != 0 {
				w.violation("%s: Failed (%s) but %d instances carry its uid, want none", key, p.Status.Message, len(mine))
			}
		case p.Status.Phase != proxy.PhaseReady:
			w.violation("%s: phase %s after faults stopped, want Ready, or Failed after %d boot failures (%s)", key, p.Status.Phase, maxBootFailures, p.Status.Message)
		case len(mine) != 1:
			w.violation("%s: %d instances carry its uid, want exactly 1", key, len(mine))
		case mine[0].ID != p.Status.ProviderID || mine[0].State != provider.StateRunning:
			w.violation("%s: status names %s, but its instance is %s (%s)", key, p.Status.ProviderID, mine[0].ID, mine[0].State)
		}
		if old := w.uids[key.Name]; len(old) > 1 {
			for _, u := range old[:len(old)-1] {
				if p.Status.ProviderID != "" && len(byUID[u]) > 0 && byUID[u][0].ID == p.Status.ProviderID {
					w.violation("%s: the re-created document adopted the VM of its predecessor uid %s", key, u)
				}
			}
		}
	}
	var leaked []string
	for _, in := range slices.Concat(instances, w.mock.Addresses()) {
		if !live[in.UID] && w.clock.Now().Sub(in.CreatedAt) > gracePeriod {
			leaked = append(leaked, in.ID)
		}
	}
	sort.Strings(leaked)
	for _, id := range leaked {
		w.violation("instance %s is older than the grace period and claimed by no document (leaked)", id)
	}
}

func (w *World) isActive(in *inv) bool { return slices.Contains(w.active, in) }
