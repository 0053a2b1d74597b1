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
	"github.com/egress-proxies/egress/internal/proxy"
)

// Projects of the benchmark on the stack's emulators: one for the stack,
// one for the garbage-collection run, so neither sees the other's documents.
const (
	stackProject = "demo-bench"
	gcProject    = "demo-bench-gc"
)

// bench is a running benchmark: the stack, and what watches it.
type bench struct {
	s     settings
	log   *slog.Logger
	stack *stack.Stack
	api   *api
	lines *stackLog
	dir   string
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
		if failed {
			log.Error("the stack's log is kept", "path", stackLog.Name())
			return
		}
		os.RemoveAll(dir)
	}()

	log.Info("building the local stack")
	bin, err := stack.Build(ctx, dir)
	if err != nil {
		return nil, err
	}
	logw := &syncWriter{w: stackLog}
	b := &bench{s: s, log: log, dir: dir, lines: newStackLog(logw)}
	begun := time.Now()
	b.stack, err = stack.Start(ctx, bin, stack.Options{Project: stackProject, Env: s.stackEnv(), Stdout: b.lines, Stderr: logw})
	if err != nil {
		return nil, err
	}
	defer b.stack.Stop(30 * time.Second)
	log.Info("local stack ready", "after", time.Since(begun).Round(time.Millisecond), "url", b.stack.URL)
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
	log.Info("lifecycle phase", "proxies", s.lifecycles)
	if err := b.lifecycle(ctx, r); err != nil {
		return nil, fmt.Errorf("lifecycle phase: %w", err)
	}
	log.Info("bulk phase", "proxies", s.bulk, "concurrency", s.concurrency)
	if err := b.bulk(ctx, r); err != nil {
		return nil, fmt.Errorf("bulk phase: %w", err)
	}
	log.Info("garbage-collection phase", "instances", s.gc, "documents", s.gc)
	if err := b.collect(ctx, r); err != nil {
		return nil, fmt.Errorf("garbage-collection phase: %w", err)
	}
	// Last: once the pool exists, it serves the other phases' spec.
	log.Info("warm pool phases", "pool", s.pool)
	if err := b.poolPhases(ctx, r); err != nil {
		return nil, err
	}
	log.Info("hetzner phase", "lifecycles", s.lifecycles)
	if r.Hetzner, err = hetznerPhase(ctx, s.lifecycles); err != nil {
		return nil, fmt.Errorf("hetzner phase: %w", err)
	}
	log.Info("aws phase", "lifecycles", s.lifecycles)
	if r.AWS, err = awsPhase(ctx, s.lifecycles); err != nil {
		return nil, fmt.Errorf("aws phase: %w", err)
	}
	if err := b.stack.Stop(30 * time.Second); err != nil {
		return nil, fmt.Errorf("stopping the stack: %w", err)
	}
	failed = false
	return r, nil
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
	for i := range b.s.lifecycles {
		names = append(names, lifecycleNamespace(i))
	}
	for i := range bulkNamespaces(b.s.bulk) {
		names = append(names, bulkNamespace(i))
	}
	for i := range b.s.pool {
		names = append(names, coldNamespace(i), claimNamespace(i))
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
func bulkNamespace(i int) string      { return fmt.Sprintf("bulk-%03d", i) }

// bulkNamespaces is how many namespaces of twenty (the default quota) the
// bulk phase spreads n proxies over.
func bulkNamespaces(n int) int { return (n + 19) / 20 }

// lifecycle runs the lifecycle phase: s.lifecycles proxies, each in a
// namespace of its own so that no two share a quota counter, from create
// to gone.
func (b *bench) lifecycle(ctx context.Context, r *results) error {
	n := b.s.lifecycles
	keys := make([]proxy.Key, n)
	for i := range keys {
		keys[i] = proxy.Key{Namespace: lifecycleNamespace(i), Name: "proxy"}
	}
	before := b.lines.snapshot()
	uids := make([]string, n)
	if _, err := parallel(ctx, n, n, func(i int) error {
		var err error
		uids[i], err = b.api.create(ctx, keys[i])
		return err
	}); err != nil {
		return err
	}
	readyAt, err := b.lines.await(ctx, ready, paths(keys), 5*time.Minute+2*b.s.boot())
	if err != nil {
		return err
	}
	booted, err := b.bootedAt(ctx, uids, keys)
	if err != nil {
		return err
	}
	readyLag := make([]time.Duration, n)
	for i := range uids {
		readyLag[i] = readyAt[i].Sub(booted[i])
	}

	sent := make([]time.Time, n)
	if _, err := parallel(ctx, n, n, func(i int) error {
		sent[i] = time.Now()
		return b.api.delete(ctx, keys[i])
	}); err != nil {
		return err
	}
	goneAt, err := b.lines.await(ctx, gone, paths(keys), 5*time.Minute)
	if err != nil {
		return err
	}
	deleteLag := make([]time.Duration, n)
	for i := range goneAt {
		deleteLag[i] = goneAt[i].Sub(sent[i])
	}
	// The document's deletion still brings its Reconcile after the proxy is
	// gone: wait for the floor's invocations, then for quiet.
	if err := b.quietAfter(ctx, before, floorInvocations*n); err != nil {
		return err
	}
	r.lifecycle(b.s, b.lines.snapshot().minus(before), n)
	r.ReadyLatencyMs = summarize(readyLag)
	r.DeleteLatencyMs = summarize(deleteLag)
	return nil
}

// bulk runs the bulk phase: s.bulk proxies requested at once.
func (b *bench) bulk(ctx context.Context, r *results) error {
	n := b.s.bulk
	keys := make([]proxy.Key, n)
	namespaces := bulkNamespaces(n)
	for i := range keys {
		// Twenty a namespace, the default quota, and one request after
		// another to a different namespace, as many teams asking at once
		// would.
		keys[i] = proxy.Key{Namespace: bulkNamespace(i % namespaces), Name: fmt.Sprintf("proxy-%02d", i/namespaces)}
	}
	if err := resetPeakRSS(b.stack.Pid()); err != nil {
		return err
	}
	before := b.lines.snapshot()
	start := time.Now()
	uids := make([]string, n)
	creates, err := parallel(ctx, n, b.s.concurrency, func(i int) error {
		var err error
		uids[i], err = b.api.create(ctx, keys[i])
		return err
	})
	if err != nil {
		return err
	}
	requested := time.Since(start)
	readyAt, err := b.lines.await(ctx, ready, paths(keys), 5*time.Minute)
	if err != nil {
		return err
	}
	lastReady := slices.MaxFunc(readyAt, time.Time.Compare)
	allReady := lastReady.Sub(start)
	booted, err := b.bootedAt(ctx, uids, keys)
	if err != nil {
		return err
	}
	lastBoot := slices.MaxFunc(booted, time.Time.Compare)
	peak, err := procBytes(b.stack.Pid(), "VmHWM")
	if err != nil {
		return err
	}
	if err := b.quiet(ctx); err != nil {
		return err
	}
	converged := b.lines.snapshot()

	gets, err := parallel(ctx, n, b.s.concurrency, func(i int) error { return b.api.get(ctx, keys[i]) })
	if err != nil {
		return err
	}
	if err := b.quiet(ctx); err != nil {
		return err
	}
	afterGets := b.lines.snapshot()

	deleteStart := time.Now()
	if _, err := parallel(ctx, n, b.s.concurrency, func(i int) error { return b.api.delete(ctx, keys[i]) }); err != nil {
		return err
	}
	goneAt, err := b.lines.await(ctx, gone, paths(keys), 5*time.Minute)
	if err != nil {
		return err
	}
	allGone := slices.MaxFunc(goneAt, time.Time.Compare).Sub(deleteStart)
	if err := b.quiet(ctx); err != nil {
		return err
	}
	// What the proxies cost, without the gets the benchmark made.
	cost := converged.minus(before).plus(b.lines.snapshot().minus(afterGets))

	r.Bulk = bulkResult{
		Proxies:          n,
		Concurrency:      b.s.concurrency,
		RequestSeconds:   round(requested.Seconds(), 3),
		Seconds:          round(allReady.Seconds(), 3),
		PeakRSSBytes:     peak,
		DeleteSeconds:    round(allGone.Seconds(), 3),
		PerProxy:         perProxy(cost, n),
		ReadyLatencyMs:   summarize(readyAfter(readyAt, start)),
		InvocationsTotal: cost.total(),
	}
	r.BulkProduction = bulkProduction{
		SecondsAfterLastBoot: round(lastReady.Sub(lastBoot).Seconds(), 3),
		Concurrency:          deployedScale(),
	}
	r.API = apiResult{
		Concurrency: b.s.concurrency,
		CreateP50Ms: ms(percentile(creates, 50)), CreateP99Ms: ms(percentile(creates, 99)),
		GetP50Ms: ms(percentile(gets, 50)), GetP99Ms: ms(percentile(gets, 99)),
		Requests: n,
	}
	return nil
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
