package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
)

// deleting deletes the VM, then, once it is gone, its static address if
// it has one, then the document.
func (run *run) deleting(ctx context.Context) (outcome, error) {
	p := run.doc
	id := p.Status.ProviderID
	if id == "" {
		id = run.created
	}
	var prov provider.Provider
	if id != "" || p.Reconciler.AddressID != "" || p.Reconciler.Retiring != "" {
		var err error
		// The VM's own account's provider: an account whose document is
		// gone leaves the deletion waiting (and saying why), not the VM
		// leaked, until an admin puts the document back.
		prov, err = run.r.providers.Account(ctx, p.Spec.Provider, p.Status.Account)
		if errors.Is(err, provider.ErrNotConfigured) {
			return run.deleteLeavingVM(ctx, id, err)
		}
		if err != nil {
			return run.deletionError(ctx, fmt.Errorf("provider %q is not available%s: %w", p.Spec.Provider, inAccount(p.Status.Account), err))
		}
	}
	if !run.deleteSent {
		// The VM a make-before-break rotation replaced goes with the proxy.
		if err := run.retire(ctx, prov); err != nil {
			return done, err
		}
	}
	if id != "" {
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
		case errors.Is(err, provider.ErrNotFound), provider.CreateFailed(err):
			// Gone, or never made: the address, then the document, may go.
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
	if a := p.Reconciler.AddressID; a != "" {
		// Released once, without waiting: an address goes at once, and one
		// that could not be released (a VM made under the proxy's name by
		// a run that crashed still holds it) is an unused address of an
		// unclaimed uid as soon as the document is gone, which the garbage
		// collector releases.
		if err := prov.Delete(ctx, a); err != nil && !errors.Is(err, provider.ErrNotFound) {
			run.log.WarnContext(ctx, "cannot release the static address now; the garbage collector will", slog.String("addressID", a), slog.Any("error", err))
		} else {
			run.log.InfoContext(ctx, "static address released", slog.String("addressID", a))
		}
	}
	// With no providerID a VM may still be on its way from a Create in
	// flight; it carries this document's uid, which is about to be claimed
	// by nothing, so the garbage collector removes it after its grace.
	if err := run.r.store.Delete(ctx, run.key, p.UpdateTime, run.spent(ctx)...); err != nil {
		return done, err
	}
	run.writes++
	run.log.InfoContext(ctx, "proxy deleted", slog.String("uid", p.UID))
	return done, nil
}

// deleteLeavingVM deletes the document of a proxy whose provider is not
// configured (removed from PROVIDERS while the proxy lived): nothing here
// can delete its VM, and retrying until someone configures the provider
// again would leave the user's deletion hanging for good. The VM and
// address, if any, are left to the operator, whom an error line tells
// which.
func (run *run) deleteLeavingVM(ctx context.Context, id string, cause error) (outcome, error) {
	p := run.doc
	if err := run.r.store.Delete(ctx, run.key, p.UpdateTime); err != nil {
		return done, err
	}
	run.writes++
	run.log.ErrorContext(ctx, "proxy deleted; its VM was left to the operator, since its provider is not configured",
		slog.String("uid", p.UID), slog.String("provider", p.Spec.Provider),
		slog.String("providerID", id), slog.String("addressID", p.Reconciler.AddressID), slog.Any("error", cause))
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

// spent is what the proxy being deleted cost in the month, to be kept in
// its namespace (proxy.Spent) when its document goes: its VM and address
// up to the deletion's request, its traffic as last reported. None when
// the process costs nothing (no catalog), the cost is unknown, or the
// document is a pool's member (a namespace pays for no warm VM).
func (run *run) spent(ctx context.Context) []proxy.Spent {
	costs, p := run.r.opts.Costs, run.doc
	if costs.Catalog == nil || p.Pool != "" {
		return nil
	}
	c := costs.Proxy(ctx, p, run.r.clock.Now())
	if c.Unknown != "" {
		run.log.WarnContext(ctx, "the deleted proxy's cost is unknown and not kept in its namespace", slog.String("unknown", c.Unknown))
		return nil
	}
	return []proxy.Spent{{Month: c.Month, Nanos: c.MonthToDate.Nanos}}
}
