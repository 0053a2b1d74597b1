package azure

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"log/slog"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v8"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"

	"github.com/egress-proxies/egress/internal/provider"
)

// adminUser is the VM's administrator, which Azure requires: it has one
// SSH key, whose private half was never kept (sshKey), and no password.
const adminUser = "egress"

// Create makes the proxy's public IP, NIC and VM, in that order, and
// returns once Azure accepted the VM, without waiting for it. It first
// reads the VM of the request's name: one with the proxy's uid tag is
// adopted (a retry after a crash or a lost answer), one of another uid is
// KindAlreadyExists. The VM's PUT carries If-None-Match: *, so a VM made
// meanwhile is never overwritten: Azure's 412 is read as "it exists",
// and the VM read and adopted.
func (p *Provider) Create(ctx context.Context, req provider.CreateRequest) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", provider.NewError(provider.KindTransient, "create", req.Name, err)
	}
	loc, zone, err := p.placement(req)
	if err != nil {
		return "", err
	}
	subnet, ok := p.cfg.Subnets[loc]
	if !ok {
		return "", provider.NewError(provider.KindPermanent, "create", req.Name,
			fmt.Errorf("location %s has no subnet in AZURE_SUBNET_IDS: the VM's NIC would have no network", loc))
	}
	userData, err := p.userData(req)
	if err != nil {
		return "", err
	}
	tags, err := p.vmTags(req)
	if err != nil {
		return "", err
	}
	if id, ok, err := p.find(ctx, req); err != nil || ok {
		return id, err
	}
	ip, err := p.ensureIP(ctx, req, loc)
	if err != nil {
		return "", err
	}
	nic, err := p.ensureNIC(ctx, req, loc, subnet, *ip.ID)
	if err != nil {
		return "", err
	}
	vm := p.vmBody(req, loc, zone, *nic.ID, userData, tags)
	// Not followed: the VM's own provisioning state, which Get reads,
	// says what became of it, and a create's read of the name is what
	// resumes it (its token would outlive the VM: a later VM of the same
	// name is another operation).
	_, err = p.c.VMs.BeginCreateOrUpdate(ctx, p.cfg.ResourceGroup, req.Name, vm, &armcompute.VirtualMachinesClientBeginCreateOrUpdateOptions{IfNoneMatch: to.Ptr("*")})
	switch kind := classify(err); {
	case err == nil:
		p.cfg.Log.Info("azure vm create accepted", slog.String("vm", req.Name), slog.String("location", loc), slog.String("zone", zone))
		return p.vmID(req.Name), nil
	case kind == provider.KindAlreadyExists:
		// 412: made meanwhile (a raced create, a lost answer): adopt it if
		// it is the proxy's.
		id, ok, ferr := p.find(ctx, req)
		if ferr == nil && !ok {
			return "", provider.NewError(provider.KindTransient, "create", req.Name, fmt.Errorf("Azure refused the create with 412 but no VM of that name is there: try again"))
		}
		return id, ferr
	case kind == provider.KindCapacity:
		e := p.wrap("create", req.Name, err).(*provider.Error)
		if zone != "" && req.Placement.Zone == "" {
			e.Zone = loc + "-" + zone
		}
		p.cfg.Log.Info("azure zone out of capacity", slog.String("vm", req.Name), slog.String("location", loc), slog.String("zone", e.Zone), slog.Any("error", e.Err))
		return "", e
	default:
		return "", p.wrap("create", req.Name, err)
	}
}

// find reads the VM of the request's name: the proxy's (its uid tag) is
// adopted; another's is KindAlreadyExists; one being deleted (the
// proxy's previous VM, whose name a replacement takes) is transient.
func (p *Provider) find(ctx context.Context, req provider.CreateRequest) (string, bool, error) {
	res, err := p.c.VMs.Get(ctx, p.cfg.ResourceGroup, req.Name, nil)
	switch {
	case notFound(err):
		return "", false, nil
	case err != nil:
		return "", false, p.wrap("create", req.Name, err)
	}
	vm := res.VirtualMachine
	switch uid := tag(vm.Tags, provider.LabelUID); {
	case uid != req.UID:
		return "", false, provider.NewError(provider.KindAlreadyExists, "create", req.Name,
			fmt.Errorf("VM %s exists with uid tag %q, not %q: it belongs to something else", req.Name, uid, req.UID))
	case provisioning(&vm) == "Deleting":
		return "", false, provider.NewError(provider.KindTransient, "create", req.Name,
			fmt.Errorf("VM %s, the proxy's previous one, is still being deleted", req.Name))
	case provisioning(&vm) == "Failed":
		// Its provisioning failed (Get said why, and the reconciler asks
		// again, maybe for another zone): a VM's zone cannot change, so
		// it goes, and the create after its deletion makes the new one.
		id := p.vmID(req.Name)
		p.forget(opKey("delete", id))
		if _, err := p.deleteVM(ctx, id, parsed{group: p.cfg.ResourceGroup, name: req.Name}); err != nil && !notFound(err) {
			return "", false, p.wrap("create", req.Name, err)
		}
		return "", false, provider.NewError(provider.KindTransient, "create", req.Name,
			fmt.Errorf("VM %s failed to provision and is being deleted; the next create makes it anew", req.Name))
	}
	p.cfg.Log.Debug("azure vm of that name adopted", slog.String("vm", req.Name))
	return p.vmID(req.Name), true, nil
}

// placement is the location and the ARM zone ("1", or "" for a regional
// VM) of the request: the placement's zone, or one of the location's
// chosen from the uid past those to avoid.
func (p *Provider) placement(req provider.CreateRequest) (string, string, error) {
	loc := req.Placement.Region
	if loc == "" {
		return "", "", provider.NewError(provider.KindPermanent, "create", req.Name, fmt.Errorf("the placement names no location"))
	}
	if z := req.Placement.Zone; z != "" {
		n, ok := azureZone(loc, z)
		if !ok {
			return "", "", provider.NewError(provider.KindPermanent, "create", req.Name, fmt.Errorf("%q is not an availability zone of %s (%s)", z, loc, strings.Join(Zones(loc), ", ")))
		}
		return loc, n, nil
	}
	zones := Zones(loc)
	if len(zones) == 0 {
		return loc, "", nil
	}
	z, ok := provider.ChooseZone(req.UID, zones, req.AvoidZones)
	if !ok {
		return "", "", provider.NewError(provider.KindCapacity, "create", req.Name,
			fmt.Errorf("every zone of %s was out of capacity for this proxy: %s", loc, strings.Join(req.AvoidZones, ", ")))
	}
	n, _ := azureZone(loc, z)
	return loc, n, nil
}

// userData is what the VM boots with, base64-encoded as ARM takes it: a
// spec's own cloud-init as it is, or the default bootstrap as the
// Renderer makes it; "" for neither.
func (p *Provider) userData(req provider.CreateRequest) (string, error) {
	ud := req.CloudInit
	if ud == "" && req.StartupScript != "" {
		var err error
		if ud, err = p.cfg.Renderer.UserData(req); err != nil {
			return "", provider.NewError(provider.KindPermanent, "create", req.Name, fmt.Errorf("rendering the user-data: %w", err))
		}
	}
	if len(ud) > MaxUserDataBytes {
		return "", provider.NewError(provider.KindPermanent, "create", req.Name,
			fmt.Errorf("the user-data is %d bytes, over Azure's limit of %d (64 KiB once base64-encoded)", len(ud), MaxUserDataBytes))
	}
	if ud == "" {
		return "", nil
	}
	return base64.StdEncoding.EncodeToString([]byte(ud)), nil
}

// ensureIP reads the proxy's public IP, NAME-ip, and makes it when it is
// not there (or a lost operation left it failed): Standard, Static, IPv4,
// with deleteOption Delete for an Ephemeral proxy and Detach for a Static
// one, which so outlives the VM and is its next VM's. One of another uid
// is not taken.
func (p *Provider) ensureIP(ctx context.Context, req provider.CreateRequest, loc string) (*armnetwork.PublicIPAddress, error) {
	name := ipName(req.Name)
	res, err := p.c.IPs.Get(ctx, p.cfg.ResourceGroup, name, nil)
	switch {
	case err == nil:
		ip := res.PublicIPAddress
		if uid := tag(ip.Tags, provider.LabelUID); uid != req.UID {
			return nil, provider.NewError(provider.KindAlreadyExists, "create", req.Name,
				fmt.Errorf("public IP %s exists with uid tag %q, not %q: it belongs to something else", name, uid, req.UID))
		}
		if ip.Location != nil && !strings.EqualFold(*ip.Location, loc) {
			return nil, provider.NewError(provider.KindPermanent, "create", req.Name,
				fmt.Errorf("the proxy's public IP %s is in %s, and a VM in %s cannot take it: a Static proxy stays in its address's location", name, *ip.Location, loc))
		}
		if ip.Properties != nil && ip.Properties.ProvisioningState != nil && *ip.Properties.ProvisioningState == armnetwork.ProvisioningStateSucceeded {
			return &ip, nil
		}
	case !notFound(err):
		return nil, p.wrap("create", name, err)
	default:
		// Not there, so no operation of ours is making it: a token kept
		// for it is of one that ended otherwise.
		p.forget(opKey("put", p.armID(typeIP, name)))
	}
	deleteOption := armnetwork.DeleteOptionsDelete
	if req.StaticIP {
		deleteOption = armnetwork.DeleteOptionsDetach
	}
	body := armnetwork.PublicIPAddress{
		Location: to.Ptr(loc),
		Tags:     p.netTags(req),
		SKU:      &armnetwork.PublicIPAddressSKU{Name: to.Ptr(armnetwork.PublicIPAddressSKUNameStandard), Tier: to.Ptr(armnetwork.PublicIPAddressSKUTierRegional)},
		Properties: &armnetwork.PublicIPAddressPropertiesFormat{
			PublicIPAllocationMethod: to.Ptr(armnetwork.IPAllocationMethodStatic),
			PublicIPAddressVersion:   to.Ptr(armnetwork.IPVersionIPv4),
			DeleteOption:             to.Ptr(deleteOption),
		},
	}
	out, err := follow(ctx, p, opKey("put", p.armID(typeIP, name)), func(token string) (*runtime.Poller[armnetwork.PublicIPAddressesClientCreateOrUpdateResponse], error) {
		return p.c.IPs.BeginCreateOrUpdate(ctx, p.cfg.ResourceGroup, name, body, &armnetwork.PublicIPAddressesClientBeginCreateOrUpdateOptions{ResumeToken: token})
	})
	if err != nil {
		return nil, p.wrap("create", name, err)
	}
	if out.ID == nil {
		out.ID = to.Ptr(p.armID(typeIP, name))
	}
	return &out.PublicIPAddress, nil
}

// ensureNIC makes the VM's NIC, NAME-nic, in its location's subnet (whose
// network security group opens the proxy ports) with the public IP, or
// takes the one a lost create made.
func (p *Provider) ensureNIC(ctx context.Context, req provider.CreateRequest, loc, subnet, ipID string) (*armnetwork.Interface, error) {
	name := nicName(req.Name)
	res, err := p.c.NICs.Get(ctx, p.cfg.ResourceGroup, name, nil)
	switch {
	case err == nil:
		nic := res.Interface
		if uid := tag(nic.Tags, provider.LabelUID); uid != req.UID {
			return nil, provider.NewError(provider.KindAlreadyExists, "create", req.Name,
				fmt.Errorf("network interface %s exists with uid tag %q, not %q: it belongs to something else", name, uid, req.UID))
		}
		if nic.Properties != nil && nic.Properties.ProvisioningState != nil && *nic.Properties.ProvisioningState == armnetwork.ProvisioningStateSucceeded {
			return &nic, nil
		}
	case !notFound(err):
		return nil, p.wrap("create", name, err)
	default:
		p.forget(opKey("put", p.armID(typeNIC, name)))
	}
	body := armnetwork.Interface{
		Location: to.Ptr(loc),
		Tags:     p.netTags(req),
		Properties: &armnetwork.InterfacePropertiesFormat{
			IPConfigurations: []*armnetwork.InterfaceIPConfiguration{{
				Name: to.Ptr("ipconfig1"),
				Properties: &armnetwork.InterfaceIPConfigurationPropertiesFormat{
					Primary:                   to.Ptr(true),
					PrivateIPAllocationMethod: to.Ptr(armnetwork.IPAllocationMethodDynamic),
					Subnet:                    &armnetwork.Subnet{ID: to.Ptr(subnet)},
					PublicIPAddress:           &armnetwork.PublicIPAddress{ID: to.Ptr(ipID)},
				},
			}},
		},
	}
	out, err := follow(ctx, p, opKey("put", p.armID(typeNIC, name)), func(token string) (*runtime.Poller[armnetwork.InterfacesClientCreateOrUpdateResponse], error) {
		return p.c.NICs.BeginCreateOrUpdate(ctx, p.cfg.ResourceGroup, name, body, &armnetwork.InterfacesClientBeginCreateOrUpdateOptions{ResumeToken: token})
	})
	if err != nil {
		return nil, p.wrap("create", name, err)
	}
	if out.ID == nil {
		out.ID = to.Ptr(p.armID(typeNIC, name))
	}
	return &out.Interface, nil
}

// vmBody is the VM's PUT: its size and image, its OS disk and NIC going
// with it (deleteOption Delete), the user-data as customData (what
// cloud-init reads at the first boot) and as userData (what IMDS serves
// and Reconfigure rewrites), and its tags.
func (p *Provider) vmBody(req provider.CreateRequest, loc, zone, nicID, userData string, tags map[string]*string) armcompute.VirtualMachine {
	urn := strings.SplitN(cmp.Or(req.Placement.Image, DefaultImage), ":", 4)
	for len(urn) < 4 {
		urn = append(urn, "")
	}
	os := &armcompute.OSProfile{
		ComputerName:  to.Ptr(req.Name),
		AdminUsername: to.Ptr(adminUser),
		LinuxConfiguration: &armcompute.LinuxConfiguration{
			DisablePasswordAuthentication: to.Ptr(true),
			SSH: &armcompute.SSHConfiguration{PublicKeys: []*armcompute.SSHPublicKey{{
				Path: to.Ptr("/home/" + adminUser + "/.ssh/authorized_keys"), KeyData: to.Ptr(sshKey()),
			}}},
		},
	}
	props := &armcompute.VirtualMachineProperties{
		HardwareProfile: &armcompute.HardwareProfile{VMSize: to.Ptr(armcompute.VirtualMachineSizeTypes(cmp.Or(req.Placement.MachineType, DefaultSize)))},
		StorageProfile: &armcompute.StorageProfile{
			ImageReference: &armcompute.ImageReference{Publisher: to.Ptr(urn[0]), Offer: to.Ptr(urn[1]), SKU: to.Ptr(urn[2]), Version: to.Ptr(urn[3])},
			OSDisk: &armcompute.OSDisk{
				Name:         to.Ptr(diskName(req.Name)),
				CreateOption: to.Ptr(armcompute.DiskCreateOptionTypesFromImage),
				DeleteOption: to.Ptr(armcompute.DiskDeleteOptionTypesDelete),
				ManagedDisk:  &armcompute.ManagedDiskParameters{StorageAccountType: to.Ptr(armcompute.StorageAccountTypesStandardLRS)},
			},
		},
		OSProfile: os,
		NetworkProfile: &armcompute.NetworkProfile{NetworkInterfaces: []*armcompute.NetworkInterfaceReference{{
			ID:         to.Ptr(nicID),
			Properties: &armcompute.NetworkInterfaceReferenceProperties{Primary: to.Ptr(true), DeleteOption: to.Ptr(armcompute.DeleteOptionsDelete)},
		}}},
	}
	if userData != "" {
		os.CustomData = to.Ptr(userData)
		props.UserData = to.Ptr(userData)
	}
	vm := armcompute.VirtualMachine{Location: to.Ptr(loc), Tags: tags, Properties: props}
	if zone != "" {
		vm.Zones = []*string{to.Ptr(zone)}
	}
	return vm
}

// sshKey is a new Ed25519 public key in authorized_keys form, whose
// private half is dropped at once: Azure requires a Linux VM to have a
// password or a key, and this is neither a secret nor a way in (the VM's
// filter admits no SSH either).
func sshKey() string {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(fmt.Sprintf("azure: an Ed25519 key: %v", err)) // crypto/rand does not fail
	}
	var b []byte
	for _, field := range [][]byte{[]byte("ssh-ed25519"), pub} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(field)))
		b = append(b, field...)
	}
	return "ssh-ed25519 " + base64.StdEncoding.EncodeToString(b) + " egress-no-private-key"
}

// provisioning is a VM's provisioning state ("Creating", "Succeeded",
// "Failed", "Deleting", "Updating"), "" when it says none.
func provisioning(vm *armcompute.VirtualMachine) string {
	if vm.Properties == nil || vm.Properties.ProvisioningState == nil {
		return ""
	}
	return *vm.Properties.ProvisioningState
}
