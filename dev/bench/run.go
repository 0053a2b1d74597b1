package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/egress-proxies/egress/emulators/stack"
	"github.com/egress-proxies/egress/internal/provider/providerbench"
	"github.com/egress-proxies/egress/internal/proxy"
)

// Projects of the benchmark on the stack's emulators: one for the stack,
// one for the garbage-collection run, so neither sees the other's documents.
const (
	stackProject    = "demo-bench"
	gcProjectPrefix = "demo-bench-gc"
)

// bench is a running benchmark: the stack, and what watches it.
type bench struct {
	s     settings
	log   *slog.Logger
	stack *stack.Stack
	api   *api
	lines *stackLog
	dir   string
	cpu   cpuMeter
}

// run starts the stack, runs the phases and returns the results. The
// stack's own log is kept in a temporary folder, named on failure.
func run(ctx context.Context, s settings, log *slog.Logger) (*results, error) {
	dir, err := os.MkdirTemp("", "egress-bench-")
	if err != nil {
		return nil, err
	}
	stackLog, err := os.Create(filepath.Join(dir, "stack.log"))
	if err != nil {
		return nil, err
	}
	defer stackLog.Close()
	failed := true
	defer func() {
		switch {
		case failed:
			log.Error("the stack's log is kept", "path", stackLog.Name())
		case s.keep:
			log.Info("the stack's and the collector's logs are kept", "dir", dir)
		default:
			os.RemoveAll(dir)
		}
	}()

	// The run's time counts from here: the stack's build, its start, and
	// the namespaces are its "start" phase.
	begun := time.Now()
	log.Info("building the local stack")
	bin, err := stack.Build(ctx, dir)
	if err != nil {
		return nil, err
	}
	logw := &syncWriter{w: stackLog}
	b := &bench{s: s, log: log, dir: dir, lines: newStackLog(logw)}
	b.stack, err = stack.Start(ctx, bin, stack.Options{Project: stackProject, Env: s.stackEnv(), Stdout: b.lines, Stderr: logw})
	if err != nil {
		return nil, err
	}
	defer b.stack.Stop(30 * time.Second)
	log.Info("local stack ready", "after", time.Since(begun).Round(time.Millisecond), "url", b.stack.URL)
	if b.cpu, err = newCPUMeter(b.stack.Pid()); err != nil {
		return nil, fmt.Errorf("finding the local stack's emulators, whose CPU time the phases report apart: %w", err)
	}
	if b.api, err = newAPI(b.stack.URL, s.concurrency); err != nil {
		return nil, err
	}

	r := &results{Machine: machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), Date: time.Now().UTC().Format(time.DateOnly)}, Settings: s.report()}
	// The namespaces first, as the local admin, before any phase counts.
	if err := b.namespaces(ctx); err != nil {
		return nil, fmt.Errorf("creating the namespaces: %w", err)
	}
	if err := b.quiet(ctx); err != nil {
		return nil, err
	}
	r.phase("start", time.Since(begun))
	if s.warmup {
		log.Info("warm-up", "proxies", s.lifecycles)
		t := time.Now()
		if err := b.warmUp(ctx, r); err != nil {
			return nil, fmt.Errorf("warming the emulators up: %w", err)
		}
		r.phase("warmup", time.Since(t))
	}
	type phase struct {
		name string
		run  func(context.Context, *results) error
	}
	// The pool phases after the lifecycle and bulk phases: once the pool
	// exists, it serves their spec. The clouds' phases need no stack. The
	// burst keeps its budgets in the stack's Firestore emulator, in
	// projects of its own. The collector last: its hundred thousand
	// documents would weigh on the emulator every later phase talks to.
	phases := []phase{{phaseLifecycle, b.lifecycle}, {phaseBulk, b.bulkAtEachSize}, {phasePool, b.poolPhases}}
	for _, ph := range cloudPhases {
		phases = append(phases, phase{ph.Name(), b.cloud(ph)})
	}
	for _, ph := range append(phases, phase{phaseBurst, b.burstPhase}, phase{phaseGC, b.collect}) {
		if !s.runs(ph.name) {
			continue
		}
		log.Info("phase", "phase", ph.name)
		t := time.Now()
		if err := ph.run(ctx, r); err != nil {
			return nil, fmt.Errorf("%s phase: %w", ph.name, err)
		}
		r.phase(ph.name, time.Since(t))
		log.Info("phase done", "phase", ph.name, "seconds", round(time.Since(t).Seconds(), 1))
	}
	if err := b.stack.Stop(30 * time.Second); err != nil {
		return nil, fmt.Errorf("stopping the stack: %w", err)
	}
	r.TotalSeconds = round(time.Since(begun).Seconds(), 1)
	failed = false
	return r, nil
}

// cloud runs a cloud's phase (providerbench.Phase) as a phase of the run:
// -lifecycles lifecycles on its provider over its fake.
func (b *bench) cloud(ph providerbench.Phase) func(context.Context, *results) error {
	return func(ctx context.Context, r *results) error {
		res, err := ph.Run(ctx, b.s.lifecycles)
		if err != nil {
			return err
		}
		if r.Clouds == nil {
			r.Clouds = map[string]providerbench.Result{}
		}
		r.Clouds[ph.Name()] = res
		return nil
	}
}

// quiet waits until no invocation line has come for a while: every event
// the phase caused has been delivered and run.
func (b *bench) quiet(ctx context.Context) error { return b.quietAfter(ctx, tally{}, 0) }

// quietAfter waits until at least atLeast invocations have come since the
// snapshot since, and then until none has come for a while. A phase whose
// events must bring a known number of invocations waits for them first,
// so that a busy machine delivering one late does not leave it out of the
// phase's count.
func (b *bench) quietAfter(ctx context.Context, since tally, atLeast int) error {
	const still, limit = 1500 * time.Millisecond, 5 * time.Minute
	deadline := time.Now().Add(limit)
	for b.lines.snapshot().minus(since).total() < atLeast || b.lines.quietFor() < still {
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s, %d invocations of at least %d, the last %s ago", limit,
				b.lines.snapshot().minus(since).total(), atLeast, b.lines.quietFor().Round(time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// namespaces makes the namespaces of both phases, as the local stack's
// default caller, an admin. The benchmark acts as that admin throughout.
func (b *bench) namespaces(ctx context.Context) error {
	var names []string
	if b.s.warmup {
		for i := range b.s.lifecycles {
			names = append(names, warmUpNamespace(i))
		}
	}
	if b.s.runs(phaseLifecycle) {
		for i := range b.s.lifecycles {
			names = append(names, lifecycleNamespace(i))
		}
	}
	if b.s.runs(phaseBulk) {
		for _, n := range b.s.bulkSizes() {
			for i := range bulkNamespaces(n) {
				names = append(names, bulkNamespace(n, i))
			}
		}
	}
	if b.s.runs(phasePool) {
		for i := range b.s.pool {
			names = append(names, coldNamespace(i), claimNamespace(i))
		}
	}
	_, err := parallel(ctx, len(names), b.s.concurrency, func(i int) error {
		_, created, err := b.api.CreateNamespace(ctx, names[i], nil, nil)
		if err == nil && !created {
			err = fmt.Errorf("namespace %s existed already", names[i])
		}
		return err
	})
	return err
}

func lifecycleNamespace(i int) string { return fmt.Sprintf("life-%03d", i) }

// bulkNamespace is the i-th namespace of the bulk phase of n proxies: each
// size its own, so that no document path is Ready or gone twice.
func bulkNamespace(n, i int) string { return fmt.Sprintf("bulk%d-%03d", n, i) }

// bulkNamespaces is how many namespaces of twenty (the default quota) the
// bulk phase spreads n proxies over.
func bulkNamespaces(n int) int { return (n + 19) / 20 }

// lifecycle runs the lifecycle phase: s.lifecycles proxies, each in a
// namespace of its own so that no two share a quota counter, from create
// to gone.
func (b *bench) lifecycle(ctx context.Context, r *results) error {
	m, err := b.lifecycles(ctx, lifecycleNamespace)
	if err != nil {
		return err
	}
	n := b.s.lifecycles
	r.lifecycle(b.s, m.usage, n)
	r.LifecycleCPU = m.cpu.per(n)
	r.ReadyLatencyMs = summarize(m.readyLag)
	r.ReadySplitMs = readySplit{Delivery: summarize(m.delivery), Run: summarize(m.run)}
	r.DeleteLatencyMs = summarize(m.deleteLag)
	return nil
}

// lifecyclesRun is what s.lifecycles lifecycles at once measured.
type lifecyclesRun struct {
	usage tally
	cpu   cpuUse
	// readyLag is from each VM ready to its proxy Ready, split at the
	// start of the call-home's run: delivery before it (the VM's publish,
	// the Pub/Sub emulator's push, the relay), run the run itself.
	readyLag, delivery, run []time.Duration
	// deleteLag is from each DELETE to the proxy gone.
	deleteLag []time.Duration
}

// lifecycles runs s.lifecycles proxies at once, each in a namespace of its
// own (namespace(i)), from create to Ready to gone, and waits for every
// invocation the floor counts and then for quiet, so that nothing of them
// runs after.
func (b *bench) lifecycles(ctx context.Context, namespace func(int) string) (lifecyclesRun, error) {
	n := b.s.lifecycles
	before := b.lines.snapshot()
	cpuBefore, err := b.cpu.read()
	if err != nil {
		return lifecyclesRun{}, err
	}
	keys, uids, err := b.createOneEach(ctx, n, namespace)
	if err != nil {
		return lifecyclesRun{}, err
	}
	readyAt, err := b.lines.await(ctx, ready, paths(keys), 5*time.Minute+2*b.s.boot())
	if err != nil {
		return lifecyclesRun{}, err
	}
	booted, err := b.bootedAt(ctx, uids, keys)
	if err != nil {
		return lifecyclesRun{}, err
	}
	var m lifecyclesRun
	runs := b.lines.callHomeRuns(paths(keys))
	for i := range uids {
		m.readyLag = append(m.readyLag, readyAt[i].Sub(booted[i]))
		if !runs[i].start.IsZero() { // else made Ready by another run
			m.delivery, m.run = append(m.delivery, runs[i].start.Sub(booted[i])), append(m.run, runs[i].took)
		}
	}

	sent := make([]time.Time, n)
	if _, err := parallel(ctx, n, n, func(i int) error {
		sent[i] = time.Now()
		return b.api.delete(ctx, keys[i])
	}); err != nil {
		return lifecyclesRun{}, err
	}
	goneAt, err := b.lines.await(ctx, gone, paths(keys), 5*time.Minute)
	if err != nil {
		return lifecyclesRun{}, err
	}
	for i := range goneAt {
		m.deleteLag = append(m.deleteLag, goneAt[i].Sub(sent[i]))
	}
	// The document's deletion still brings its Reconcile after the proxy is
	// gone: wait for the floor's invocations, then for quiet.
	if err := b.quietAfter(ctx, before, floorInvocations*n); err != nil {
		return lifecyclesRun{}, err
	}
	cpuAfter, err := b.cpu.read()
	if err != nil {
		return lifecyclesRun{}, err
	}
	m.usage, m.cpu = b.lines.snapshot().minus(before), cpuAfter.minus(cpuBefore)
	return m, nil
}

// createOneEach creates a proxy named proxy in each of n namespaces,
// namespace(0)…, all at once, and returns their keys and uids.
func (b *bench) createOneEach(ctx context.Context, n int, namespace func(int) string) ([]proxy.Key, []string, error) {
	keys, uids := make([]proxy.Key, n), make([]string, n)
	for i := range keys {
		keys[i] = proxy.Key{Namespace: namespace(i), Name: "proxy"}
	}
	_, err := parallel(ctx, n, n, func(i int) error {
		var err error
		uids[i], err = b.api.create(ctx, keys[i])
		return err
	})
	return keys, uids, err
}

// bulkAtEachSize runs the bulk phase at each of s.bulkSizes(), the largest
// last: its figures are the phase's (bulk1000), and each size is a row of
// the scaling table.
func (b *bench) bulkAtEachSize(ctx context.Context, r *results) error {
	for _, n := range b.s.bulkSizes() {
		// As many clients for each namespace at every size (the largest
		// size's -concurrency over its namespaces): a smaller size at the
		// same -concurrency would put more creates on each namespace's
		// counter at once, and measure their queue, not the fleet.
		clients := max(1, b.s.concurrency*n/b.s.bulk)
		run, err := b.bulk(ctx, n, clients)
		if err != nil {
			return fmt.Errorf("%d proxies: %w", n, err)
		}
		b.log.Info("bulk", "proxies", n, "seconds", run.result.Seconds, "cpuMsPerProxy", run.scale.CPUMicrosecondsPerItem/1000,
			"bytesPerProxy", run.scale.BytesPerItem, "functionSecondsPerProxy", run.scale.FunctionSecondsPerItem)
		r.Bulk, r.BulkProduction, r.API = run.result, run.production, run.api
		r.Scaling.Bulk = append(r.Scaling.Bulk, run.scale)
	}
	return nil
}

// bulkRun is what one bulk run measured.
type bulkRun struct {
	result     bulkResult
	production bulkProduction
	api        apiResult
	scale      scaleRow
}

// bulk runs the bulk phase once: n proxies requested at once by clients
// clients.
func (b *bench) bulk(ctx context.Context, n, clients int) (bulkRun, error) {
	keys := make([]proxy.Key, n)
	namespaces := bulkNamespaces(n)
	for i := range keys {
		// Twenty a namespace, the default quota, and one request after
		// another to a different namespace, as many teams asking at once
		// would.
		keys[i] = proxy.Key{Namespace: bulkNamespace(n, i%namespaces), Name: fmt.Sprintf("proxy-%02d", i/namespaces)}
	}
	pid := b.stack.Pid()
	// The functions process's memory from what it holds live, so that
	// what the phase adds is the phase's, not room an earlier phase left.
	if err := b.api.freeMemory(ctx); err != nil {
		return bulkRun{}, err
	}
	baseline, err := procBytes(pid, "VmRSS")
	if err != nil {
		return bulkRun{}, err
	}
	if err := resetPeakRSS(pid); err != nil {
		return bulkRun{}, err
	}
	cpuStart, err := cpuTime(pid)
	if err != nil {
		return bulkRun{}, err
	}
	before := b.lines.snapshot()
	start := time.Now()
	uids := make([]string, n)
	creates, err := parallel(ctx, n, clients, func(i int) error {
		var err error
		uids[i], err = b.api.create(ctx, keys[i])
		return err
	})
	if err != nil {
		return bulkRun{}, err
	}
	requested := time.Since(start)
	readyAt, err := b.lines.await(ctx, ready, paths(keys), 5*time.Minute)
	if err != nil {
		return bulkRun{}, err
	}
	lastReady := slices.MaxFunc(readyAt, time.Time.Compare)
	allReady := lastReady.Sub(start)
	booted, err := b.bootedAt(ctx, uids, keys)
	if err != nil {
		return bulkRun{}, err
	}
	lastBoot := slices.MaxFunc(booted, time.Time.Compare)
	peak, err := procBytes(pid, "VmHWM")
	if err != nil {
		return bulkRun{}, err
	}
	if err := b.quiet(ctx); err != nil {
		return bulkRun{}, err
	}
	converged := b.lines.snapshot()
	cpuConverged, err := cpuTime(pid)
	if err != nil {
		return bulkRun{}, err
	}

	gets, err := parallel(ctx, n, clients, func(i int) error { return b.api.get(ctx, keys[i]) })
	if err != nil {
		return bulkRun{}, err
	}
	if err := b.quiet(ctx); err != nil {
		return bulkRun{}, err
	}
	afterGets := b.lines.snapshot()
	cpuAfterGets, err := cpuTime(pid)
	if err != nil {
		return bulkRun{}, err
	}

	deleteStart := time.Now()
	if _, err := parallel(ctx, n, clients, func(i int) error { return b.api.delete(ctx, keys[i]) }); err != nil {
		return bulkRun{}, err
	}
	goneAt, err := b.lines.await(ctx, gone, paths(keys), 5*time.Minute)
	if err != nil {
		return bulkRun{}, err
	}
	allGone := slices.MaxFunc(goneAt, time.Time.Compare).Sub(deleteStart)
	if err := b.quiet(ctx); err != nil {
		return bulkRun{}, err
	}
	cpuEnd, err := cpuTime(pid)
	if err != nil {
		return bulkRun{}, err
	}
	// What the proxies cost, without the gets the benchmark made.
	cost := converged.minus(before).plus(b.lines.snapshot().minus(afterGets))
	cpu := (cpuConverged - cpuStart) + (cpuEnd - cpuAfterGets)

	return bulkRun{
		result: bulkResult{
			Proxies:          n,
			Concurrency:      clients,
			RequestSeconds:   round(requested.Seconds(), 3),
			Seconds:          round(allReady.Seconds(), 3),
			PeakRSSBytes:     peak,
			BaselineRSSBytes: baseline,
			CPUSeconds:       round(cpu.Seconds(), 3),
			DeleteSeconds:    round(allGone.Seconds(), 3),
			PerProxy:         perProxy(cost, n),
			ReadyLatencyMs:   summarize(readyAfter(readyAt, start)),
			InvocationsTotal: cost.total(),
		},
		production: bulkProduction{
			SecondsAfterLastBoot: round(lastReady.Sub(lastBoot).Seconds(), 3),
			Concurrency:          deployedScale(),
		},
		api: apiResult{
			Concurrency: clients,
			CreateP50Ms: ms(percentile(creates, 50)), CreateP99Ms: ms(percentile(creates, 99)),
			GetP50Ms: ms(percentile(gets, 50)), GetP99Ms: ms(percentile(gets, 99)),
			Requests: n,
		},
		scale: scaleRow{
			Items:                  n,
			Seconds:                round(allReady.Seconds(), 3),
			CPUMicrosecondsPerItem: round(float64(cpu.Microseconds())/float64(n), 1),
			FunctionSecondsPerItem: round(cost.Billed.Seconds()/float64(n), 3),
			BytesPerItem:           max(peak-baseline, 0) / int64(n),
		},
	}, nil
}

// bootedAt is when each proxy's VM ended its boot: the mock's CreatedAt
// plus the boot, when it calls home and any Get says Running. The stack's
// log and the mock share a clock.
func (b *bench) bootedAt(ctx context.Context, uids []string, keys []proxy.Key) ([]time.Time, error) {
	created, err := b.api.instances(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]time.Time, len(uids))
	for i, uid := range uids {
		c, ok := created[uid]
		if !ok {
			return nil, fmt.Errorf("%s is Ready but the mock provider has no instance of uid %s", keys[i].Path(), uid)
		}
		out[i] = c.Add(b.s.boot())
	}
	return out, nil
}

// readyAfter is how long after start each proxy was Ready.
func readyAfter(readyAt []time.Time, start time.Time) []time.Duration {
	out := make([]time.Duration, len(readyAt))
	for i, t := range readyAt {
		out[i] = t.Sub(start)
	}
	return out
}

func paths(keys []proxy.Key) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.Path()
	}
	return out
}

// parallel calls fn(0)…fn(n-1), at most c at once, and returns how long
// each took, or the first error.
func parallel(ctx context.Context, n, c int, fn func(i int) error) ([]time.Duration, error) {
	took := make([]time.Duration, n)
	errs := make([]error, n)
	sem := make(chan struct{}, c)
	var wg sync.WaitGroup
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		wg.Go(func() {
			defer func() { <-sem }()
			t := time.Now()
			errs[i] = fn(i)
			took[i] = time.Since(t)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return took, nil
}

// syncWriter serialises the writes of the stack's two output streams into
// one file.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
