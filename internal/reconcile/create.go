package reconcile

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
)

// create records the intent, asks the provider for the VM and records that
// it is provisioning. It does not wait for the VM: its call-home, or the
// sweep, brings the run that sees it ready.
func (run *run) create(ctx context.Context) (outcome, error) {
	p := run.doc
	name := provider.NameFromUID(p.UID)
	phase := proxy.PhaseCreating
	if p.Status.Phase == proxy.PhaseReplacing {
		phase = proxy.PhaseReplacing
	}
	// The intent first: a run that crashes after Create leaves a document
	// that says a create was pending under this name, and the next run's
	// Create of the same name adopts the VM instead of making another.
	next := run.next()
	next.Status.Phase = phase
	if next.Reconciler.CreatePending != name {
		// On a retry the condition keeps saying why the last try failed.
		next.Reconciler.CreatePending = name
		setReady(next, "False", string(phase), "Creating instance "+name+".", run.r.clock.Now())
	}
	if next.Reconciler.Credentials.IsZero() {
		// Made with the first VM, in the write that records its create, and
		// kept for every VM after it: a client's configuration outlives a
		// replaced VM.
		creds, err := proxy.NewCredentials()
		if err != nil {
			return done, err
		}
		next.Reconciler.Credentials = creds
	}
	if err := run.write(ctx, next, true); err != nil {
		return done, err
	}

	req := provider.CreateRequest{
		Name:      name,
		UID:       p.UID,
		Namespace: p.Namespace,
		ProxyName: p.Name,
		Placement: provider.Placement(p.Spec.Placement),
		Port:      port(p.Spec),
	}
	var err error
	if req.CloudInit, req.StartupScript, err = run.bootstrap(ctx); err != nil {
		return run.providerError(ctx, "resolving the bootstrap", err)
	}
	id, err := run.prov.Create(ctx, req)
	if err != nil {
		return run.providerError(ctx, "creating instance "+name, err)
	}
	run.created = id
	run.log.InfoContext(ctx, "instance created", slog.String("providerID", id), slog.String("instance", name))
	now := run.r.clock.Now()
	next = run.next()
	next.Status.Phase = proxy.PhaseProvisioning
	next.Status.ProviderID = id
	next.Status.State = string(provider.StateProvisioning)
	next.Status.Message = ""
	next.Reconciler.CreatePending = ""
	next.Reconciler.Attempts = 0
	next.Reconciler.NotFoundSince = time.Time{}
	next.Reconciler.BootStart = now
	setReady(next, "False", "Provisioning", "Instance "+id+" is provisioning.", now)
	return done, run.write(ctx, next, false)
}

// bootstrap resolves what the VM boots with: the spec's own cloud-init
// (the secret it names, or the inline one) as user-data, or else the
// default startup script. A spec that brings its own cloud-init takes over
// the whole VM, so it gets no startup script beside it.
func (run *run) bootstrap(ctx context.Context) (cloudInit, startupScript string, err error) {
	s := run.doc.Spec
	switch {
	case s.CloudInitSecret != "":
		if run.r.secrets == nil {
			return "", "", provider.NewError(provider.KindPermanent, "access secret version", s.CloudInitSecret, errors.New("no Secret Manager client is configured"))
		}
		ud, err := run.r.secrets.Access(ctx, s.CloudInitSecret)
		return ud, "", err
	case s.CloudInit != "":
		return s.CloudInit, "", nil
	case run.r.opts.Bootstrap != nil:
		script, err := run.r.opts.Bootstrap(s, run.doc.Reconciler.Credentials)
		if err != nil {
			return "", "", provider.NewError(provider.KindPermanent, "render the startup script", "", err)
		}
		return "", script, nil
	}
	return "", "", nil
}
