package azuresim

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
)

// TestBench: a lifecycle at the reconciler's floor costs the ARM requests
// it must (Create: the VM's name read, the IP's and the NIC's read and
// PUT, an operation's poll, the VM's PUT; two Gets of the VM and its IP;
// Delete: the VM's DELETE and the reads of what its deleteOptions might
// have left; the Get that finds it gone: 16, 4 of them writes) and leaves
// nothing behind; the listing of 1000 VMs reads 50 pages of each of VMs,
// public IPs and NICs (the fake's pages of 20); a live change is one read
// of the VM, its PATCH, and the Get's reads of the VM and its IP, its
// times under the JSON key of Google Cloud's PATCH in make bench.
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
	got := figures{int(r.RequestsTotal), int(r.Writes), int(r.Reads), r.Left, r.ListTotal, r.CallMs.N, r.Reconfigure.ReadyMs.N}
	if diff := cmp.Diff(wantFig, got); diff != "" {
		t.Errorf("the phase's figures (-want +got):\n%s", diff)
	}
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Reconfigure struct {
			ReadyMs struct{ N int }
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil || doc.Reconfigure.ReadyMs.N != 3 {
		t.Errorf("the JSON's reconfigure.readyMs.n: %d, %v; want 3, the changes timed: %s", doc.Reconfigure.ReadyMs.N, err, raw)
	}
	if what, l := r.LiveChange(); l != r.Reconfigure.ReadyMs || !strings.Contains(what, "no new VM") {
		t.Errorf("the live changes' row: %q, %+v; want the changes' times, %+v, said to make no VM", what, l, r.Reconfigure.ReadyMs)
	}
	var b strings.Builder
	r.Table(&b)
	for _, s := range []string{"16.0 ARM requests each", "0 resources left", "150 requests in pages of 20", "p99 of 3"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("the table says no %q: %s", s, b.String())
		}
	}
}

// replacing is a provider whose Reconfigure replaces the VM (deletes it
// and makes it again, at the new generation) where the azure provider
// changes it in place: the regression the live changes must catch.
type replacing struct {
	reconfigurable
	g *rig
}

func (p replacing) Reconfigure(ctx context.Context, id string, req provider.ReconfigureRequest) error {
	if err := p.reconfigurable.Delete(ctx, id); err != nil {
		return err
	}
	p.g.fake.Settle()
	_, err := p.reconfigurable.Create(ctx, provider.CreateRequest{Name: provider.NameFromUID(req.UID), UID: req.UID, Namespace: req.Namespace,
		ProxyName: req.ProxyName, Placement: provider.Placement{Region: "westeurope"}, StartupScript: "#!/bin/sh\n", Port: 3128, Engine: req.Engine})
	p.g.settle()
	return err
}

// TestLiveChangesInPlace: the live changes report their times when each
// lands in place, and fail, reporting none, when a change replaces its
// VM, though each replaced VM serves the new generation as Running.
func TestLiveChangesInPlace(t *testing.T) {
	for name, tc := range map[string]struct {
		replace bool
		want    string // in the error; "" for none
	}{
		"in place": {},
		"replaced": {replace: true, want: "3 live changes made 3 VM PUTs"},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			g, err := newRig()
			if err != nil {
				t.Fatal(err)
			}
			defer g.fake.Close()
			var ids []string
			for i := range 3 {
				id, err := g.p.Create(ctx, benchRequest(liveChangeBase+i, 1))
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			g.settle()
			p := g.p
			if tc.replace {
				p = replacing{reconfigurable: g.p, g: g}
			}
			times, err := g.liveChanges(ctx, p, ids)
			switch {
			case tc.want == "" && (err != nil || len(times) != 3):
				t.Errorf("changes in place: %d timed, %v; want 3, no error", len(times), err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("changes that replace their VMs: %v; want an error saying %q", err, tc.want)
			}
		})
	}
}
