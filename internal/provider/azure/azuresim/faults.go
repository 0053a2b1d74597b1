package azuresim

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/azure"
	"github.com/egress-proxies/egress/internal/provider/azure/azurefake"
	"github.com/egress-proxies/egress/internal/sim"
)

// routes are the fake's routes the provider calls, for the faults that
// refuse a call.
var routes = []string{"virtualMachines.get", "virtualMachines.put", "virtualMachines.delete", "virtualMachines.list",
	"publicIPAddresses.get", "publicIPAddresses.put", "publicIPAddresses.delete", "publicIPAddresses.list",
	"networkInterfaces.get", "networkInterfaces.put", "networkInterfaces.delete", "networkInterfaces.list",
	"disks.delete", "operations.get"}

// Fault injects one of Azure's faults, three steps in a hundred: a zone
// or a whole location out of capacity for a while (SkuNotAvailable at
// once, AllocationFailed or ZonalAllocationFailed through the VM's
// operation: the provider moves to the next zone), the cores quota
// reached (OperationNotAllowed, kept in the proxy's status), 429 with a
// Retry-After the SDK's policy waits out (retried) or one past its cap
// (the reconciler waits), 500, 503 and 409 on any route the provider
// calls, long-running operations that take several polls for a while,
// a VM deleted by someone (lost), VMs that never serve or say they
// cannot, a crash in a create between its PUTs (the next create finds
// what it made by name, or resumes its operation by the token the
// function instance kept), and another deployment's VMs (with their
// Static IP, at times) or a managed VM without the deployment tag.
func (a *Cloud) Fault() (sim.Fault, bool) {
	if a.rng.Float64() >= 0.03 {
		return sim.Fault{}, false
	}
	switch a.rng.IntN(10) {
	case 0:
		a.fill()
	case 1:
		loc := locations[a.rng.IntN(len(locations))]
		a.fake.FailCreates(loc, "", 1+a.rng.IntN(2), azurefake.QuotaExceeded("Standard BS Family", 10, 10, 1))
	case 2:
		route := routes[a.rng.IntN(len(routes))]
		if a.rng.IntN(2) == 0 {
			// Within the retry policy's cap: retried, the call passes.
			a.fake.Fail(route, 1+a.rng.IntN(int(azure.Retry.MaxRetries)), azurefake.Throttled(1+a.rng.IntN(10)))
		} else {
			// Past it: the call fails, rate limited, and says the wait.
			a.fake.Fail(route, 1, azurefake.Throttled(20+a.rng.IntN(100)))
		}
	case 3:
		route := routes[a.rng.IntN(len(routes))]
		f := []int{http.StatusInternalServerError, http.StatusServiceUnavailable, http.StatusConflict}[a.rng.IntN(3)]
		a.fake.Fail(route, 1+a.rng.IntN(4), azurefake.Status(f))
	case 4:
		if a.lose() {
			return sim.Fault{Kind: sim.FaultLost}, true
		}
	case 5:
		// Operations that take several polls, until the faults end: the
		// IP's and the NIC's are polled to their end by the create, the
		// VM's and the deletes' end at Settle or at their polls.
		a.slowOps = true
		a.fake.SetPollsToFinish(2 + a.rng.IntN(4))
	case 6:
		a.HangNext()
		return sim.Fault{Kind: sim.FaultNeverReady}, true
	case 7:
		a.FailNext()
		return sim.Fault{Kind: sim.FaultBootError}, true
	case 8:
		return a.foreign(), true
	case 9:
		a.wire.armCrash([]string{"publicIPAddresses", "networkInterfaces"}[a.rng.IntN(2)], a.rng.IntN(2) == 0)
	}
	return sim.Fault{Kind: sim.FaultOther}, true
}

// fill runs a zone of a location, or the whole location, out of capacity
// until ClearFaults.
func (a *Cloud) fill() {
	loc := locations[a.rng.IntN(len(locations))]
	zone := ""
	if a.rng.IntN(4) != 0 {
		zone = zones[a.rng.IntN(len(zones))]
	}
	f := []func() azurefake.Fault{azurefake.SkuNotAvailable, azurefake.AllocationFailed, azurefake.ZonalAllocationFailed}[a.rng.IntN(3)]()
	if slices.Contains(a.full, loc+"/"+zone) {
		return
	}
	a.full = append(a.full, loc+"/"+zone)
	a.fake.FailCreates(loc, zone, -1, f)
}

// lose deletes one of this deployment's VMs that is not being deleted,
// as someone with the rights would (az vm delete): its NIC, its disk and
// an Ephemeral IP go with it, a Static IP stays. It reports whether
// there was one and ARM took the delete.
func (a *Cloud) lose() bool {
	var own []vm
	for _, v := range a.vms() {
		if v.Tags[provider.LabelDeployment] == provider.DefaultDeployment && v.ProvisioningState != "Deleting" {
			own = append(own, v)
		}
	}
	if len(own) == 0 {
		return false
	}
	v := own[a.rng.IntN(len(own))]
	r := httptest.NewRequest(http.MethodDelete, a.fake.Endpoint()+v.ID+"?api-version=2024-11-01", nil)
	r.Header.Set("Authorization", "Bearer "+azure.LocalToken)
	rec := httptest.NewRecorder()
	a.fake.ServeHTTP(rec, r)
	return rec.Code == http.StatusAccepted || rec.Code == http.StatusOK
}

// foreign plants a VM of the second deployment (with its Static IP, a
// third of the time), or a managed VM without the deployment tag.
func (a *Cloud) foreign() sim.Fault {
	uid := fmt.Sprintf("%08x-0000-4000-e000-%012x", a.rng.Uint32(), a.rng.Uint64()&0xffffffffffff)
	loc := locations[a.rng.IntN(len(locations))]
	if a.rng.IntN(4) == 0 {
		id := a.fake.PutVM(group, provider.NameFromUID(uid), loc, map[string]string{provider.LabelManaged: provider.LabelManagedYes, provider.LabelUID: uid})
		return sim.Fault{Kind: sim.FaultUnlabelled, Foreign: []string{"azure://" + id}}
	}
	return sim.PlantOther(a.other, provider.CreateRequest{
		Name: provider.NameFromUID(uid), UID: uid, Namespace: "other-deployment", ProxyName: "p",
		Placement: provider.Placement{Region: loc}, StaticIP: a.rng.IntN(3) == 0, StartupScript: "#!/bin/sh\n", Port: 3128,
	})
}

// ClearFaults ends the faults that would last: zones and locations out
// of capacity (and quotas reached), operations that take several polls,
// a crash armed in a create to come. Errors armed on a route and not met
// yet answer the next calls, as the other clouds' do.
func (a *Cloud) ClearFaults() {
	a.fake.ClearCreateFailures()
	a.full = nil
	if a.slowOps {
		a.fake.SetPollsToFinish(azurefake.DefaultPollsToFinish)
		a.slowOps = false
	}
	a.wire.endCrash()
}
