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
	// replaceRotation: a rotation, on purpose (status.rotations).
	replaceRotation
	// replaceChange: a new configuration its VM cannot take (see
	// reconfigure); neither the user's rotation nor a fault, so it
	// counts as neither.
	replaceChange
)

// rotationDue reports whether the proxy's VM is to be replaced on purpose:
// a rotate request came after it was created, or it is older than the
// spec's maxAge.
func (run *run) rotationDue() bool {
	p := run.doc
	return p.Status.ProviderID != "" && proxy.RotationDue(p.Spec.MaxAge, p.RotateRequestTime, p.Reconciler.BootStart, run.r.clock.Now())
}

// rotate replaces a VM that is fine, on purpose: break before make, with
// the same credentials and, for a Static proxy, the same address. It counts
// a rotation, not a replacement.
func (run *run) rotate(ctx context.Context) (outcome, error) {
	if claimed, out, err := run.rotateWarm(ctx); claimed || err != nil {
		return out, err
	}
	p := run.doc
	why := "a rotate request"
	if t := p.RotateRequestTime; t == nil || !p.Reconciler.BootStart.Before(*t) {
		why = "its maxAge of " + p.Spec.MaxAge
	}
	return run.startReplacing(ctx, "Rotation", fmt.Sprintf("Rotating instance %s (%s); replacing it.", p.Status.ProviderID, why), replaceRotation)
}

func (run *run) startReplacing(ctx context.Context, reason, message string, kind replacement) (outcome, error) {
	p := run.doc
	now := run.r.clock.Now()
	next := run.next()
	next.Reconciler.NotFoundSince = time.Time{}
	switch {
	case p.Status.Phase == proxy.PhaseReplacing:
	case kind == replaceChange:
		run.log.InfoContext(ctx, "replacing instance for a new configuration", slog.String("providerID", p.Status.ProviderID), slog.String("why", message))
	case kind == replaceRotation:
		next.Status.Rotations++
		run.log.InfoContext(ctx, "rotating instance", slog.String("providerID", p.Status.ProviderID), slog.String("why", message),
			slog.Int64("rotations", next.Status.Rotations))
	default:
		next.Reconciler.Replacements++
		run.log.WarnContext(ctx, "replacing instance", slog.String("providerID", p.Status.ProviderID), slog.String("why", reason),
			slog.Int64("replacements", next.Reconciler.Replacements))
	}
	next.Status.Phase = proxy.PhaseReplacing
	next.Status.IP, next.Status.IPv6, next.Status.Endpoint = "", "", ""
	setReady(next, "False", reason, message, now)
	if err := run.write(ctx, next, true); err != nil {
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
		next.Status.ProviderID, next.Status.IP, next.Status.IPv6, next.Status.Endpoint, next.Status.State = "", "", "", "", ""
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
