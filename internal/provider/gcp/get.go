package gcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"
)

// Get reads the VM, or the static address an address ID names. A VM that
// does not exist may be one whose create Compute accepted and that failed
// since, or that is still on its way: Get then reads the insert's
// operation, and answers with the operation's error (Op "create"), a
// Provisioning instance while the insert runs, or ErrNotFound.
func (p *Provider) Get(ctx context.Context, providerID string) (*provider.Instance, error) {
	id, err := parseID(providerID)
	if err != nil {
		return nil, err
	}
	if id.address {
		return p.getAddress(ctx, providerID, id)
	}
	inst, err := p.c.Instances.Get(ctx, &computepb.GetInstanceRequest{Project: id.project, Zone: id.scope, Instance: id.name})
	if classify(err) == provider.KindNotFound {
		return p.missing(ctx, providerID, id, err)
	}
	if err != nil {
		return nil, p.wrap("get", providerID, err)
	}
	out := convert(providerID, id.scope, inst)
	if inst.GetLabels()[labelStaticIP] == "true" {
		out.AddressID = addressID(id.project, regionOf(id.scope), id.name)
	}
	if out.State == provider.StateRunning && bootstrapped(inst) {
		// A VM that boots the default bootstrap runs before it serves: it
		// is Running only once its self-test has said so.
		if err := p.readiness(ctx, id, &out); err != nil {
			return nil, p.wrap("get", providerID, err)
		}
	}
	return &out, nil
}

// missing explains a VM that Get did not find, from its insert operation.
func (p *Provider) missing(ctx context.Context, providerID string, id parsed, notFound error) (*provider.Instance, error) {
	gone := provider.NewError(provider.KindNotFound, "get", providerID, fmt.Errorf("%w: %w", provider.ErrNotFound, notFound))
	op, err := p.lastInsert(ctx, id)
	switch {
	case err != nil:
		return nil, p.wrap("get", providerID, err)
	case op == nil:
		return nil, gone
	case op.GetStatus() != computepb.Operation_DONE:
		// Accepted, not yet made: the VM is on its way.
		out := provider.Instance{ID: providerID, State: provider.StateProvisioning, Zone: id.scope}
		if t, err := time.Parse(time.RFC3339, op.GetInsertTime()); err == nil {
			out.CreatedAt = t
		}
		return &out, nil
	case op.GetError() == nil:
		// Made, and gone since: lost.
		return nil, gone
	}
	return nil, operationError(providerID, id.scope, op)
}

// lastInsert is the most recent insert operation of the VM id names, or nil.
func (p *Provider) lastInsert(ctx context.Context, id parsed) (*computepb.Operation, error) {
	target := "https://www.googleapis.com/compute/v1/projects/" + id.project + "/zones/" + id.scope + "/instances/" + id.name
	it := p.c.ZoneOperations.List(ctx, &computepb.ListZoneOperationsRequest{
		Project: id.project,
		Zone:    id.scope,
		Filter:  proto.String(fmt.Sprintf(`(targetLink = "%s") AND (operationType = "insert")`, target)),
	})
	var last *computepb.Operation
	for {
		op, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return last, nil
		}
		if err != nil {
			return nil, err
		}
		if last == nil || op.GetInsertTime() > last.GetInsertTime() {
			last = op
		}
	}
}

// operationError classifies the error an insert's operation ended with:
// no room in the zone is capacity (another zone may have it), a quota is
// quota, and anything else (an image, a machine type, a network that does
// not exist or may not be used) is permanent, with Compute's message.
func operationError(providerID, zone string, op *computepb.Operation) error {
	var codes, msgs []string
	for _, e := range op.GetError().GetErrors() {
		codes = append(codes, e.GetCode())
		msgs = append(msgs, e.GetMessage())
	}
	err := fmt.Errorf("the insert failed in its operation %s: %s (%s)", op.GetName(), strings.Join(msgs, "; "), strings.Join(codes, ", "))
	kind := provider.KindPermanent
	for _, c := range codes {
		switch {
		case capacityReasons[c]:
			kind = provider.KindCapacity
		case c == "QUOTA_EXCEEDED" && kind != provider.KindCapacity:
			kind = provider.KindQuota
		}
	}
	e := provider.NewError(kind, "create", providerID, err)
	if kind == provider.KindCapacity {
		e.Zone = zone
	}
	return e
}

// getAddress reads a static address as an instance of its own kind: in use
// (Running) or not (Terminated), with its uid and IP.
func (p *Provider) getAddress(ctx context.Context, providerID string, id parsed) (*provider.Instance, error) {
	a, err := p.c.Addresses.Get(ctx, &computepb.GetAddressRequest{Project: id.project, Region: id.scope, Address: id.name})
	if err != nil {
		return nil, p.wrap("get", providerID, err)
	}
	out := convertAddress(providerID, a)
	return &out, nil
}

// bootstrapped reports whether the VM was given the default bootstrap, and
// so reports its readiness in guest attributes.
func bootstrapped(inst *computepb.Instance) bool {
	for _, it := range inst.GetMetadata().GetItems() {
		if it.GetKey() == vmconfig.KeyGuestAttributes && strings.EqualFold(it.GetValue(), "TRUE") {
			return true
		}
	}
	return false
}

// readiness reads the guest attributes the startup script writes: with
// egress/ready the VM stays Running, serving the generation it names;
// otherwise it is Provisioning, with the reason of egress/error if the
// script gave one. egress/traffic, when the VM reported it, is the
// Instance's Traffic.
//
// An egress/error beside egress/ready is read as a boot error is when it
// names a later generation than the one served: the agent refused that
// configuration and rolled back (RefusedGeneration), and says so at once,
// so the reconciler need not wait out its reconfigure timeout. The agent
// deletes egress/error after every configuration it serves, and the
// script clears both at every boot, so any other error beside a ready (of
// the generation served, or of none) is one whose clear failed, not one
// the proxy has now.
func (p *Provider) readiness(ctx context.Context, id parsed, out *provider.Instance) error {
	attrs, err := p.c.Instances.GetGuestAttributes(ctx, &computepb.GetGuestAttributesInstanceRequest{
		Project: id.project, Zone: id.scope, Instance: id.name, QueryPath: proto.String(vmconfig.GuestNamespace + "/"),
	})
	values := map[string]string{}
	switch {
	case classify(err) == provider.KindNotFound:
		// Compute answers 404 while nothing is written under the path;
		// the instance itself was just read, so this is no lost VM.
	case err != nil:
		return err
	default:
		for _, it := range attrs.GetQueryValue().GetItems() {
			if it.GetNamespace() == vmconfig.GuestNamespace {
				values[it.GetKey()] = it.GetValue()
			}
		}
	}
	out.Traffic = traffic(values[vmconfig.GuestTraffic])
	if ready, ok := values[vmconfig.GuestReady]; ok {
		out.Generation = generation(ready)
		if refused, ok := vmconfig.RefusedGeneration(values[vmconfig.GuestError]); ok && refused > out.Generation {
			out.RefusedGeneration, out.BootError = refused, values[vmconfig.GuestError]
		}
		return nil
	}
	out.State = provider.StateProvisioning
	out.BootError = values[vmconfig.GuestError]
	return nil
}

// generation reads the guest attribute egress/ready: the generation of
// the engine configuration the VM serves, as a decimal number. Any other
// value is generation 1: VMs made before generations wrote "serving on
// port N", and served the only generation there was.
func generation(ready string) int64 {
	if g, err := strconv.ParseInt(ready, 10, 64); err == nil && g >= 0 {
		return g
	}
	return 1
}

// traffic reads the guest attribute egress/traffic: the engine's counters
// (vmconfig.Stats) with the time of the report. A value it cannot read
// is no report.
func traffic(value string) *provider.Traffic {
	var r struct {
		vmconfig.Stats
		ReportTime time.Time `json:"reportTime"`
	}
	if value == "" || json.Unmarshal([]byte(value), &r) != nil {
		return nil
	}
	return &provider.Traffic{BytesIn: r.BytesIn, BytesOut: r.BytesOut, Connections: r.Connections, ReportTime: r.ReportTime, Month: r.Month, MonthBytes: r.MonthBytes}
}

// convert maps a Compute instance onto the provider's view.
func convert(id, zone string, inst *computepb.Instance) provider.Instance {
	out := provider.Instance{ID: id, State: state(inst.GetStatus()), UID: inst.GetLabels()[provider.LabelUID], Zone: zone,
		Deployment: inst.GetLabels()[provider.LabelDeployment]}
	if nics := inst.GetNetworkInterfaces(); len(nics) > 0 {
		if acs := nics[0].GetAccessConfigs(); len(acs) > 0 {
			out.IP = acs[0].GetNatIP()
		}
		if acs := nics[0].GetIpv6AccessConfigs(); len(acs) > 0 {
			out.IPv6 = acs[0].GetExternalIpv6()
			out.IPv6Prefix = prefixOf(acs[0].GetExternalIpv6(), acs[0].GetExternalIpv6PrefixLength())
		}
	}
	if t, err := time.Parse(time.RFC3339, inst.GetCreationTimestamp()); err == nil {
		out.CreatedAt = t
	}
	return out
}

// convertAddress maps a static address onto the provider's view.
func convertAddress(id string, a *computepb.Address) provider.Instance {
	out := provider.Instance{ID: id, State: provider.StateTerminated, UID: a.GetLabels()[provider.LabelUID], IP: a.GetAddress(),
		Deployment: a.GetLabels()[provider.LabelDeployment]}
	if a.GetStatus() == "IN_USE" {
		out.State = provider.StateRunning
	}
	if t, err := time.Parse(time.RFC3339, a.GetCreationTimestamp()); err == nil {
		out.CreatedAt = t
	}
	return out
}

// state maps a Compute instance status onto the provider's four states.
// TERMINATED is a stopped VM (it can be started again), not a deleted one.
func state(status string) provider.InstanceState {
	switch status {
	case "RUNNING":
		return provider.StateRunning
	case "STOPPING", "PENDING_STOP", "STOPPED", "SUSPENDING", "SUSPENDED", "TERMINATED":
		return provider.StateStopped
	case "DEPROVISIONING":
		return provider.StateTerminated
	default: // PROVISIONING, STAGING, PENDING, REPAIRING and any new one
		return provider.StateProvisioning
	}
}

// prefixOf is the range a dual-stack interface's external IPv6 address
// heads (externalIpv6 and externalIpv6PrefixLength: Compute gives each
// interface a /96), as a CIDR; "" for none or one Compute did not say.
func prefixOf(addr string, bits int32) string {
	a, err := netip.ParseAddr(addr)
	if err != nil || !a.Is6() || bits <= 0 || bits > 128 {
		return ""
	}
	p, err := a.Prefix(int(bits))
	if err != nil {
		return ""
	}
	return p.String()
}
