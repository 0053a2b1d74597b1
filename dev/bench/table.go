package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/provider/providerbench"
)

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
	if slices.Contains(s.Phases, phaseLifecycle) {
		r.lifecycleTable(w)
	}
	if slices.Contains(s.Phases, phaseBulk) {
		r.bulkTable(w)
	}
	if slices.Contains(s.Phases, phasePool) {
		r.poolTable(w)
	}
	for _, ph := range cloudPhases {
		if res, ok := r.Clouds[ph.Name()]; ok && slices.Contains(s.Phases, ph.Name()) {
			res.Table(w)
		}
	}
	if slices.Contains(s.Phases, phaseBurst) && r.Burst != nil {
		r.burstTable(w)
	}
	if slices.Contains(s.Phases, phaseGC) {
		r.gcTable(w)
	}
	r.scalingTable(w)
	r.phaseTable(w)
}

// lifecycleTable prints the lifecycle phase.
func (r *results) lifecycleTable(w io.Writer) {
	s := r.Settings

	metricTable(w, fmt.Sprintf("per proxy lifecycle, mean of %d", s.Lifecycles), r.Lifecycle)
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
	unrounded := 0.0
	if fs.Unrounded != nil {
		unrounded = *fs.Unrounded
	}
	fmt.Fprintf(w, "billed function-seconds (each request rounded up to 100 ms; %.3f s unrounded): %s\n", unrounded, strings.Join(bySeconds, ", "))
	cpuLine(w, "a lifecycle", r.LifecycleCPU)
	fmt.Fprintln(w)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "latency (ms)\tp50\tp99\tmax\tn\t\n")
	fmt.Fprintf(tw, "VM ready → API shows Ready\t%.0f\t%.0f\t%.0f\t%d\t\n", r.ReadyLatencyMs.P50, r.ReadyLatencyMs.P99, r.ReadyLatencyMs.Max, r.ReadyLatencyMs.N)
	fmt.Fprintf(tw, "  of which until the call-home's run starts (publish, Pub/Sub emulator's push, relay)\t%.0f\t%.0f\t%.0f\t%d\t\n", r.ReadySplitMs.Delivery.P50, r.ReadySplitMs.Delivery.P99, r.ReadySplitMs.Delivery.Max, r.ReadySplitMs.Delivery.N)
	fmt.Fprintf(tw, "  and the call-home's run (its token, a read, a Get, a write)\t%.0f\t%.0f\t%.0f\t%d\t\n", r.ReadySplitMs.Run.P50, r.ReadySplitMs.Run.P99, r.ReadySplitMs.Run.Max, r.ReadySplitMs.Run.N)
	fmt.Fprintf(tw, "DELETE → proxy and VM gone\t%.0f\t%.0f\t%.0f\t%d\t\n", r.DeleteLatencyMs.P50, r.DeleteLatencyMs.P99, r.DeleteLatencyMs.Max, r.DeleteLatencyMs.N)
	tw.Flush()
	if wu := r.WarmUp; wu.Invocations > 0 {
		inv := r.Lifecycle["invocations"].Measured
		fmt.Fprintf(w, "before the phases, a warm-up on the emulators as they started (%d lifecycles as the phase's): %d invocations billed %.3f s each; the lifecycle's, on the warm emulators, %.3f s each;\n",
			wu.Proxies, wu.Invocations, wu.PerInvocation, r.Lifecycle["functionSeconds"].Measured/max(inv, 1))
		fmt.Fprintf(w, "  a VM ready to its call-home's run's start on the cold emulators: p50 %.0f ms, p99 %.0f ms\n", wu.CallHomeDeliveryMs.P50, wu.CallHomeDeliveryMs.P99)
	}
}

// bulkTable prints the bulk phase at its largest size.
func (r *results) bulkTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\nlatency (ms)\tp50\tp99\tn\t\n")
	fmt.Fprintf(tw, "API create, %d clients\t%.1f\t%.1f\t%d\t\n", r.API.Concurrency, r.API.CreateP50Ms, r.API.CreateP99Ms, r.API.Requests)
	fmt.Fprintf(tw, "API get, %d clients\t%.1f\t%.1f\t%d\t\n", r.API.Concurrency, r.API.GetP50Ms, r.API.GetP99Ms, r.API.Requests)
	tw.Flush()

	b := r.Bulk
	fmt.Fprintf(w, "\n%d proxies requested by %d clients: answered in %.1f s, all Ready %.1f s after the first request (median %.1f s);\n",
		b.Proxies, b.Concurrency, b.RequestSeconds, b.Seconds, b.ReadyLatencyMs.P50/1000)
	fmt.Fprintf(w, "  all Ready %.1f s after the last VM's boot, at the deployed concurrency;\n", r.BulkProduction.SecondsAfterLastBoot)
	fmt.Fprintf(w, "  functions process peak RSS %s; all deleted and gone in %.1f s; per proxy %.2f invocations, %.2f status writes, %.2f Gets\n",
		mib(b.PeakRSSBytes), b.DeleteSeconds, b.PerProxy["invocations"], b.PerProxy["statusWrites"], b.PerProxy["providerGet"])
}

// gcTable prints the collector's run at its largest size.
func (r *results) gcTable(w io.Writer) {
	g := r.GC
	fmt.Fprintf(w, "\ngarbage collection over %d instances and %d documents: one run %.2f s, %.2f s of its own CPU (the Firestore emulator's %.2f s);\n",
		g.Instances, g.Documents, g.Seconds, g.CPUSeconds, g.EmulatorCPUSeconds)
	fmt.Fprintf(w, "  peak RSS %s (%s before the run: %d bytes per instance above); %d claimed, %d deleted, %d document reads;\n",
		mib(g.PeakRSSBytes), mib(g.BaselineRSSBytes), g.BytesPerInstance, g.Claimed, g.Deleted, g.FirestoreReads)
	fmt.Fprintf(w, "  the documents written in %.1f s, and the emulator idle again %.1f s after\n", g.SeedSeconds, g.SettleSeconds)
}

// scalingTable prints the cost per item of the scaled phases at each size.
func (r *results) scalingTable(w io.Writer) {
	if len(r.Scaling.GC)+len(r.Scaling.Bulk) == 0 {
		return
	}
	fmt.Fprintf(w, "\nscaling: the cost of an item at each size (at most %.0f%% growth from the smallest size to the largest)\n", 100*maxScaleGrowth)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "phase\titems\tseconds\tµs per item\tCPU µs per item\temulator CPU µs per item\tfunction-s per item\tbytes per item\t\n")
	for _, p := range []struct {
		name string
		rows []scaleRow
	}{{"gc", r.Scaling.GC}, {"bulk", r.Scaling.Bulk}} {
		for _, x := range p.rows {
			fmt.Fprintf(tw, "%s\t%d\t%.2f\t%s\t%.1f\t%s\t%s\t%d\t\n", p.name, x.Items, x.Seconds, orDash(x.MicrosecondsPerItem, "%.1f"),
				x.CPUMicrosecondsPerItem, orDash(x.EmulatorCPUMicrosecondsPerItem, "%.1f"), orDash(x.FunctionSecondsPerItem, "%.3f"), x.BytesPerItem)
		}
	}
	tw.Flush()
}

// phaseTable prints how long each phase took.
func (r *results) phaseTable(w io.Writer) {
	var parts []string
	for _, p := range r.Phases {
		parts = append(parts, fmt.Sprintf("%s %.1f s", p.Phase, p.Seconds))
	}
	fmt.Fprintf(w, "\nphases: %s; in all %.1f s\n", strings.Join(parts, ", "), r.TotalSeconds)
}

// metricTable prints metrics against their floors, in lifecycleOrder.
func metricTable(w io.Writer, title string, metrics map[string]metric) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\tmeasured\tfloor\tratio\t\n", title)
	for _, k := range lifecycleOrder {
		m := metrics[k]
		ratio := "–"
		if m.Ratio != nil {
			ratio = fmt.Sprintf("%.2f", *m.Ratio)
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%g\t%s\t\n", k, m.Measured, m.Floor, ratio)
	}
	tw.Flush()
}

// cpuLine prints the CPU time of what, by process.
func cpuLine(w io.Writer, what string, c cpuShare) {
	fmt.Fprintf(w, "CPU time of %s: the functions' process %.1f ms, the Firestore emulator %.1f ms, the Pub/Sub emulator %.1f ms\n", what, c.FunctionsMs, c.FirestoreMs, c.PubSubMs)
}

// orDash formats v, or a dash where it was not measured.
func orDash(v float64, format string) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf(format, v)
}

// poolTable prints the warm-pool phases.
func (r *results) poolTable(w io.Writer) {
	pc := r.PoolClaim
	fmt.Fprintf(w, "\nwarm pool of %d: %d proxies requested at once, %d claimed a warm VM\n", pc.PoolSize, pc.Proxies, pc.Claimed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "latency (ms)\tp50\tp99\tmax\tn\t\n")
	type row struct {
		name string
		l    latency
	}
	rows := []row{{"POST → Ready, claimed from the pool", pc.ReadyMs}, {"POST → Ready, cold (zone " + r.Cold.Zone + ")", r.Cold.ReadyMs}, {"PATCH → Ready, new generation", r.Reconfigure.ReadyMs}}
	// Beside Google Cloud's PATCH, each cloud's live change that its
	// phase measured in this run.
	for _, ph := range cloudPhases {
		if lc, ok := r.Clouds[ph.Name()].(providerbench.LiveChanges); ok && slices.Contains(r.Settings.Phases, ph.Name()) {
			what, l := lc.LiveChange()
			rows = append(rows, row{"PATCH → Ready, new generation, " + ph.Name() + ": " + what, l})
		}
	}
	for _, row := range rows {
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t%d\t\n", row.name, row.l.P50, row.l.P99, row.l.Max, row.l.N)
	}
	tw.Flush()
	metricTable(w, "per claimed lifecycle, refill included", pc.Lifecycle)
	cpuLine(w, "a claimed lifecycle", pc.CPU)
	fmt.Fprintln(w)
}

// burstTable prints the burst phase: each burst against its limit and its
// floor.
func (r *results) burstTable(w io.Writer) {
	b := r.Burst
	one := b.OneAccount
	fmt.Fprintf(w, "\nburst: %d proxies asked for at once of %s (its fake's rate limit scaled down to %d requests in %g s an account), paced by the fleet's budget over %d function instances\n",
		one.Proxies, b.Provider, one.RateLimit, one.RateIntervalSeconds, one.Instances)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "accounts\tready\tcalls\tlimit (calls/s)\tachieved (calls/s)\tto limit\tfloor (s)\tall Ready (s)\tto floor\trefused\tqueued\tuser-visible errors\t\n")
	for _, x := range []burstRun{b.OneAccount, b.TwoAccounts} {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%d\t%d\t%d\t\n", x.Accounts, x.Ready, x.Calls, x.LimitPerSecond, x.AchievedRate,
			x.AchievedRateToLimit, x.FloorSeconds, x.ReadySeconds, x.ReadyToFloor, x.Refused, x.Queued, x.UserVisibleErrors)
	}
	tw.Flush()
	fmt.Fprintf(w, "two accounts: all Ready in %.2f of one account's time\n", b.TwoAccountsToOne)
	for _, x := range []burstRun{b.OneAccount, b.TwoAccounts} {
		var placed []string
		for _, id := range slices.Sorted(maps.Keys(x.Placed)) {
			placed = append(placed, fmt.Sprintf("%s %d", id, x.Placed[id]))
		}
		fmt.Fprintf(w, "  %d account(s): placed %s; %d reads of quotas; the budgets' updates p50 %.0f ms, p99 %.0f ms, max %.0f ms (%d), %d gave up on a contended shard\n",
			x.Accounts, strings.Join(placed, ", "), x.QuotaReads, x.StoreMs.P50, x.StoreMs.P99, x.StoreMs.Max, x.StoreMs.N, x.Contended)
	}
	for _, x := range []burstRun{b.OneAccount, b.TwoAccounts} {
		for _, e := range x.Errors {
			fmt.Fprintf(w, "  %d account(s), shown to a user: %s\n", x.Accounts, e)
		}
	}
}
