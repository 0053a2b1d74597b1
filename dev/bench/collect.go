package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/egress-proxies/egress/emulators/emulator"
	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/queue"
)

// The garbage-collection run happens in a process of its own, this command
// run again with roleEnv set, so that its memory and its CPU time are its
// own: the mock provider it lists lives in its process, and the
// benchmark's listener and clients do not.
const (
	roleEnv      = "EGRESS_BENCH_ROLE"
	gcWorkerRole = "gc-worker"
	// gcSizeEnv and gcResultEnv pass the worker its size and where to write
	// its gcWorkerResult; gcProfileEnv, where to write a CPU profile of its
	// run, if anywhere.
	gcSizeEnv    = "EGRESS_BENCH_GC_SIZE"
	gcResultEnv  = "EGRESS_BENCH_GC_RESULT"
	gcProfileEnv = "EGRESS_BENCH_GC_CPUPROFILE"
)

// gcUID is the uid of the i-th document or instance of the run.
func gcUID(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }

// gcOrphans is how many of n instances the run finds unclaimed: one in a
// hundred. As many documents have no VM yet.
func gcOrphans(n int) int { return n / 100 }

// gcProject is the project of the collection run over n documents: each
// size its own, so that no run reads another's documents.
func gcProject(n int) string { return fmt.Sprintf("%s-%d", gcProjectPrefix, n) }

// collect runs the garbage-collection phase at each size of
// s.gcSizes(), the largest last: n documents written to the emulator, then
// one CollectGarbage run over them and n mock instances in a worker
// process. The largest run is the phase's figure (gc100k); every run is a
// row of the scaling table.
func (b *bench) collect(ctx context.Context, r *results) error {
	// The benchmark's own client writes to the stack's emulator.
	defer b.useStackFirestore()()
	emulatorPid := b.cpu.firestore
	sizes := b.s.gcSizes()
	for i, n := range sizes {
		profile := ""
		if i == len(sizes)-1 {
			profile = b.s.gcProfile
		}
		g, err := b.collectOnce(ctx, n, emulatorPid, profile)
		if err != nil {
			return fmt.Errorf("the run over %d: %w", n, err)
		}
		b.log.Info("garbage collection", "instances", n, "seconds", g.Seconds, "cpuSeconds", g.CPUSeconds,
			"emulatorCPUSeconds", g.EmulatorCPUSeconds, "bytesPerInstance", g.BytesPerInstance, "seedSeconds", g.SeedSeconds)
		r.Scaling.GC = append(r.Scaling.GC, g.scaleRow())
		r.GC = g
	}
	return nil
}

// collectOnce seeds n documents and runs the worker over them and n mock
// instances.
func (b *bench) collectOnce(ctx context.Context, n, emulatorPid int, profile string) (gcResult, error) {
	project := gcProject(n)
	client, err := firestore.NewClient(ctx, project)
	if err != nil {
		return gcResult{}, err
	}
	defer client.Close()
	begun := time.Now()
	if err := seedDocuments(ctx, client, n); err != nil {
		return gcResult{}, err
	}
	seeded := time.Since(begun)
	settled, err := b.settle(ctx, emulatorPid)
	if err != nil {
		return gcResult{}, err
	}

	exe, err := os.Executable()
	if err != nil {
		return gcResult{}, err
	}
	resultPath := filepath.Join(b.dir, fmt.Sprintf("gc-result-%d.json", n))
	outPath := filepath.Join(b.dir, fmt.Sprintf("gc-worker-%d.log", n))
	out, err := os.Create(outPath)
	if err != nil {
		return gcResult{}, err
	}
	defer out.Close()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(),
		roleEnv+"="+gcWorkerRole, gcSizeEnv+"="+strconv.Itoa(n), gcResultEnv+"="+resultPath, gcProfileEnv+"="+profile,
		"GOOGLE_CLOUD_PROJECT="+project, "PROVIDERS="+mock.Type, "LOG_FORMAT=json", "LOG_LEVEL=info",
		// The run measures what deleting 1% of the fleet costs, which at
		// 100,000 is more than the guard lets one run delete: the
		// operator's one run with the limit raised.
		"GC_MAX_DELETES="+strconv.Itoa(max(gcOrphans(n), 1)),
		emulator.Firestore.EnvVar()+"="+b.stack.FirestoreHost, emulator.PubSub.EnvVar()+"="+b.stack.PubSubHost)
	cmd.Stdout, cmd.Stderr = out, out
	// The emulator works for the worker only during its run: its CPU time
	// around the whole worker is the run's.
	emulatorBefore, err := cpuTime(emulatorPid)
	if err != nil {
		return gcResult{}, err
	}
	if err := cmd.Run(); err != nil {
		return gcResult{}, fmt.Errorf("the gc worker failed: %w (its output: %s)", err, outPath)
	}
	emulatorAfter, err := cpuTime(emulatorPid)
	if err != nil {
		return gcResult{}, err
	}
	var res gcWorkerResult
	raw, err := os.ReadFile(resultPath)
	if err != nil {
		return gcResult{}, err
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return gcResult{}, fmt.Errorf("the gc worker's result: %w", err)
	}
	summary, usage, err := readWorkerLog(outPath)
	if err != nil {
		return gcResult{}, err
	}
	if want := gcOrphans(n); summary.Scanned != n || summary.Deleted != want {
		return gcResult{}, fmt.Errorf("the gc run scanned %d instances and deleted %d, want %d and %d (its output: %s)", summary.Scanned, summary.Deleted, n, want, outPath)
	}
	return gcResult{
		Instances: n, Documents: n,
		Seconds:            round(res.Seconds, 3),
		CPUSeconds:         round(res.CPUSeconds, 3),
		EmulatorCPUSeconds: round((emulatorAfter - emulatorBefore).Seconds(), 3),
		SeedSeconds:        round(seeded.Seconds(), 3),
		SettleSeconds:      round(settled.Seconds(), 3),
		PeakRSSBytes:       res.PeakRSSBytes,
		BaselineRSSBytes:   res.BaselineRSSBytes,
		BytesPerInstance:   (res.PeakRSSBytes - res.BaselineRSSBytes) / int64(n),
		Claimed:            summary.Claimed,
		Deleted:            summary.Deleted,
		FirestoreReads:     usage.FirestoreReads,
	}, nil
}

// settle waits until the emulator has digested the documents just
// written: until its CPU time grows by less than a tenth of the time
// passing (its Java virtual machine collects the garbage of 100,000
// writes for seconds after them), at most 30 s. A collection begun before
// would be charged the emulator's digestion of the benchmark's own
// writes. It returns how long it waited.
func (b *bench) settle(ctx context.Context, pid int) (time.Duration, error) {
	const step, limit = 500 * time.Millisecond, 30 * time.Second
	begun := time.Now()
	prev, err := cpuTime(pid)
	if err != nil {
		return 0, err
	}
	for time.Since(begun) < limit {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(step):
		}
		cur, err := cpuTime(pid)
		if err != nil {
			return 0, err
		}
		if cur-prev < step/10 {
			break
		}
		prev = cur
	}
	return time.Since(begun), nil
}

// seedDocuments writes n proxy documents: all but gcOrphans(n) Ready and
// claiming instances 0…, the rest Creating with uids no instance carries.
// They go in transactions of seedBatch writes, which the emulator takes
// about three times as fast as a BulkWriter's batches of twenty.
func seedDocuments(ctx context.Context, client *firestore.Client, n int) error {
	const seedBatch = 500 // the most writes one commit takes
	claimed := n - gcOrphans(n)
	now := time.Now().UTC()
	for start := 0; start < n; start += seedBatch {
		err := client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
			for i := start; i < min(start+seedBatch, n); i++ {
				p := &proxy.Proxy{
					Namespace: fmt.Sprintf("gc-%04d", i/20), Name: fmt.Sprintf("proxy-%02d", i%20), UID: gcUID(i), Generation: 1,
					Spec: proxy.Spec{Provider: mock.Type, Port: proxy.DefaultPort, Placement: proxy.Placement{Region: "us-central1", Zone: "us-central1-a"},
						AllowedSourceRanges: []string{"203.0.113.0/24"}},
					Status:     proxy.Status{Phase: proxy.PhaseReady},
					CreateTime: now,
				}
				if i >= claimed {
					p.UID = gcUID(n + i)
					p.Status.Phase = proxy.PhaseCreating
				}
				ref := client.Collection("namespaces").Doc(p.Namespace).Collection("proxies").Doc(p.Name)
				if err := tx.Set(ref, p); err != nil {
					return fmt.Errorf("writing %s: %w", p.Key(), err)
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("writing documents %d to %d: %w", start, min(start+seedBatch, n)-1, err)
		}
	}
	// A count says whether all landed.
	res, err := client.CollectionGroup("proxies").NewAggregationQuery().WithCount("n").Get(ctx)
	if err != nil {
		return err
	}
	var count int64
	switch v := res["n"].(type) {
	case int64:
		count = v
	case interface{ GetIntegerValue() int64 }:
		count = v.GetIntegerValue()
	}
	if count != int64(n) {
		return fmt.Errorf("wrote %d documents, but the emulator counts %v", n, res["n"])
	}
	return nil
}

// gcWorkerResult is what the worker measured of its run.
type gcWorkerResult struct {
	Seconds float64 `json:"seconds"`
	// CPUSeconds is the worker's own CPU time during the run, user and
	// system: the collector's, and its clients'.
	CPUSeconds       float64 `json:"cpuSeconds"`
	BaselineRSSBytes int64   `json:"baselineRSSBytes"`
	PeakRSSBytes     int64   `json:"peakRSSBytes"`
}

// gcWorker is the worker process: a fleet of n VMs, one CollectGarbage run
// through the function's own handler, and its time and memory.
func gcWorker(ctx context.Context) error {
	n, err := atoiEnv(gcSizeEnv)
	if err != nil {
		return err
	}
	f := newFleet(n, time.Now().Add(-time.Hour))
	reg := provider.NewRegistry()
	if err := reg.Register(mock.Type, func(context.Context) (provider.Provider, error) { return metering.Provider(f), nil }); err != nil {
		return err
	}
	a, err := app.New(ctx, os.Getenv, app.Options{Serve: []app.Function{app.CollectGarbage}, Registry: reg})
	if err != nil {
		return err
	}
	defer a.Close()

	runtime.GC()
	debug.FreeOSMemory()
	baseline, err := procBytes(os.Getpid(), "VmRSS")
	if err != nil {
		return err
	}
	if err := resetPeakRSS(os.Getpid()); err != nil {
		return err
	}
	if path := os.Getenv(gcProfileEnv); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	cpu := ownCPU()
	start := time.Now()
	err = a.CollectGarbage(ctx, tick(a.Config.Project))
	took, cpuTook := time.Since(start), ownCPU()-cpu
	pprof.StopCPUProfile()
	if err != nil {
		return err
	}
	peak, err := procBytes(os.Getpid(), "VmHWM")
	if err != nil {
		return err
	}
	raw, _ := json.Marshal(gcWorkerResult{Seconds: took.Seconds(), CPUSeconds: cpuTook.Seconds(), BaselineRSSBytes: baseline, PeakRSSBytes: peak})
	return os.WriteFile(os.Getenv(gcResultEnv), raw, 0o644)
}

// ownCPU is the CPU time this process has used so far, user and system.
func ownCPU() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// tick is a Cloud Scheduler tick on proxy-gc as Eventarc delivers it.
func tick(project string) event.Event {
	e := event.New()
	e.SetID("bench-tick")
	e.SetType(queue.MessagePublishedType)
	e.SetSource("//pubsub.googleapis.com/projects/" + project + "/topics/" + queue.GCTopic)
	e.SetData("application/json", map[string]any{"message": map[string]any{"data": "e30=", "messageId": "bench-tick"}})
	return e
}

// gcSummary is the worker's gc summary line.
type gcSummary struct {
	Message  string `json:"message"`
	Scanned  int    `json:"scanned"`
	Claimed  int    `json:"claimed"`
	Orphaned int    `json:"orphaned"`
	Deleted  int    `json:"deleted"`
}

// readWorkerLog reads the worker's gc summary and the usage of its
// invocation off its log.
func readWorkerLog(path string) (gcSummary, metering.Usage, error) {
	f, err := os.Open(path)
	if err != nil {
		return gcSummary{}, metering.Usage{}, err
	}
	defer f.Close()
	var (
		summary gcSummary
		found   bool
	)
	inv := newStackLog(io.Discard)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var s gcSummary
		if json.Unmarshal(sc.Bytes(), &s) == nil && s.Message == "gc summary" {
			summary, found = s, true
		}
		inv.Write(append(sc.Bytes(), '\n'))
	}
	if err := sc.Err(); err != nil {
		return summary, metering.Usage{}, err
	}
	if !found || inv.snapshot().ByFunction["CollectGarbage"] != 1 {
		return summary, metering.Usage{}, fmt.Errorf("the gc worker's log %s has no gc summary or no CollectGarbage invocation line", path)
	}
	return summary, inv.snapshot().Usage, nil
}

// useStackFirestore points this process's Firestore clients at the
// stack's emulator, which they find by FIRESTORE_EMULATOR_HOST alone, and
// returns what puts the variable back: a later test of the process
// (TestBurst, on the test run's emulator) must not be pointed at this
// stack's, stopped by then.
func (b *bench) useStackFirestore() (restore func()) {
	env := emulator.Firestore.EnvVar()
	was, set := os.LookupEnv(env)
	os.Setenv(env, b.stack.FirestoreHost)
	return func() {
		if set {
			os.Setenv(env, was)
		} else {
			os.Unsetenv(env)
		}
	}
}
