package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/provider/providerbench"
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
	// LifecycleCPU is the CPU time of a lifecycle, by process: what of
	// its billed function-seconds the functions spent working, and what
	// the emulators did meanwhile.
	LifecycleCPU cpuShare `json:"lifecycleCPU"`
	// ReadyLatencyMs is from the VM running to the API showing Ready;
	// DeleteLatencyMs from the DELETE to the document gone, which happens
	// only once the provider says the VM is gone.
	ReadyLatencyMs  latency `json:"readyLatencyMs"`
	DeleteLatencyMs latency `json:"deleteLatencyMs"`
	// ReadySplitMs splits ReadyLatencyMs at the start of the call-home's
	// run.
	ReadySplitMs readySplit `json:"readySplitMs"`
	Bulk         bulkResult `json:"bulk1000"`
	// BulkProduction is the bulk phase read as production would run it:
	// the local stack serves each function at its deployed concurrency.
	BulkProduction bulkProduction `json:"bulk1000Production"`
	API            apiResult      `json:"api"`
	GC             gcResult       `json:"gc100k"`
	// PoolClaim, Cold and Reconfigure are the warm-pool phases (pool.go).
	PoolClaim   poolClaimResult   `json:"poolClaim"`
	Cold        coldResult        `json:"cold"`
	Reconfigure reconfigureResult `json:"reconfigure"`
	// Scaling is the collector and the bulk phase at each of their sizes.
	Scaling scaling `json:"scaling"`
	// WarmUp is what the warm-up cost, untimed by any phase.
	WarmUp warmUpResult `json:"warmUp"`
	// Phases is how long each phase took, in the order they ran, the
	// start first (the stack's build and start, the namespaces);
	// TotalSeconds the whole run, from the stack's build to its stop.
	Phases       []phaseTime `json:"phases"`
	TotalSeconds float64     `json:"totalSeconds"`
	// Burst is the burst phase (burst.go): a burst of proxies through
	// one cloud account and then two, paced by the fleet's budget.
	Burst *burstResult `json:"burst,omitempty"`
	// Clouds are the clouds' phases' figures, by phase name (the cloud's
	// provider type): each cloud's own (internal/clouds/cloudsdev lists
	// the phases).
	Clouds map[string]providerbench.Result `json:"clouds,omitempty"`
}

// phaseTime is how long one phase took.
type phaseTime struct {
	Phase   string  `json:"phase"`
	Seconds float64 `json:"seconds"`
}

// phase records how long a phase took.
func (r *results) phase(name string, d time.Duration) {
	r.Phases = append(r.Phases, phaseTime{Phase: name, Seconds: round(d.Seconds(), 1)})
}

// scaling is how the cost of an item grows with the number of items: the
// collector's run at each size, by instance, and the bulk phase's at each
// size, by proxy. The smallest size comes first.
type scaling struct {
	GC   []scaleRow `json:"gc"`
	Bulk []scaleRow `json:"bulk"`
}

// scaleRow is one size of a scaled phase, and its cost per item.
type scaleRow struct {
	Items int `json:"items"`
	// Seconds is the run's time: the collection's, or the bulk phase's
	// from the first request to the last proxy Ready (a boot, mostly).
	Seconds float64 `json:"seconds"`
	// MicrosecondsPerItem is Seconds per item, for the collector (the bulk
	// phase's time is the boot's, whatever the size).
	MicrosecondsPerItem float64 `json:"microsecondsPerItem,omitempty"`
	// CPUMicrosecondsPerItem is the CPU time of the process measured (the
	// collector's worker; the functions), its emulators apart, per item.
	CPUMicrosecondsPerItem float64 `json:"cpuMicrosecondsPerItem"`
	// EmulatorCPUMicrosecondsPerItem is the Firestore emulator's CPU time
	// during the collector's run, per item.
	EmulatorCPUMicrosecondsPerItem float64 `json:"emulatorCPUMicrosecondsPerItem,omitempty"`
	// FunctionSecondsPerItem is the bulk phase's billed function-seconds
	// per proxy.
	FunctionSecondsPerItem float64 `json:"functionSecondsPerItem,omitempty"`
	// BytesPerItem is the growth of the measured process's resident
	// memory during the run, above what it held before, per item.
	BytesPerItem int64 `json:"bytesPerItem"`
}

// readySplit is the time from a VM ready to the API showing Ready in its
// two parts: Delivery, until the call-home's run starts (the VM's publish,
// the Pub/Sub emulator's push, the local relay); Run, the run itself (a
// read, a Get, a write).
type readySplit struct {
	Delivery latency `json:"delivery"`
	Run      latency `json:"run"`
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
	// CPU is the CPU time of a claimed lifecycle, by process.
	CPU cpuShare `json:"cpu"`
}

// coldResult is the proxies no pool serves, requested beside the pool.
type coldResult struct {
	ReadyMs latency `json:"readyMs"`
	// Zone is their spec's zone, which no pool serves.
	Zone string `json:"zone"`
}

// reconfigureResult is from each PATCH's send to the proxy Ready serving
// the generation it made: the shape a cloud's phase that measures live
// changes reports its own in too.
type reconfigureResult = providerbench.Reconfigure

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
	// Phases are the phases run.
	Phases []string `json:"phases"`
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
		Phases:          s.phases,
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

// latency is a sample's percentiles, in the shape the clouds' phases
// report theirs too.
type latency = providerbench.Latency

type bulkResult struct {
	Proxies     int `json:"proxies"`
	Concurrency int `json:"concurrency"`
	// RequestSeconds is how long the creates took to be answered, Seconds
	// until the last proxy was Ready, both from the first create.
	RequestSeconds float64 `json:"requestSeconds"`
	Seconds        float64 `json:"seconds"`
	// PeakRSSBytes is the functions process's peak resident memory during
	// the creates and until all were Ready; BaselineRSSBytes what it held
	// before them, its garbage collected and returned to the system.
	PeakRSSBytes     int64 `json:"peakRSSBytes"`
	BaselineRSSBytes int64 `json:"baselineRSSBytes"`
	// CPUSeconds is the functions process's CPU time (its emulators apart)
	// from the first request to all Ready, and from the first DELETE to
	// all gone.
	CPUSeconds    float64 `json:"cpuSeconds"`
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
	// CPUSeconds is the worker's own CPU time during the run;
	// EmulatorCPUSeconds the Firestore emulator's, which serves the
	// run's reads.
	CPUSeconds         float64 `json:"cpuSeconds"`
	EmulatorCPUSeconds float64 `json:"emulatorCPUSeconds"`
	// SeedSeconds is how long the benchmark took to write the documents,
	// SettleSeconds how long it then waited for the emulator to be idle
	// again before the run.
	SeedSeconds   float64 `json:"seedSeconds"`
	SettleSeconds float64 `json:"settleSeconds"`
	// PeakRSSBytes is the worker's peak resident memory during the run;
	// BaselineRSSBytes its memory before it, which holds the mock
	// provider's instances; BytesPerInstance the difference per instance.
	PeakRSSBytes     int64 `json:"peakRSSBytes"`
	BaselineRSSBytes int64 `json:"baselineRSSBytes"`
	BytesPerInstance int64 `json:"bytesPerInstance"`
	Claimed          int   `json:"claimed"`
	Deleted          int   `json:"deleted"`
	FirestoreReads   int64 `json:"firestoreReads"`
}

// scaleRow is the run as a row of the scaling table.
func (g gcResult) scaleRow() scaleRow {
	per := func(sec float64) float64 { return round(sec*1e6/float64(g.Instances), 2) }
	return scaleRow{
		Items: g.Instances, Seconds: g.Seconds, MicrosecondsPerItem: per(g.Seconds),
		CPUMicrosecondsPerItem: per(g.CPUSeconds), EmulatorCPUMicrosecondsPerItem: per(g.EmulatorCPUSeconds),
		BytesPerItem: g.BytesPerInstance,
	}
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
	// invocation, and the create's query of the warm pools that could
	// serve the spec (one read when none does: a create that no pool
	// serves pays it, so that one that a pool serves is served in
	// seconds). The document's deletion reads nothing: it is conditioned
	// on the update time its run read.
	floorFirestoreReads = 2 + 2 + floorStatusWrites + 1 + 1
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

// write writes the results as JSON to path.
func (r *results) write(path string) error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}

// summarize gives the percentiles of a sample.
func summarize(ds []time.Duration) latency { return providerbench.Summarize(ds) }

// percentile is the nearest-rank percentile p of ds.
func percentile(ds []time.Duration, p float64) time.Duration { return providerbench.Percentile(ds, p) }

func ms(d time.Duration) float64 { return providerbench.Ms(d) }

func round(v float64, places int) float64 { return providerbench.Round(v, places) }

func dur(msec float64) string {
	return time.Duration(msec * float64(time.Millisecond)).String()
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
