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

// replace starts the replacement of a VM that is gone, stopped or never
// became ready: it counts the replacement once, records Replacing with the
// lease (the run is about to act), and goes on to delete what is left.
func (run *run) replace(ctx context.Context, reason, message string) (outcome, error) {
	return run.startReplacing(ctx, reason, message, replaceLost)
}

// replacement says why a VM is replaced, and so what it counts.
type replacement int

const (
	// replaceLost: the VM was lost, stopped, or did not become ready
	// (Bookkeeping.Replacements).
	replaceLost replacement = iota
	// replaceRotation: a rotation a user asked for, on purpose
	// (status.rotations), counted in the namespace by the request.
	replaceRotation
	// replaceAge: a rotation by the spec's maxAge (status.rotations),
	// counted in the namespace by the write that starts it.
	replaceAge
	// replaceChange: a new configuration its VM cannot take (see
	// reconfigure); neither the user's rotation nor a fault, so it
	// counts as neither.
	replaceChange
)

// rotationDue reports whether the proxy's VM is to be replaced on purpose:
// a rotate request came after it was created, or it is older than the
// spec's maxAge and no longer waits for its namespace's budget.
func (run *run) rotationDue() bool {
	p := run.doc
	return p.Status.ProviderID != "" &&
		proxy.RotationDue(p.Spec.MaxAge, p.RotateRequestTime, p.Reconciler.BootStart, run.r.clock.Now(), p.Status.RotationWaitUntil)
}

// rotate replaces a VM that is fine, on purpose: make before break with a
// warm pool's VM where one serves the spec, else break before make, with
// the same credentials and, for a Static proxy, the same address. It counts
// a rotation, not a replacement.
//
// A rotation a user asked for was counted against the namespace's
// NAMESPACE_CREATES_PER_HOUR by the request. One by maxAge is counted
// here, in the transaction of the write that starts it: the claim of the
// warm VM, or the record of Replacing. The crash window this guards: a
// count in a transaction of its own, before that write, would be repeated
// by the run after a crash between the two (a VM counted twice, or for
// nothing); after it, lost (a VM that no count bounds). In one, a crash
// leaves both or neither, and the run after it sees Replacing, or the
// claimed VM, and counts nothing again. Past the bound the rotation waits
// (waitForBudget).
func (run *run) rotate(ctx context.Context) (outcome, error) {
	p := run.doc
	kind := replaceAge
	if proxy.RotationRequested(p.RotateRequestTime, p.Reconciler.BootStart) {
		kind = replaceRotation
	}
	if claimed, out, err := run.rotateWarm(ctx, kind); claimed || err != nil {
		return out, err
	}
	why := "a rotate request"
	if kind == replaceAge {
		why = "its maxAge of " + p.Spec.MaxAge
	}
	return run.startReplacing(ctx, "Rotation", fmt.Sprintf("Rotating instance %s (%s); replacing it.", p.Status.ProviderID, why), kind)
}

// counts reports whether a VM of kind is counted by the reconciler (a
// rotation by maxAge, when the namespace's VMs are bounded), and against
// how many VMs in any hour.
func (run *run) counts(kind replacement) int {
	if kind != replaceAge {
		return 0
	}
	return run.r.opts.CreatesPerHour
}

// waitForBudget records that a rotation by maxAge waits for its
// namespace's budget (err wraps the *proxy.RetryError saying when one more
// VM fits): the VM serves on, the status says why and until when
// (RotationWaitUntil), and until then the rotation is not due, so neither
// the document's events nor the collector's sweep bring a run for it.
func (run *run) waitForBudget(ctx context.Context, err error) (outcome, error) {
	var retry *proxy.RetryError
	if !errors.As(err, &retry) {
		return done, err
	}
	p := run.doc
	next := run.next()
	at := retry.At.UTC()
	next.Status.RotationWaitUntil = &at
	next.Status.Message = fmt.Sprintf("Rotation for maxAge %s waits until %s: namespace %s caused %d VMs within the last hour (NAMESPACE_CREATES_PER_HOUR); instance %s serves until then.",
		p.Spec.MaxAge, at.Format(time.RFC3339), p.Namespace, run.r.opts.CreatesPerHour, p.Status.ProviderID)
	run.log.InfoContext(ctx, "rotation by maxAge waits for the namespace's budget", slog.String("providerID", p.Status.ProviderID), slog.Time("until", at))
	return done, run.write(ctx, next, false)
}

func (run *run) startReplacing(ctx context.Context, reason, message string, kind replacement) (outcome, error) {
	p := run.doc
	now := run.r.clock.Now()
	next := run.next()
	next.Reconciler.NotFoundSince = time.Time{}
	next.Status.RotationWaitUntil = nil
	switch {
	case p.Status.Phase == proxy.PhaseReplacing:
	case kind == replaceChange:
		run.log.InfoContext(ctx, "replacing instance for a new configuration", slog.String("providerID", p.Status.ProviderID), slog.String("why", message))
	case kind == replaceRotation, kind == replaceAge:
		next.Status.Rotations++
		run.log.InfoContext(ctx, "rotating instance", slog.String("providerID", p.Status.ProviderID), slog.String("why", message),
			slog.Int64("rotations", next.Status.Rotations))
	default:
		next.Reconciler.Replacements++
		run.log.WarnContext(ctx, "replacing instance", slog.String("providerID", p.Status.ProviderID), slog.String("why", reason),
			slog.Int64("replacements", next.Reconciler.Replacements))
	}
	next.Status.Phase = proxy.PhaseReplacing
	next.Status.IP, next.Status.IPv6, next.Status.IPv6Prefix, next.Status.Endpoint = "", "", "", ""
	setReady(next, "False", reason, message, now)
	err := run.writeCounted(ctx, next, run.counts(kind))
	if errors.Is(err, proxy.ErrCreatesPerHour) {
		return run.waitForBudget(ctx, err)
	}
	if err != nil {
		return done, err
	}
	return run.replacing(ctx)
}

// replacing deletes the old VM and, once Get says it is gone (its name is
// wanted again), creates the new one. A VM still on its way out is waited
// for, within the run's budget: it takes seconds, not a boot.
func (run *run) replacing(ctx context.Context) (outcome, error) {
	p := run.doc
	id := p.Status.ProviderID
	if id == "" {
		return run.create(ctx)
	}
	if err := run.takeLease(ctx); err != nil {
		return done, err
	}
	// Delete again on every look: it is idempotent, and the provider skips
	// a VM already going.
	if err := run.prov.Delete(ctx, id); err != nil && !errors.Is(err, provider.ErrNotFound) {
		return run.providerError(ctx, "deleting instance "+id, err)
	}
	_, err := run.prov.Get(ctx, id)
	switch {
	case errors.Is(err, provider.ErrNotFound):
		// Gone: make the new one.
		next := run.next()
		next.Status.ProviderID, next.Status.IP, next.Status.IPv6, next.Status.IPv6Prefix, next.Status.Endpoint, next.Status.State = "", "", "", "", "", ""
		run.doc = next
		return run.create(ctx)
	case err != nil:
		return run.providerError(ctx, "reading instance "+id, err)
	}
	// Still going: hold the lease while waiting. For a run that took it
	// over from a hand-off this write moves it to its own name, with a
	// fresh expiry; for the run that has it, it writes nothing.
	if err := run.write(ctx, run.next(), true); err != nil {
		return done, err
	}
	return wait, nil
}
