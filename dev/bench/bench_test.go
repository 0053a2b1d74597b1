package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/emulators/emulator"
	"github.com/egress-proxies/egress/internal/metering"
)

// TestMain lets the test binary be the garbage-collection worker too, as
// the bench binary is: the phase runs os.Executable() again.
func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == gcWorkerRole {
		if err := gcWorker(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "gc worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestBenchOnTheLocalStack runs the whole benchmark, small, on its own
// local stack, and holds it to the benchmark's count targets
// (countsMissed): one Create and one Delete per lifecycle; status writes,
// Gets, invocations and document reads and writes within 1.5 times their
// floor; every lifecycle Ready and gone; the collection deleting exactly the
// orphans. It asserts no time: make test shares two cores with every other
// test, and times are `make bench`'s to report and hold (timesMissed).
func TestBenchOnTheLocalStack(t *testing.T) {
	if testing.Short() {
		t.Skip("the benchmark starts its own local stack")
	}
	if _, err := emulator.SDKRoot(); err != nil && os.Getenv("CI") != "true" {
		t.Skipf("%v\n%s", err, emulator.InstallHint)
	}
	s := settings{scale: 25, lifecycles: 3, bulk: 40, concurrency: 8, gc: 1000, pool: 3, burst: 10, phases: allPhases, warmup: true, out: filepath.Join(t.TempDir(), "bench.json")}
	// A bound against a hang, far above any run on a loaded machine; no
	// measure.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	r, err := run(ctx, s, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	r.table(&table)
	t.Log(table.String())

	for _, m := range r.countsMissed(s) {
		t.Error(m)
	}
	// Every figure is measured (a time is never zero), whatever it is.
	if r.Bulk.Seconds <= 0 || r.Bulk.PeakRSSBytes <= 0 || r.API.CreateP50Ms <= 0 || r.API.GetP99Ms <= 0 || r.GC.PeakRSSBytes <= 0 ||
		r.DeleteLatencyMs.P50 <= 0 || r.Lifecycle["functionSeconds"].Measured <= 0 {
		t.Errorf("bulk %+v, api %+v, gc %+v, delete latency %+v: want every figure measured", r.Bulk, r.API, r.GC, r.DeleteLatencyMs)
	}
	if missed := r.timesMissed(s); len(missed) > 0 {
		t.Logf("time targets this busy a machine missed, which make bench holds and make test does not: %s", strings.Join(missed, "; "))
	}

	// The JSON has what the issue asks of it.
	if err := r.write(s.out); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(s.out)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, m := range []string{"firestoreWrites", "firestoreReads", "providerCreate", "providerGet", "providerDelete", "invocations", "functionSeconds"} {
		paths = append(paths, "lifecycle."+m+".measured", "lifecycle."+m+".floor")
	}
	paths = append(paths, "readyLatencyMs.p50", "readyLatencyMs.p99", "bulk1000.seconds", "bulk1000.peakRSSBytes",
		"bulk1000Production.secondsAfterLastBoot", "bulk1000Production.concurrency.Reconcile.concurrency",
		"bulk1000Production.concurrency.Reconcile.maxInstances", "bulk1000Production.concurrency.ProxyAPI.concurrency",
		"warmUp.invocations", "warmUp.functionSecondsPerInvocation", "gc100k.seconds", "gc100k.peakRSSBytes", "gc100k.cpuSeconds", "gc100k.emulatorCPUSeconds", "gc100k.bytesPerInstance", "totalSeconds", "api.createP50Ms", "api.createP99Ms", "api.concurrency",
		"poolClaim.readyMs.p50", "poolClaim.readyMs.p99", "cold.readyMs.p50", "cold.readyMs.p99",
		"reconfigure.readyMs.p50", "reconfigure.readyMs.p99", "burst.twoAccountsToOne")
	for _, run := range []string{"oneAccount", "twoAccounts"} {
		for _, k := range []string{"proxies", "calls", "rateLimit", "achievedRate", "achievedRateToLimit", "floorSeconds", "readySeconds", "readyToFloor", "refused", "userVisibleErrors"} {
			paths = append(paths, "burst."+run+"."+k)
		}
	}
	for _, m := range lifecycleOrder {
		paths = append(paths, "poolClaim.lifecycle."+m+".measured", "poolClaim.lifecycle."+m+".floor", "poolClaim.lifecycle."+m+".ratio")
	}
	for _, p := range paths {
		if _, ok := lookup(doc, p).(float64); !ok {
			t.Errorf("%s: %s is not a number", s.out, p)
		}
	}
	// The scaling table has a row for each size, and the phases' times
	// one for each phase, the stack's start and the warm-up.
	for p, want := range map[string]int{"scaling.gc": len(s.gcSizes()), "scaling.bulk": len(s.bulkSizes()), "phases": len(allPhases) + 2} {
		if rows, _ := lookup(doc, p).([]any); len(rows) != want {
			t.Errorf("%s: %s has %d rows, want %d", s.out, p, len(rows), want)
		}
	}
}

func lookup(doc map[string]any, path string) any {
	var v any = doc
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// TestStackLog reads the lines of a stack's output, in chunks that split
// them anywhere.
func TestStackLog(t *testing.T) {
	lines := []string{
		`{"time":"2026-12-03T10:00:00Z","message":"invocation","function":"ProxyAPI","latencyMs":40,"usage":{"firestoreReads":2,"firestoreWrites":2}}`,
		`not JSON at all`,
		`{"time":"2026-12-03T10:00:01Z","message":"invocation","function":"Reconcile","trigger":"written","latencyMs":100,"usage":{"firestoreReads":1,"providerCreate":1,"providerGet":5}}`,
		`{"time":"2026-12-03T10:00:02Z","message":"proxy ready","document":"namespaces/a/proxies/p"}`,
		`{"time":"2026-12-03T10:00:03Z","message":"proxy ready","document":"namespaces/a/proxies/p"}`,
		`{"time":"2026-12-03T10:00:04Z","message":"invocation","function":"Reconcile","trigger":"requeue","latencyMs":150,"usage":{"pubsubPublished":1}}`,
		`{"time":"2026-12-03T10:00:05Z","message":"proxy deleted","document":"namespaces/a/proxies/p"}`,
	}
	text := strings.Join(lines, "\n") + "\n"
	var rest strings.Builder
	l := newStackLog(&rest)
	for i := 0; i < len(text); i += 7 {
		l.Write([]byte(text[i:min(i+7, len(text))]))
	}

	want := tally{
		ByFunction:       map[string]int{"ProxyAPI": 1, "Reconcile": 2},
		Written:          1,
		Usage:            metering.Usage{FirestoreReads: 3, FirestoreWrites: 2, ProviderCreate: 1, ProviderGet: 5, PubSubPublished: 1},
		Latency:          290 * time.Millisecond,
		Billed:           400 * time.Millisecond,
		BilledByFunction: map[string]time.Duration{"ProxyAPI": 100 * time.Millisecond, "Reconcile": 300 * time.Millisecond},
	}
	if diff := cmp.Diff(want, l.snapshot()); diff != "" {
		t.Errorf("tally (-want +got):\n%s", diff)
	}
	if rest.String() != text {
		t.Errorf("lines passed on:\n%s\nwant every line:\n%s", rest.String(), text)
	}
	ctx := context.Background()
	for what, at := range map[string]string{ready: "2026-12-03T10:00:02Z", gone: "2026-12-03T10:00:05Z"} {
		got, err := l.await(ctx, what, []string{"namespaces/a/proxies/p"}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := time.Parse(time.RFC3339, at); !got[0].Equal(want) {
			t.Errorf("%s at %s, want %s (the first such line)", what, got[0], want)
		}
	}
	if _, err := l.await(ctx, ready, []string{"namespaces/a/proxies/absent"}, 10*time.Millisecond); err == nil {
		t.Error("await of a proxy never Ready returned no error")
	}
}

func TestTallyArithmetic(t *testing.T) {
	a := tally{ByFunction: map[string]int{"ProxyAPI": 4, "Reconcile": 10}, Written: 6, Usage: metering.Usage{FirestoreReads: 12},
		Latency: 5 * time.Second, Billed: 6 * time.Second, BilledByFunction: map[string]time.Duration{"Reconcile": 6 * time.Second}}
	b := tally{ByFunction: map[string]int{"ProxyAPI": 1, "Reconcile": 4}, Written: 2, Usage: metering.Usage{FirestoreReads: 5},
		Latency: 2 * time.Second, Billed: 2 * time.Second, BilledByFunction: map[string]time.Duration{"Reconcile": 2 * time.Second}}
	d := a.minus(b)
	if diff := cmp.Diff(tally{ByFunction: map[string]int{"ProxyAPI": 3, "Reconcile": 6}, Written: 4, Usage: metering.Usage{FirestoreReads: 7},
		Latency: 3 * time.Second, Billed: 4 * time.Second, BilledByFunction: map[string]time.Duration{"Reconcile": 4 * time.Second}}, d); diff != "" {
		t.Errorf("a-b (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(a, d.plus(b)); diff != "" {
		t.Errorf("(a-b)+b (-want +got):\n%s", diff)
	}
	if d.total() != 9 {
		t.Errorf("total = %d, want 9", d.total())
	}
}

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	cases := map[string]struct {
		sample []time.Duration
		p      float64
		want   time.Duration
	}{
		"MedianOfOdd":   {sample: ms(30, 10, 20), p: 50, want: 20 * time.Millisecond},
		"MedianOfEven":  {sample: ms(40, 10, 30, 20), p: 50, want: 20 * time.Millisecond},
		"P99OfHundred":  {sample: ms(seq(100)...), p: 99, want: 99 * time.Millisecond},
		"P99OfTwenty":   {sample: ms(seq(20)...), p: 99, want: 20 * time.Millisecond},
		"Empty":         {sample: nil, p: 50, want: 0},
		"SingleElement": {sample: ms(7), p: 99, want: 7 * time.Millisecond},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := percentile(tc.sample, tc.p); got != tc.want {
				t.Errorf("p%v of %v = %v, want %v (nearest rank)", tc.p, tc.sample, got, tc.want)
			}
		})
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// TestFloors checks the floors the benchmark holds a lifecycle to.
func TestFloors(t *testing.T) {
	var r results
	s := settings{scale: 1, lifecycles: 2}
	r.lifecycle(s, tally{ByFunction: map[string]int{"ProxyAPI": 4, "Reconcile": 14}, Written: 12,
		Usage:   metering.Usage{FirestoreReads: 26, FirestoreWrites: 16, ProviderCreate: 2, ProviderGet: 5, ProviderDelete: 2},
		Latency: 600 * time.Millisecond, Billed: 2 * time.Second,
		BilledByFunction: map[string]time.Duration{"ProxyAPI": 400 * time.Millisecond, "Reconcile": 1600 * time.Millisecond}}, 2)
	ratio := func(v float64) *float64 { return &v }
	want := map[string]metric{
		"invocations":     {Measured: 9, Floor: 9, Ratio: ratio(1)},
		"statusWrites":    {Measured: 6, Floor: 6, Ratio: ratio(1)},
		"firestoreReads":  {Measured: 13, Floor: 12, Ratio: ratio(1.08)},
		"firestoreWrites": {Measured: 8, Floor: 8, Ratio: ratio(1)},
		"providerCreate":  {Measured: 1, Floor: 1, Ratio: ratio(1)},
		// One Get on the VM's call-home and one that finds it gone.
		"providerGet":    {Measured: 2.5, Floor: 2, Ratio: ratio(1.25)},
		"providerDelete": {Measured: 1, Floor: 1, Ratio: ratio(1)},
		// A VM made with its configuration is given none after.
		"providerReconfigure": {Measured: 0, Floor: 0},
		"pubsubPublished":     {Measured: 0, Floor: 0},
		// Nine invocations billed 100 ms each at the least.
		"functionSeconds": {Measured: 1, Floor: 0.9, Ratio: ratio(1.11), ByFunction: map[string]float64{"ProxyAPI": 0.2, "Reconcile": 0.8}, Unrounded: ratio(0.3)},
	}
	if diff := cmp.Diff(want, r.Lifecycle); diff != "" {
		t.Errorf("lifecycle metrics (-want +got):\n%s", diff)
	}
}

// TestTargets holds the targets apart: a run on a busy machine misses only
// time targets, which make test does not assert; a run that does too much
// work misses count targets, which it does.
func TestTargets(t *testing.T) {
	s := settings{lifecycles: 2, bulk: 100, gc: 1000, pool: 2, burst: 10, scale: 25, phases: allPhases}
	ratio := func(v float64) *float64 { return &v }
	burstAt := func(accounts int, seconds float64) burstRun {
		calls := s.burst * burstCallsPerProxy
		limit := float64(accounts*burstLimit) / burstInterval.Seconds()
		floor := float64(calls) / limit
		return burstRun{Accounts: accounts, Proxies: s.burst, Ready: s.burst, Calls: calls, LimitPerSecond: limit, FloorSeconds: floor, ReadySeconds: seconds,
			AchievedRate: float64(calls) / seconds, AchievedRateToLimit: floor / seconds, ReadyToFloor: seconds / floor}
	}
	atFloor := func() *results {
		r := &results{Lifecycle: map[string]metric{}}
		for _, k := range []string{"statusWrites", "providerGet", "invocations", "firestoreWrites", "firestoreReads"} {
			r.Lifecycle[k] = metric{Measured: 1, Floor: 1, Ratio: ratio(1)}
		}
		r.Lifecycle["providerCreate"] = metric{Measured: 1, Floor: 1, Ratio: ratio(1)}
		r.Lifecycle["providerDelete"] = metric{Measured: 1, Floor: 1, Ratio: ratio(1)}
		r.Lifecycle["functionSeconds"] = metric{Measured: 0.9, Floor: 0.9, Ratio: ratio(1)}
		r.ReadyLatencyMs, r.DeleteLatencyMs = latency{P50: 200, P99: 230, N: 2}, latency{P50: 230, P99: 300, N: 2}
		r.GC = gcResult{Instances: 1000, Seconds: 0.2, CPUSeconds: 0.05, BytesPerInstance: 1500, Deleted: gcOrphans(1000), FirestoreReads: 1002}
		for _, n := range s.gcSizes() {
			r.Scaling.GC = append(r.Scaling.GC, scaleRow{Items: n, MicrosecondsPerItem: 50, CPUMicrosecondsPerItem: 10, BytesPerItem: 1500})
		}
		for _, n := range s.bulkSizes() {
			r.Scaling.Bulk = append(r.Scaling.Bulk, scaleRow{Items: n, CPUMicrosecondsPerItem: 3000, FunctionSecondsPerItem: 1, BytesPerItem: 20000})
		}
		r.TotalSeconds = 300
		r.PoolClaim = poolClaimResult{ReadyMs: latency{P50: 1500, P99: 2000, N: 2}, Claimed: 2, Lifecycle: map[string]metric{}}
		for k, f := range claimLifecycleFloors(2) {
			r.PoolClaim.Lifecycle[k] = metric{Measured: f, Floor: f, Ratio: ratio(1)}
		}
		r.Cold.ReadyMs = latency{P50: ms(s.boot()) + 100, P99: ms(s.boot()) + 300, N: 2}
		r.Reconfigure.ReadyMs = latency{P50: 1100, P99: 1500, N: 2}
		// The burst at 1.05 times its floor, two accounts at half one's.
		one, two := burstAt(1, 2.1), burstAt(2, 1.05)
		r.Burst = &burstResult{OneAccount: one, TwoAccounts: two, TwoAccountsToOne: 0.5}
		return r
	}
	cases := map[string]struct {
		reason        string
		change        func(*results)
		counts, times int
	}{
		"AtFloor": {reason: "A run at every floor misses nothing.", change: func(*results) {}},
		"Busy": {reason: "A busy machine: slow call-home, billed seconds twice the floor, a slow bulk phase: only times missed.",
			change: func(r *results) {
				r.Lifecycle["functionSeconds"] = metric{Measured: 1.8, Floor: 0.9, Ratio: ratio(2)}
				r.ReadyLatencyMs.P99 = 5000
				r.BulkProduction.SecondsAfterLastBoot = 45
			}, times: 3},
		"ExtraGets": {reason: "Twice the floor of Gets is a count missed.",
			change: func(r *results) { r.Lifecycle["providerGet"] = metric{Measured: 4, Floor: 2, Ratio: ratio(2)} }, counts: 1},
		"TwoCreates": {reason: "A second Create per lifecycle is a count missed.",
			change: func(r *results) { r.Lifecycle["providerCreate"] = metric{Measured: 2, Floor: 1, Ratio: ratio(2)} }, counts: 1},
		"LostLifecycle": {reason: "A lifecycle that never turned Ready is a count missed.",
			change: func(r *results) { r.ReadyLatencyMs.N = 1 }, counts: 1},
		"GCOverdeletes": {reason: "A collection deleting more than the orphans is a count missed.",
			change: func(r *results) { r.GC.Deleted++ }, counts: 1},
		"GCReadsTwice": {reason: "A collection reading documents more than once is a count missed.",
			change: func(r *results) { r.GC.FirestoreReads = 2002 }, counts: 1},
		"GCOneSizeMissing": {reason: "A collection that did not run at every size of the scaling table is a count missed.",
			change: func(r *results) { r.Scaling.GC = r.Scaling.GC[1:] }, counts: 1},
		"GCSlowAndHungry": {reason: "A collection over 8.5 s, or over 2 s of its own CPU, is one time missed; over 2 KiB an instance, another.",
			change: func(r *results) {
				r.GC.Seconds, r.GC.CPUSeconds, r.GC.BytesPerInstance = 9, 2.1, 2100
			}, times: 2},
		"CostGrowsWithTheFleet": {reason: "A cost per item more than 20% higher at the largest size than at the smallest is a time missed, for each cost.",
			change: func(r *results) {
				r.Scaling.GC[2].CPUMicrosecondsPerItem = 12.5
				r.Scaling.GC[2].BytesPerItem = 1700
				r.Scaling.Bulk[1].FunctionSecondsPerItem = 1.3
			}, times: 2},
		"CostGrowsALittle": {reason: "20% growth is within the target.",
			change: func(r *results) { r.Scaling.GC[2].CPUMicrosecondsPerItem = 12 }},
		"TooLong": {reason: "A benchmark over six minutes is a time missed.",
			change: func(r *results) { r.TotalSeconds = 361 }, times: 1},
		"SlowClaims": {reason: "A claim slower than 1.5 s at the median and 5 s at p99, and a slow PATCH, are times missed.",
			change: func(r *results) {
				r.PoolClaim.ReadyMs = latency{P50: 1600, P99: 6000, N: 2}
				r.Reconfigure.ReadyMs.P99 = 5200
			}, times: 2},
		"ClaimReadsOverFloor": {reason: "A claimed lifecycle reading 1.3 times its floor is a count missed; 1.25 times is not.",
			change: func(r *results) {
				r.PoolClaim.Lifecycle["firestoreReads"] = metric{Measured: 130, Floor: 100, Ratio: ratio(1.3)}
				r.PoolClaim.Lifecycle["firestoreWrites"] = metric{Measured: 125, Floor: 100, Ratio: ratio(1.25)}
			}, counts: 1},
		"ClaimFunctionSeconds": {reason: "Function-seconds over 1.25 times the floor are a time missed.",
			change: func(r *results) {
				r.PoolClaim.Lifecycle["functionSeconds"] = metric{Measured: 3, Floor: 2, Ratio: ratio(1.5)}
			}, times: 1},
		"ColdServedByPool": {reason: "A cold proxy Ready before its boot ended was served by a pool it should not match.",
			change: func(r *results) { r.Cold.ReadyMs.P50 = 100 }, counts: 1},
		"UnclaimedProxy": {reason: "A proxy the pool serves that booted a VM of its own is a count missed.",
			change: func(r *results) { r.PoolClaim.Claimed = 1 }, counts: 1},
		"BurstSlow": {reason: "A burst at 1.25 times its floor (0.8 of the limit) through one account, and two accounts at 0.7 of its time, are three times missed.",
			change: func(r *results) {
				r.Burst.OneAccount = burstAt(1, 2.5)
				r.Burst.TwoAccountsToOne = 0.7
			}, times: 3},
		"BurstUserSawAnError": {reason: "A proxy that showed an error, and one not Ready, are counts missed, whatever the times.",
			change: func(r *results) {
				r.Burst.TwoAccounts.UserVisibleErrors, r.Burst.TwoAccounts.Errors = 1, []string{"namespaces/burst/proxies/proxy-0001: ProviderTransient: …"}
				r.Burst.OneAccount.Ready = s.burst - 1
			}, counts: 2},
		"BurstExtraCalls": {reason: "Calls past the floor's path (a Get that came twice) are a count missed; refused calls are not: the cloud is the final word.",
			change: func(r *results) {
				r.Burst.OneAccount.Calls++
				r.Burst.TwoAccounts.Calls++
				r.Burst.TwoAccounts.Refused++
			}, counts: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := atFloor()
			tc.change(r)
			got := []int{len(r.countsMissed(s)), len(r.timesMissed(s))}
			if diff := cmp.Diff([]int{tc.counts, tc.times}, got); diff != "" {
				t.Errorf("%s\ncount and time targets missed (-want +got):\n%s\n%v\n%v", tc.reason, diff, r.countsMissed(s), r.timesMissed(s))
			}
		})
	}
}

// TestClaimFloors checks the floors of a claimed lifecycle from a pool of
// twenty, as pool.go's comments count them.
func TestClaimFloors(t *testing.T) {
	want := map[string]float64{
		// The proxy's ten (POST, DELETE, six writes' events, call-home,
		// the member's claim) and the refill's ten.
		"invocations": 20,
		// Six of the proxy, the member's claim, four of the new member,
		// two of the pool's status, the claimed member's deletion.
		"statusWrites":    14,
		"firestoreWrites": 16,
		// The proxy's fourteen, the pool's four runs (43 + 3 × 21), the
		// claimed member's deletion event's one and the new member's five.
		"firestoreReads":      126,
		"providerCreate":      1,
		"providerGet":         3,
		"providerDelete":      1,
		"providerReconfigure": 1,
		"pubsubPublished":     2,
		"functionSeconds":     2,
	}
	got := claimLifecycleFloors(20)
	for k, v := range got {
		got[k] = round(v, 6)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("claimed lifecycle floors (-want +got):\n%s", diff)
	}
}

// TestStackLogPools reads the lines the pool phases wait on: a
// reconfiguration's, by generation, and members' Ready.
func TestStackLogPools(t *testing.T) {
	l := newStackLog(io.Discard)
	for _, ln := range []string{
		`{"time":"2026-12-03T10:00:00Z","message":"proxy ready","document":"pools/bench/proxies/w-1"}`,
		`{"time":"2026-12-03T10:00:01Z","message":"proxy ready","document":"namespaces/a/proxies/p"}`,
		`{"time":"2026-12-03T10:00:02Z","message":"warm VM claimed","document":"namespaces/a/proxies/q","pool":"bench"}`,
		`{"time":"2026-12-03T10:00:03Z","message":"proxy reconfigured","document":"namespaces/a/proxies/p","generation":2}`,
		`{"time":"2026-12-03T10:00:04Z","message":"proxy reconfigured","document":"namespaces/a/proxies/p","generation":2}`,
		`{"time":"2026-12-03T10:00:05Z","message":"invocation","function":"Reconcile","trigger":"ready","document":"namespaces/a/proxies/p","latencyMs":30}`,
		`{"time":"2026-12-03T10:00:06Z","message":"invocation","function":"Reconcile","trigger":"ready","document":"namespaces/a/proxies/p","latencyMs":10}`,
	} {
		l.Write([]byte(ln + "\n"))
	}
	ctx := context.Background()
	got, err := l.await(ctx, reconfigured, []string{generationKey("namespaces/a/proxies/p", 2)}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := time.Parse(time.RFC3339, "2026-12-03T10:00:03Z"); !got[0].Equal(want) {
		t.Errorf("reconfigured at %s, want %s (the first such line)", got[0], want)
	}
	if _, err := l.await(ctx, reconfigured, []string{generationKey("namespaces/a/proxies/p", 3)}, 10*time.Millisecond); err == nil {
		t.Error("await of a generation never served returned no error")
	}
	// The first call-home's run: it ended at its line's time and started
	// its latency before.
	start, _ := time.Parse(time.RFC3339Nano, "2026-12-03T10:00:04.97Z")
	if diff := cmp.Diff([]invocation{{start: start, took: 30 * time.Millisecond}, {}},
		l.callHomeRuns([]string{"namespaces/a/proxies/p", "namespaces/a/proxies/q"}), cmp.AllowUnexported(invocation{})); diff != "" {
		t.Errorf("call-home runs (-want +got):\n%s", diff)
	}
	if n, c := l.readyUnder("pools/bench/"), l.claimCount(); n != 1 || c != 1 {
		t.Errorf("%d members Ready and %d claims, want 1 and 1", n, c)
	}
	if err := l.awaitReadyUnder(ctx, "pools/bench/", 2, 10*time.Millisecond); err == nil {
		t.Error("await of two Ready members, one Ready, returned no error")
	}
}
