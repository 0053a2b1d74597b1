package azuresim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/azure/azurefake"
	"github.com/egress-proxies/egress/internal/sim"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// newCloud is Azure of seed 1 on a clock the test moves.
func newCloud(t *testing.T) (*Cloud, *time.Time) {
	t.Helper()
	at := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	return New(sim.Env{Seed: 1, Now: func() time.Time { return at }}).(*Cloud), &at
}

// request is a create request of a proxy of uid, serving generation gen.
func request(uid string, gen int64) provider.CreateRequest {
	return provider.CreateRequest{Name: provider.NameFromUID(uid), UID: uid, Namespace: "sim", ProxyName: "p",
		Placement: provider.Placement{Region: "westeurope"}, StartupScript: "#!/bin/sh\n", Port: 3128, RequestID: "attempt-1",
		Engine: &vmconfig.Config{Generation: gen}}
}

// TestAFailedAllocationMovesOn: a VM create that Azure accepts and cannot
// place (AllocationFailed, ZonalAllocationFailed, through the VM's
// operation) is, read by Get, a capacity error naming the VM's zone, so
// the reconciler's next create goes to another zone. Before the fake
// named the failure's code in the VM's instance view, Get read a failed
// provisioning of no code, permanent, and the simulation's proxies met
// by the fault ended Failed.
func TestAFailedAllocationMovesOn(t *testing.T) {
	for _, f := range []azurefake.Fault{azurefake.AllocationFailed(), azurefake.ZonalAllocationFailed()} {
		t.Run(f.Code, func(t *testing.T) {
			a, _ := newCloud(t)
			ctx := context.Background()
			a.fake.FailCreates("westeurope", "", 1, f)
			uid := "0badcafe-0000-4000-e000-000000000001"
			id, err := a.prov.Create(ctx, request(uid, 1))
			if err != nil {
				t.Fatal(err)
			}
			a.Finish()
			v, _ := a.fake.VM(group, provider.NameFromUID(uid))
			_, err = a.prov.Get(ctx, id)
			type outcome struct {
				Kind provider.Kind
				Zone string
			}
			got := outcome{Kind: provider.KindOf(err)}
			if e, ok := err.(*provider.Error); ok {
				got.Zone = e.Zone
			}
			want := outcome{Kind: provider.KindCapacity, Zone: "westeurope-" + strings.Join(v.Zones, "")}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Get of a VM whose allocation failed (-want +got):\n%s\n%v", diff, err)
			}
		})
	}
}

// TestThrottling: a 429 whose Retry-After is within the retry policy's
// cap is retried by the SDK at once (the simulation's time is its
// clock's: no call sleeps), and the call passes; one past the cap is
// returned, rate limited, with its wait for the reconciler.
func TestThrottling(t *testing.T) {
	a, _ := newCloud(t)
	ctx := context.Background()
	gone := "azure:///subscriptions/" + subscription + "/resourceGroups/" + group + "/providers/Microsoft.Compute/virtualMachines/gone"
	type outcome struct {
		Kind       provider.Kind
		RetryAfter time.Duration
		Calls      int
	}
	var got []outcome
	for _, f := range []struct{ n, retryAfter int }{{3, 10}, {1, 60}} {
		before := a.fake.Calls("virtualMachines.get")
		a.fake.Fail("virtualMachines.get", f.n, azurefake.Throttled(f.retryAfter))
		start := time.Now()
		_, err := a.prov.Get(ctx, gone)
		if time.Since(start) > 5*time.Second {
			t.Errorf("a Get throttled %d times, Retry-After %d s, took %s: the simulation's calls must not sleep", f.n, f.retryAfter, time.Since(start))
		}
		o := outcome{Kind: provider.KindOf(err), Calls: a.fake.Calls("virtualMachines.get") - before}
		if e, ok := err.(*provider.Error); ok {
			o.RetryAfter = e.RetryAfter
		}
		got = append(got, o)
	}
	want := []outcome{{Kind: provider.KindNotFound, Calls: 4}, {Kind: provider.KindRateLimited, RetryAfter: time.Minute, Calls: 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Gets throttled within and past the policy's cap (-want +got):\n%s", diff)
	}
}

// TestACrashInACreate: a create cut after its public IP's or its NIC's
// PUT leaves them, tagged with the proxy's uid, and no VM; the
// simulation lists them among the addresses (so a residue never
// collected is a leak) and names their uid under the VM's providerID
// (what the collector's Delete of a residue takes). The next create,
// on a new function instance (its resume tokens lost) or the same one
// (which resumes the operation it kept), takes them and makes the VM:
// one IP, one NIC.
func TestACrashInACreate(t *testing.T) {
	for _, tc := range []struct {
		after string
		lose  bool
	}{{"publicIPAddresses", true}, {"publicIPAddresses", false}, {"networkInterfaces", true}, {"networkInterfaces", false}} {
		name := tc.after + " kept"
		if tc.lose {
			name = tc.after + " lost"
		}
		t.Run(name, func(t *testing.T) {
			a, _ := newCloud(t)
			a.fake.SetPollsToFinish(3)
			ctx := context.Background()
			uid := "0badcafe-0000-4000-e000-000000000002"
			req := request(uid, 1)
			a.wire.armCrash(tc.after, tc.lose)
			id, err := a.prov.Create(ctx, req)
			err = a.Created(req, id, err)
			if provider.KindOf(err) != provider.KindTransient {
				t.Fatalf("the crashed create: %v, want a transient error", err)
			}
			vm := provider.NameFromUID(uid)
			left := azurefake.Inventory{"publicIPAddresses": {vm + "-ip"}}
			if tc.after == "networkInterfaces" {
				left["networkInterfaces"] = []string{vm + "-nic"}
			}
			if diff := cmp.Diff(left, a.fake.Inventory(group)); diff != "" {
				t.Errorf("what the crash left (-want +got):\n%s", diff)
			}
			var uids []string
			for _, in := range a.Addresses() {
				uids = append(uids, in.UID)
			}
			if diff := cmp.Diff(len(left), len(uids)); diff != "" || strings.Count(strings.Join(uids, " "), uid) != len(uids) {
				t.Errorf("the addresses listed: %v, want %d of uid %s", uids, len(left), uid)
			}
			vmID := "azure:///subscriptions/" + subscription + "/resourceGroups/" + group + "/providers/Microsoft.Compute/virtualMachines/" + vm
			if got, ok := a.UID(vmID); !ok || got != uid {
				t.Errorf("UID of the residue's providerID: %q, %t; want %s", got, ok, uid)
			}
			id, err = a.prov.Create(ctx, req)
			if err = a.Created(req, id, err); err != nil {
				t.Fatalf("the create after the crash: %v", err)
			}
			a.Finish()
			want := azurefake.Inventory{"virtualMachines": {vm}, "networkInterfaces": {vm + "-nic"}, "publicIPAddresses": {vm + "-ip"}, "disks": {vm + "-osdisk"}}
			if diff := cmp.Diff(want, a.fake.Inventory(group)); diff != "" {
				t.Errorf("after the next create (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAVMServesItsUserData: the VM side of the simulation serves what the
// VM's userData says now, as its agent reads IMDS: a Reconfigure (its
// PATCH of userData) is served by the same VM once booted, and Request
// says what it serves.
func TestAVMServesItsUserData(t *testing.T) {
	a, at := newCloud(t)
	ctx := context.Background()
	uid := "0badcafe-0000-4000-e000-000000000003"
	id, err := a.prov.Create(ctx, request(uid, 1))
	if err = a.Created(request(uid, 1), id, err); err != nil {
		t.Fatal(err)
	}
	*at = at.Add(2 * time.Minute)
	a.Finish()
	type served struct {
		State              provider.InstanceState
		Generation, Wanted int64
	}
	read := func() served {
		in, err := a.prov.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := a.Request(id)
		return served{State: in.State, Generation: in.Generation, Wanted: req.Engine.Generation}
	}
	got := []served{read()}
	two := request(uid, 2)
	if err := a.prov.Reconfigure(ctx, id, provider.ReconfigureRequest{UID: uid, Namespace: two.Namespace, ProxyName: two.ProxyName, Engine: two.Engine}); err != nil {
		t.Fatal(err)
	}
	got = append(got, read())
	want := []served{{provider.StateRunning, 1, 1}, {provider.StateRunning, 2, 2}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the VM before and after its live change (-want +got):\n%s", diff)
	}
	if n := len(a.fake.Inventory(group)["virtualMachines"]); n != 1 {
		t.Errorf("%d VMs after the live change, want the one", n)
	}
}
