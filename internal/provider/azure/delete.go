package azure

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v8"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"

	"github.com/egress-proxies/egress/internal/provider"
)

// typeNIC and typeDisk are the ARM types of a VM's NIC and OS disk.
const (
	typeNIC  = "Microsoft.Network/networkInterfaces"
	typeDisk = "Microsoft.Compute/disks"
)

// Delete deletes the VM, without waiting: its deleteOptions take its OS
// disk, its NIC and an Ephemeral proxy's public IP with it. Once the VM is
// gone (a later Delete of the same providerID, or the collector's of a
// residue), it deletes whichever of them is still there: a cascade cut
// short, a VM someone deleted with other options, a create that crashed
// before its VM. What is already gone is success, and so is a VM already
// being deleted. Delete of a Static proxy's AddressID releases the
// address, once no NIC holds it (while one does, transient: the VM goes
// first).
func (p *Provider) Delete(ctx context.Context, providerID string) error {
	id, err := p.parseID(providerID)
	if err != nil {
		return err
	}
	if id.address {
		return p.releaseIP(ctx, providerID, id)
	}
	res, err := p.c.VMs.Get(ctx, id.group, id.name, nil)
	switch {
	case notFound(err):
		return p.leftovers(ctx, providerID, id)
	case err != nil:
		return p.wrap("delete", providerID, err)
	}
	if provisioning(&res.VirtualMachine) != "Deleting" {
		// A token kept for a deletion is of an earlier VM of the name,
		// whose operation ended: this one is another.
		p.forget(opKey("delete", providerID))
	} else if p.token(opKey("delete", providerID)) == "" {
		return nil
	}
	done, err := p.deleteVM(ctx, providerID, id)
	switch {
	case notFound(err):
		return p.leftovers(ctx, providerID, id)
	case err != nil:
		return p.wrap("delete", providerID, err)
	case done:
		return p.leftovers(ctx, providerID, id)
	}
	p.cfg.Log.Info("azure vm deletion accepted", slog.String("providerID", providerID))
	return nil
}

// deleteVM starts (or resumes) the VM's deletion, reporting whether it
// ended already.
func (p *Provider) deleteVM(ctx context.Context, providerID string, id parsed) (bool, error) {
	return submit(ctx, p, opKey("delete", providerID), func(token string) (*runtime.Poller[armcompute.VirtualMachinesClientDeleteResponse], error) {
		return p.c.VMs.BeginDelete(ctx, id.group, id.name, &armcompute.VirtualMachinesClientBeginDeleteOptions{ResumeToken: token})
	})
}

// leftovers deletes what the VM's deleteOptions did not take: its NIC
// first (it holds the IP), then an Ephemeral proxy's IP, then its OS disk;
// each only when it is ours (the NIC and IP by their tags, the disk by its
// name) and free (no VM, no NIC, no owner).
func (p *Provider) leftovers(ctx context.Context, providerID string, id parsed) error {
	nic, err := p.c.NICs.Get(ctx, id.group, nicName(id.name), nil)
	switch {
	case notFound(err):
	case err != nil:
		return p.wrap("delete", providerID, err)
	case !p.managed(nic.Tags):
		p.cfg.Log.Warn("azure network interface of the VM's name is not managed: kept", slog.String("nic", nicName(id.name)))
	case nic.Properties != nil && nic.Properties.VirtualMachine != nil:
		return provider.NewError(provider.KindTransient, "delete", providerID, fmt.Errorf("network interface %s is still held by a VM", nicName(id.name)))
	default:
		if nic.Properties == nil || nic.Properties.ProvisioningState == nil || *nic.Properties.ProvisioningState != armnetwork.ProvisioningStateDeleting {
			// A token kept for its deletion is of an earlier NIC of the name.
			p.forget(opKey("delete", p.armID(typeNIC, nicName(id.name))))
		}
		if _, err := follow(ctx, p, opKey("delete", p.armID(typeNIC, nicName(id.name))), func(token string) (*runtime.Poller[armnetwork.InterfacesClientDeleteResponse], error) {
			return p.c.NICs.BeginDelete(ctx, id.group, nicName(id.name), &armnetwork.InterfacesClientBeginDeleteOptions{ResumeToken: token})
		}); err != nil && !notFound(err) {
			return p.wrap("delete", providerID, err)
		}
		p.cfg.Log.Info("azure network interface left by its VM deleted", slog.String("nic", nicName(id.name)))
	}
	ip, err := p.c.IPs.Get(ctx, id.group, ipName(id.name), nil)
	switch {
	case notFound(err):
	case err != nil:
		return p.wrap("delete", providerID, err)
	case !p.managed(ip.Tags) || tag(ip.Tags, tagStaticIP) == "true":
		// A Static proxy's address outlives its VMs; Delete of its
		// AddressID releases it.
	case ip.Properties != nil && ip.Properties.IPConfiguration != nil:
		return provider.NewError(provider.KindTransient, "delete", providerID, fmt.Errorf("public IP %s is still held by a network interface", ipName(id.name)))
	default:
		if ip.Properties == nil || ip.Properties.ProvisioningState == nil || *ip.Properties.ProvisioningState != armnetwork.ProvisioningStateDeleting {
			p.forget(opKey("delete", p.armID(typeIP, ipName(id.name))))
		}
		if err := p.deleteIP(ctx, id.group, ipName(id.name)); err != nil && !notFound(err) {
			return p.wrap("delete", providerID, err)
		}
		p.cfg.Log.Info("azure public IP left by its VM deleted", slog.String("ip", ipName(id.name)))
	}
	disk, err := p.c.Disks.Get(ctx, id.group, diskName(id.name), nil)
	switch {
	case notFound(err):
	case err != nil:
		return p.wrap("delete", providerID, err)
	case disk.ManagedBy != nil && *disk.ManagedBy != "":
		return provider.NewError(provider.KindTransient, "delete", providerID, fmt.Errorf("OS disk %s is still attached to %s", diskName(id.name), *disk.ManagedBy))
	default:
		if disk.Properties == nil || disk.Properties.ProvisioningState == nil || *disk.Properties.ProvisioningState != "Deleting" {
			p.forget(opKey("delete", p.armID(typeDisk, diskName(id.name))))
		}
		if _, err := follow(ctx, p, opKey("delete", p.armID(typeDisk, diskName(id.name))), func(token string) (*runtime.Poller[armcompute.DisksClientDeleteResponse], error) {
			return p.c.Disks.BeginDelete(ctx, id.group, diskName(id.name), &armcompute.DisksClientBeginDeleteOptions{ResumeToken: token})
		}); err != nil && !notFound(err) {
			return p.wrap("delete", providerID, err)
		}
		p.cfg.Log.Info("azure OS disk left by its VM deleted", slog.String("disk", diskName(id.name)))
	}
	return nil
}

// releaseIP deletes a Static proxy's public IP once no NIC holds it.
func (p *Provider) releaseIP(ctx context.Context, providerID string, id parsed) error {
	res, err := p.c.IPs.Get(ctx, id.group, id.name, nil)
	switch {
	case notFound(err):
		return nil
	case err != nil:
		return p.wrap("delete", providerID, err)
	}
	if res.Properties != nil && res.Properties.IPConfiguration != nil {
		return provider.NewError(provider.KindTransient, "delete", providerID,
			fmt.Errorf("public IP %s is still held by a network interface; it is released once its VM is gone", id.name))
	}
	if res.Properties == nil || res.Properties.ProvisioningState == nil || *res.Properties.ProvisioningState != armnetwork.ProvisioningStateDeleting {
		p.forget(opKey("delete", p.armID(typeIP, id.name)))
	}
	if err := p.deleteIP(ctx, id.group, id.name); err != nil && !notFound(err) {
		return p.wrap("delete", providerID, err)
	}
	p.cfg.Log.Info("azure static public IP released", slog.String("providerID", providerID))
	return nil
}

// deleteIP deletes a public IP and waits for it.
func (p *Provider) deleteIP(ctx context.Context, group, name string) error {
	_, err := follow(ctx, p, opKey("delete", p.armID(typeIP, name)), func(token string) (*runtime.Poller[armnetwork.PublicIPAddressesClientDeleteResponse], error) {
		return p.c.IPs.BeginDelete(ctx, group, name, &armnetwork.PublicIPAddressesClientBeginDeleteOptions{ResumeToken: token})
	})
	return err
}

// managed reports whether a resource carries the managed tag: only such
// are deleted by name.
func (p *Provider) managed(tags map[string]*string) bool {
	return tag(tags, provider.LabelManaged) == provider.LabelManagedYes
}
