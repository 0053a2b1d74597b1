package mock

import (
	"errors"
	"time"

	"github.com/egress-proxies/egress/internal/provider"
)

// takeFault pops one use of the first fault queued for m. p.mu must be held.
func (p *Provider) takeFault(m Method) *fault {
	q := p.faults[m]
	if len(q) == 0 {
		return nil
	}
	f := q[0]
	f.remaining--
	if f.remaining <= 0 {
		p.faults[m] = q[1:]
	}
	return f
}

// FailNext makes the next n calls of m fail with err without doing anything.
// Faults queue: a second FailNext applies after the first is used up.
func (p *Provider) FailNext(m Method, n int, err error) {
	p.addFault(m, &fault{remaining: n, err: err})
}

// FailNextAfterEffect makes the next n calls of m do their work and then
// return err, like a Create whose response was lost on the way back.
// Get and ListByTag have no effect to take, so for them it is FailNext.
func (p *Provider) FailNextAfterEffect(m Method, n int, err error) {
	p.addFault(m, &fault{remaining: n, err: err, takeEffect: true})
}

func (p *Provider) addFault(m Method, f *fault) {
	if f.remaining <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults[m] = append(p.faults[m], f)
}

// FailCreatesAsync makes the next n creates of a new instance in zone (any
// zone for "") be accepted and fail later, as Compute reports a stockout,
// a quota or a missing image in the insert's operation: Create succeeds,
// no VM appears, and Get answers err (with Op "create").
func (p *Provider) FailCreatesAsync(zone string, n int, kind provider.Kind, message string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.async = append(p.async, &asyncFailure{zone: zone, remaining: n, err: provider.NewError(kind, "create", "", errors.New(message))})
}

// Stockout makes every create in zone fail later for want of capacity,
// until EndStockout.
func (p *Provider) Stockout(zone string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.async = append(p.async, &asyncFailure{zone: zone, remaining: -1,
		err: provider.NewError(provider.KindCapacity, "create", "", errors.New("ZONE_RESOURCE_POOL_EXHAUSTED: the zone "+zone+" does not have enough resources available"))})
}

// EndStockout gives zone its capacity back.
func (p *Provider) EndStockout(zone string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	kept := p.async[:0]
	for _, a := range p.async {
		if !(a.remaining < 0 && a.zone == zone) {
			kept = append(kept, a)
		}
	}
	p.async = kept
}

// ClearCreateFailures ends every stockout and drops the creates queued to
// fail (FailCreatesAsync) that no create has met yet.
func (p *Provider) ClearCreateFailures() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.async = nil
}

// takeAsync returns the failure a create in zone meets, if any, using it
// up. p.mu must be held.
func (p *Provider) takeAsync(zone string) *provider.Error {
	for i, a := range p.async {
		if a.zone != "" && a.zone != zone {
			continue
		}
		if a.remaining > 0 {
			if a.remaining--; a.remaining == 0 {
				p.async = append(p.async[:i:i], p.async[i+1:]...)
			}
		}
		return a.err
	}
	return nil
}

// SetLatency makes every call of m wait d (or until its context ends) before
// it does anything. Zero removes the latency.
func (p *Provider) SetLatency(m Method, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency[m] = d
}

// Lose makes an instance vanish without a Delete, as a VM reclaimed or
// deleted by hand outside the system does; its static address stays. It
// reports whether it existed.
func (p *Provider) Lose(providerID string) bool {
	name, isAddress, err := parseID(providerID)
	if err != nil || isAddress {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	in, ok := p.instances[name]
	if ok {
		p.unserve(in)
	}
	delete(p.instances, name)
	return ok
}

// Stop puts an instance in the given state (StateStopped or
// StateTerminated), as a VM stopped by hand or preempted is. It reports
// whether the instance existed.
func (p *Provider) Stop(providerID string, state provider.InstanceState) bool {
	name, _, err := parseID(providerID)
	if err != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	in, ok := p.instances[name]
	if ok {
		p.unserve(in)
		in.inst.State = state
		in.inst.IP = ""
	}
	return ok
}

// FailBoot makes an instance's bootstrap report that the proxy cannot
// serve, with reason, as a failed self-test (at the first boot, or after a
// reboot of a VM that served) does: it is Provisioning with that BootError
// from now on, and calls home to say so. It reports whether the instance
// exists.
func (p *Provider) FailBoot(providerID, reason string) bool {
	name, _, err := parseID(providerID)
	if err != nil {
		return false
	}
	p.mu.Lock()
	in, ok := p.instances[name]
	if ok = ok && in.createErr == nil; ok {
		in.bootError = reason
		p.unserve(in)
		in.inst.State, in.inst.IP, in.inst.BootError = provider.StateProvisioning, "", reason
		in.console = append(in.console, "egress-bootstrap: FAILED: "+reason)
	}
	p.mu.Unlock()
	if ok && p.callHome != nil {
		p.callHome(CallHome{Namespace: in.req.Namespace, Name: in.req.ProxyName, UID: in.req.UID, Pool: in.req.Pool, Instance: in.name, BootError: reason})
	}
	return ok
}

// Print appends lines to an instance's console, as software on the VM
// (a spec's own cloud-init, say) writes to its serial port. It reports
// whether the instance exists.
func (p *Provider) Print(providerID string, lines ...string) bool {
	name, _, err := parseID(providerID)
	if err != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	in, ok := p.instances[name]
	if ok {
		in.console = append(in.console, lines...)
	}
	return ok
}

// RefuseReconfigures makes the agents of the next n running instances
// handed a new configuration refuse it, for reason, as an agent whose
// self-test of the new configuration fails does: after the reconfigure
// delay the instance still serves the generation it served, reports the
// one it refused (Instance.RefusedGeneration) with a BootError as the
// agent writes egress/error, and calls home with it. It replaces the
// refusals not used yet: 0 ends them.
func (p *Provider) RefuseReconfigures(n int, reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse, p.refuseReason = max(n, 0), reason
}

// RefusalsArmed is how many refusals RefuseReconfigures armed are still to
// come: a Reconfigure that changed nothing, or reached a VM not running,
// leaves its refusal for the next one, and a test that plays faults tells
// by this whether the VM it called refused.
func (p *Provider) RefusalsArmed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refuse
}

// NeverReady makes the next n new instances hang in their boot: they stay
// Provisioning, report nothing and never call home, as a VM whose startup
// script never ran would.
func (p *Provider) NeverReady(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.neverReady += n
}

// Hangs reports whether the instance hangs in its boot (NeverReady made
// it so): a test that plays faults tells by it which VM one met.
func (p *Provider) Hangs(providerID string) bool {
	name, _, err := parseID(providerID)
	if err != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	in, ok := p.instances[name]
	return ok && in.neverReady
}

// SkipCallHome makes the next n new instances become ready without calling
// home, as a VM whose message was lost: only the reconciler's sweep finds
// them.
func (p *Provider) SkipCallHome(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.skipCallHome += n
}

// AddForeign plants an instance that this system did not create, with the
// given labels, as another tool sharing the project would. Tests use it to
// check that only instances labelled managed are listed and collected.
func (p *Provider) AddForeign(name string, labels map[string]string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextSeq++
	id := idPrefix + name
	p.instances[name] = &instance{
		name:      name,
		seq:       p.nextSeq,
		unmanaged: labels[provider.LabelManaged] != provider.LabelManagedYes,
		inst: provider.Instance{
			ID:         id,
			State:      provider.StateRunning,
			IP:         addressFor(p.nextSeq).String(),
			UID:        labels[provider.LabelUID],
			CreatedAt:  p.clock.Now(),
			Deployment: labels[provider.LabelDeployment],
		},
	}
	return id
}
