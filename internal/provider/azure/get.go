package azure

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v8"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/vmside"
)

// Get reads the VM with its instance view (its power state, and why its
// provisioning failed) and its public IP's address, or the public IP a
// Static proxy's AddressID names. A VM that runs the default bootstrap is
// Running only once its proxy says it serves (Prober): Azure's "running"
// is a booted VM, not a serving proxy. A VM whose provisioning failed is
// an error of Op "create" (provider.CreateFailed), of the kind its code
// says: a zone out of capacity names the zone, so the next create goes
// to another.
func (p *Provider) Get(ctx context.Context, providerID string) (*provider.Instance, error) {
	id, err := p.parseID(providerID)
	if err != nil {
		return nil, err
	}
	if id.address {
		return p.getIP(ctx, providerID, id)
	}
	res, err := p.c.VMs.Get(ctx, id.group, id.name, &armcompute.VirtualMachinesClientGetOptions{Expand: to.Ptr(armcompute.InstanceViewTypesInstanceView)})
	if err != nil {
		return nil, p.wrap("get", providerID, err)
	}
	vm := res.VirtualMachine
	out := p.convert(providerID, &vm)
	if provisioning(&vm) == "Failed" {
		return nil, p.failed(providerID, &vm)
	}
	if out.State == provider.StateTerminated {
		return &out, nil
	}
	ip, err := p.c.IPs.Get(ctx, id.group, ipName(id.name), nil)
	switch {
	case err == nil:
		if ip.Properties != nil && ip.Properties.IPAddress != nil {
			out.IP = *ip.Properties.IPAddress
		}
		if tag(vm.Tags, tagStaticIP) == "true" {
			out.AddressID = p.ipIDIn(id.group, ipName(id.name))
		}
	case !notFound(err):
		return nil, p.wrap("get", providerID, err)
	}
	if out.State == provider.StateRunning && out.IP == "" {
		out.State = provider.StateProvisioning
	}
	if out.State == provider.StateRunning && out.StatusPort > 0 {
		unanswered, err := vmside.Observe(ctx, p.cfg.Prober, &out, out.StatusPort, "")
		if err != nil {
			return nil, err
		}
		if unanswered != nil {
			p.cfg.Log.Debug("azure vm does not answer its status request yet", slog.String("providerID", providerID), slog.Any("error", unanswered))
		}
	}
	return &out, nil
}

// ipIDIn is the providerID of a public IP of group.
func (p *Provider) ipIDIn(group, name string) string {
	return fmt.Sprintf("%s/subscriptions/%s/resourceGroups/%s/providers/%s/%s", idPrefix, p.cfg.SubscriptionID, group, typeIP, name)
}

// convert maps a VM onto the provider's view, without its address.
func (p *Provider) convert(providerID string, vm *armcompute.VirtualMachine) provider.Instance {
	out := provider.Instance{ID: providerID, State: state(vm), UID: tag(vm.Tags, provider.LabelUID), Deployment: tag(vm.Tags, provider.LabelDeployment)}
	if vm.Properties != nil && vm.Properties.TimeCreated != nil {
		out.CreatedAt = *vm.Properties.TimeCreated
	}
	if len(vm.Zones) > 0 && vm.Zones[0] != nil && vm.Location != nil {
		out.Zone = *vm.Location + "-" + *vm.Zones[0]
	}
	if port, err := strconv.ParseInt(tag(vm.Tags, tagProbePort), 10, 32); err == nil && port > 0 && port < 65536 {
		out.StatusPort = int32(port)
		out.StatusID = tag(vm.Tags, vmside.LabelStatusID)
	}
	return out
}

// state maps a VM's provisioning state and power state (its instance
// view's PowerState/… status) onto the provider's four. A VM being
// deleted is Terminated; one being made, or updated before it ever ran,
// is Provisioning; a deallocated or stopped one is Stopped. A VM read
// without its instance view (a listing) is Running once provisioned.
func state(vm *armcompute.VirtualMachine) provider.InstanceState {
	switch provisioning(vm) {
	case "Deleting":
		return provider.StateTerminated
	case "Creating", "":
		return provider.StateProvisioning
	}
	if vm.Properties == nil || vm.Properties.InstanceView == nil {
		if provisioning(vm) == "Succeeded" || provisioning(vm) == "Updating" {
			return provider.StateRunning
		}
		return provider.StateProvisioning
	}
	for _, s := range vm.Properties.InstanceView.Statuses {
		if s == nil || s.Code == nil {
			continue
		}
		switch power, ok := strings.CutPrefix(*s.Code, "PowerState/"); {
		case !ok:
		case power == "running":
			return provider.StateRunning
		case power == "stopped", power == "deallocated", power == "stopping", power == "deallocating":
			return provider.StateStopped
		default: // starting, unknown
			return provider.StateProvisioning
		}
	}
	return provider.StateProvisioning
}

// failed is the error of a VM whose provisioning failed: Op "create", of
// the kind of the code its instance view gives
// ("ProvisioningState/failed/AllocationFailed"), with its message.
func (p *Provider) failed(providerID string, vm *armcompute.VirtualMachine) error {
	code, msg := "", "the VM's provisioning failed, and its instance view says no more"
	if vm.Properties != nil && vm.Properties.InstanceView != nil {
		for _, s := range vm.Properties.InstanceView.Statuses {
			if s == nil || s.Code == nil {
				continue
			}
			if c, ok := strings.CutPrefix(*s.Code, "ProvisioningState/failed/"); ok {
				code = c
				if s.Message != nil {
					msg = *s.Message
				}
			}
		}
	}
	kind := kindOf(code, 0, msg)
	if code == "" {
		kind = provider.KindPermanent
	}
	e := provider.NewError(kind, "create", providerID, fmt.Errorf("%s: %s", orUnknown(code), msg))
	if kind == provider.KindCapacity && len(vm.Zones) > 0 && vm.Zones[0] != nil && vm.Location != nil {
		e.Zone = *vm.Location + "-" + *vm.Zones[0]
	}
	p.cfg.Log.Warn("azure vm provisioning failed", slog.String("providerID", providerID), slog.String("code", code), slog.String("kind", string(kind)), slog.String("zone", e.Zone))
	return e
}

func orUnknown(code string) string {
	if code == "" {
		return "provisioning failed"
	}
	return code
}

// getIP reads a Static proxy's public IP: Running while a NIC holds it,
// Terminated while none does (the collector releases it once its uid is
// unclaimed).
func (p *Provider) getIP(ctx context.Context, providerID string, id parsed) (*provider.Instance, error) {
	res, err := p.c.IPs.Get(ctx, id.group, id.name, nil)
	if err != nil {
		return nil, p.wrap("get", providerID, err)
	}
	out := p.convertIP(providerID, &res.PublicIPAddress)
	return &out, nil
}

// convertIP maps a public IP onto the provider's view.
func (p *Provider) convertIP(providerID string, ip *armnetwork.PublicIPAddress) provider.Instance {
	out := provider.Instance{ID: providerID, State: provider.StateTerminated, UID: tag(ip.Tags, provider.LabelUID),
		Deployment: tag(ip.Tags, provider.LabelDeployment), AddressID: providerID}
	out.CreatedAt, _ = time.Parse(time.RFC3339, tag(ip.Tags, tagCreated))
	if ip.Properties != nil {
		if ip.Properties.IPAddress != nil {
			out.IP = *ip.Properties.IPAddress
		}
		if ip.Properties.IPConfiguration != nil {
			out.State = provider.StateRunning
		}
	}
	return out
}
