package gc

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
)

// askAccessPull publishes one reconcile request (proxy.ReasonAccessPull)
// for the access lines of this deployment's VMs read by pull, those
// whose proxy answers the control plane on a status port (the clouds
// whose VMs have no call-home). Reconcile reads them (internal/
// accesspull): it holds the status key and writes the log, which the
// collector's account does neither. The request carries what the
// listings found, so the run lists nothing again. It is sent while a
// provider of such VMs is configured (Options.PulledTypes) and was
// listed, even with none of its VMs, so that the run deletes the cursors
// of VMs gone. It returns how many VMs the request names.
func (c *Collector) askAccessPull(ctx context.Context, listings []listing) (int, error) {
	var req proxy.AccessPull
	// A type is listed when every account of it was: the pull deletes
	// the cursors of the VMs the listings of a listed type do not show.
	failed := map[string]bool{}
	for _, l := range listings {
		if l.err != nil {
			failed[l.typ] = true
		}
	}
	for _, l := range listings {
		if failed[l.typ] || !slices.Contains(c.opts.PulledTypes, l.typ) {
			continue
		}
		if !slices.Contains(req.Listed, l.typ) {
			req.Listed = append(req.Listed, l.typ)
		}
		for _, inst := range l.instances {
			if inst.StatusPort == 0 || inst.UID == "" || inst.Deployment != c.opts.Deployment {
				continue
			}
			req.VMs = append(req.VMs, proxy.PulledVM{Provider: l.typ, ProviderID: inst.ID, UID: inst.UID, IP: inst.IP, Zone: inst.Zone,
				Port: inst.StatusPort, StatusID: inst.StatusID, Running: inst.State == provider.StateRunning})
		}
	}
	if len(req.Listed) == 0 {
		return 0, nil
	}
	if err := c.requeuer.Publish(ctx, proxy.ReconcileMessage{Reason: proxy.ReasonAccessPull, AccessPull: &req}); err != nil {
		c.log.ErrorContext(ctx, "cannot ask for the access lines of the VMs read by pull; the next run asks again",
			slog.Int("vms", len(req.VMs)), slog.Any("error", err))
		return 0, fmt.Errorf("asking for the access lines of %d VMs: %w", len(req.VMs), err)
	}
	return len(req.VMs), nil
}
