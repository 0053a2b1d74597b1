// Command bench measures what a proxy costs and how fast the system
// converges, on the local stack. `make bench` runs it.
//
// It starts the local stack as `make run` does: the mock provider boots VMs
// in a realistic 25 s (divided by -scale, which only `make test`'s small run
// sets) and calls home when a VM is ready, as a real VM's startup script
// does; each function is capped at the requests its deployment serves at
// once (app.Deployed). It drives the stack from outside only: over the HTTP
// API, and by summing the functions' own invocation lines (package
// metering) — the lines that production's log-based metrics read, so the
// figures here are the ones an operator sees.
//
// Phases, each timed, after a warm-up of the emulators (warmup.go):
//
//	lifecycle  -lifecycles proxies at once, each in its own namespace:
//	           create → Ready → delete → gone. Usage per lifecycle against
//	           its floor, billed function-seconds; latency from the VM ready
//	           to the API showing Ready, and from DELETE to the proxy gone.
//	bulk       -bulk/10, then -bulk proxies requested by -concurrency
//	           clients at once, over namespaces of 20 (the default quota), at
//	           the deployed concurrency: time until all are Ready, after the
//	           first request and after the last VM's boot; the functions'
//	           peak memory and CPU time; API latency of the creates and of as
//	           many gets; then all deleted.
//	pool       -pool proxies whose placement no pool serves, beside a pool
//	           of -pool warm VMs (POST → Ready, a whole boot); a PATCH of
//	           each (PATCH → Ready serving the new generation); then -pool
//	           proxies the pool serves, each claiming a warm VM: POST →
//	           Ready, and the cost of a claimed lifecycle (POST to gone,
//	           and the pool's refill) against its floor.
//	<cloud>    a phase for each cloud internal/clouds/cloudsdev lists,
//	           named by its provider type (hetzner, aws, …): -lifecycles
//	           lifecycles on the cloud's provider over its fake, without
//	           the stack, the cloud's API requests per lifecycle, and a
//	           ListByTag of 1000 VMs (the cloud's <cloud>sim package
//	           brings it, a providerbench.Phase).
//	burst      -burst proxies asked for at once of Google Cloud's
//	           provider over the Compute fake, whose rate quotas are
//	           scaled down to 40 requests in 4 s a project, through one
//	           project and then through two, every call paced by the
//	           fleet's budget on the Firestore emulator and the proxies
//	           driven by the reconciler (burst.go): the achieved call rate
//	           against the limit, the time to all Ready against the floor
//	           the limit implies, the calls Compute refused and the errors
//	           users saw.
//	gc         -gc/100, -gc/10, then -gc documents and as many instances,
//	           one CollectGarbage run each in a process of its own on the
//	           same Firestore emulator: its time, its own CPU time and the
//	           emulator's, and its memory above what it held before.
//
// The bulk phase and the collector at each of their sizes are the scaling
// table: an item's cost (time, CPU time, memory) at each size, which may
// grow by at most a fifth from the smallest size to the largest.
// -phases runs some of the phases (what `make bench-scale` runs: bulk and
// gc), -gc-cpuprofile profiles the largest collection, and -keep keeps the
// stack's log of every invocation.
//
// It prints a table and writes the figures as JSON to -out.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/egress-proxies/egress/internal/clouds/cloudsdev"
)

func main() {
	if os.Getenv(roleEnv) == gcWorkerRole {
		if err := gcWorker(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "gc worker:", err)
			os.Exit(1)
		}
		return
	}
	var s settings
	flag.StringVar(&s.out, "out", envOr("BENCH_OUT", "bench-results.json"), "where to write the JSON ($BENCH_OUT)")
	flag.Float64Var(&s.scale, "scale", 1, "divide the 25 s boot by this (1 runs in real time)")
	flag.IntVar(&s.lifecycles, "lifecycles", 20, "proxies in the lifecycle phase")
	flag.IntVar(&s.bulk, "bulk", 1000, "proxies requested at once in the bulk phase")
	flag.IntVar(&s.concurrency, "concurrency", 64, "HTTP clients at once in the bulk phase")
	flag.IntVar(&s.gc, "gc", 100_000, "documents and instances of the garbage-collection run")
	flag.IntVar(&s.pool, "pool", 20, "warm VMs in the pool, and proxies in each of the pool phases")
	flag.IntVar(&s.burst, "burst", 120, "proxies asked for at once in the burst phase, through one account and then through two")
	phases := flag.String("phases", strings.Join(allPhases, ","), "the phases to run, of "+strings.Join(allPhases, ", ")+" (a target of a phase not run is not held)")
	flag.StringVar(&s.gcProfile, "gc-cpuprofile", "", "write a CPU profile of the largest garbage-collection run to this file (go tool pprof reads it)")
	flag.BoolVar(&s.keep, "keep", false, "keep the stack's log (every invocation line) and the collector's, and say where")
	flag.BoolVar(&s.warmup, "warmup", true, "warm the emulators up with -lifecycles lifecycles before the phases (false: the first phase pays their start)")
	flag.Parse()
	s.phases = strings.Split(*phases, ",")
	if err := s.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	r, err := run(ctx, s, log)
	if err != nil {
		log.Error("benchmark failed", "err", err)
		os.Exit(1)
	}
	r.table(os.Stdout)
	if err := r.write(s.out); err != nil {
		log.Error("writing the results", "err", err)
		os.Exit(1)
	}
	fmt.Printf("\nwritten to %s\n", s.out)
	missed := append(r.countsMissed(s), r.timesMissed(s)...)
	for _, m := range missed {
		fmt.Fprintln(os.Stderr, "bench: target missed:", m)
	}
	if len(missed) > 0 {
		os.Exit(1)
	}
}

// settings are the benchmark's knobs.
type settings struct {
	out                               string
	scale                             float64
	lifecycles, bulk, concurrency, gc int
	pool                              int
	// burst is the proxies of each burst of the burst phase.
	burst int
	// phases are the phases to run, of allPhases.
	phases []string
	// gcProfile, if set, is where the largest collection run's CPU
	// profile goes.
	gcProfile string
	// keep keeps the logs of a run that succeeded too.
	keep bool
	// warmup warms the emulators up before the phases (warmup.go).
	warmup bool
}

// The phases, in the order they run.
const (
	phaseLifecycle = "lifecycle"
	phaseBulk      = "bulk"
	phasePool      = "pool"
	phaseBurst     = "burst"
	phaseGC        = "gc"
)

// cloudPhases are the clouds' phases, which run after the pool phases
// and before the burst and the collector's, in the list's order.
var cloudPhases = cloudsdev.Phases()

var allPhases = func() []string {
	out := []string{phaseLifecycle, phaseBulk, phasePool}
	for _, ph := range cloudPhases {
		out = append(out, ph.Name())
	}
	return append(out, phaseBurst, phaseGC)
}()

// runs reports whether the run includes the phase.
func (s settings) runs(phase string) bool { return slices.Contains(s.phases, phase) }

// gcSizes are the sizes the collector runs at, for the scaling table: a
// hundredth and a tenth of -gc, then -gc, the phase's figure.
func (s settings) gcSizes() []int { return []int{max(s.gc/100, 1), max(s.gc/10, 1), s.gc} }

// bulkSizes are the sizes of the bulk phase, for the scaling table: a
// tenth of -bulk, then -bulk, the phase's figure.
func (s settings) bulkSizes() []int { return []int{max(s.bulk/10, 1), s.bulk} }

// realisticBoot is how long a Compute Engine VM takes from insert to
// running with its external IP, as the benchmark assumes it.
const realisticBoot = 25 * time.Second

// realisticReconfigure is how long a running VM takes to apply a new
// configuration and report its generation (the mock's default): the
// metadata server's notice, the engine's live apply, the self-test.
const realisticReconfigure = time.Second

func (s settings) validate() error {
	switch {
	case s.scale < 1:
		return fmt.Errorf("-scale %v: want 1 or more (1 runs in real time)", s.scale)
	case s.lifecycles < 1, s.bulk < 1, s.gc < 100, s.pool < 1, s.burst < 2:
		return fmt.Errorf("-lifecycles %d, -bulk %d, -gc %d, -pool %d, -burst %d: want at least 1, 1, 100, 1 and 2 (a proxy in each of two accounts)",
			s.lifecycles, s.bulk, s.gc, s.pool, s.burst)
	case s.concurrency < 1:
		return fmt.Errorf("-concurrency %d: want at least 1", s.concurrency)
	}
	for _, p := range s.phases {
		if !slices.Contains(allPhases, p) {
			return fmt.Errorf("-phases: no phase %q; the phases are %s", p, strings.Join(allPhases, ", "))
		}
	}
	return nil
}

// scaled divides a production duration by the scale.
func (s settings) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) / s.scale)
}

// stackEnv is the local stack's configuration for the benchmark: JSON logs
// at info, which carry the invocation lines; the boot; no scheduled
// collection, which is no part of a proxy's lifecycle and is measured on its
// own (no lifecycle here needs the sweep: every VM calls home); and mock
// VMs that run no proxy engine (MOCK_SERVE=false). The engine is what a
// VM runs, not the control plane, and has its benchmark of its own (make
// image-bench); run in the functions' process for each of 1,000 VMs, it
// was most of that process's memory (381 MiB at the bulk phase's peak,
// 352 KB a VM at 1,000 against 249 KB at 100) and charged its start to
// the reconciler's runs, under the mock's lock.
func (s settings) stackEnv() []string {
	return []string{
		"LOG_FORMAT=json", "LOG_LEVEL=info", "GC_INTERVAL=1h",
		"MOCK_PROVISIONING_DELAY=" + s.boot().String(),
		"MOCK_RECONFIGURE_DELAY=" + s.reconfigureDelay().String(),
		"MOCK_SERVE=false",
	}
}

// reconfigureDelay is how long the mock's VMs take to apply a new
// configuration.
func (s settings) reconfigureDelay() time.Duration { return s.scaled(realisticReconfigure) }

// boot is how long the mock's VMs take to boot.
func (s settings) boot() time.Duration { return s.scaled(realisticBoot) }

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func atoiEnv(name string) (int, error) {
	n, err := strconv.Atoi(os.Getenv(name))
	if err != nil {
		return 0, fmt.Errorf("%s=%q is not a number", name, os.Getenv(name))
	}
	return n, nil
}
