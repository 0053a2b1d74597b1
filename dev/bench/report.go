package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/reconcile"
)

// results is what the benchmark measured; its JSON is the -out file.
type results struct {
	Machine  machine        `json:"machine"`
	Settings settingsReport `json:"settings"`
	// Lifecycle is the mean usage of one proxy from create to gone, by
	// metric, against its floor.
	Lifecycle map[string]metric `json:"lifecycle"`
	// LifecycleInvocations splits the lifecycle's invocations by function.
	LifecycleInvocations map[string]float64 `json:"lifecycleInvocationsByFunction"`
	// ReadyLatencyMs is from the VM running to the API showing Ready;
	// DeleteLatencyMs from the DELETE to the document gone, which happens
	// only once the provider says the VM is gone.
	ReadyLatencyMs  latency    `json:"readyLatencyMs"`
	DeleteLatencyMs latency    `json:"deleteLatencyMs"`
	Bulk            bulkResult `json:"bulk1000"`
	// BulkProduction is the bulk phase read as production would run it:
	// the local stack serves each function at its deployed concurrency.
	BulkProduction bulkProduction `json:"bulk1000Production"`
	API            apiResult      `json:"api"`
	GC             gcResult       `json:"gc100k"`
	// PoolClaim, Cold and Reconfigure are the warm-pool phases (pool.go).
	PoolClaim   poolClaimResult   `json:"poolClaim"`
	Cold        coldResult        `json:"cold"`
	Reconfigure reconfigureResult `json:"reconfigure"`
	// Hetzner is the hetzner provider's phase (hetzner.go).
	Hetzner hetznerResult `json:"hetzner"`
	// AWS is the aws provider's phase (aws.go).
	AWS awsResult `json:"aws"`
}

// poolClaimResult is the claim phase: proxies a warm pool serves.
type poolClaimResult struct {
	// ReadyMs is from each POST's send to the proxy Ready.
	ReadyMs  latency `json:"readyMs"`
	Proxies  int     `json:"proxies"`
	PoolSize int     `json:"poolSize"`
	// Claimed counts the proxies that claimed a warm VM; the others
	// booted one of their own.
	Claimed int `json:"claimed"`
	// Lifecycle is the mean usage of one claimed lifecycle, its refill
	// included, against its floor (claimLifecycleFloors).
	Lifecycle map[string]metric `json:"lifecycle"`
}

// coldResult is the proxies no pool serves, requested beside the pool.
type coldResult struct {
	ReadyMs latency `json:"readyMs"`
	// Zone is their spec's zone, which no pool serves.
	Zone string `json:"zone"`
}

// reconfigureResult is from each PATCH's send to the proxy Ready serving
// the generation it made.
type reconfigureResult struct {
	ReadyMs latency `json:"readyMs"`
}

// bulkProduction is how fast the bulk phase converged, at the concurrency
// Terraform deploys.
type bulkProduction struct {
	// SecondsAfterLastBoot is from the last VM's boot ending to the last
	// proxy Ready.
	SecondsAfterLastBoot float64 `json:"secondsAfterLastBoot"`
	// Concurrency is each function's deployed scale.
	Concurrency map[string]scaleReport `json:"concurrency"`
}

type scaleReport struct {
	MaxInstances int `json:"maxInstances"`
	Concurrency  int `json:"concurrency"`
	InFlight     int `json:"inFlight"`
}

func deployedScale() map[string]scaleReport {
	out := map[string]scaleReport{}
	for f, s := range app.Deployed {
		out[string(f)] = scaleReport{MaxInstances: s.MaxInstances, Concurrency: s.Concurrency, InFlight: s.InFlight()}
	}
	return out
}

type machine struct {
	CPUs int    `json:"cpus"`
	Go   string `json:"go"`
	Date string `json:"date"`
}

type settingsReport struct {
	TimeScale       float64 `json:"timeScale"`
	RealisticBootMs float64 `json:"realisticBootMs"`
	BootMs          float64 `json:"bootMs"`
	Lifecycles      int     `json:"lifecycles"`
	BulkConcurrency int     `json:"bulkConcurrency"`
	PoolSize        int     `json:"poolSize"`
	ReconfigureMs   float64 `json:"reconfigureMs"`
}

func (s settings) report() settingsReport {
	return settingsReport{
		TimeScale:       s.scale,
		RealisticBootMs: ms(realisticBoot),
		BootMs:          ms(s.boot()),
		Lifecycles:      s.lifecycles,
		BulkConcurrency: s.concurrency,
		PoolSize:        s.pool,
		ReconfigureMs:   ms(s.reconfigureDelay()),
	}
}

// metric is one measured figure against its floor. Ratio is null where the
// floor is zero.
type metric struct {
	Measured float64  `json:"measured"`
	Floor    float64  `json:"floor"`
	Ratio    *float64 `json:"ratio"`
	// ByFunction splits the measured figure, where it is split.
	ByFunction map[string]float64 `json:"byFunction,omitempty"`
	// Unrounded, for function-seconds, is the plain sum of the latencies,
	// before Cloud Run's rounding of each request.
	Unrounded *float64 `json:"unrounded,omitempty"`
}

func newMetric(measured, floor float64) metric {
	m := metric{Measured: round(measured, 2), Floor: round(floor, 3)}
	if floor > 0 {
		r := round(measured/floor, 2)
		m.Ratio = &r
	}
	return m
}

type latency struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
	N   int     `json:"n"`
}

type bulkResult struct {
	Proxies     int `json:"proxies"`
	Concurrency int `json:"concurrency"`
	// RequestSeconds is how long the creates took to be answered, Seconds
	// until the last proxy was Ready, both from the first create.
	RequestSeconds float64 `json:"requestSeconds"`
	Seconds        float64 `json:"seconds"`
	// PeakRSSBytes is the functions process's peak resident memory during
	// the creates and until all were Ready.
	PeakRSSBytes  int64   `json:"peakRSSBytes"`
	DeleteSeconds float64 `json:"deleteSeconds"`
	// ReadyLatencyMs is from the first create to each proxy Ready.
	ReadyLatencyMs latency `json:"readyAfterStartMs"`
	// PerProxy is the mean usage of one proxy's lifecycle under this load.
	PerProxy         map[string]float64 `json:"perProxy"`
	InvocationsTotal int                `json:"invocations"`
}

type apiResult struct {
	Concurrency int     `json:"concurrency"`
	Requests    int     `json:"requests"`
	CreateP50Ms float64 `json:"createP50Ms"`
	CreateP99Ms float64 `json:"createP99Ms"`
	GetP50Ms    float64 `json:"getP50Ms"`
	GetP99Ms    float64 `json:"getP99Ms"`
}

type gcResult struct {
	Instances int     `json:"instances"`
	Documents int     `json:"documents"`
	Seconds   float64 `json:"seconds"`
	// PeakRSSBytes is the worker's peak resident memory during the run;
	// BaselineRSSBytes its memory before it, which holds the mock
	// provider's instances.
	PeakRSSBytes     int64 `json:"peakRSSBytes"`
	BaselineRSSBytes int64 `json:"baselineRSSBytes"`
	Claimed          int   `json:"claimed"`
	Deleted          int   `json:"deleted"`
	FirestoreReads   int64 `json:"firestoreReads"`
}

// Floors of one lifecycle, the least the design allows (the reconciler's
// package doc, docs/development/benchmarks.md).
const (
	// floorInvocations: ProxyAPI's POST and DELETE, one Reconcile per
	// document write, and the one the VM's call-home brings.
	floorInvocations = 2 + floorStatusWrites + 1
	// floorStatusWrites: the document's writes: created Pending, Creating,
	// Provisioning, Ready, Deleting, and deleted.
	floorStatusWrites = 6
	// floorFirestoreWrites: those, and the quota counter's increment and
	// decrement.
	floorFirestoreWrites = floorStatusWrites + 2
	// floorFirestoreReads: the create's namespace (its members, quota and
	// counter, in one document) and name, the deletion request's namespace
	// (who may delete) and document, a fresh read for each Reconcile
	// invocation, the read under the document's deletion, and the create's
	// query of the warm pools that could serve the spec (one read when
	// none does: a create that no pool serves pays it, so that one that a
	// pool serves is served in seconds).
	floorFirestoreReads = 2 + 2 + floorStatusWrites + 1 + 1 + 1
	// billingUnit is what Cloud Run bills a request that runs alone at the
	// least: its time rounded up to 100 ms.
	billingUnit = 100 * time.Millisecond
	// floorFunctionSeconds: the floor's invocations, each billed its unit
	// and no more — no run waits for anything.
	floorFunctionSeconds = floorInvocations * 0.1
)

// lifecycleFloors are the floors of one lifecycle, by metric.
var lifecycleFloors = map[string]float64{
	"invocations":     floorInvocations,
	"statusWrites":    floorStatusWrites,
	"firestoreReads":  floorFirestoreReads,
	"firestoreWrites": floorFirestoreWrites,
	"providerCreate":  1,
	// One Get on the VM's call-home, and one that finds it gone: no Get
	// looks at a booting VM.
	"providerGet":    reconcile.GetsPerLifecycle,
	"providerDelete": 1,
	// A VM made with its configuration is given none after.
	"providerReconfigure": 0,
	// Nothing waits, so nothing hands on; the VM's call-home is the VM's
	// publish, not a function's.
	"pubsubPublished": 0,
	"functionSeconds": floorFunctionSeconds,
}

// lifecycle fills in the lifecycle metrics from the usage of n lifecycles.
func (r *results) lifecycle(s settings, t tally, n int) {
	r.Lifecycle = lifecycleMetrics(t, n, lifecycleFloors)
	r.LifecycleInvocations = map[string]float64{}
	for _, f := range []string{"ProxyAPI", "Reconcile", "CollectGarbage"} {
		r.LifecycleInvocations[f] = round(float64(t.ByFunction[f])/float64(n), 2)
	}
}

// lifecycleMetrics is the mean usage of n lifecycles, t, by metric against
// floors.
func lifecycleMetrics(t tally, n int, floors map[string]float64) map[string]metric {
	per := perProxy(t, n)
	out := map[string]metric{}
	for _, k := range lifecycleOrder {
		if k != "functionSeconds" {
			out[k] = newMetric(per[k], floors[k])
		}
	}
	billed := newMetric(t.Billed.Seconds()/float64(n), floors["functionSeconds"])
	billed.ByFunction = map[string]float64{}
	for f, d := range t.BilledByFunction {
		billed.ByFunction[f] = round(d.Seconds()/float64(n), 3)
	}
	raw := round(t.Latency.Seconds()/float64(n), 3)
	billed.Unrounded = &raw
	billed.Measured = round(t.Billed.Seconds()/float64(n), 3)
	out["functionSeconds"] = billed
	return out
}

// perProxy is the usage t of n proxies, per proxy.
func perProxy(t tally, n int) map[string]float64 {
	f := func(v int64) float64 { return round(float64(v)/float64(n), 2) }
	u := t.Usage
	return map[string]float64{
		"invocations":     f(int64(t.total())),
		"statusWrites":    f(int64(t.Written)),
		"firestoreReads":  f(u.FirestoreReads),
		"firestoreWrites": f(u.FirestoreWrites),
		"providerCreate":  f(u.ProviderCreate),
		"providerGet":     f(u.ProviderGet),
		"providerDelete":  f(u.ProviderDelete),
		"providerErrors":  f(u.ProviderErrors),

		"providerReconfigure": f(u.ProviderReconfigure),
		"pubsubPublished":     f(u.PubSubPublished),
	}
}

// lifecycleOrder is the order of the lifecycle table.
var lifecycleOrder = []string{"invocations", "statusWrites", "firestoreWrites", "firestoreReads", "providerCreate", "providerGet", "providerDelete", "providerReconfigure", "pubsubPublished", "functionSeconds"}

// table prints the results for people.
func (r *results) table(w io.Writer) {
	s := r.Settings
	fmt.Fprintf(w, "\negress benchmark, %s, %d CPUs, %s: local stack on the emulators, mock provider;\n", r.Machine.Date, r.Machine.CPUs, r.Machine.Go)
	if s.TimeScale != 1 {
		fmt.Fprintf(w, "time scaled down %g×: boot %s → %s\n", s.TimeScale, dur(s.RealisticBootMs), dur(s.BootMs))
	} else {
		fmt.Fprintf(w, "in real time: boot %s\n", dur(s.BootMs))
	}
	fmt.Fprintf(w, "deployed concurrency: ProxyAPI %d, Reconcile %d, CollectGarbage %d requests at once\n\n",
		app.Deployed[app.ProxyAPI].InFlight(), app.Deployed[app.Reconcile].InFlight(), app.Deployed[app.CollectGarbage].InFlight())

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "per proxy lifecycle, mean of %d\tmeasured\tfloor\tratio\t\n", s.Lifecycles)
	for _, k := range lifecycleOrder {
		m := r.Lifecycle[k]
		ratio := "–"
		if m.Ratio != nil {
			ratio = fmt.Sprintf("%.2f", *m.Ratio)
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%g\t%s\t\n", k, m.Measured, m.Floor, ratio)
	}
	tw.Flush()
	var by []string
	for _, f := range []string{"ProxyAPI", "Reconcile", "CollectGarbage"} {
		by = append(by, fmt.Sprintf("%s %.2f", f, r.LifecycleInvocations[f]))
	}
	fmt.Fprintf(w, "invocations by function: %s\n", strings.Join(by, ", "))
	fs := r.Lifecycle["functionSeconds"]
	var bySeconds []string
	for _, f := range []string{"ProxyAPI", "Reconcile", "CollectGarbage"} {
		bySeconds = append(bySeconds, fmt.Sprintf("%s %.3f", f, fs.ByFunction[f]))
	}
	fmt.Fprintf(w, "billed function-seconds (each request rounded up to 100 ms; %.3f s unrounded): %s\n\n", *fs.Unrounded, strings.Join(bySeconds, ", "))

	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "latency (ms)\tp50\tp99\tmax\tn\t\n")
	fmt.Fprintf(tw, "VM ready → API shows Ready\t%.0f\t%.0f\t%.0f\t%d\t\n", r.ReadyLatencyMs.P50, r.ReadyLatencyMs.P99, r.ReadyLatencyMs.Max, r.ReadyLatencyMs.N)
	fmt.Fprintf(tw, "DELETE → proxy and VM gone\t%.0f\t%.0f\t%.0f\t%d\t\n", r.DeleteLatencyMs.P50, r.DeleteLatencyMs.P99, r.DeleteLatencyMs.Max, r.DeleteLatencyMs.N)
	fmt.Fprintf(tw, "API create, %d clients\t%.1f\t%.1f\t\t%d\t\n", r.API.Concurrency, r.API.CreateP50Ms, r.API.CreateP99Ms, r.API.Requests)
	fmt.Fprintf(tw, "API get, %d clients\t%.1f\t%.1f\t\t%d\t\n", r.API.Concurrency, r.API.GetP50Ms, r.API.GetP99Ms, r.API.Requests)
	tw.Flush()

	b := r.Bulk
	fmt.Fprintf(w, "\n%d proxies requested by %d clients: answered in %.1f s, all Ready %.1f s after the first request (median %.1f s);\n",
		b.Proxies, b.Concurrency, b.RequestSeconds, b.Seconds, b.ReadyLatencyMs.P50/1000)
	fmt.Fprintf(w, "  all Ready %.1f s after the last VM's boot, at the deployed concurrency;\n", r.BulkProduction.SecondsAfterLastBoot)
	fmt.Fprintf(w, "  functions process peak RSS %s; all deleted and gone in %.1f s; per proxy %.2f invocations, %.2f status writes, %.2f Gets\n",
		mib(b.PeakRSSBytes), b.DeleteSeconds, b.PerProxy["invocations"], b.PerProxy["statusWrites"], b.PerProxy["providerGet"])
	r.poolTable(w)
	g := r.GC
	fmt.Fprintf(w, "garbage collection over %d instances and %d documents: one run %.2f s, peak RSS %s (%s before the run); %d claimed, %d deleted, %d document reads\n",
		g.Instances, g.Documents, g.Seconds, mib(g.PeakRSSBytes), mib(g.BaselineRSSBytes), g.Claimed, g.Deleted, g.FirestoreReads)
	r.Hetzner.table(w)
	r.AWS.table(w)
}

// poolTable prints the warm-pool phases.
func (r *results) poolTable(w io.Writer) {
	pc := r.PoolClaim
	fmt.Fprintf(w, "\nwarm pool of %d: %d proxies requested at once, %d claimed a warm VM\n", pc.PoolSize, pc.Proxies, pc.Claimed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "latency (ms)\tp50\tp99\tmax\tn\t\n")
	for _, row := range []struct {
		name string
		l    latency
	}{{"POST → Ready, claimed from the pool", pc.ReadyMs}, {"POST → Ready, cold (zone " + r.Cold.Zone + ")", r.Cold.ReadyMs}, {"PATCH → Ready, new generation", r.Reconfigure.ReadyMs}} {
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t%d\t\n", row.name, row.l.P50, row.l.P99, row.l.Max, row.l.N)
	}
	tw.Flush()
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "per claimed lifecycle, refill included\tmeasured\tfloor\tratio\t\n")
	for _, k := range lifecycleOrder {
		m := pc.Lifecycle[k]
		ratio := "–"
		if m.Ratio != nil {
			ratio = fmt.Sprintf("%.2f", *m.Ratio)
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%g\t%s\t\n", k, m.Measured, m.Floor, ratio)
	}
	tw.Flush()
	fmt.Fprintln(w)
}

// write writes the results as JSON to path.
func (r *results) write(path string) error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}

// summarize gives the percentiles of a sample.
func summarize(ds []time.Duration) latency {
	return latency{P50: ms(percentile(ds, 50)), P99: ms(percentile(ds, 99)), Max: ms(slices.Max(ds)), N: len(ds)}
}

// percentile is the nearest-rank percentile p of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[max(rank, 1)-1]
}

func ms(d time.Duration) float64 { return round(float64(d)/float64(time.Millisecond), 1) }

func round(v float64, places int) float64 {
	f := math.Pow(10, float64(places))
	return math.Round(v*f) / f
}

func dur(msec float64) string {
	return time.Duration(msec * float64(time.Millisecond)).String()
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// The benchmark's targets. Counts do not depend on how busy the machine
// is, so `make test`, which runs the benchmark small, holds a run to them;
// times do, so only `make bench` holds a run to those, and reports them
// either way.
const (
	// maxCountRatio is how far above its floor a lifecycle's count may be.
	maxCountRatio = 1.5
	// maxFunctionSecondsRatio is how far above its floor the billed
	// function-seconds of a lifecycle may be: each invocation's latency
	// rounded up to 100 ms.
	maxFunctionSecondsRatio = 1.5
	// maxReadyLatencyMs is the p99 from a VM's call-home to the API showing
	// Ready: one Pub/Sub message, one Reconcile, one Get, one write.
	maxReadyLatencyMs = 2000
	// maxSecondsAfterLastBoot is how long after the last VM's boot the bulk
	// phase's proxies may all be Ready.
	maxSecondsAfterLastBoot = 30
	// maxClaimRatio is how far above its floor a claimed lifecycle's
	// figure may be.
	maxClaimRatio = 1.25
	// maxClaimP50Ms and maxClaimP99Ms bound POST → Ready of a proxy that
	// claims a warm VM: a claim, a Reconfigure the VM applies in about a
	// second, its call-home. maxReconfigureP99Ms bounds PATCH → Ready.
	maxClaimP50Ms       = 3000
	maxClaimP99Ms       = 5000
	maxReconfigureP99Ms = 5000
)

// claimCountsMissed says which count targets the claim phase missed: every
// proxy claimed a warm VM, and each count of a claimed lifecycle is within
// maxClaimRatio of its floor; every cold proxy took its whole boot (one
// that did not was served by a pool it should not match); every phase
// measured each of its proxies. Function-seconds are a time
// (claimTimesMissed).
func (r *results) claimCountsMissed(s settings) []string {
	var out []string
	pc := r.PoolClaim
	if pc.Claimed != s.pool {
		out = append(out, fmt.Sprintf("poolClaim: %d of %d proxies claimed a warm VM", pc.Claimed, s.pool))
	}
	for _, k := range lifecycleOrder {
		if k == "functionSeconds" {
			continue
		}
		if m := pc.Lifecycle[k]; m.Ratio == nil || *m.Ratio > maxClaimRatio {
			out = append(out, fmt.Sprintf("poolClaim.lifecycle %s: measured %v against a floor of %v, want at most %g times it", k, m.Measured, m.Floor, maxClaimRatio))
		}
	}
	if boot := ms(s.boot()); r.Cold.ReadyMs.P50 < boot {
		out = append(out, fmt.Sprintf("cold POST → Ready p50 %v ms, want at least the boot, %v ms", r.Cold.ReadyMs.P50, boot))
	}
	if pc.ReadyMs.N != s.pool || r.Cold.ReadyMs.N != s.pool || r.Reconfigure.ReadyMs.N != s.pool {
		out = append(out, fmt.Sprintf("%d claimed, %d cold and %d reconfigured proxies Ready, want %d of each", pc.ReadyMs.N, r.Cold.ReadyMs.N, r.Reconfigure.ReadyMs.N, s.pool))
	}
	return out
}

// claimTimesMissed says which time targets the pool phases missed.
func (r *results) claimTimesMissed() []string {
	var out []string
	pc := r.PoolClaim
	if pc.ReadyMs.P50 > maxClaimP50Ms || pc.ReadyMs.P99 > maxClaimP99Ms {
		out = append(out, fmt.Sprintf("poolClaim POST → Ready p50 %v ms and p99 %v ms, want at most %d and %d", pc.ReadyMs.P50, pc.ReadyMs.P99, maxClaimP50Ms, maxClaimP99Ms))
	}
	if p := r.Reconfigure.ReadyMs.P99; p > maxReconfigureP99Ms {
		out = append(out, fmt.Sprintf("reconfigure PATCH → Ready p99 %v ms, want at most %d", p, maxReconfigureP99Ms))
	}
	if m := pc.Lifecycle["functionSeconds"]; m.Ratio == nil || *m.Ratio > maxClaimRatio {
		out = append(out, fmt.Sprintf("poolClaim.lifecycle functionSeconds: measured %v against a floor of %v, want at most %g times it", m.Measured, m.Floor, maxClaimRatio))
	}
	return out
}

// countsMissed says which count targets a run missed: a lifecycle makes
// exactly one Create and one Delete, and no more than maxCountRatio times
// the floor of status writes, Gets, invocations, document reads and writes;
// every phase measured what it should; the collection deleted exactly the
// orphans.
func (r *results) countsMissed(s settings) []string {
	var out []string
	for _, k := range []string{"providerCreate", "providerDelete"} {
		if m := r.Lifecycle[k]; m.Measured != 1 {
			out = append(out, fmt.Sprintf("lifecycle %s = %v, want exactly 1", k, m.Measured))
		}
	}
	for _, k := range []string{"statusWrites", "providerGet", "invocations", "firestoreWrites", "firestoreReads"} {
		if m := r.Lifecycle[k]; m.Ratio == nil || *m.Ratio < 1 || *m.Ratio > maxCountRatio {
			out = append(out, fmt.Sprintf("lifecycle %s: measured %v against a floor of %v, want 1 to %g times it", k, m.Measured, m.Floor, maxCountRatio))
		}
	}
	if r.ReadyLatencyMs.N != s.lifecycles || r.DeleteLatencyMs.N != s.lifecycles {
		out = append(out, fmt.Sprintf("%d Ready and %d deleted lifecycles, want %d of each", r.ReadyLatencyMs.N, r.DeleteLatencyMs.N, s.lifecycles))
	}
	if r.GC.Deleted != gcOrphans(s.gc) || r.GC.FirestoreReads < int64(s.gc) {
		out = append(out, fmt.Sprintf("garbage collection deleted %d and read %d documents, want %d deleted and every one of %d documents read",
			r.GC.Deleted, r.GC.FirestoreReads, gcOrphans(s.gc), s.gc))
	}
	return append(out, r.claimCountsMissed(s)...)
}

// timesMissed says which time targets a run missed. Only `make bench`
// holds a run to them: on a busy machine every one of them grows.
func (r *results) timesMissed() []string {
	var out []string
	if m := r.Lifecycle["functionSeconds"]; m.Ratio == nil || *m.Ratio > maxFunctionSecondsRatio {
		out = append(out, fmt.Sprintf("lifecycle functionSeconds: measured %v against a floor of %v, want at most %g times it", m.Measured, m.Floor, maxFunctionSecondsRatio))
	}
	if p := r.ReadyLatencyMs.P99; p > maxReadyLatencyMs {
		out = append(out, fmt.Sprintf("VM ready → API shows Ready p99 %v ms, want at most %d", p, maxReadyLatencyMs))
	}
	if sec := r.BulkProduction.SecondsAfterLastBoot; sec > maxSecondsAfterLastBoot {
		out = append(out, fmt.Sprintf("bulk phase all Ready %v s after the last boot, want at most %d", sec, maxSecondsAfterLastBoot))
	}
	return append(out, r.claimTimesMissed()...)
}
