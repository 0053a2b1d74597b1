package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
)

// Claimer is the part of the store that hands warm pools' VMs to proxies.
// A Store that implements it (*store.Store, *storefake.Store) lets a new
// proxy, and a rotation, take a warm VM instead of booting one; without it
// every VM is created cold.
type Claimer interface {
	// PoolServing returns a pool that serves spec, or nil. It is one
	// query, and so one read, even when there is no pool.
	PoolServing(ctx context.Context, spec proxy.Spec) (*proxy.Pool, error)
	// ClaimWarm passes a warm member's VM of the pool to p in one
	// transaction (p's update time its precondition), logging the claim
	// in p's namespace against the pool's ClaimsPerNamespacePerHour and,
	// with perHour positive, counting it against the namespace's bound of
	// perHour VMs, and returns the member and p as written. Its error
	// wraps proxy.ErrNoWarmVM when the pool has none,
	// proxy.ErrPoolClaimsPerHour or proxy.ErrCreatesPerHour past a bound;
	// then nothing is written.
	ClaimWarm(ctx context.Context, p *proxy.Proxy, pool *proxy.Pool, now time.Time, perHour int) (member, claimed *proxy.Proxy, err error)
}

// claimer returns the pool to claim a warm VM from for this document, or
// nil when it takes none: a member, a store or provider that cannot, a
// custom bootstrap, a create already decided (its VM may be on its way,
// and would be left with this document's uid), or no pool serving the
// spec.
func (run *run) claimer(ctx context.Context) (Claimer, *proxy.Pool, error) {
	p := run.doc
	c, ok := run.r.store.(Claimer)
	if !ok || p.Pool != "" || p.Reconciler.CreatePending != "" || run.r.opts.Bootstrap == nil || !run.defaultBootstrap() {
		return nil, nil, nil
	}
	if _, ok := provider.AsReconfigurer(run.prov); !ok {
		return nil, nil, nil
	}
	pool, err := c.PoolServing(ctx, p.Spec)
	if err != nil {
		return nil, nil, err
	}
	return c, pool, nil
}

// createOrClaim gives a document with no VM one: a warm pool's, when a
// pool serves its spec and has one, or else a new one (create). Either is
// the VM of the create, which the API counted.
func (run *run) createOrClaim(ctx context.Context) (outcome, error) {
	claimed, out, err := run.claim(ctx, "", 0)
	if claimed || err != nil {
		return out, err
	}
	return run.create(ctx)
}

// claim takes a warm VM for the document, retiring (for a make-before-break
// rotation) the VM it has. It reports false, having written nothing, when
// no pool serves the spec, the pool has no warm VM, or the namespace
// claimed its bound of the pool's VMs within the hour (the pool stays for
// the other namespaces). With perHour positive (a rotation by maxAge, see
// rotate) the claim's transaction counts the VM against the namespace's
// bound of perHour; past it the rotation waits (waitForBudget).
//
// The claim is one transaction (Claimer.ClaimWarm): the VM passes from the
// member to this document with the lease, so a crash after it leaves a
// document that names the VM, Provisioning, with SentGeneration 0, which
// the next run past the lease (the sweep) reconfigures. Until the
// Reconfigure relabels it, the VM carries the member's uid, which the
// member's document (a tombstone now) still claims for the collector.
func (run *run) claim(ctx context.Context, retiring string, perHour int) (bool, outcome, error) {
	c, pl, err := run.claimer(ctx)
	if err != nil || pl == nil {
		return false, done, err
	}
	pool := pl.Name
	now := run.r.clock.Now()
	next := run.next()
	next.Reconciler.LeaseHolder = run.holder
	next.Reconciler.LeaseExpireTime = now.Add(run.r.opts.LeaseDuration)
	next.Reconciler.Retiring = retiring
	if retiring != "" {
		next.Status.Rotations++
		// What the old VM serves: a later generation is handed to it
		// too while it still serves (reconfigureRetiring).
		next.Reconciler.RetiringGeneration = sentGeneration(run.doc)
	}
	next.Status.Message = ""
	next.Status.RotationWaitUntil = nil
	setReady(next, "False", "Provisioning", "Instance claimed from warm pool "+pool+"; configuring it.", now)
	member, claimed, err := c.ClaimWarm(ctx, next, pl, now, perHour)
	switch {
	case errors.Is(err, proxy.ErrNoWarmVM):
		run.log.InfoContext(ctx, "no warm VM in the pool; creating one", slog.String("pool", pool))
		return false, done, nil
	case errors.Is(err, proxy.ErrPoolClaimsPerHour):
		run.log.InfoContext(ctx, "the namespace claimed its bound of the pool's VMs within the hour; creating one", slog.String("pool", pool),
			slog.Int("claimsPerNamespacePerHour", pl.Spec.ClaimsPerNamespacePerHour))
		return false, done, nil
	case errors.Is(err, proxy.ErrCreatesPerHour):
		out, err := run.waitForBudget(ctx, err)
		return true, out, err
	case err != nil:
		return true, done, err
	}
	run.writes++
	prevAccount := run.doc.Status.Account
	run.doc = claimed
	if claimed.Status.Account != prevAccount {
		// The warm VM is in another account than the one this run's
		// provider serves (a first VM only: rules.Claim keeps a rotation
		// in its account).
		prov, err := run.r.providers.Account(ctx, claimed.Spec.Provider, claimed.Status.Account)
		if err != nil {
			return true, done, fmt.Errorf("the provider of the claimed VM's account %q: %w", claimed.Status.Account, err)
		}
		run.prov = prov
	}
	run.log.InfoContext(ctx, "warm VM claimed", slog.String("pool", pool), slog.String("member", member.Name),
		slog.String("providerID", claimed.Status.ProviderID), slog.String("retiring", retiring))
	// The VM is given the proxy's configuration and uid now; the proxy
	// stays Provisioning until the VM reports the proxy's generation (its
	// call-home brings that run).
	out, err := run.reconfigure(ctx, proxy.PhaseProvisioning)
	// Then the pool refills, in the background: a message, so this run
	// does not wait for it. Sent after the Reconfigure, the pool's run
	// finds the claim done and lets the member's document go at once.
	if perr := run.r.requeuer.Publish(ctx, proxy.ReconcileMessage{Document: proxy.PoolPath(pool), Reason: proxy.ReasonClaimed}); perr != nil {
		run.log.WarnContext(ctx, "cannot ask the pool to refill; its next event or the sweep will", slog.String("pool", pool), slog.Any("error", perr))
	}
	return true, out, err
}

// rotateWarm rotates by make-before-break when a pool serves the spec and
// has a warm VM: the new VM is claimed, the old one kept in Retiring and
// deleted once the new one is Ready. It reports false, having written
// nothing, when it cannot (the rotation then breaks before it makes).
func (run *run) rotateWarm(ctx context.Context, kind replacement) (bool, outcome, error) {
	p := run.doc
	if p.Reconciler.Retiring != "" {
		return false, done, nil
	}
	return run.claim(ctx, p.Status.ProviderID, run.counts(kind))
}

// retire deletes the VM a make-before-break rotation replaced, once the
// new one is Ready (or the proxy is being deleted), and forgets it. A
// Delete the provider accepted completes by itself; one refused is tried
// again at the next run.
func (run *run) retire(ctx context.Context, prov provider.Provider) error {
	id := run.doc.Reconciler.Retiring
	if id == "" {
		return nil
	}
	if err := prov.Delete(ctx, id); err != nil && !errors.Is(err, provider.ErrNotFound) {
		run.log.WarnContext(ctx, "cannot delete the retired instance yet", slog.String("providerID", id), slog.Any("error", err))
		return nil
	}
	run.log.InfoContext(ctx, "retired instance deleted", slog.String("providerID", id))
	if run.doc.DeleteRequestTime != nil {
		return nil
	}
	next := run.next()
	next.Reconciler.Retiring, next.Reconciler.RetiringGeneration = "", 0
	return run.write(ctx, next, false)
}

// tombstone is the run of a member whose VM a proxy claimed: the VM is the
// proxy's, so nothing here touches it; a deletion deletes the document
// only.
func (run *run) tombstone(ctx context.Context) (outcome, error) {
	p := run.doc
	if p.DeleteRequestTime == nil {
		return done, nil
	}
	if err := run.r.store.Delete(ctx, run.key, p.UpdateTime); err != nil {
		return done, err
	}
	run.writes++
	run.log.InfoContext(ctx, "claimed member deleted; its VM stays with the proxy that claimed it")
	return done, nil
}

// nudgePool asks a member's pool to look again when the member became
// Ready or Failed, or went: its counts changed.
func (run *run) nudgePool(ctx context.Context) {
	if run.doc == nil || !run.key.IsMember() || run.writes == 0 {
		return
	}
	switch run.doc.Status.Phase {
	case proxy.PhaseReady, proxy.PhaseFailed, proxy.PhaseDeleting:
	default:
		return
	}
	if err := run.r.requeuer.Publish(ctx, proxy.ReconcileMessage{Document: proxy.PoolPath(run.key.Pool), Reason: proxy.ReasonMember}); err != nil {
		run.log.WarnContext(ctx, "cannot tell the pool its member changed; the sweep will", slog.Any("error", err))
	}
}
