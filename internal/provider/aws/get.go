package aws

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	sdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/vmside"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// Get reads the instance, or the Elastic IP an Elastic IP's ID names.
// An instance of a Static proxy that runs gets its Elastic IP here,
// since EC2 cannot associate one at launch, and is Provisioning until
// the address is on it. An instance that runs the default bootstrap is
// Running only once its proxy says it serves (Prober): EC2's "running"
// is a booted instance, not a serving proxy.
func (p *Provider) Get(ctx context.Context, providerID string) (*provider.Instance, error) {
	id, err := parseID(providerID)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, provider.NewError(provider.KindTransient, "get", providerID, err)
	}
	if id.eip {
		return p.getAddress(ctx, providerID, id)
	}
	out, err := p.c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id.id}}, inRegion(id.region))
	if err != nil {
		return nil, p.wrap("get", providerID, err)
	}
	in, ok := only(out, id.id)
	if !ok || gone(in.State) {
		// Gone, or going: a terminated instance never comes back.
		return nil, provider.NewError(provider.KindNotFound, "get", providerID, provider.ErrNotFound)
	}
	inst := convert(id.region, in)
	if inst.State != provider.StateRunning {
		return &inst, nil
	}
	if alloc, ok := lookupTag(in.Tags, tagEIP); ok {
		if want := tagValue(in.Tags, tagEIPAddress); inst.IP != want {
			if err := p.associate(ctx, &inst, id.region, alloc, want); err != nil {
				return nil, err
			}
			if inst.State != provider.StateRunning {
				return &inst, nil
			}
		}
	}
	if port, ok := probePort(in.Tags); ok {
		if err := p.readiness(ctx, &inst, port); err != nil {
			return nil, err
		}
	}
	return &inst, nil
}

// only is the instance of id in a DescribeInstances answer.
func only(out *ec2.DescribeInstancesOutput, id string) (types.Instance, bool) {
	for _, r := range out.Reservations {
		for _, in := range r.Instances {
			if sdk.ToString(in.InstanceId) == id {
				return in, true
			}
		}
	}
	return types.Instance{}, false
}

// associate puts the proxy's Elastic IP on its running instance. Until
// it is there the instance is Provisioning: while the proxy's previous
// instance still holds it (a replacement's, on its way out), or EC2 has
// not made the instance ready for it.
func (p *Provider) associate(ctx context.Context, inst *provider.Instance, region, alloc, address string) error {
	_, err := p.c.AssociateAddress(ctx, &ec2.AssociateAddressInput{
		AllocationId: sdk.String(alloc), InstanceId: sdk.String(parsedInstance(inst.ID)), AllowReassociation: sdk.Bool(false),
	}, inRegion(region))
	switch kind := classify(err); {
	case err == nil:
		inst.IP = address
		p.cfg.Log.Info("aws elastic ip associated", slog.String("providerID", inst.ID), slog.String("addressID", eipID(region, alloc)))
	case ctx.Err() != nil:
		return provider.NewError(provider.KindTransient, "get", inst.ID, fmt.Errorf("associating its Elastic IP: %w", ctx.Err()))
	case kind == provider.KindNotFound:
		inst.State = provider.StateProvisioning
		inst.BootError = fmt.Sprintf("its Elastic IP %s is gone (released outside this deployment); the proxy needs a new instance, which gets a new address", alloc)
	case kind == provider.KindTransient || kind == provider.KindRateLimited:
		p.cfg.Log.Debug("aws elastic ip not associated yet", slog.String("providerID", inst.ID), slog.String("code", errorCode(err)))
		inst.State = provider.StateProvisioning
	default:
		return p.wrap("get", inst.ID, err)
	}
	return nil
}

// parsedInstance is EC2's id of an instance's providerID.
func parsedInstance(providerID string) string {
	id, _ := parseID(providerID)
	return id.id
}

// probePort is the port an instance that runs the default bootstrap
// answers the status request on.
func probePort(tags []types.Tag) (int32, bool) {
	v, ok := lookupTag(tags, tagProbePort)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	return int32(n), err == nil && n > 0 && n < 65536
}

// readiness asks the VM's proxy whether it serves (vmside.Observe).
func (p *Provider) readiness(ctx context.Context, out *provider.Instance, port int32) error {
	unanswered, err := vmside.Observe(ctx, p.cfg.Prober, out, port, parsedInstance(out.ID))
	if unanswered != nil {
		p.cfg.Log.Debug("aws instance does not answer its status request yet", slog.String("providerID", out.ID), slog.Any("error", unanswered))
	}
	return err
}

// convert maps an instance onto the provider's view. CreatedAt is when
// its first interface was attached, which is its launch and stays so
// (EC2's LaunchTime moves with every start of a stopped instance).
func convert(region string, in types.Instance) provider.Instance {
	out := provider.Instance{
		ID: instanceID(region, sdk.ToString(in.InstanceId)), IP: sdk.ToString(in.PublicIpAddress), UID: tagValue(in.Tags, provider.LabelUID),
		Deployment: tagValue(in.Tags, provider.LabelDeployment), CreatedAt: sdk.ToTime(in.LaunchTime), IPv6: sdk.ToString(in.Ipv6Address),
	}
	if in.State != nil {
		out.State = state(in.State.Name)
	}
	for _, ni := range in.NetworkInterfaces {
		if a := ni.Attachment; a != nil && sdk.ToInt32(a.DeviceIndex) == 0 && a.AttachTime != nil {
			out.CreatedAt = *a.AttachTime
		}
		// The /80 delegated to the primary interface at launch
		// (dualStackInterface), the addresses the engine picks from.
		if a := ni.Attachment; a != nil && sdk.ToInt32(a.DeviceIndex) == 0 && len(ni.Ipv6Prefixes) > 0 {
			out.IPv6Prefix = sdk.ToString(ni.Ipv6Prefixes[0].Ipv6Prefix)
		}
	}
	if in.Placement != nil {
		out.Zone = sdk.ToString(in.Placement.AvailabilityZone)
	}
	if alloc, ok := lookupTag(in.Tags, tagEIP); ok {
		out.AddressID = eipID(region, alloc)
	}
	if port, ok := probePort(in.Tags); ok {
		out.StatusPort = port
		out.StatusID = tagValue(in.Tags, vmside.LabelStatusID)
	}
	return out
}

// state maps EC2's instance states onto the provider's four: stopped is
// Stopped (it can be started again); shutting-down and terminated are
// Terminated (Get answers them as gone).
func state(s types.InstanceStateName) provider.InstanceState {
	switch s {
	case types.InstanceStateNameRunning:
		return provider.StateRunning
	case types.InstanceStateNameStopping, types.InstanceStateNameStopped:
		return provider.StateStopped
	case types.InstanceStateNameShuttingDown, types.InstanceStateNameTerminated:
		return provider.StateTerminated
	default: // pending and any new one
		return provider.StateProvisioning
	}
}

func gone(s *types.InstanceState) bool {
	return s != nil && state(s.Name) == provider.StateTerminated
}

// getAddress reads an Elastic IP as an instance of its own kind: in use
// (Running) or not (Terminated), with its uid and address.
func (p *Provider) getAddress(ctx context.Context, providerID string, id parsed) (*provider.Instance, error) {
	out, err := p.c.DescribeAddresses(ctx, &ec2.DescribeAddressesInput{AllocationIds: []string{id.id}}, inRegion(id.region))
	if err != nil {
		return nil, p.wrap("get", providerID, err)
	}
	for _, a := range out.Addresses {
		if sdk.ToString(a.AllocationId) == id.id {
			in := convertAddress(id.region, a)
			return &in, nil
		}
	}
	return nil, provider.NewError(provider.KindNotFound, "get", providerID, provider.ErrNotFound)
}

func convertAddress(region string, a types.Address) provider.Instance {
	out := provider.Instance{ID: eipID(region, sdk.ToString(a.AllocationId)), State: provider.StateTerminated, UID: tagValue(a.Tags, provider.LabelUID),
		Deployment: tagValue(a.Tags, provider.LabelDeployment), IP: sdk.ToString(a.PublicIp)}
	if sdk.ToString(a.InstanceId) != "" || sdk.ToString(a.AssociationId) != "" {
		out.State = provider.StateRunning
	}
	if t, err := time.Parse(timeLayout, tagValue(a.Tags, tagCreated)); err == nil {
		out.CreatedAt = t
	}
	return out
}

// StopTraffic hands the VM its namespace's stop, or its end, through its
// status door (provider.TrafficStopper, vmside.StopTraffic).
func (p *Provider) StopTraffic(ctx context.Context, providerID string, stop *vmconfig.TrafficStop) error {
	return vmside.StopTraffic(ctx, p.cfg.Prober, p.Get, providerID, stop)
}
