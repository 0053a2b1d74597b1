package mock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"

	"github.com/egress-proxies/egress/internal/provider"
)

// Reconfigure gives the instance a new owner (LabelUID, and the proxy its
// call-home names) and engine configuration, at once; with Options.Serve
// its running engine applies the configuration live, on the same address.
// After Options.ReconfigureDelay it reports req.Engine's generation and,
// running and wired to call home, calls home as a finished boot does; one
// still booting boots with it and reports it when its boot ends. The
// same request again changes nothing and schedules nothing. A VM that is
// gone or being deleted is ErrNotFound.
func (p *Provider) Reconfigure(ctx context.Context, providerID string, req provider.ReconfigureRequest) error {
	if err := p.enter(ctx, MethodReconfigure); err != nil {
		return err
	}
	name, isAddress, err := parseID(providerID)
	if err != nil {
		return err
	}
	if isAddress {
		return provider.NewError(provider.KindPermanent, "reconfigure", providerID, errors.New("an address is no VM to reconfigure"))
	}
	p.mu.Lock()
	p.purge()
	f := p.takeFault(MethodReconfigure)
	if f != nil && !f.takeEffect {
		p.mu.Unlock()
		return f.err
	}
	in, ok := p.instances[name]
	if !ok || in.createErr != nil || !in.goneAt.IsZero() {
		p.mu.Unlock()
		return provider.NewError(provider.KindNotFound, "reconfigure", providerID, provider.ErrNotFound)
	}
	// What the VM did until now (its boot ended?) happened before this.
	p.advance(in)
	seq, changed := p.reconfigure(in, req)
	// A VM still booting takes the change into its boot, whose own
	// call-home says it is ready.
	running := in.inst.State == provider.StateRunning
	p.mu.Unlock()
	if changed && running {
		// Outside the lock: a fake clock calls back at once for no delay.
		p.clock.AfterFunc(p.reconfigureDelay, func() { p.reconfigured(in, seq) })
	}
	if f != nil {
		return f.err
	}
	return nil
}

// reconfigure records req on the instance and applies it to its engine,
// and returns the number of this reconfiguration and whether it changed
// anything. p.mu must be held.
func (p *Provider) reconfigure(in *instance, req provider.ReconfigureRequest) (int, bool) {
	if in.inst.UID == req.UID && in.req.Namespace == req.Namespace && in.req.Pool == "" &&
		in.req.ProxyName == req.ProxyName && reflect.DeepEqual(in.req.Engine, req.Engine) {
		return in.reconfigs, false
	}
	in.inst.UID = req.UID
	in.req.UID, in.req.Namespace, in.req.ProxyName, in.req.Pool = req.UID, req.Namespace, req.ProxyName, ""
	in.reconfigs++
	if req.Engine == nil {
		return in.reconfigs, true
	}
	engine := *req.Engine
	in.req.Engine = &engine
	generation := engine.Generation
	in.pending, in.pendingAt, in.refusal = &generation, p.clock.Now().Add(p.reconfigureDelay), ""
	var refusal error
	if p.refuse > 0 && in.inst.State == provider.StateRunning {
		p.refuse--
		refusal = errors.New(p.refuseReason)
	} else {
		refusal = p.reapply(in)
	}
	if refusal != nil {
		// As the agent does: the configuration served before is served
		// still, and egress/error says which generation was refused, and
		// why, once the VM has tried it.
		in.refusal = fmt.Sprintf("generation %d: %v; the configuration served before is served still", generation, refusal)
		in.console = append(in.console, "egress-agent: "+in.refusal)
		p.serveLog().Warn("mock VM refuses its reconfiguration", slog.String("instance", in.name), slog.Any("error", refusal))
	}
	return in.reconfigs, true
}

// reconfigured ends a reconfiguration: the instance, if it is still there,
// running and not reconfigured again since, calls home: ready when it
// serves the new generation (its engine took it), with the reason when it
// refused it.
func (p *Provider) reconfigured(in *instance, seq int) {
	p.mu.Lock()
	cur, ok := p.instances[in.name]
	p.advance(in)
	applied := in.req.Engine == nil || in.inst.Generation == in.req.Engine.Generation
	refused := in.req.Engine != nil && in.inst.RefusedGeneration == in.req.Engine.Generation
	live := ok && cur == in && in.reconfigs == seq && (applied || refused) && in.bootError == "" &&
		in.goneAt.IsZero() && in.inst.State == provider.StateRunning
	call := CallHome{Namespace: in.req.Namespace, Name: in.req.ProxyName, UID: in.req.UID, Pool: in.req.Pool, Instance: in.name}
	if refused && !applied {
		call.BootError = in.inst.BootError
	}
	p.mu.Unlock()
	if live && p.callHome != nil {
		p.callHome(call)
	}
}
