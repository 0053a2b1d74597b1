package main

import (
	"context"
	"fmt"
	"time"

	"github.com/egress-proxies/egress/internal/client"
	"github.com/egress-proxies/egress/internal/proxy"
)

// The warm-pool phases: a pool of s.pool warm VMs serving the benchmark's
// spec (the placement of `spec`); s.pool cold proxies, whose placement no
// pool serves (another zone: as cheap as the claimed ones, an ephemeral
// address and no cloud-init, and only the zone differs), then a
// reconfiguration of each; then s.pool proxies that claim the pool's VMs,
// from POST to gone, with the refill their claims cause. They run last,
// so that no proxy of the other phases finds a pool that serves it.

// benchPool is the warm pool's name.
const benchPool = "bench"

// poolSpec is the warm pool's: it serves `spec` (proxy.PoolSpec.Serves).
func poolSpec(size int) proxy.PoolSpec {
	return proxy.PoolSpec{Provider: "mock", Placement: spec.Placement, Size: size}
}

// coldSpec is the cold proxies': `spec` in another zone, which no pool
// serves.
func coldSpec() proxy.Spec {
	s := spec
	s.Placement.Zone = "us-central1-b"
	return s
}

// reconfiguredRanges is the allowedSourceRanges the reconfigure phase
// PATCHes in.
var reconfiguredRanges = []string{"198.51.100.0/24", "203.0.113.0/24"}

func claimNamespace(i int) string { return fmt.Sprintf("claim-%03d", i) }
func coldNamespace(i int) string  { return fmt.Sprintf("cold-%03d", i) }

// poolPhases runs the warm-pool phases: fill the pool, the cold proxies
// and their reconfiguration, then the claims.
func (b *bench) poolPhases(ctx context.Context, r *results) error {
	n := b.s.pool
	if err := b.fillPool(ctx); err != nil {
		return fmt.Errorf("filling the pool: %w", err)
	}
	cold := make([]proxy.Key, n)
	for i := range cold {
		cold[i] = proxy.Key{Namespace: coldNamespace(i), Name: "proxy"}
	}
	b.log.Info("cold phase", "proxies", n, "zone", coldSpec().Placement.Zone)
	readyMs, err := b.requestReady(ctx, cold, coldSpec())
	if err != nil {
		return fmt.Errorf("cold phase: %w", err)
	}
	r.Cold = coldResult{ReadyMs: readyMs, Zone: coldSpec().Placement.Zone}

	b.log.Info("reconfigure phase", "proxies", n)
	if r.Reconfigure.ReadyMs, err = b.reconfigure(ctx, cold); err != nil {
		return fmt.Errorf("reconfigure phase: %w", err)
	}
	if err := b.deleteAll(ctx, cold); err != nil {
		return fmt.Errorf("deleting the cold proxies: %w", err)
	}
	if err := b.quiet(ctx); err != nil {
		return err
	}

	b.log.Info("pool claim phase", "proxies", n, "pool", n)
	return b.claims(ctx, r)
}

// fillPool makes the pool and waits until all its VMs are warm, then for
// quiet: none of this is part of a claim's cost.
func (b *bench) fillPool(ctx context.Context) error {
	if _, _, err := b.api.PutPool(ctx, benchPool, poolSpec(b.s.pool)); err != nil {
		return err
	}
	deadline := time.Now().Add(5*time.Minute + 2*b.s.boot())
	for {
		p, err := b.api.GetPool(ctx, benchPool)
		if err != nil {
			return err
		}
		if p.Status.Warm == b.s.pool {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pool %s: %d of %d warm, %d booting (%q)", benchPool, p.Status.Warm, b.s.pool, p.Status.Booting, p.Status.Message)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return b.quiet(ctx)
}

// requestReady asks for a proxy of spec at each key, at the benchmark's
// concurrency, and returns the latency from each POST's send to the
// reconciler's "proxy ready" line.
func (b *bench) requestReady(ctx context.Context, keys []proxy.Key, sp proxy.Spec) (latency, error) {
	sent := make([]time.Time, len(keys))
	if _, err := parallel(ctx, len(keys), b.s.concurrency, func(i int) error {
		sent[i] = time.Now()
		_, created, err := b.api.CreateProxy(ctx, keys[i].Namespace, keys[i].Name, sp)
		if err == nil && !created {
			err = fmt.Errorf("create %s: it existed already", keys[i])
		}
		return err
	}); err != nil {
		return latency{}, err
	}
	readyAt, err := b.lines.await(ctx, ready, paths(keys), 5*time.Minute+2*b.s.boot())
	if err != nil {
		return latency{}, err
	}
	return summarize(since(readyAt, sent)), nil
}

// reconfigure PATCHes new allowedSourceRanges into each Ready proxy, at
// the benchmark's concurrency, and returns the latency from each PATCH's
// send to the reconciler's "proxy reconfigured" line for the generation
// the PATCH made: the VM serves it and the document says Ready with
// status.observedGeneration == generation.
func (b *bench) reconfigure(ctx context.Context, keys []proxy.Key) (latency, error) {
	sent := make([]time.Time, len(keys))
	want := make([]string, len(keys))
	if _, err := parallel(ctx, len(keys), b.s.concurrency, func(i int) error {
		sent[i] = time.Now()
		p, err := b.api.UpdateProxy(ctx, keys[i].Namespace, keys[i].Name, client.SpecPatch{AllowedSourceRanges: reconfiguredRanges})
		if err != nil {
			return err
		}
		if p.Generation < 2 {
			return fmt.Errorf("PATCH %s: generation %d, want the change counted", keys[i], p.Generation)
		}
		want[i] = generationKey(keys[i].Path(), p.Generation)
		return nil
	}); err != nil {
		return latency{}, err
	}
	at, err := b.lines.await(ctx, reconfigured, want, 5*time.Minute)
	if err != nil {
		return latency{}, err
	}
	return summarize(since(at, sent)), nil
}

// claims runs the claim phase: s.pool proxies the pool serves, from POST
// to gone, and what their claims cause (claimLifecycleFloors says what
// that is). The claimed VMs' members stay as tombstones for an hour: their
// deletion is no part of the phase.
func (b *bench) claims(ctx context.Context, r *results) error {
	n := b.s.pool
	keys := make([]proxy.Key, n)
	for i := range keys {
		keys[i] = proxy.Key{Namespace: claimNamespace(i), Name: "proxy"}
	}
	before := b.lines.snapshot()
	cpuBefore, err := b.cpu.read()
	if err != nil {
		return err
	}
	claimsBefore := b.lines.claimCount()
	readyMs, err := b.requestReady(ctx, keys, spec)
	if err != nil {
		return err
	}
	// The refill: every claimed member replaced by one booted to Ready.
	// A proxy that found no warm VM booted one of its own, and caused no
	// refill.
	claimed := b.lines.claimCount() - claimsBefore
	prefix := proxy.PoolPath(benchPool) + "/"
	if err := b.lines.awaitReadyUnder(ctx, prefix, b.s.pool+claimed, 5*time.Minute+2*b.s.boot()); err != nil {
		return fmt.Errorf("refilling the pool: %w", err)
	}
	if err := b.deleteAll(ctx, keys); err != nil {
		return err
	}
	// The deleted documents' events, and the pool's last status write and
	// its event, come after the proxies are gone: wait for the proxies'
	// own share of the floor, then for quiet.
	if err := b.quietAfter(ctx, before, claimProxyInvocations*n); err != nil {
		return err
	}
	cpuAfter, err := b.cpu.read()
	if err != nil {
		return err
	}
	r.PoolClaim = poolClaimResult{
		CPU:     cpuAfter.minus(cpuBefore).per(n),
		ReadyMs: readyMs, Proxies: n, PoolSize: b.s.pool, Claimed: claimed,
		Lifecycle: lifecycleMetrics(b.lines.snapshot().minus(before), n, claimLifecycleFloors(b.s.pool)),
	}
	return nil
}

// deleteAll deletes the proxies at the benchmark's concurrency and waits
// until they are gone.
func (b *bench) deleteAll(ctx context.Context, keys []proxy.Key) error {
	if _, err := parallel(ctx, len(keys), b.s.concurrency, func(i int) error { return b.api.delete(ctx, keys[i]) }); err != nil {
		return err
	}
	_, err := b.lines.await(ctx, gone, paths(keys), 5*time.Minute)
	return err
}

// since is how long after sent[i] each at[i] came.
func since(at, sent []time.Time) []time.Duration {
	out := make([]time.Duration, len(at))
	for i := range at {
		out[i] = at[i].Sub(sent[i])
	}
	return out
}

// A claimed lifecycle is one proxy from its POST to gone whose VM was a
// warm pool's, and what its claim causes: the pool's refill of the member
// it lost (the new member's create and boot, and the pool's runs and
// status writes), and the claimed member's document, which the pool's run
// deletes once the proxy relabelled the VM (the pool's status keeps the
// claim for claimsLastHour). The floors are one claim's from a pool of
// size S at rest, reading the claim path (package reconcile, claim.go;
// package pools; store/members.go) for what the design needs and no more.
// Claims at once share the pool's runs (one run creates several members
// and writes one status for them), which brings the measured figures of
// the benchmark's twenty claims at once under these floors: a ratio under
// 1 is that sharing, not a floor counted wrong (TestClaimFloors holds the
// count).
const (
	// claimProxyInvocations: the proxy's own, as a cold lifecycle's (POST,
	// DELETE, one Reconcile per write of its document: created, claimed,
	// configuration sent, Ready, Deleting, deleted; and its VM's call-home),
	// and the Reconcile of the member's write that records the claim.
	claimProxyInvocations = 2 + claimProxyWrites + 1 + 1
	// claimProxyWrites: the proxy document's writes. The claim is one
	// transaction that writes the proxy (Provisioning, the VM's
	// providerID) and the member (claimedBy); the configuration is sent
	// after it (Reconfigure relabels the VM, which must not precede the
	// transaction) and recorded (SentGeneration), so that a run cut short
	// in between sends it again.
	claimProxyWrites = 6
	// refillInvocations: the pool's run for the claim's message, and for
	// the event of the status write it makes (warm − 1, booting + 1,
	// claimsLastHour + 1), which finds nothing to do; the Reconcile of the
	// claimed member's deletion event; the new member's Reconciles for its
	// writes (created, Creating, Provisioning, Ready) and its VM's
	// call-home; the pool's run for the member's Ready message, and for
	// the event of its status write (warm + 1).
	refillInvocations = 2 + 1 + 4 + 1 + 2
	// refillWrites: the member's four writes, the pool's two status
	// writes, and the claimed member's deletion.
	refillWrites = 4 + 2 + 1
)

// claimLifecycleFloors are the floors of one claimed lifecycle from a pool
// of size poolSize, by metric.
func claimLifecycleFloors(poolSize int) map[string]float64 {
	s := float64(poolSize)
	invocations := float64(claimProxyInvocations + refillInvocations)
	return map[string]float64{
		"invocations": invocations,
		// Every write of a proxy, member or pool document is an event: the
		// proxy's six, the member's claim, and the refill's (the claimed
		// member's deletion included).
		"statusWrites": claimProxyWrites + 1 + refillWrites,
		// Those, and the namespace's quota counter's increment and
		// decrement.
		"firestoreWrites": claimProxyWrites + 1 + refillWrites + 2,
		// The proxy's as a cold lifecycle's (the create's namespace and
		// name, the deletion request's namespace and document, a fresh read
		// for each of its seven Reconciles); the claim's query of the pools serving the spec (one read, a
		// query that finds one); the draw of a warm member (one query of
		// one document; the commit reads nothing: both writes carry their
		// read's update time); the member's Reconcile for the claim's
		// write. The refill: the run for the claim's message reads the
		// pool and its S members (S − 1 warm and the claimed one), the
		// claiming proxy (is the claim done?), and the pool and members
		// again in the transaction that creates the missing one (the
		// design's guard against overfilling); each of the other three
		// runs reads the pool and its S members (the claimed one gone,
		// the new one there); the claimed member's deletion event's
		// Reconcile one, and the new member's five Reconciles one each.
		"firestoreReads": 2 + 2 + (claimProxyWrites + 1) + 1 + 1 + 1 +
			(2*(1+s) + 1) + 3*(1+s) + 1 + 5,
		// The refill's new member's VM.
		"providerCreate": 1,
		// The claimed VM's call-home, the proxy's VM found gone, and the
		// new member's call-home.
		"providerGet":    3,
		"providerDelete": 1,
		// The claimed VM given the proxy's configuration and uid.
		"providerReconfigure": 1,
		// The claim's message asking the pool to refill, and the new
		// member's Ready telling it so.
		"pubsubPublished": 2,
		"functionSeconds": invocations * billingUnit.Seconds(),
	}
}
