package aws

import (
	"context"

	"github.com/egress-proxies/egress/internal/provider/vmside"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// StopTraffic tells the VM's proxy to stop carrying new connections at
// its namespace's budget, or to carry them again (provider.TrafficStopper):
// these VMs take no configuration in place, so the order goes through
// their status door, signed with the VM's sign key (vmside.StopTraffic).
// The VM is read first (Get), for its address, status port and id.
func (p *Provider) StopTraffic(ctx context.Context, providerID string, stop *vmconfig.TrafficStop) error {
	inst, err := p.Get(ctx, providerID)
	if err != nil {
		return err
	}
	return vmside.StopTraffic(ctx, p.cfg.Prober, inst, stop)
}
