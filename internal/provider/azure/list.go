package azure

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v8"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"

	"github.com/egress-proxies/egress/internal/provider"
)

// ListByTag lists the resource group's VMs, public IPs and NICs (a paged
// call each) and returns, of this deployment's and the unlabelled managed
// ones, never another deployment's:
//
//   - every VM, with its public IP's address (the access pull asks it);
//   - every Static proxy's public IP that no NIC holds, in state
//     Terminated under its own providerID, for the collector to release;
//   - every residue a crash left (a NIC, or an Ephemeral IP, of a VM that
//     is not there), in state Terminated under that VM's providerID, whose
//     Delete takes what is left (delete.go, leftovers).
//
// The resource group is the scope, whatever AZURE_LOCATIONS says: a
// location the operator stops allowing keeps its VMs listed, and so
// collected. A page that cannot be read fails the list: a resource
// missing from it must not look deleted.
func (p *Provider) ListByTag(ctx context.Context) ([]provider.Instance, error) {
	group := p.cfg.ResourceGroup
	vms, err := all(ctx, p.c.VMs.NewListPager(group, nil), func(r armcompute.VirtualMachinesClientListResponse) []*armcompute.VirtualMachine { return r.Value })
	if err != nil {
		return nil, p.wrap("list", "virtual machines of "+group, err)
	}
	ips, err := all(ctx, p.c.IPs.NewListPager(group, nil), func(r armnetwork.PublicIPAddressesClientListResponse) []*armnetwork.PublicIPAddress { return r.Value })
	if err != nil {
		return nil, p.wrap("list", "public IPs of "+group, err)
	}
	nics, err := all(ctx, p.c.NICs.NewListPager(group, nil), func(r armnetwork.InterfacesClientListResponse) []*armnetwork.Interface { return r.Value })
	if err != nil {
		return nil, p.wrap("list", "network interfaces of "+group, err)
	}
	address := map[string]string{}
	for _, ip := range ips {
		if ip.Name != nil && ip.Properties != nil && ip.Properties.IPAddress != nil {
			address[strings.ToLower(*ip.Name)] = *ip.Properties.IPAddress
		}
	}
	var out []provider.Instance
	vmNames := map[string]bool{}
	for _, vm := range vms {
		if vm == nil || vm.Name == nil {
			continue
		}
		vmNames[strings.ToLower(*vm.Name)] = true
		if !p.listed(vm.Tags) {
			continue
		}
		in := p.convert(p.vmID(*vm.Name), vm)
		in.IP = address[strings.ToLower(ipName(*vm.Name))]
		if tag(vm.Tags, tagStaticIP) == "true" {
			in.AddressID = p.ipID(ipName(*vm.Name))
		}
		out = append(out, in)
	}
	residue := map[string]provider.Instance{}
	addResidue := func(name string, tags map[string]*string) {
		vm, ok := vmOf(name)
		if !ok || vmNames[strings.ToLower(vm)] {
			return
		}
		if _, seen := residue[vm]; seen {
			return
		}
		created, _ := time.Parse(time.RFC3339, tag(tags, tagCreated))
		residue[vm] = provider.Instance{ID: p.vmID(vm), State: provider.StateTerminated, UID: tag(tags, provider.LabelUID),
			Deployment: tag(tags, provider.LabelDeployment), CreatedAt: created}
	}
	for _, nic := range nics {
		if nic == nil || nic.Name == nil || !p.listed(nic.Tags) || (nic.Properties != nil && nic.Properties.VirtualMachine != nil) {
			continue
		}
		addResidue(*nic.Name, nic.Tags)
	}
	for _, ip := range ips {
		if ip == nil || ip.Name == nil || !p.listed(ip.Tags) || (ip.Properties != nil && ip.Properties.IPConfiguration != nil) {
			continue
		}
		if tag(ip.Tags, tagStaticIP) == "true" {
			out = append(out, p.convertIP(p.ipID(*ip.Name), ip))
			continue
		}
		addResidue(*ip.Name, ip.Tags)
	}
	for _, vm := range slices.Sorted(maps.Keys(residue)) {
		out = append(out, residue[vm])
	}
	return out, nil
}

// all reads every page of a pager, the items of each by items.
func all[R, T any](ctx context.Context, pager *runtime.Pager[R], items func(R) []*T) ([]*T, error) {
	var out []*T
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, items(page)...)
	}
	return out, nil
}
