package mock

import (
	"container/heap"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/egress-proxies/egress/internal/provider"
)

// Create makes an instance named req.Name, or returns the existing one's ID
// if an instance of that name exists (the contract's idempotency by name).
// A request id seen within RequestIDWindow gets the first answer back and
// makes nothing, as Compute ignores a repeated requestId.
func (p *Provider) Create(ctx context.Context, req provider.CreateRequest) (string, error) {
	if err := p.enter(ctx, MethodCreate); err != nil {
		return "", err
	}
	if req.Name == "" {
		return "", provider.NewError(provider.KindPermanent, "create", "", fmt.Errorf("request has no name"))
	}
	p.mu.Lock()
	p.purge()
	f := p.takeFault(MethodCreate)
	if f != nil && !f.takeEffect {
		p.mu.Unlock()
		return "", f.err
	}
	now := p.clock.Now()
	if seen, ok := p.requests[req.RequestID]; ok && req.RequestID != "" && now.Sub(seen.at) < RequestIDWindow {
		p.mu.Unlock()
		if f != nil {
			return "", f.err
		}
		return seen.id, nil
	}
	in, made, err := p.create(req)
	if err != nil {
		p.mu.Unlock()
		return "", err
	}
	if req.RequestID != "" {
		p.requests[req.RequestID] = seenRequest{id: in.inst.ID, at: now}
	}
	// Only a VM that runs the default bootstrap calls home: one that runs a
	// spec's own cloud-init has no account to publish with (the gcp
	// provider gives it none), and is seen Running by the sweep.
	callHome := made && in.createErr == nil && p.callHome != nil && !in.neverReady && req.CloudInit == ""
	if callHome && p.skipCallHome > 0 {
		p.skipCallHome--
		callHome = false
	}
	p.mu.Unlock()
	if callHome {
		// Outside the lock: a fake clock calls back at once for no delay.
		p.clock.AfterFunc(p.delay, func() { p.ready(in) })
	}
	if f != nil {
		return "", f.err
	}
	return in.inst.ID, nil
}

// create finds the instance of req's name or makes it, and reports whether
// it made it. p.mu must be held.
func (p *Provider) create(req provider.CreateRequest) (*instance, bool, error) {
	if in, ok := p.instances[req.Name]; ok && in.createErr == nil {
		return in, false, nil
	}
	zone := req.Placement.Zone
	if zone == "" && req.Placement.Region != "" {
		var ok bool
		if zone, ok = provider.ChooseZone(req.UID, zonesOf(req.Placement.Region), req.AvoidZones); !ok {
			return nil, false, provider.NewError(provider.KindCapacity, "create", req.Name, fmt.Errorf("every zone of region %s was out of capacity", req.Placement.Region))
		}
	}
	p.nextSeq++
	in := &instance{
		name: req.Name,
		seq:  p.nextSeq,
		req:  req,
		inst: provider.Instance{
			ID:         idPrefix + req.Name,
			State:      provider.StateProvisioning,
			UID:        req.UID,
			CreatedAt:  p.clock.Now(),
			Zone:       zone,
			Deployment: p.deployment,
		},
	}
	if e := p.takeAsync(zone); e != nil {
		// Accepted, and failed since: Get will say why, and nothing runs.
		failure := *e
		failure.Target, failure.Zone = in.inst.ID, zone
		in.createErr = &failure
	} else if req.StaticIP {
		a, err := p.ensureAddress(req)
		if err != nil {
			return nil, false, err
		}
		in.address = a
		in.inst.AddressID = a.id()
	}
	if p.neverReady > 0 && in.createErr == nil {
		p.neverReady--
		in.neverReady = true
	}
	if in.createErr == nil && !in.neverReady {
		// The VM boots and its engine starts, as the startup script starts
		// it. Where it cannot (another program holds the port on every
		// loopback address), the VM stays a record, as without Serve: the
		// local stack keeps working, and the console says why.
		if err := p.serve(in); err != nil {
			in.console = append(in.console, "egress-proxy: not serving: "+err.Error())
			p.serveLog().Warn("mock VM does not serve", slog.String("instance", in.name), slog.Any("error", err))
		}
	}
	p.instances[req.Name] = in
	return in, true, nil
}

// ready calls home for an instance whose boot has ended, unless it is gone
// or failed meanwhile: a VM calls home only from a self-test that passed.
func (p *Provider) ready(in *instance) {
	p.mu.Lock()
	cur, ok := p.instances[in.name]
	live := ok && cur == in && in.bootError == "" && in.goneAt.IsZero() &&
		in.inst.State != provider.StateStopped && in.inst.State != provider.StateTerminated
	if live {
		in.console = append(in.console, "egress-bootstrap: proxy ready on port "+fmt.Sprint(in.req.Port))
	}
	p.mu.Unlock()
	if live {
		p.callHome(CallHome{Namespace: in.req.Namespace, Name: in.req.ProxyName, UID: in.req.UID, Pool: in.req.Pool, Instance: in.name})
	}
}

// Get returns the instance's current state, advancing it to Running once the
// provisioning delay has passed; for a create that failed, the failure; for
// an address ID, the address.
func (p *Provider) Get(ctx context.Context, providerID string) (*provider.Instance, error) {
	if err := p.enter(ctx, MethodGet); err != nil {
		return nil, err
	}
	name, isAddress, err := parseID(providerID)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.purge()
	if f := p.takeFault(MethodGet); f != nil {
		return nil, f.err
	}
	if isAddress {
		a, ok := p.addresses[name]
		if !ok {
			return nil, provider.NewError(provider.KindNotFound, "get", providerID, provider.ErrNotFound)
		}
		out := p.addressInstance(a)
		return &out, nil
	}
	in, ok := p.instances[name]
	switch {
	case !ok:
		return nil, provider.NewError(provider.KindNotFound, "get", providerID, provider.ErrNotFound)
	case in.createErr != nil:
		return nil, in.createErr
	}
	p.advance(in)
	out := in.inst
	return &out, nil
}

// Console returns what the instance's serial console would show: its
// creation and what its bootstrap reported.
func (p *Provider) Console(ctx context.Context, providerID string) (string, error) {
	name, _, err := parseID(providerID)
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.purge()
	in, ok := p.instances[name]
	if !ok {
		return "", provider.NewError(provider.KindNotFound, "console", providerID, provider.ErrNotFound)
	}
	lines := in.console
	if in.req.Name != "" { // made by Create, not planted (AddForeign)
		lines = append([]string{"mock: instance " + in.name + " created; booting"}, lines...)
	}
	return strings.Join(lines, "\n") + "\n", nil
}

// Delete removes the instance, or releases an address no VM uses.
// Deleting one that does not exist succeeds.
func (p *Provider) Delete(ctx context.Context, providerID string) error {
	if err := p.enter(ctx, MethodDelete); err != nil {
		return err
	}
	name, isAddress, err := parseID(providerID)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.takeFault(MethodDelete)
	if f != nil && !f.takeEffect {
		return f.err
	}
	p.purge()
	if isAddress {
		if err := p.deleteAddress(name); err != nil {
			return err
		}
	} else if in, ok := p.instances[name]; ok && in.createErr != nil {
		delete(p.instances, name)
	} else if ok && in.goneAt.IsZero() {
		// It stops, and is gone once the deletion delay has passed.
		in.goneAt = p.clock.Now().Add(p.deletionDelay)
		heap.Push(&p.deleted, in)
		in.inst.State, in.inst.IP = provider.StateStopped, ""
		p.unserve(in)
		p.purge()
	}
	if f != nil {
		return f.err
	}
	return nil
}

// purge removes the deleted instances whose deletion delay has passed:
// the earliest first, off the heap of deletions, so a call pays for the
// instances it removes and never walks the fleet. A record the heap holds
// that is no longer the instance of its name (lost, or made again after a
// failed create) is dropped. p.mu must be held.
func (p *Provider) purge() {
	now := p.clock.Now()
	for p.deleted.Len() > 0 && !now.Before(p.deleted[0].goneAt) {
		in := heap.Pop(&p.deleted).(*instance)
		p.visits++
		if p.instances[in.name] == in {
			p.unserve(in)
			delete(p.instances, in.name)
		}
	}
}

// deletions is a min-heap of deleted instances by the time they are gone
// (container/heap).
type deletions []*instance

func (d deletions) Len() int           { return len(d) }
func (d deletions) Less(i, j int) bool { return d[i].goneAt.Before(d[j].goneAt) }
func (d deletions) Swap(i, j int)      { d[i], d[j] = d[j], d[i] }
func (d *deletions) Push(x any)        { *d = append(*d, x.(*instance)) }
func (d *deletions) Pop() any {
	old := *d
	in := old[len(old)-1]
	old[len(old)-1] = nil
	*d = old[:len(old)-1]
	return in
}

// ListByTag returns every instance labelled LabelManaged=LabelManagedYes
// of this deployment or of none, ordered by creation, then every static
// address of this deployment that no VM uses, as a Terminated instance of
// its own kind. Another deployment's are never listed.
func (p *Provider) ListByTag(ctx context.Context) ([]provider.Instance, error) {
	if err := p.enter(ctx, MethodListByTag); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if f := p.takeFault(MethodListByTag); f != nil {
		return nil, f.err
	}
	out := p.snapshot(true)
	addrs := make([]*address, 0, len(p.addresses))
	for _, a := range p.addresses {
		p.visits++
		if a.deployment == p.deployment && !p.inUse(a) {
			addrs = append(addrs, a)
		}
	}
	slices.SortFunc(addrs, func(a, b *address) int { return a.seq - b.seq })
	for _, a := range addrs {
		out = append(out, p.addressInstance(a))
	}
	return out, nil
}

// Instances returns every instance the provider holds, managed or not,
// ordered by creation. It is the read-only view the local stack serves at
// /debug/instances; it makes no call count and triggers no fault.
func (p *Provider) Instances() []provider.Instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.snapshot(false)
}

// Addresses returns the static addresses the provider holds, used or not,
// as Get shows them.
func (p *Provider) Addresses() []provider.Instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.purge()
	out := make([]provider.Instance, 0, len(p.addresses))
	for _, a := range p.addresses {
		p.visits++
		out = append(out, p.addressInstance(a))
	}
	slices.SortFunc(out, func(a, b provider.Instance) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// snapshot is every instance, or, listed, the managed ones of this
// deployment or of none. p.mu must be held.
func (p *Provider) snapshot(listed bool) []provider.Instance {
	p.purge()
	list := make([]*instance, 0, len(p.instances))
	for _, in := range p.instances {
		p.visits++
		if in.createErr != nil {
			continue
		}
		if d := in.inst.Deployment; listed && (in.unmanaged || (d != "" && d != p.deployment)) {
			continue
		}
		list = append(list, in)
	}
	slices.SortFunc(list, func(a, b *instance) int { return a.seq - b.seq })
	out := make([]provider.Instance, len(list))
	for i, in := range list {
		p.advance(in)
		out[i] = in.inst
	}
	return out
}

// advance moves a Provisioning instance to Running once its delay is over,
// and gives it its address then, as a cloud assigns the external IP when the
// VM starts; an instance whose bootstrap failed or hangs stays
// Provisioning. A running one reports the generation of the engine
// configuration it booted with, and that of a Reconfigure once it has
// applied it.
func (p *Provider) advance(in *instance) {
	now := p.clock.Now()
	if in.inst.State == provider.StateRunning && in.pending != nil && !now.Before(in.pendingAt) {
		if in.refusal != "" {
			// It tried the generation, could not serve it, and serves the
			// one before, saying so until it serves another.
			in.inst.RefusedGeneration, in.inst.BootError = *in.pending, in.refusal
		} else {
			in.inst.Generation = *in.pending
			if in.inst.RefusedGeneration != 0 {
				in.inst.RefusedGeneration, in.inst.BootError = 0, ""
			}
		}
		in.pending, in.refusal = nil, ""
	}
	if in.inst.State != provider.StateProvisioning || in.bootError != "" || in.neverReady {
		return
	}
	if now.Sub(in.inst.CreatedAt) < p.delay {
		return
	}
	in.inst.State = provider.StateRunning
	if in.req.Engine != nil {
		// It booted with the latest configuration it was given.
		in.inst.Generation, in.pending = in.req.Engine.Generation, nil
	}
	switch {
	case in.address != nil:
		in.inst.IP = in.address.ip.String()
	case in.served != nil:
		in.inst.IP = in.served.ip.String()
	default:
		in.inst.IP = addressFor(in.seq).String()
	}
}

// enter counts the call, honours cancellation and waits out injected latency.
func (p *Provider) enter(ctx context.Context, m Method) error {
	p.mu.Lock()
	p.calls[m]++
	lat := p.latency[m]
	p.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("mock %s: %w", strings.ToLower(string(m)), err)
	}
	if lat <= 0 {
		return nil
	}
	if err := p.clock.Sleep(ctx, lat); err != nil {
		return fmt.Errorf("mock %s: %w", strings.ToLower(string(m)), err)
	}
	return nil
}

// CreateRequest returns the request that created the instance, for tests
// that check what a VM would boot with, with what Reconfigure changed
// since (uid, namespace, name, engine). It makes no call count.
func (p *Provider) CreateRequest(providerID string) (provider.CreateRequest, bool) {
	name, _, err := parseID(providerID)
	if err != nil {
		return provider.CreateRequest{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	in, ok := p.instances[name]
	if !ok {
		return provider.CreateRequest{}, false
	}
	return in.req, true
}

// Visits returns how many stored records (instances, addresses) the
// provider's calls have looked at beyond the one each call names: a list
// looks at what it lists, and a purge at what it removes. It makes no call
// count. A test bounds it to hold the mock's calls to constant work each,
// whatever the fleet (work_test.go).
func (p *Provider) Visits() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.visits
}

// Calls returns how many times m was called, failed calls included.
func (p *Provider) Calls(m Method) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[m]
}
