package azure

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v8"
	computefake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v8/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"
	networkfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7/fake"
)

// cloud is a resource group's state behind the SDK's official fakes
// (armcompute/v8/fake, armnetwork/v7/fake): Microsoft generates those
// servers from the same API descriptions as the clients, and they speak
// the clients' wire (paths, headers, long-running operations with their
// pollers and resume tokens); what each operation does to the resources
// is this file's, as small as the provider's calls need. Operations are
// accepted and end at Settle, as the other clouds' fakes do: a VM is
// Creating until then, a VM being deleted is Deleting, and its
// deleteOptions take its disk, NIC and IP when it goes.
type cloud struct {
	mu    sync.Mutex
	group string
	sub   string
	vms   map[string]*armcompute.VirtualMachine
	ips   map[string]*armnetwork.PublicIPAddress
	nics  map[string]*armnetwork.Interface
	disks map[string]*armcompute.Disk
	next  int
	now   time.Time
	// calls counts the operations the fake servers took, by "kind.verb"
	// (vm.put, ip.put, nic.delete, …): polls of an operation are not
	// calls of it.
	calls map[string]int
	// ipPending makes each IP PUT answer so many non-terminal polls
	// before its end: an operation a deadline can cut.
	ipPending int
	// zoneFull makes a VM PUT in the zone ("1") refused at once with the
	// code; zoneFails makes it accepted and its provisioning fail at
	// Settle with the code.
	zoneFull, zoneFails map[string]string
	// ops are the VM operations accepted and not ended, by API name and
	// path: Settle ends them in the SDK's fake too (ending drives them),
	// since its servers track an operation by its path until it is polled
	// to its end, and would answer a later PUT or DELETE of the same path
	// (a VM of the same name) as that operation.
	ops    []op
	ending func(op)
}

// op is an operation the SDK's fake tracks: its API name and path.
type op struct{ api, path string }

func newCloud() *cloud {
	return &cloud{group: testGroup, sub: testSubscription,
		vms: map[string]*armcompute.VirtualMachine{}, ips: map[string]*armnetwork.PublicIPAddress{},
		nics: map[string]*armnetwork.Interface{}, disks: map[string]*armcompute.Disk{},
		now: time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC), calls: map[string]int{},
		zoneFull: map[string]string{}, zoneFails: map[string]string{}}
}

func (c *cloud) id(typ, name string) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/%s/%s", c.sub, c.group, typ, name)
}

// clone copies a resource through JSON, as the wire would.
func clone[T any](v *T) *T {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		panic(err)
	}
	return out
}

func notFoundErr(errResp *azfake.ErrorResponder) {
	errResp.SetResponseError(http.StatusNotFound, "ResourceNotFound")
}

// computeServers are the fake servers of the VMs and disks.
func (c *cloud) computeServers() *computefake.ServerFactory {
	return &computefake.ServerFactory{
		VirtualMachinesServer: computefake.VirtualMachinesServer{
			BeginCreateOrUpdate: c.putVM,
			Get: func(_ context.Context, _, name string, opts *armcompute.VirtualMachinesClientGetOptions) (resp azfake.Responder[armcompute.VirtualMachinesClientGetResponse], errResp azfake.ErrorResponder) {
				c.mu.Lock()
				defer c.mu.Unlock()
				vm, ok := c.vms[name]
				if !ok {
					notFoundErr(&errResp)
					return
				}
				out := clone(vm)
				if opts == nil || opts.Expand == nil {
					out.Properties.InstanceView = nil
				}
				resp.SetResponse(http.StatusOK, armcompute.VirtualMachinesClientGetResponse{VirtualMachine: *out}, nil)
				return
			},
			BeginDelete: func(_ context.Context, _, name string, _ *armcompute.VirtualMachinesClientBeginDeleteOptions) (resp azfake.PollerResponder[armcompute.VirtualMachinesClientDeleteResponse], errResp azfake.ErrorResponder) {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.calls["vm.delete"]++
				vm, ok := c.vms[name]
				if !ok {
					resp.SetTerminalResponse(http.StatusNoContent, armcompute.VirtualMachinesClientDeleteResponse{}, nil)
					return
				}
				vm.Properties.ProvisioningState = to.Ptr("Deleting")
				c.ops = append(c.ops, op{"VirtualMachinesClient.BeginDelete", c.id(typeVM, name)})
				resp.AddNonTerminalResponse(http.StatusAccepted, nil)
				resp.SetTerminalResponse(http.StatusOK, armcompute.VirtualMachinesClientDeleteResponse{}, nil)
				return
			},
			BeginUpdate: func(_ context.Context, _, name string, upd armcompute.VirtualMachineUpdate, _ *armcompute.VirtualMachinesClientBeginUpdateOptions) (resp azfake.PollerResponder[armcompute.VirtualMachinesClientUpdateResponse], errResp azfake.ErrorResponder) {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.calls["vm.patch"]++
				vm, ok := c.vms[name]
				if !ok {
					notFoundErr(&errResp)
					return
				}
				if upd.Tags != nil {
					vm.Tags = upd.Tags
				}
				if upd.Properties != nil && upd.Properties.UserData != nil {
					vm.Properties.UserData = upd.Properties.UserData
				}
				resp.SetTerminalResponse(http.StatusOK, armcompute.VirtualMachinesClientUpdateResponse{VirtualMachine: *clone(vm)}, nil)
				return
			},
			NewListPager: func(string, *armcompute.VirtualMachinesClientListOptions) (resp azfake.PagerResponder[armcompute.VirtualMachinesClientListResponse]) {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.calls["vm.list"]++
				var page armcompute.VirtualMachinesClientListResponse
				for _, k := range slices.Sorted(maps.Keys(c.vms)) {
					vm := clone(c.vms[k])
					vm.Properties.InstanceView, vm.Properties.UserData = nil, nil
					page.Value = append(page.Value, vm)
				}
				resp.AddPage(http.StatusOK, page, nil)
				return
			},
		},
		DisksServer: computefake.DisksServer{
			Get: func(_ context.Context, _, name string, _ *armcompute.DisksClientGetOptions) (resp azfake.Responder[armcompute.DisksClientGetResponse], errResp azfake.ErrorResponder) {
				c.mu.Lock()
				defer c.mu.Unlock()
				d, ok := c.disks[name]
				if !ok {
					notFoundErr(&errResp)
					return
				}
				resp.SetResponse(http.StatusOK, armcompute.DisksClientGetResponse{Disk: *clone(d)}, nil)
				return
			},
			BeginDelete: func(_ context.Context, _, name string, _ *armcompute.DisksClientBeginDeleteOptions) (resp azfake.PollerResponder[armcompute.DisksClientDeleteResponse], errResp azfake.ErrorResponder) {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.calls["disk.delete"]++
				delete(c.disks, name)
				resp.SetTerminalResponse(http.StatusOK, armcompute.DisksClientDeleteResponse{}, nil)
				return
			},
		},
	}
}

// putVM is the VM's PUT: refused with 412 under If-None-Match: * when the
// VM is there, refused at once in a full zone, and otherwise accepted and
// Creating until Settle, with its OS disk made and its NIC held.
func (c *cloud) putVM(_ context.Context, _, name string, vm armcompute.VirtualMachine, opts *armcompute.VirtualMachinesClientBeginCreateOrUpdateOptions) (resp azfake.PollerResponder[armcompute.VirtualMachinesClientCreateOrUpdateResponse], errResp azfake.ErrorResponder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls["vm.put"]++
	if _, ok := c.vms[name]; ok && opts != nil && opts.IfNoneMatch != nil && *opts.IfNoneMatch == "*" {
		errResp.SetResponseError(http.StatusPreconditionFailed, "PreconditionFailed")
		return
	}
	zone := ""
	if len(vm.Zones) > 0 {
		zone = *vm.Zones[0]
	}
	if code, ok := c.zoneFull[zone]; ok {
		errResp.SetResponseError(http.StatusConflict, code)
		return
	}
	nicID := *vm.Properties.NetworkProfile.NetworkInterfaces[0].ID
	nic := c.nics[nicName(name)]
	if nic == nil || !strings.EqualFold(*nic.ID, nicID) {
		errResp.SetResponseError(http.StatusBadRequest, "InvalidParameter")
		return
	}
	stored := clone(&vm)
	stored.ID, stored.Name = to.Ptr(c.id(typeVM, name)), to.Ptr(name)
	stored.Properties.ProvisioningState = to.Ptr("Creating")
	stored.Properties.TimeCreated = to.Ptr(c.now)
	stored.Properties.OSProfile.CustomData = nil // never returned by ARM
	c.vms[name] = stored
	nic.Properties.VirtualMachine = &armnetwork.SubResource{ID: stored.ID}
	disk := *vm.Properties.StorageProfile.OSDisk.Name
	c.disks[disk] = &armcompute.Disk{ID: to.Ptr(c.id(typeDisk, disk)), Name: to.Ptr(disk), Location: vm.Location, ManagedBy: stored.ID}
	c.ops = append(c.ops, op{"VirtualMachinesClient.BeginCreateOrUpdate", c.id(typeVM, name)})
	resp.AddNonTerminalResponse(http.StatusCreated, nil)
	resp.SetTerminalResponse(http.StatusOK, armcompute.VirtualMachinesClientCreateOrUpdateResponse{VirtualMachine: *clone(stored)}, nil)
	return
}

// networkServers are the fake servers of the NICs and public IPs.
func (c *cloud) networkServers() *networkfake.ServerFactory {
	return &networkfake.ServerFactory{
		PublicIPAddressesServer: networkfake.PublicIPAddressesServer{
			BeginCreateOrUpdate: func(_ context.Context, _, name string, ip armnetwork.PublicIPAddress, _ *armnetwork.PublicIPAddressesClientBeginCreateOrUpdateOptions) (resp azfake.PollerResponder[armnetwork.PublicIPAddressesClientCreateOrUpdateResponse], errResp azfake.ErrorResponder) {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.calls["ip.put"]++
				if old, ok := c.ips[name]; ok && *old.Properties.ProvisioningState == armnetwork.ProvisioningStateUpdating {
					errResp.SetResponseError(http.StatusConflict, "AnotherOperationInProgress")
					return
				}
				stored := clone(&ip)
				stored.ID, stored.Name = to.Ptr(c.id(typeIP, name)), to.Ptr(name)
				if old, ok := c.ips[name]; ok {
					// The same resource: its address and holder stay.
					stored.Properties.IPAddress, stored.Properties.IPConfiguration = old.Properties.IPAddress, old.Properties.IPConfiguration
				} else {
					c.next++
					stored.Properties.IPAddress = to.Ptr(fmt.Sprintf("203.0.113.%d", c.next))
				}
				stored.Properties.ProvisioningState = to.Ptr(armnetwork.ProvisioningStateSucceeded)
				done := clone(stored)
				if c.ipPending > 0 {
					stored.Properties.ProvisioningState = to.Ptr(armnetwork.ProvisioningStateUpdating)
					for range c.ipPending {
						resp.AddNonTerminalResponse(http.StatusCreated, nil)
					}
				}
				c.ips[name] = stored
				resp.SetTerminalResponse(http.StatusOK, armnetwork.PublicIPAddressesClientCreateOrUpdateResponse{PublicIPAddress: *done}, nil)
				return
			},
			Get: func(_ context.Context, _, name string, _ *armnetwork.PublicIPAddressesClientGetOptions) (resp azfake.Responder[armnetwork.PublicIPAddressesClientGetResponse], errResp azfake.ErrorResponder) {
				c.mu.Lock()
				defer c.mu.Unlock()
				ip, ok := c.ips[name]
				if !ok {
					notFoundErr(&errResp)
					return
				}
				resp.SetResponse(http.StatusOK, armnetwork.PublicIPAddressesClientGetResponse{PublicIPAddress: *clone(ip)}, nil)
				return
			},
			BeginDelete: func(_ context.Context, _, name string, _ *armnetwork.PublicIPAddressesClientBeginDeleteOptions) (resp azfake.PollerResponder[armnetwork.PublicIPAddressesClientDeleteResponse], errResp azfake.ErrorResponder) {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.calls["ip.delete"]++
				if ip, ok := c.ips[name]; ok && ip.Properties.IPConfiguration != nil {
					errResp.SetResponseError(http.StatusBadRequest, "PublicIPAddressInUse")
					return
				}
				delete(c.ips, name)
				resp.SetTerminalResponse(http.StatusOK, armnetwork.PublicIPAddressesClientDeleteResponse{}, nil)
				return
			},
			UpdateTags: func(_ context.Context, _, name string, t armnetwork.TagsObject, _ *armnetwork.PublicIPAddressesClientUpdateTagsOptions) (resp azfake.Responder[armnetwork.PublicIPAddressesClientUpdateTagsResponse], errResp azfake.ErrorResponder) {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.calls["ip.tags"]++
				ip, ok := c.ips[name]
				if !ok {
					notFoundErr(&errResp)
					return
				}
				ip.Tags = t.Tags
				resp.SetResponse(http.StatusOK, armnetwork.PublicIPAddressesClientUpdateTagsResponse{PublicIPAddress: *clone(ip)}, nil)
				return
			},
			NewListPager: func(string, *armnetwork.PublicIPAddressesClientListOptions) (resp azfake.PagerResponder[armnetwork.PublicIPAddressesClientListResponse]) {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.calls["ip.list"]++
				var page armnetwork.PublicIPAddressesClientListResponse
				for _, k := range slices.Sorted(maps.Keys(c.ips)) {
					page.Value = append(page.Value, clone(c.ips[k]))
				}
				resp.AddPage(http.StatusOK, page, nil)
				return
			},
		},
		InterfacesServer: networkfake.InterfacesServer{
			BeginCreateOrUpdate: func(_ context.Context, _, name string, nic armnetwork.Interface, _ *armnetwork.InterfacesClientBeginCreateOrUpdateOptions) (resp azfake.PollerResponder[armnetwork.InterfacesClientCreateOrUpdateResponse], errResp azfake.ErrorResponder) {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.calls["nic.put"]++
				ipcfg := nic.Properties.IPConfigurations[0]
				ipID := *ipcfg.Properties.PublicIPAddress.ID
				ip := c.ips[ipID[strings.LastIndex(ipID, "/")+1:]]
				if ip == nil {
					errResp.SetResponseError(http.StatusBadRequest, "InvalidResourceReference")
					return
				}
				stored := clone(&nic)
				stored.ID, stored.Name = to.Ptr(c.id(typeNIC, name)), to.Ptr(name)
				stored.Properties.ProvisioningState = to.Ptr(armnetwork.ProvisioningStateSucceeded)
				stored.Properties.IPConfigurations[0].ID = to.Ptr(*stored.ID + "/ipConfigurations/ipconfig1")
				if old := c.nics[name]; old != nil {
					stored.Properties.VirtualMachine = old.Properties.VirtualMachine
				}
				c.nics[name] = stored
				ip.Properties.IPConfiguration = &armnetwork.IPConfiguration{ID: stored.Properties.IPConfigurations[0].ID}
				resp.SetTerminalResponse(http.StatusOK, armnetwork.InterfacesClientCreateOrUpdateResponse{Interface: *clone(stored)}, nil)
				return
			},
			Get: func(_ context.Context, _, name string, _ *armnetwork.InterfacesClientGetOptions) (resp azfake.Responder[armnetwork.InterfacesClientGetResponse], errResp azfake.ErrorResponder) {
				c.mu.Lock()
				defer c.mu.Unlock()
				nic, ok := c.nics[name]
				if !ok {
					notFoundErr(&errResp)
					return
				}
				resp.SetResponse(http.StatusOK, armnetwork.InterfacesClientGetResponse{Interface: *clone(nic)}, nil)
				return
			},
			BeginDelete: func(_ context.Context, _, name string, _ *armnetwork.InterfacesClientBeginDeleteOptions) (resp azfake.PollerResponder[armnetwork.InterfacesClientDeleteResponse], errResp azfake.ErrorResponder) {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.calls["nic.delete"]++
				if nic, ok := c.nics[name]; ok && nic.Properties.VirtualMachine != nil {
					errResp.SetResponseError(http.StatusBadRequest, "InUseNetworkInterfaceCannotBeDeleted")
					return
				}
				c.dropNIC(name)
				resp.SetTerminalResponse(http.StatusOK, armnetwork.InterfacesClientDeleteResponse{}, nil)
				return
			},
			UpdateTags: func(_ context.Context, _, name string, t armnetwork.TagsObject, _ *armnetwork.InterfacesClientUpdateTagsOptions) (resp azfake.Responder[armnetwork.InterfacesClientUpdateTagsResponse], errResp azfake.ErrorResponder) {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.calls["nic.tags"]++
				nic, ok := c.nics[name]
				if !ok {
					notFoundErr(&errResp)
					return
				}
				nic.Tags = t.Tags
				resp.SetResponse(http.StatusOK, armnetwork.InterfacesClientUpdateTagsResponse{Interface: *clone(nic)}, nil)
				return
			},
			NewListPager: func(string, *armnetwork.InterfacesClientListOptions) (resp azfake.PagerResponder[armnetwork.InterfacesClientListResponse]) {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.calls["nic.list"]++
				var page armnetwork.InterfacesClientListResponse
				for _, k := range slices.Sorted(maps.Keys(c.nics)) {
					page.Value = append(page.Value, clone(c.nics[k]))
				}
				resp.AddPage(http.StatusOK, page, nil)
				return
			},
		},
	}
}

// dropNIC removes a NIC and frees the IP it held.
func (c *cloud) dropNIC(name string) {
	nic, ok := c.nics[name]
	if !ok {
		return
	}
	delete(c.nics, name)
	for _, ipc := range nic.Properties.IPConfigurations {
		if ipc.Properties == nil || ipc.Properties.PublicIPAddress == nil {
			continue
		}
		id := *ipc.Properties.PublicIPAddress.ID
		if ip := c.ips[id[strings.LastIndex(id, "/")+1:]]; ip != nil {
			ip.Properties.IPConfiguration = nil
		}
	}
}

// Settle ends every operation: a Creating VM runs (or fails, in a zone
// set to), a Deleting VM goes with what its deleteOptions say, an IP
// being made is made.
func (c *cloud) Settle() {
	c.mu.Lock()
	ops := c.ops
	c.ops = nil
	c.mu.Unlock()
	for _, o := range ops {
		if c.ending != nil {
			c.ending(o)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ip := range c.ips {
		ip.Properties.ProvisioningState = to.Ptr(armnetwork.ProvisioningStateSucceeded)
	}
	for name, vm := range c.vms {
		switch *vm.Properties.ProvisioningState {
		case "Creating":
			zone := ""
			if len(vm.Zones) > 0 {
				zone = *vm.Zones[0]
			}
			if code, ok := c.zoneFails[zone]; ok {
				vm.Properties.ProvisioningState = to.Ptr("Failed")
				vm.Properties.InstanceView = &armcompute.VirtualMachineInstanceView{Statuses: []*armcompute.InstanceViewStatus{
					{Code: to.Ptr("ProvisioningState/failed/" + code), Message: to.Ptr("Allocation failed. We do not have sufficient capacity for the requested VM size in this zone.")},
				}}
				continue
			}
			vm.Properties.ProvisioningState = to.Ptr("Succeeded")
			vm.Properties.InstanceView = &armcompute.VirtualMachineInstanceView{Statuses: []*armcompute.InstanceViewStatus{
				{Code: to.Ptr("ProvisioningState/succeeded")}, {Code: to.Ptr("PowerState/running")},
			}}
		case "Deleting":
			c.removeVM(name, vm)
		}
	}
}

// removeVM deletes a VM with its deleteOptions: the OS disk, the NIC, and
// the NIC's public IP when its own deleteOption is Delete.
func (c *cloud) removeVM(name string, vm *armcompute.VirtualMachine) {
	delete(c.vms, name)
	if d := vm.Properties.StorageProfile.OSDisk; d.DeleteOption != nil && *d.DeleteOption == armcompute.DiskDeleteOptionTypesDelete {
		delete(c.disks, *d.Name)
	} else if disk := c.disks[*d.Name]; disk != nil {
		disk.ManagedBy = nil
	}
	for _, ref := range vm.Properties.NetworkProfile.NetworkInterfaces {
		nicN := (*ref.ID)[strings.LastIndex(*ref.ID, "/")+1:]
		nic := c.nics[nicN]
		if nic == nil {
			continue
		}
		nic.Properties.VirtualMachine = nil
		if ref.Properties == nil || ref.Properties.DeleteOption == nil || *ref.Properties.DeleteOption != armcompute.DeleteOptionsDelete {
			continue
		}
		for _, ipc := range nic.Properties.IPConfigurations {
			id := *ipc.Properties.PublicIPAddress.ID
			ipN := id[strings.LastIndex(id, "/")+1:]
			if ip := c.ips[ipN]; ip != nil && ip.Properties.DeleteOption != nil && *ip.Properties.DeleteOption == armnetwork.DeleteOptionsDelete {
				delete(c.ips, ipN)
			}
		}
		c.dropNIC(nicN)
	}
}

// put plants a VM as someone else (or another deployment) made it.
func (c *cloud) put(name string, tags map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := map[string]*string{}
	for k, v := range tags {
		t[k] = to.Ptr(v)
	}
	c.vms[name] = &armcompute.VirtualMachine{ID: to.Ptr(c.id(typeVM, name)), Name: to.Ptr(name), Location: to.Ptr("westeurope"), Tags: t,
		Properties: &armcompute.VirtualMachineProperties{ProvisioningState: to.Ptr("Succeeded"), TimeCreated: to.Ptr(c.now),
			StorageProfile: &armcompute.StorageProfile{OSDisk: &armcompute.OSDisk{Name: to.Ptr(diskName(name))}},
			NetworkProfile: &armcompute.NetworkProfile{}}}
}

// vm is a copy of the VM of name, nil when there is none.
func (c *cloud) vm(name string) *armcompute.VirtualMachine {
	c.mu.Lock()
	defer c.mu.Unlock()
	if vm, ok := c.vms[name]; ok {
		return clone(vm)
	}
	return nil
}

// count is how many resources of each kind there are.
func (c *cloud) count() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return map[string]int{"vm": len(c.vms), "ip": len(c.ips), "nic": len(c.nics), "disk": len(c.disks)}
}

// callCount is how many times the kind.verb was called.
func (c *cloud) callCount(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[op]
}

// end polls the operation o in the SDK's fake t until it ends, so that
// the fake forgets it.
func end(t interface {
	Do(*http.Request) (*http.Response, error)
}, o op) {
	ctx := context.WithValue(context.Background(), runtime.CtxAPINameKey{}, o.api)
	for range 5 {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://management.azure.com"+o.path+"/get/fake/status", nil)
		if err != nil {
			panic(err)
		}
		resp, err := t.Do(req)
		if err != nil {
			return
		}
		resp.Body.Close()
		switch resp.Header.Get("Fake-Poller-Status") {
		case "Succeeded", "Failed", "Canceled", "":
			return
		}
	}
}

// transport routes the clients' requests to the compute or the network
// fake, as ARM routes them by resource provider, after before (a test's
// fault or observation) and a cancelled context, which a real transport
// refuses before sending.
type transport struct {
	compute, network interface {
		Do(*http.Request) (*http.Response, error)
	}
	mu     sync.Mutex
	before func(*http.Request) (*http.Response, error)
	seen   []string
}

func (t *transport) Do(req *http.Request) (*http.Response, error) {
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.seen = append(t.seen, req.Method+" "+req.URL.Path)
	before := t.before
	t.mu.Unlock()
	if before != nil {
		if resp, err := before(req); resp != nil || err != nil {
			return resp, err
		}
	}
	if strings.Contains(req.URL.Path, "/providers/Microsoft.Network/") {
		return t.network.Do(req)
	}
	return t.compute.Do(req)
}

// requests are the requests sent so far that match, as METHOD PATH.
func (t *transport) requests(method, pathSuffix string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, s := range t.seen {
		if strings.HasPrefix(s, method+" ") && strings.HasSuffix(s, pathSuffix) {
			n++
		}
	}
	return n
}

// armError is an ARM error answer: status, code and message, and headers.
func armError(req *http.Request, status int, code, message string, header map[string]string) *http.Response {
	body, _ := json.Marshal(map[string]any{"error": map[string]string{"code": code, "message": message}})
	h := http.Header{"Content-Type": {"application/json"}, "X-Ms-Error-Code": {code}}
	for k, v := range header {
		h.Set(k, v)
	}
	return &http.Response{StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), Header: h,
		Body: io.NopCloser(bytes.NewReader(body)), Request: req, ContentLength: int64(len(body))}
}
