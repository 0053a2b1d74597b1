package gcp

import (
	"context"
	"fmt"

	"cloud.google.com/go/compute/apiv1/computepb"

	"github.com/egress-proxies/egress/internal/provider"
)

// Delete deletes the VM, or releases the static address an address ID
// names. What is already gone is success; a VM already on its way out is
// left alone, since every delete call spends mutation quota; an address a
// VM still uses is refused as transient, since the VM goes first.
func (p *Provider) Delete(ctx context.Context, providerID string) error {
	id, err := parseID(providerID)
	if err != nil {
		return err
	}
	if id.address {
		return p.deleteAddress(ctx, providerID, id)
	}
	inst, err := p.c.Instances.Get(ctx, &computepb.GetInstanceRequest{Project: id.project, Zone: id.scope, Instance: id.name})
	switch {
	case classify(err) == provider.KindNotFound:
		return nil
	case err != nil:
		return p.wrap("delete", providerID, err)
	}
	switch inst.GetStatus() {
	case "STOPPING", "DEPROVISIONING":
		return nil
	}
	_, err = p.c.Instances.Delete(ctx, &computepb.DeleteInstanceRequest{Project: id.project, Zone: id.scope, Instance: id.name})
	if classify(err) == provider.KindNotFound {
		return nil
	}
	return p.wrap("delete", providerID, err)
}

func (p *Provider) deleteAddress(ctx context.Context, providerID string, id parsed) error {
	a, err := p.c.Addresses.Get(ctx, &computepb.GetAddressRequest{Project: id.project, Region: id.scope, Address: id.name})
	switch {
	case classify(err) == provider.KindNotFound:
		return nil
	case err != nil:
		return p.wrap("delete", providerID, err)
	case a.GetStatus() == "IN_USE":
		return provider.NewError(provider.KindTransient, "delete", providerID,
			fmt.Errorf("the address is still used by %v; it is released once its VM is gone", a.GetUsers()))
	}
	_, err = p.c.Addresses.Delete(ctx, &computepb.DeleteAddressRequest{Project: id.project, Region: id.scope, Address: id.name})
	if classify(err) == provider.KindNotFound {
		return nil
	}
	return p.wrap("delete", providerID, err)
}
