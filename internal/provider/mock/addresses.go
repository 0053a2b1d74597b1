package mock

import (
	"errors"
	"net/netip"
	"time"

	"github.com/egress-proxies/egress/internal/provider"
)

// address is a proxy's static address: kept across its VMs, released by a
// Delete of its own ID once no VM uses it.
type address struct {
	name, uid string
	// deployment is the deployment that reserved it.
	deployment string
	ip         netip.Addr
	createdAt  time.Time
	seq        int
}

// staticRange is where static addresses come from: the benchmarking range
// (RFC 2544), apart from the ephemeral addresses, so a test can tell which
// it got; never routable either.
var staticRange = netip.MustParsePrefix("198.18.0.0/15")

func (a *address) id() string { return addressPrefix + a.name }

// ensureAddress returns the proxy's address for req, reserving it if need
// be. p.mu must be held.
func (p *Provider) ensureAddress(req provider.CreateRequest) (*address, error) {
	if a, ok := p.addresses[req.Name]; ok {
		if a.uid != req.UID {
			return nil, provider.NewError(provider.KindAlreadyExists, "reserve address", a.id(), errors.New("the address belongs to another uid"))
		}
		return a, nil
	}
	p.nextSeq++
	ip := staticRange.Addr().As4()
	ip[2], ip[3] = byte(p.nextSeq>>8), byte(p.nextSeq)
	a := &address{name: req.Name, uid: req.UID, deployment: p.deployment, ip: netip.AddrFrom4(ip), createdAt: p.clock.Now(), seq: p.nextSeq}
	p.addresses[req.Name] = a
	return a, nil
}

// inUse reports whether a VM uses the address: the instance of its name
// (an address is reserved under its VM's name, and a proxy's VMs share
// that name), live. p.mu must be held.
func (p *Provider) inUse(a *address) bool {
	in, ok := p.instances[a.name]
	return ok && in.address == a && in.createErr == nil && in.goneAt.IsZero()
}

// addressInstance is the address as the contract shows it: a Running
// instance while a VM uses it, a Terminated one once none does. p.mu must
// be held.
func (p *Provider) addressInstance(a *address) provider.Instance {
	state := provider.StateTerminated
	if p.inUse(a) {
		state = provider.StateRunning
	}
	return provider.Instance{ID: a.id(), IP: a.ip.String(), State: state, UID: a.uid, CreatedAt: a.createdAt, Deployment: a.deployment}
}

// deleteAddress releases an address no VM uses. p.mu must be held.
func (p *Provider) deleteAddress(name string) error {
	a, ok := p.addresses[name]
	if !ok {
		return nil
	}
	if p.inUse(a) {
		return provider.NewError(provider.KindTransient, "delete", a.id(), errors.New("the address is still used by a VM"))
	}
	delete(p.addresses, name)
	return nil
}
