package reconcile

import (
	"context"
	"errors"
	"log/slog"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
)

// fail settles the proxy in phase Failed, with msg as its status message:
// the reason stays there until the proxy is deleted. A Failed proxy keeps
// no VM, since it would bill and serve no one, and neither the garbage
// collector nor drift would ever remove it: the Failed document claims its
// uid. A Static proxy keeps its address, which is released when the proxy
// is deleted.
//
// Failed is written first, while the document still names the VM, and the
// VM is deleted after: the providerID is the record that a VM is left to
// delete. A run that crashes after the write and before the delete, or
// after the delete and before the write that forgets the VM, leaves a
// Failed document that names a VM; the event of the write, or the sweep
// (such a document is not settled, so its progress time stays set), brings
// the run that deletes it (failedVM). Deleting first would leave, on a
// crash between the two, a Provisioning or Ready document whose VM is
// gone: its next run would make a new VM.
func (run *run) fail(ctx context.Context, reason, msg string) (outcome, error) {
	next := run.next()
	next.Status.Phase = proxy.PhaseFailed
	next.Status.Message = msg
	next.Status.IP, next.Status.IPv6, next.Status.IPv6Prefix, next.Status.Endpoint = "", "", "", ""
	setReady(next, "False", reason, msg, run.r.clock.Now())
	// Not "message": that is the line's own key in Cloud Logging's shape.
	run.log.ErrorContext(ctx, "proxy failed", slog.String("reason", reason), slog.String("statusMessage", msg),
		slog.String("providerID", next.Status.ProviderID))
	// With no provider at hand (it is not available) the VM waits for the
	// sweep's run, which finds one.
	hold := next.Status.ProviderID != "" && run.prov != nil
	if err := run.write(ctx, next, hold); err != nil || !hold {
		return done, err
	}
	return run.failedVM(ctx)
}

// failedVM deletes the VM a Failed proxy still names and, once Get says it
// is gone, forgets it. Delete is sent on every look: it is idempotent, and
// the provider skips a VM already going. A VM still on its way out is
// waited for within the run's budget, as a replaced one is.
func (run *run) failedVM(ctx context.Context) (outcome, error) {
	// The VM a make-before-break rotation kept goes first, while the
	// document still names its own VM, so that a run cut short leaves a
	// document the sweep comes back to.
	if err := run.retire(ctx, run.prov); err != nil {
		return done, err
	}
	id := run.doc.Status.ProviderID
	if err := run.prov.Delete(ctx, id); err != nil && !errors.Is(err, provider.ErrNotFound) {
		return run.failedVMError(ctx, "deleting", err)
	}
	_, err := run.prov.Get(ctx, id)
	switch {
	case errors.Is(err, provider.ErrNotFound), provider.CreateFailed(err):
		// Gone, or never made.
		next := run.next()
		next.Status.ProviderID, next.Status.IP, next.Status.IPv6, next.Status.IPv6Prefix, next.Status.Endpoint, next.Status.State = "", "", "", "", "", ""
		if err := run.write(ctx, next, false); err != nil {
			return done, err
		}
		run.log.InfoContext(ctx, "the failed proxy's instance is deleted", slog.String("providerID", id))
		return done, nil
	case err != nil:
		return run.failedVMError(ctx, "reading", err)
	}
	// Still going: hold the lease while waiting.
	if err := run.write(ctx, run.next(), true); err != nil {
		return done, err
	}
	return wait, nil
}

// failedVMError handles a provider error on the way to deleting a Failed
// proxy's VM. The VM must go whatever the provider says, as a deleted
// proxy's must, and the status message keeps the reason the proxy failed
// for: a retryable error is retried after a backoff (within the run's
// budget, then through a hand-off); any other (no permission to delete,
// say) is left to the sweep, which re-drives the document while it names
// a VM.
func (run *run) failedVMError(ctx context.Context, what string, err error) (outcome, error) {
	id := run.doc.Status.ProviderID
	retry := provider.Retryable(err)
	run.log.WarnContext(ctx, "cannot delete the instance of a failed proxy", slog.String("providerID", id), slog.String("step", what),
		slog.String("kind", string(provider.KindOf(err))), slog.Bool("retryNow", retry), slog.Any("error", err))
	next := run.next()
	if !retry {
		return done, run.write(ctx, next, false)
	}
	next.Reconciler.Attempts++
	if err := run.write(ctx, next, true); err != nil {
		return done, err
	}
	return wait, nil
}
