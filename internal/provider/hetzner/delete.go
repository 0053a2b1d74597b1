package hetzner

import (
	"context"
	"fmt"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"github.com/egress-proxies/egress/internal/provider"
)

// Delete deletes the server, or the Primary IP a Primary IP's ID names.
// What is already gone is success, and so is a server already being
// deleted (a second delete would only spend a request of the rate
// limit); a Primary IP a server still uses is refused as transient,
// since the server goes first.
func (p *Provider) Delete(ctx context.Context, providerID string) error {
	id, err := parseID(providerID)
	if err != nil {
		return err
	}
	if id.primaryIP {
		return p.deletePrimaryIP(ctx, providerID, id.id)
	}
	sv, _, err := p.c.Server.GetByID(ctx, id.id)
	switch {
	case err != nil:
		return p.wrap("delete", providerID, err)
	case sv == nil, sv.Status == hcloud.ServerStatusDeleting:
		return nil
	}
	_, _, err = p.c.Server.DeleteWithResult(ctx, sv)
	if classify(err) == provider.KindNotFound {
		return nil
	}
	return p.wrap("delete", providerID, err)
}

func (p *Provider) deletePrimaryIP(ctx context.Context, providerID string, id int64) error {
	ip, _, err := p.c.PrimaryIP.GetByID(ctx, id)
	switch {
	case err != nil:
		return p.wrap("delete", providerID, err)
	case ip == nil:
		return nil
	case ip.AssigneeID != 0:
		return provider.NewError(provider.KindTransient, "delete", providerID,
			fmt.Errorf("the Primary IP is still assigned to server %d; it is released once the server is gone", ip.AssigneeID))
	}
	_, err = p.c.PrimaryIP.Delete(ctx, ip)
	if classify(err) == provider.KindNotFound {
		return nil
	}
	return p.wrap("delete", providerID, err)
}
