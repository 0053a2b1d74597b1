package gcp

import (
	"encoding/json"

	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"google.golang.org/protobuf/proto"
)

// labelStaticIP marks a VM that uses its proxy's static address, so Get can
// name the address without another call.
const labelStaticIP = "egress-static-ip"

// Create inserts the VM and returns without waiting for it. An instance of
// that name that exists already is adopted when its uid label is the
// request's, and a conflict otherwise. A placement without a zone gets one
// of its region's, chosen from the uid and past req.AvoidZones; a Static
// request reserves the proxy's address first (a retry finds it reserved).
func (p *Provider) Create(ctx context.Context, req provider.CreateRequest) (string, error) {
	zone := req.Placement.Zone
	if zone == "" {
		var err error
		if zone, err = p.chooseZone(ctx, req); err != nil {
			return "", err
		}
	}
	if !zoneRE.MatchString(zone) || !nameRE.MatchString(req.Name) {
		return "", provider.NewError(provider.KindPermanent, "create", req.Name, fmt.Errorf("zone %q and name %q must be GCE names", zone, req.Name))
	}
	id := instanceID(p.cfg.Project, zone, req.Name)
	var natIP string
	if req.StaticIP {
		var err error
		if natIP, err = p.ensureAddress(ctx, regionOf(zone), req); err != nil {
			return "", err
		}
	}
	rid := req.RequestID
	if rid == "" {
		rid = requestID(req.UID, req.Name)
	}
	_, err := p.c.Instances.Insert(ctx, &computepb.InsertInstanceRequest{
		Project:          p.cfg.Project,
		Zone:             zone,
		RequestId:        proto.String(rid),
		InstanceResource: p.instance(req, zone, natIP),
	})
	switch kind := classify(err); {
	case err == nil:
		return id, nil
	case kind == provider.KindNotFound:
		// The image, the zone, the network or the subnetwork does not
		// exist: no retry makes it.
		return "", provider.NewError(provider.KindPermanent, "create", id, err)
	case kind == provider.KindCapacity:
		e := provider.NewError(provider.KindCapacity, "create", id, err)
		e.Zone = zone
		return "", e
	case kind != provider.KindAlreadyExists:
		return "", p.wrap("create", id, err)
	}
	inst, gerr := p.Get(ctx, id)
	if gerr != nil {
		return "", gerr
	}
	if inst.UID != req.UID {
		return "", provider.NewError(provider.KindAlreadyExists, "create", id,
			fmt.Errorf("instance exists with uid label %q, not %q: it belongs to something else", inst.UID, req.UID))
	}
	return id, nil
}

// chooseZone picks the zone of a placement that names only a region.
func (p *Provider) chooseZone(ctx context.Context, req provider.CreateRequest) (string, error) {
	region := req.Placement.Region
	zones, err := p.regionZones(ctx, region)
	if err != nil {
		return "", err
	}
	zone, ok := provider.ChooseZone(req.UID, zones, req.AvoidZones)
	if !ok {
		return "", provider.NewError(provider.KindCapacity, "create", req.Name,
			fmt.Errorf("every zone of region %s was out of capacity for this proxy: %s", region, strings.Join(req.AvoidZones, ", ")))
	}
	return zone, nil
}

// regionZones are the zones of a region, read once per process.
func (p *Provider) regionZones(ctx context.Context, region string) ([]string, error) {
	p.mu.Lock()
	zones, ok := p.zones[region]
	p.mu.Unlock()
	if ok {
		return zones, nil
	}
	if !regionRE.MatchString(region) {
		return nil, provider.NewError(provider.KindPermanent, "create", region, errors.New("not a GCE region name"))
	}
	r, err := p.c.Regions.Get(ctx, &computepb.GetRegionRequest{Project: p.cfg.Project, Region: region})
	if classify(err) == provider.KindNotFound {
		return nil, provider.NewError(provider.KindPermanent, "create", region, fmt.Errorf("region %s does not exist: %w", region, err))
	}
	if err != nil {
		return nil, p.wrap("create", region, err)
	}
	for _, u := range r.GetZones() {
		zones = append(zones, path.Base(u))
	}
	if len(zones) == 0 {
		return nil, provider.NewError(provider.KindPermanent, "create", region, errors.New("the region has no zones"))
	}
	p.mu.Lock()
	p.zones[region] = zones
	p.mu.Unlock()
	return zones, nil
}

// ensureAddress returns the IP of the proxy's static address in region,
// reserving it first if it does not exist: named like the VM, labelled
// like it (managed, uid), so the garbage collector finds it once no VM
// uses it and no document claims its uid.
func (p *Provider) ensureAddress(ctx context.Context, region string, req provider.CreateRequest) (string, error) {
	id := addressID(p.cfg.Project, region, req.Name)
	get := func() (*computepb.Address, error) {
		return p.c.Addresses.Get(ctx, &computepb.GetAddressRequest{Project: p.cfg.Project, Region: region, Address: req.Name})
	}
	a, err := get()
	if classify(err) == provider.KindNotFound {
		_, err = p.c.Addresses.Insert(ctx, &computepb.InsertAddressRequest{
			Project: p.cfg.Project,
			Region:  region,
			// One address per proxy for its whole life: the same request
			// on every try.
			RequestId: proto.String(requestID("address", req.UID, req.Name)),
			AddressResource: &computepb.Address{
				Name:        proto.String(req.Name),
				Description: proto.String(fmt.Sprintf("Static address of egress proxy namespaces/%s/proxies/%s", req.Namespace, req.ProxyName)),
				AddressType: proto.String("EXTERNAL"),
				NetworkTier: proto.String("PREMIUM"),
				Labels:      p.labels(req),
			},
		})
		if err != nil && classify(err) != provider.KindAlreadyExists {
			return "", p.wrap("reserve address", id, err)
		}
		a, err = get()
	}
	if err != nil {
		return "", p.wrap("reserve address", id, err)
	}
	if a.GetLabels()[provider.LabelUID] != req.UID {
		return "", provider.NewError(provider.KindAlreadyExists, "reserve address", id,
			fmt.Errorf("address exists with uid label %q, not %q: it belongs to something else", a.GetLabels()[provider.LabelUID], req.UID))
	}
	if a.GetAddress() == "" {
		// Still RESERVING: the next try finds it reserved.
		return "", provider.NewError(provider.KindTransient, "reserve address", id, errors.New("the address is being reserved"))
	}
	return a.GetAddress(), nil
}

// instance is the VM a request asks for, in zone, with natIP as its
// external address if it has a static one.
func (p *Provider) instance(req provider.CreateRequest, zone, natIP string) *computepb.Instance {
	pl := req.Placement
	machineType := pl.MachineType
	if machineType == "" {
		machineType = DefaultMachineType
	}
	image := pl.Image
	if image == "" {
		image = DefaultImage
	}
	access := &computepb.AccessConfig{Name: proto.String("External NAT"), Type: proto.String("ONE_TO_ONE_NAT")}
	labels := p.labels(req)
	if natIP != "" {
		access.NatIP = proto.String(natIP)
		labels[labelStaticIP] = "true"
	}
	nic := &computepb.NetworkInterface{
		Network:       proto.String("global/networks/" + p.cfg.Network),
		AccessConfigs: []*computepb.AccessConfig{access},
	}
	if p.cfg.Subnetwork != "" {
		nic.Subnetwork = proto.String("regions/" + regionOf(zone) + "/subnetworks/" + p.cfg.Subnetwork)
	}
	if p.cfg.StackType == StackDual {
		// An external IPv6 address of the subnet's range, the first of
		// the /96 Compute gives the interface; egress to IPv6
		// destinations leaves from it.
		nic.StackType = proto.String(StackDual)
		nic.Ipv6AccessConfigs = []*computepb.AccessConfig{{Name: proto.String("External IPv6"),
			Type: proto.String("DIRECT_IPV6"), NetworkTier: proto.String("PREMIUM")}}
	}
	inst := &computepb.Instance{
		Name:        proto.String(req.Name),
		Description: proto.String(fmt.Sprintf("Egress proxy namespaces/%s/proxies/%s", req.Namespace, req.ProxyName)),
		MachineType: proto.String("zones/" + zone + "/machineTypes/" + machineType),
		Labels:      labels,
		Tags:        &computepb.Tags{Items: []string{p.cfg.NetworkTag}},
		Metadata:    p.metadata(req),
		Disks: []*computepb.AttachedDisk{{
			Boot: proto.Bool(true), AutoDelete: proto.Bool(true), Type: proto.String("PERSISTENT"),
			InitializeParams: &computepb.AttachedDiskInitializeParams{
				SourceImage: proto.String(image), DiskSizeGb: proto.Int64(DefaultDiskSizeGB),
			},
		}},
		NetworkInterfaces: []*computepb.NetworkInterface{nic},
	}
	if p.cfg.ServiceAccount != "" && runsOnlyTheBootstrap(req) {
		inst.ServiceAccounts = []*computepb.ServiceAccount{{Email: proto.String(p.cfg.ServiceAccount), Scopes: p.cfg.Scopes}}
	}
	return inst
}

// runsOnlyTheBootstrap reports whether the VM runs the default bootstrap
// and nothing else, and so may hold the proxy VMs' service account. A
// spec's own cloud-init is a tenant's root code with no egress filter: its
// VM gets no service account at all, so the metadata server has no token
// to give it (no call-home, no log entry, no API of the project); it is
// Ready once Compute says RUNNING, when the sweep next looks.
func runsOnlyTheBootstrap(req provider.CreateRequest) bool {
	return req.StartupScript != "" && req.CloudInit == ""
}

// metadata is what the VM boots with. The default bootstrap goes as
// startup-script, which the guest agent of every Google public Linux image
// runs at every boot (those images have no cloud-init), with the attributes
// it reads: the engine's configuration (one item, which holds no secret),
// the engine binary to install, its probe target and what it says when it
// calls home. A spec's own cloud-init goes as user-data, for images that
// run cloud-init.
func (p *Provider) metadata(req provider.CreateRequest) *computepb.Metadata {
	md := &computepb.Metadata{}
	add := func(key, value string) {
		if value != "" {
			md.Items = append(md.Items, &computepb.Items{Key: proto.String(key), Value: proto.String(value)})
		}
	}
	if req.StartupScript != "" {
		add(vmconfig.KeyStartupScript, req.StartupScript)
		if req.Engine != nil {
			add(vmconfig.KeyConfig, engineJSON(req.Engine))
		}
		add(vmconfig.KeyEngineURL, p.cfg.EngineURL)
		add(vmconfig.KeyEngineSHA256, p.cfg.EngineSHA256)
		add(vmconfig.KeyGuestAttributes, "TRUE")
		add(vmconfig.KeyProbeTarget, p.cfg.ProbeTarget)
		if p.cfg.CallHomeTopic != "" {
			add(vmconfig.KeyCallHomeTopic, p.cfg.CallHomeTopic)
			add(vmconfig.KeyPubSubEndpoint, p.cfg.PubSubEndpoint)
			add(vmconfig.KeyNamespace, req.Namespace)
			add(vmconfig.KeyName, req.ProxyName)
			add(vmconfig.KeyUID, req.UID)
			add(vmconfig.KeyPool, req.Pool)
		}
	}
	add("user-data", req.CloudInit)
	return md
}

// ipv6PrefixBits is the length of the external IPv6 range Google gives a
// dual-stack interface (externalIpv6PrefixLength).
const ipv6PrefixBits = 96

// engineJSON is e as the VM's metadata carries it. A configuration that
// rotates IPv6 sources without naming the prefix (a create: Google
// assigns the range with the VM) says the range's length, for the VM to
// find it around its own address (vmconfig.Config.IPv6PrefixLength).
// Marshalling a struct of strings, numbers and lists cannot fail.
func engineJSON(e *vmconfig.Config) string {
	c := *e
	if vmconfig.RotatesIPv6(c.IPv6Egress) && c.IPv6Prefix == "" {
		c.IPv6PrefixLength = ipv6PrefixBits
	}
	b, _ := json.Marshal(c)
	return string(b)
}
