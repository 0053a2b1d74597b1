package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/egress-proxies/egress/internal/provider"
)

// deleting deletes the VM, then, once it is gone, its static address if
// it has one, then the document.
func (run *run) deleting(ctx context.Context) (outcome, error) {
	p := run.doc
	id := p.Status.ProviderID
	if id == "" {
		id = run.created
	}
	if id == "" && p.Reconciler.AddressID != "" {
		// The VM is gone; the address goes after it.
		id = p.Reconciler.AddressID
	}
	if id != "" {
		prov, err := run.r.providers.Get(ctx, p.Spec.Provider)
		if err != nil {
			return run.deletionError(ctx, fmt.Errorf("provider %q is not available: %w", p.Spec.Provider, err))
		}
		// Delete first, since it is idempotent, then ask whether the VM is
		// gone: a VM that goes at once costs one Delete and one Get, and a
		// slow one one Delete per run and a Get per wait.
		justSent := !run.deleteSent
		if !run.deleteSent {
			if err := prov.Delete(ctx, id); err != nil && !errors.Is(err, provider.ErrNotFound) {
				return run.deletionError(ctx, fmt.Errorf("deleting instance %s: %w", id, err))
			}
			run.deleteSent = true
			run.log.InfoContext(ctx, "instance deletion requested", slog.String("providerID", id))
		}
		inst, err := prov.Get(ctx, id)
		switch {
		case errors.Is(err, provider.ErrNotFound) && id != p.Reconciler.AddressID && p.Reconciler.AddressID != "":
			// The VM is gone: release its address next.
			next := run.next()
			next.Status.ProviderID = ""
			run.created, run.deleteSent = "", false
			if err := run.write(ctx, next, false); err != nil {
				return done, err
			}
			return run.deleting(ctx)
		case errors.Is(err, provider.ErrNotFound):
			// Gone: the document may go.
		case err != nil:
			return run.deletionError(ctx, fmt.Errorf("reading instance %s: %w", id, err))
		case inst.State == provider.StateProvisioning || inst.State == provider.StateRunning:
			// Not on its way out: a run that was replacing it made it
			// again under the same name, or the provider has not taken the
			// delete in yet. Delete it again, now or at the next look.
			run.deleteSent = false
			if justSent {
				return wait, nil
			}
			return run.deleting(ctx)
		default:
			return wait, nil
		}
	}
	// With no providerID a VM may still be on its way from a Create in
	// flight; it carries this document's uid, which is about to be claimed
	// by nothing, so the garbage collector removes it after its grace.
	if err := run.r.store.Delete(ctx, run.key, p.UpdateTime); err != nil {
		return done, err
	}
	run.writes++
	run.log.InfoContext(ctx, "proxy deleted", slog.String("uid", p.UID))
	return done, nil
}

// deletionError reports a failed deletion step on the document and waits
// to try again: a deletion never fails for good, since the VM must go.
func (run *run) deletionError(ctx context.Context, err error) (outcome, error) {
	next := run.next()
	setReady(next, "False", "DeletionFailed", err.Error(), run.r.clock.Now())
	next.Status.Message = err.Error()
	run.log.WarnContext(ctx, "deletion step failed; retrying", slog.Any("error", err), slog.String("kind", string(provider.KindOf(err))))
	if err := run.write(ctx, next, false); err != nil {
		return done, err
	}
	return wait, nil
}
