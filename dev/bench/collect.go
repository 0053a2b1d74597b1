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
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/egress-proxies/egress/emulators/emulator"
	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/queue"
)

// The garbage-collection run happens in a process of its own, this command
// run again with roleEnv set, so that its memory is its own: the mock
// provider it lists lives in its process, and the benchmark's listener and
// clients do not.
const (
	roleEnv      = "EGRESS_BENCH_ROLE"
	gcWorkerRole = "gc-worker"
	// gcSizeEnv and gcResultEnv pass the worker its size and where to write
	// its gcWorkerResult.
	gcSizeEnv   = "EGRESS_BENCH_GC_SIZE"
	gcResultEnv = "EGRESS_BENCH_GC_RESULT"
)

// gcUID is the uid of the i-th document or instance of the run.
func gcUID(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }

// gcOrphans is how many of n instances the run finds unclaimed: one in a
// hundred. As many documents have no VM yet.
func gcOrphans(n int) int { return n / 100 }

// collect runs the garbage-collection phase: n documents written to the
// emulator, then one CollectGarbage run over them and n mock instances in
// a worker process.
func (b *bench) collect(ctx context.Context, r *results) error {
	n := b.s.gc
	// The benchmark's own client writes to the stack's emulator.
	os.Setenv(emulator.Firestore.EnvVar(), b.stack.FirestoreHost)
	client, err := firestore.NewClient(ctx, gcProject)
	if err != nil {
		return err
	}
	defer client.Close()
	begun := time.Now()
	if err := seedDocuments(ctx, client, n); err != nil {
		return err
	}
	b.log.Info("documents written", "documents", n, "after", time.Since(begun).Round(time.Millisecond))

	exe, err := os.Executable()
	if err != nil {
		return err
	}
	resultPath := filepath.Join(b.dir, "gc-result.json")
	outPath := filepath.Join(b.dir, "gc-worker.log")
	out, err := os.Create(outPath)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(),
		roleEnv+"="+gcWorkerRole, gcSizeEnv+"="+strconv.Itoa(n), gcResultEnv+"="+resultPath,
		"GOOGLE_CLOUD_PROJECT="+gcProject, "PROVIDERS="+mock.Type, "LOG_FORMAT=json", "LOG_LEVEL=info",
		// The run measures what deleting 1% of the fleet costs, which at
		// 100,000 is more than the guard lets one run delete: the
		// operator's one run with the limit raised.
		"GC_MAX_DELETES="+strconv.Itoa(max(gcOrphans(n), 1)),
		emulator.Firestore.EnvVar()+"="+b.stack.FirestoreHost, emulator.PubSub.EnvVar()+"="+b.stack.PubSubHost)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("the gc worker failed: %w (its output: %s)", err, outPath)
	}
	var res gcWorkerResult
	raw, err := os.ReadFile(resultPath)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("the gc worker's result: %w", err)
	}
	summary, usage, err := readWorkerLog(outPath)
	if err != nil {
		return err
	}
	if want := gcOrphans(n); summary.Scanned != n || summary.Deleted != want {
		return fmt.Errorf("the gc run scanned %d instances and deleted %d, want %d and %d (its output: %s)", summary.Scanned, summary.Deleted, n, want, outPath)
	}
	r.GC = gcResult{
		Instances: n, Documents: n,
		Seconds:          round(res.Seconds, 3),
		PeakRSSBytes:     res.PeakRSSBytes,
		BaselineRSSBytes: res.BaselineRSSBytes,
		Claimed:          summary.Claimed,
		Deleted:          summary.Deleted,
		FirestoreReads:   usage.FirestoreReads,
	}
	return nil
}

// seedDocuments writes n proxy documents: all but gcOrphans(n) Ready and
// claiming instances 0…, the rest Creating with uids no instance carries.
func seedDocuments(ctx context.Context, client *firestore.Client, n int) error {
	bw := client.BulkWriter(ctx)
	claimed := n - gcOrphans(n)
	now := time.Now().UTC()
	for i := range n {
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
		if _, err := bw.Set(ref, p); err != nil {
			return fmt.Errorf("writing %s: %w", p.Key(), err)
		}
	}
	bw.End()
	// BulkWriter reports failures per job; a count says whether all landed.
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
	Seconds          float64 `json:"seconds"`
	BaselineRSSBytes int64   `json:"baselineRSSBytes"`
	PeakRSSBytes     int64   `json:"peakRSSBytes"`
}

// gcWorker is the worker process: n mock instances, one CollectGarbage run
// through the function's own handler, and its time and memory.
func gcWorker(ctx context.Context) error {
	n, err := atoiEnv(gcSizeEnv)
	if err != nil {
		return err
	}
	// An hour old, well past the grace period; booted at once.
	m := mock.New(mock.Options{Clock: clock.NewFake(time.Now().Add(-time.Hour))})
	for i := range n {
		uid := gcUID(i)
		if _, err := m.Create(ctx, provider.CreateRequest{Name: provider.NameFromUID(uid), UID: uid}); err != nil {
			return err
		}
	}
	reg := provider.NewRegistry()
	if err := reg.Register(mock.Type, func(context.Context) (provider.Provider, error) { return metering.Provider(m), nil }); err != nil {
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
	start := time.Now()
	if err := a.CollectGarbage(ctx, tick(a.Config.Project)); err != nil {
		return err
	}
	took := time.Since(start)
	peak, err := procBytes(os.Getpid(), "VmHWM")
	if err != nil {
		return err
	}
	raw, _ := json.Marshal(gcWorkerResult{Seconds: took.Seconds(), BaselineRSSBytes: baseline, PeakRSSBytes: peak})
	return os.WriteFile(os.Getenv(gcResultEnv), raw, 0o644)
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

// procBytes reads a size field (VmRSS, VmHWM) of /proc/PID/status.
func procBytes(pid int, field string) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the memory of process %d (Linux only): %w", pid, err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/status %s %q: %w", pid, field, v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, field)
}

// resetPeakRSS starts the process's peak resident size (VmHWM) again from
// its current size, so a phase's peak is its own.
func resetPeakRSS(pid int) error {
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		return fmt.Errorf("resetting the peak memory of process %d: %w", pid, err)
	}
	return nil
}
