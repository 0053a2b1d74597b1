package azure

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v8"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/vmside"
	"github.com/egress-proxies/egress/internal/provider/vmside/vmsidetest"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

// puts records the bodies and headers of the PUTs of one kind of
// resource, as the clients sent them.
type puts struct {
	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
}

func (e *env) recordPuts(t *testing.T, pathPart string) *puts {
	t.Helper()
	rec := &puts{}
	e.tr.before = func(req *http.Request) (*http.Response, error) {
		if req.Method != http.MethodPut || !strings.Contains(req.URL.Path, pathPart) || strings.HasSuffix(req.URL.Path, "/get/fake/status") {
			return nil, nil
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			t.Fatal(err)
		}
		req.Body = io.NopCloser(strings.NewReader(string(body)))
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.bodies = append(rec.bodies, body)
		rec.headers = append(rec.headers, req.Header.Clone())
		return nil, nil
	}
	return rec
}

// TestCreateSendsWhatTheContractSays: the VM is PUT with If-None-Match: *,
// its user-data as customData and userData (the same base64), its OS disk
// and NIC going with it, the three labels and the VM side's tags; its
// public IP is Standard, Static, IPv4, going with the VM for an Ephemeral
// proxy and staying for a Static one.
func TestCreateSendsWhatTheContractSays(t *testing.T) {
	for _, static := range []bool{false, true} {
		t.Run(map[bool]string{false: "Ephemeral", true: "Static"}[static], func(t *testing.T) {
			e := newEnv(t)
			vmPuts := e.recordPuts(t, "/virtualMachines/")
			req := request()
			req.StaticIP = static
			req.Engine = &vmconfig.Config{Generation: 1, Listen: ":3128"}
			if _, err := e.p.Create(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			if len(vmPuts.bodies) != 1 {
				t.Fatalf("VM PUTs = %d, want 1", len(vmPuts.bodies))
			}
			var vm armcompute.VirtualMachine
			if err := json.Unmarshal(vmPuts.bodies[0], &vm); err != nil {
				t.Fatal(err)
			}
			rendered, _ := vmsidetest.Renderer.UserData(req)
			want64 := base64.StdEncoding.EncodeToString([]byte(rendered))
			type sent struct {
				IfNoneMatch, CustomData, UserData, DiskDelete, NICDelete, Size, Image, Zone string
				Tags                                                                        map[string]string
			}
			str := func(s *string) string {
				if s == nil {
					return ""
				}
				return *s
			}
			pr := vm.Properties
			got := sent{
				IfNoneMatch: vmPuts.headers[0].Get("If-None-Match"),
				CustomData:  str(pr.OSProfile.CustomData), UserData: str(pr.UserData),
				DiskDelete: string(*pr.StorageProfile.OSDisk.DeleteOption),
				NICDelete:  string(*pr.NetworkProfile.NetworkInterfaces[0].Properties.DeleteOption),
				Size:       string(*pr.HardwareProfile.VMSize),
				Image:      strings.Join([]string{*pr.StorageProfile.ImageReference.Publisher, *pr.StorageProfile.ImageReference.Offer, *pr.StorageProfile.ImageReference.SKU, *pr.StorageProfile.ImageReference.Version}, ":"),
				Zone:       *vm.Zones[0],
				Tags:       map[string]string{},
			}
			for k, v := range vm.Tags {
				got.Tags[k] = *v
			}
			zone, _ := provider.ChooseZone(req.UID, Zones("westeurope"), nil)
			want := sent{IfNoneMatch: "*", CustomData: want64, UserData: want64, DiskDelete: "Delete", NICDelete: "Delete",
				Size: DefaultSize, Image: DefaultImage, Zone: strings.TrimPrefix(zone, "westeurope-"),
				Tags: map[string]string{
					provider.LabelManaged: provider.LabelManagedYes, provider.LabelUID: req.UID, provider.LabelDeployment: provider.DefaultDeployment,
					tagProbePort: "3128", vmside.LabelStatusID: vmstatus.StatusID(req), tagStatusRequest: req.RequestID,
				}}
			if static {
				want.Tags[tagStaticIP] = "true"
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the VM's PUT (-want +got):\n%s", diff)
			}

			ip := e.cloud.ips[ipName(req.Name)]
			wantDelete := armnetwork.DeleteOptionsDelete
			if static {
				wantDelete = armnetwork.DeleteOptionsDetach
			}
			type ipSent struct{ SKU, Allocation, Version, Delete, UID string }
			gotIP := ipSent{string(*ip.SKU.Name), string(*ip.Properties.PublicIPAllocationMethod), string(*ip.Properties.PublicIPAddressVersion),
				string(*ip.Properties.DeleteOption), tag(ip.Tags, provider.LabelUID)}
			if diff := cmp.Diff(ipSent{"Standard", "Static", "IPv4", string(wantDelete), req.UID}, gotIP); diff != "" {
				t.Errorf("the public IP (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCreateIsKeyedByName: a create again adopts the VM of its name and
// uid without a second PUT; a VM of that name and another uid is never
// adopted.
func TestCreateIsKeyedByName(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	req := request()
	first, err := e.p.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.p.Create(ctx, req)
	if err != nil || again != first {
		t.Fatalf("a second Create = %q, %v; want %q", again, err, first)
	}
	if n := e.cloud.callCount("vm.put"); n != 1 {
		t.Errorf("VM PUTs after two Creates = %d, want 1", n)
	}
	other := request()
	other.UID = "99999999-9e8d-4c7b-a6f5-e4d3c2b1a098"
	if _, err := e.p.Create(ctx, other); provider.KindOf(err) != provider.KindAlreadyExists {
		t.Errorf("Create of a name another uid's VM has: %v, want KindAlreadyExists", err)
	}
}

// TestIfNoneMatchConflict: a VM of the name made between the create's
// read and its PUT (a raced create) makes Azure answer 412 to the PUT's
// If-None-Match: *; the create reads it again and adopts it when it is
// the proxy's, and refuses it when it is another uid's. Either way the
// VM there is not overwritten.
func TestIfNoneMatchConflict(t *testing.T) {
	for _, tc := range []struct {
		name, racerUID string
		wantKind       provider.Kind
	}{
		{"the proxy's own", request().UID, ""},
		{"another uid's", "99999999-9e8d-4c7b-a6f5-e4d3c2b1a098", provider.KindAlreadyExists},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			req := request()
			e.tr.before = func(r *http.Request) (*http.Response, error) {
				if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/virtualMachines/"+req.Name) {
					e.cloud.put(req.Name, map[string]string{provider.LabelManaged: provider.LabelManagedYes, provider.LabelUID: tc.racerUID, "racer": "yes"})
				}
				return nil, nil
			}
			id, err := e.p.Create(context.Background(), req)
			if provider.KindOf(err) != tc.wantKind {
				t.Fatalf("Create = %q, %v; want kind %q", id, err, tc.wantKind)
			}
			if err == nil && id != e.p.vmID(req.Name) {
				t.Errorf("Create = %q, want the racer's %q", id, e.p.vmID(req.Name))
			}
			got := map[string]int{"vm.put": e.cloud.callCount("vm.put"), "vms": e.cloud.count()["vm"]}
			if diff := cmp.Diff(map[string]int{"vm.put": 1, "vms": 1}, got); diff != "" {
				t.Errorf("calls and VMs (-want +got):\n%s", diff)
			}
			if tag(e.cloud.vm(req.Name).Tags, "racer") != "yes" {
				t.Errorf("the racer's VM was overwritten")
			}
		})
	}
}

// TestCapacityMovesToTheNextZone: each of Azure's capacity codes, refused
// at once or as the VM's failed provisioning, is KindCapacity naming the
// zone, and the create that avoids it goes to another zone of the
// location.
func TestCapacityMovesToTheNextZone(t *testing.T) {
	for _, tc := range []struct {
		code  string
		async bool
	}{
		{"SkuNotAvailable", false},
		{"AllocationFailed", false},
		{"ZonalAllocationFailed", false},
		{"AllocationFailed", true},
		{"ZonalAllocationFailed", true},
	} {
		t.Run(tc.code+map[bool]string{false: "AtOnce", true: "Provisioning"}[tc.async], func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t)
			req := request()
			first, _ := provider.ChooseZone(req.UID, Zones("westeurope"), nil)
			full := strings.TrimPrefix(first, "westeurope-")
			var err error
			if tc.async {
				e.cloud.zoneFails[full] = tc.code
				id, cerr := e.p.Create(ctx, req)
				if cerr != nil {
					t.Fatal(cerr)
				}
				e.cloud.Settle()
				_, err = e.p.Get(ctx, id)
				if !provider.CreateFailed(err) {
					t.Fatalf("Get of a VM whose provisioning failed: %v, want a create failure", err)
				}
			} else {
				e.cloud.zoneFull[full] = tc.code
				_, err = e.p.Create(ctx, req)
			}
			if provider.KindOf(err) != provider.KindCapacity || provider.FullZone(err) != first {
				t.Fatalf("error = %v (kind %q, zone %q), want KindCapacity naming %s", err, provider.KindOf(err), provider.FullZone(err), first)
			}
			req.AvoidZones = []string{first}
			id, err := e.p.Create(ctx, req)
			if tc.async {
				// The failed VM holds the name: the create deletes it first.
				if provider.KindOf(err) != provider.KindTransient {
					t.Fatalf("a create over the failed VM: %v, want transient while it is deleted", err)
				}
				e.cloud.Settle()
				id, err = e.p.Create(ctx, req)
			}
			if err != nil {
				t.Fatal(err)
			}
			e.cloud.Settle()
			in, err := e.p.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if in.Zone == first || !strings.HasPrefix(in.Zone, "westeurope-") || e.cloud.count()["vm"] != 1 {
				t.Errorf("after avoiding %s: zone %q, %d VMs; want another zone of westeurope and one VM", first, in.Zone, e.cloud.count()["vm"])
			}
		})
	}
}

// TestQuotaIsSurfaced: OperationNotAllowed with a quota message is
// KindQuota with Azure's message, for the proxy's status; without one,
// the same code is permanent.
func TestQuotaIsSurfaced(t *testing.T) {
	for _, tc := range []struct {
		code, message string
		want          provider.Kind
	}{
		{"OperationNotAllowed", "Operation could not be completed as it results in exceeding approved standardBSFamily Cores quota. Location: westeurope, Current Limit: 4", provider.KindQuota},
		{"QuotaExceeded", "Total Regional Cores quota exceeded", provider.KindQuota},
		{"OperationNotAllowed", "The operation is not allowed on a VM with a pending maintenance", provider.KindPermanent},
	} {
		t.Run(tc.code+"/"+string(tc.want), func(t *testing.T) {
			e := newEnv(t)
			e.tr.before = func(r *http.Request) (*http.Response, error) {
				if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/virtualMachines/") {
					return armError(r, http.StatusConflict, tc.code, tc.message, nil), nil
				}
				return nil, nil
			}
			_, err := e.p.Create(context.Background(), request())
			if provider.KindOf(err) != tc.want || !strings.Contains(err.Error(), tc.message) || !strings.Contains(err.Error(), tc.code) {
				t.Errorf("error = %v (kind %q), want kind %q with the code and message", err, provider.KindOf(err), tc.want)
			}
		})
	}
}

// TestThrottlingIsRetried: a 429 is retried by azcore's retry policy
// after the Retry-After it gives (within Retry.MaxRetryDelay), so the
// call succeeds; one asking a longer wait is not slept on but returned as
// KindRateLimited with that wait.
func TestThrottlingIsRetried(t *testing.T) {
	for _, tc := range []struct {
		name       string
		retryAfter string
		wantKind   provider.Kind
		wantWait   time.Duration
		wantGets   int
	}{
		{"within the policy's cap", "1", "", 0, 2},
		{"past it", "60", provider.KindRateLimited, time.Minute, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			var once sync.Once
			e.tr.before = func(r *http.Request) (*http.Response, error) {
				var resp *http.Response
				if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/virtualMachines/"+request().Name) {
					once.Do(func() {
						resp = armError(r, http.StatusTooManyRequests, "SubscriptionRequestsThrottled", "Number of read requests for subscription exceeded the limit", map[string]string{"Retry-After": tc.retryAfter})
					})
				}
				return resp, nil
			}
			_, err := e.p.Create(context.Background(), request())
			got := []any{provider.KindOf(err), provider.RetryAfter(err), e.tr.requests(http.MethodGet, "/virtualMachines/"+request().Name)}
			if diff := cmp.Diff([]any{tc.wantKind, tc.wantWait, tc.wantGets}, got); diff != "" {
				t.Errorf("kind, wait, VM reads (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}

// TestCrashResumesTheOperation: an IP's operation cut short by the call's
// deadline keeps its resume token, and the next create of the same
// process resumes it (no second PUT); a new process, which has no token,
// finds the IP by its name, and its PUT while the first operation runs is
// refused as ARM refuses it (409 AnotherOperationInProgress: played here,
// since the SDK's fake answers a PUT to a path whose operation it still
// tracks as that operation), transient, until the operation ended, after
// which it takes the IP without a PUT; either way one IP PUT and one VM.
func TestCrashResumesTheOperation(t *testing.T) {
	for _, sameProcess := range []bool{true, false} {
		t.Run(map[bool]string{true: "SameProcess", false: "NewProcess"}[sameProcess], func(t *testing.T) {
			e := newEnv(t)
			e.cloud.ipPending = 3
			req := request()
			ctx, cancel := context.WithCancel(context.Background())
			e.tr.before = func(r *http.Request) (*http.Response, error) {
				if strings.HasSuffix(r.URL.Path, "/publicIPAddresses/"+ipName(req.Name)+"/get/fake/status") {
					cancel() // the deadline, at the first poll
					return nil, context.Canceled
				}
				return nil, nil
			}
			if _, err := e.p.Create(ctx, req); !errors.Is(err, context.Canceled) {
				t.Fatalf("Create cut at its first poll: %v, want context.Canceled", err)
			}
			e.tr.before = nil
			p := e.p
			if !sameProcess {
				p = e.provider(t)
				e.tr.before = func(r *http.Request) (*http.Response, error) {
					if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/publicIPAddresses/"+ipName(req.Name)) {
						return armError(r, http.StatusConflict, "AnotherOperationInProgress", "Operation PutPublicIpAddressOperation is in progress", nil), nil
					}
					return nil, nil
				}
				if _, err := p.Create(context.Background(), req); provider.KindOf(err) != provider.KindTransient {
					t.Fatalf("a new process's Create while the IP's operation runs: %v, want transient", err)
				}
				e.cloud.Settle()
			}
			if _, err := p.Create(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			got := map[string]int{"ip.put": e.cloud.callCount("ip.put"), "vm.put": e.cloud.callCount("vm.put"), "vms": e.cloud.count()["vm"]}
			if diff := cmp.Diff(map[string]int{"ip.put": 1, "vm.put": 1, "vms": 1}, got); diff != "" {
				t.Errorf("calls and VMs (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStaticIPOutlivesItsVM: a Static proxy's IP stays when its VM goes,
// is its next VM's (the same address), is listed while no VM holds it,
// and goes with Delete of its AddressID, refused while a VM holds it.
func TestStaticIPOutlivesItsVM(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	req := request()
	req.StaticIP = true
	id, err := e.p.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	e.cloud.Settle()
	e.st.Set(req.UID, Status{Generation: 1, Ready: true})
	in, err := e.p.Get(ctx, id)
	if err != nil || in.AddressID == "" || in.IP == "" || in.State != provider.StateRunning {
		t.Fatalf("Get of a Static proxy's VM: %+v, %v; want Running with an IP and an AddressID", in, err)
	}
	if err := e.p.Delete(ctx, in.AddressID); provider.KindOf(err) != provider.KindTransient {
		t.Errorf("Delete of an address a VM holds: %v, want transient", err)
	}
	if err := e.p.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	e.cloud.Settle()
	list, err := e.p.ListByTag(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		ID    string
		State provider.InstanceState
		IP    string
	}
	var rows []row
	for _, l := range list {
		rows = append(rows, row{l.ID, l.State, l.IP})
	}
	if diff := cmp.Diff([]row{{in.AddressID, provider.StateTerminated, in.IP}}, rows); diff != "" {
		t.Errorf("ListByTag after the VM went (-want +got):\n%s", diff)
	}
	again, err := e.p.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	e.cloud.Settle()
	next, err := e.p.Get(ctx, again)
	if err != nil || next.IP != in.IP || next.AddressID != in.AddressID {
		t.Errorf("the proxy's next VM: %+v, %v; want the address %s", next, err, in.IP)
	}
	if err := e.p.Delete(ctx, again); err != nil {
		t.Fatal(err)
	}
	e.cloud.Settle()
	if err := e.p.Delete(ctx, in.AddressID); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"vm": 0, "ip": 0, "nic": 0, "disk": 0}, e.cloud.count()); diff != "" {
		t.Errorf("left after both deletes (-want +got):\n%s", diff)
	}
}

// TestResidueIsListedAndCollected: a create that stopped after the NIC
// (a crash, a refused VM) leaves an IP and a NIC with the proxy's tags;
// ListByTag lists them as one Terminated instance under the VM's
// providerID, and Delete of it takes both.
func TestResidueIsListedAndCollected(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.tr.before = func(r *http.Request) (*http.Response, error) {
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/virtualMachines/") {
			return armError(r, http.StatusBadRequest, "InvalidParameter", "the crash, played", nil), nil
		}
		return nil, nil
	}
	req := request()
	if _, err := e.p.Create(ctx, req); err == nil {
		t.Fatal("Create succeeded; want the played failure")
	}
	e.tr.before = nil
	list, err := e.p.ListByTag(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		ID, UID string
		State   provider.InstanceState
		Created bool
	}
	var rows []row
	for _, l := range list {
		rows = append(rows, row{l.ID, l.UID, l.State, !l.CreatedAt.IsZero()})
	}
	if diff := cmp.Diff([]row{{e.p.vmID(req.Name), req.UID, provider.StateTerminated, true}}, rows); diff != "" {
		t.Errorf("ListByTag of what the create left (-want +got):\n%s", diff)
	}
	if err := e.p.Delete(ctx, e.p.vmID(req.Name)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"vm": 0, "ip": 0, "nic": 0, "disk": 0}, e.cloud.count()); diff != "" {
		t.Errorf("left after the Delete (-want +got):\n%s", diff)
	}
}

// TestReconfigureWritesUserData: Reconfigure PATCHes the VM's userData
// with the Renderer's rendering for the new owner and configuration, and
// its uid and status id tags, after its NIC's and IP's uid tags; the same
// request again sends nothing.
func TestReconfigureWritesUserData(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	req := request()
	req.Pool = "warm"
	req.Engine = &vmconfig.Config{Generation: 0, Listen: ":3128"}
	id, err := e.p.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	e.cloud.Settle()
	claim := provider.ReconfigureRequest{UID: "88888888-0000-4000-8000-000000000001", Namespace: "team-b", ProxyName: "claimed",
		Engine: &vmconfig.Config{Generation: 3, Listen: ":3128", ConnectPorts: []int{443}}}
	for range 2 {
		if err := e.p.Reconfigure(ctx, id, claim); err != nil {
			t.Fatal(err)
		}
	}
	vm := e.cloud.vm(req.Name)
	ud, _ := base64.StdEncoding.DecodeString(*vm.Properties.UserData)
	render := provider.CreateRequest{Name: req.Name, UID: claim.UID, RequestID: req.RequestID}
	type seen struct {
		UserData, UID, StatusID, NICUID, IPUID string
		Patches, Retags                        int
	}
	want := seen{"#cloud-config\n# egress proxy " + claim.UID + ", generation 3\n", claim.UID, vmstatus.StatusID(render), claim.UID, claim.UID, 1, 2}
	got := seen{string(ud), tag(vm.Tags, provider.LabelUID), tag(vm.Tags, vmside.LabelStatusID),
		tag(e.cloud.nics[nicName(req.Name)].Tags, provider.LabelUID), tag(e.cloud.ips[ipName(req.Name)].Tags, provider.LabelUID),
		e.cloud.callCount("vm.patch"), e.cloud.callCount("nic.tags") + e.cloud.callCount("ip.tags")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after two Reconfigures of one request (-want +got):\n%s", diff)
	}
	// The logs name the VM and the generation, never the user-data.
	if logs := e.logs.String(); strings.Contains(logs, "cloud-config") || strings.Contains(logs, *vm.Properties.UserData) {
		t.Errorf("the logs hold a VM's user-data:\n%s", logs)
	}
}

// TestStates: a VM's provisioning and power states onto the contract's.
func TestStates(t *testing.T) {
	vm := func(prov string, statuses ...string) *armcompute.VirtualMachine {
		v := &armcompute.VirtualMachine{Properties: &armcompute.VirtualMachineProperties{ProvisioningState: &prov}}
		if statuses != nil {
			v.Properties.InstanceView = &armcompute.VirtualMachineInstanceView{}
			for _, c := range statuses {
				v.Properties.InstanceView.Statuses = append(v.Properties.InstanceView.Statuses, &armcompute.InstanceViewStatus{Code: &c})
			}
		}
		return v
	}
	got := map[string]provider.InstanceState{
		"creating":             state(vm("Creating")),
		"running":              state(vm("Succeeded", "ProvisioningState/succeeded", "PowerState/running")),
		"starting":             state(vm("Succeeded", "ProvisioningState/succeeded", "PowerState/starting")),
		"deallocated":          state(vm("Succeeded", "ProvisioningState/succeeded", "PowerState/deallocated")),
		"stopped":              state(vm("Succeeded", "ProvisioningState/succeeded", "PowerState/stopped")),
		"deleting":             state(vm("Deleting", "PowerState/running")),
		"updating and running": state(vm("Updating", "ProvisioningState/updating", "PowerState/running")),
		"listed":               state(vm("Succeeded")),
	}
	want := map[string]provider.InstanceState{
		"creating": provider.StateProvisioning, "running": provider.StateRunning, "starting": provider.StateProvisioning,
		"deallocated": provider.StateStopped, "stopped": provider.StateStopped, "deleting": provider.StateTerminated,
		"updating and running": provider.StateRunning, "listed": provider.StateRunning,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
}
