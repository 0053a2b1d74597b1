package azuresim

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBench: a lifecycle at the reconciler's floor costs the ARM requests
// it must (Create: the VM's name read, the IP's and the NIC's read and
// PUT, an operation's poll, the VM's PUT; two Gets of the VM and its IP;
// Delete: the VM's DELETE and the reads of what its deleteOptions might
// have left; the Get that finds it gone: 16, 4 of them writes) and leaves
// nothing behind; the listing of 1000 VMs reads 50 pages of each of VMs,
// public IPs and NICs (the fake's pages of 20); a live change is one read
// of the VM, its PATCH, and the Get's reads of the VM and its IP.
func TestBench(t *testing.T) {
	res, err := Bench{}.Run(context.Background(), 3)
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*Result)
	want := map[string]float64{"virtualMachines.get": 5, "virtualMachines.put": 1, "virtualMachines.delete": 1,
		"publicIPAddresses.get": 4, "publicIPAddresses.put": 1, "networkInterfaces.get": 2, "networkInterfaces.put": 1, "operations.get": 1}
	if diff := cmp.Diff(want, r.Requests); diff != "" {
		t.Errorf("requests per lifecycle (-want +got):\n%s", diff)
	}
	wantList := map[string]int{"virtualMachines.list": 50, "publicIPAddresses.list": 50, "networkInterfaces.list": 50}
	if diff := cmp.Diff(wantList, r.ListRequests); diff != "" {
		t.Errorf("the listing's requests (-want +got):\n%s", diff)
	}
	wantPatch := map[string]float64{"virtualMachines.get": 2, "virtualMachines.patch": 1, "publicIPAddresses.get": 1}
	if diff := cmp.Diff(wantPatch, r.PatchRequests); diff != "" {
		t.Errorf("a live change's requests (-want +got):\n%s", diff)
	}
	type figures struct{ Total, Writes, Reads, Left, List, Timed, Patches int }
	wantFig := figures{Total: 16, Writes: 4, Reads: 12, Left: 0, List: 150, Timed: 15, Patches: 3}
	got := figures{int(r.RequestsTotal), int(r.Writes), int(r.Reads), r.Left, r.ListTotal, r.CallMs.N, r.PatchMs.N}
	if diff := cmp.Diff(wantFig, got); diff != "" {
		t.Errorf("the phase's figures (-want +got):\n%s", diff)
	}
	var b strings.Builder
	r.Table(&b)
	for _, s := range []string{"16.0 ARM requests each", "0 resources left", "150 requests in pages of 20", "p99 of 3"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("the table says no %q: %s", s, b.String())
		}
	}
}
