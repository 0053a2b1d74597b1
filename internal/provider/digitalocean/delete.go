package digitalocean

import (
	"context"
	"fmt"

	"github.com/egress-proxies/egress/internal/provider"
)

// Delete destroys the Droplet, or releases the reserved IP a reserved
// IP's ID names. What is already gone is success, and so is a Droplet
// already being destroyed; a reserved IP a Droplet still holds is
// refused as transient, since the Droplet goes first.
func (p *Provider) Delete(ctx context.Context, providerID string) error {
	id, err := parseID(providerID)
	if err != nil {
		return err
	}
	if id.address != "" {
		return p.releaseReservedIP(ctx, providerID, id.address)
	}
	d, _, err := p.c.Droplets.Get(ctx, id.droplet)
	switch kind := classify(err); {
	case kind == provider.KindNotFound:
		return nil
	case err != nil:
		return p.wrap("delete", providerID, err)
	case d.Status == statusArchive:
		return nil
	}
	_, err = p.c.Droplets.Delete(ctx, id.droplet)
	if classify(err) == provider.KindNotFound {
		return nil
	}
	return p.wrap("delete", providerID, err)
}

// errHeld is the refusal of a reserved IP a Droplet holds.
func errHeld(address string, droplet int) error {
	return fmt.Errorf("the reserved IP %s is still assigned to Droplet %d; it is released once the Droplet is gone", address, droplet)
}
