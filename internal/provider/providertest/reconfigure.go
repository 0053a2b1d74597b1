package providertest

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// runReconfigure holds a provider that is a provider.Reconfigurer to its
// contract: a running VM created with generation 1 reports it; Reconfigure
// relabels it (Get and ListByTag show the new uid at once) and the VM
// reports the new generation once settled; the same request again changes
// nothing; a VM that is not there, or deleted, is ErrNotFound. A provider
// that is not one skips it.
func runReconfigure(t *testing.T, newTarget func(t *testing.T) Target) {
	tg := newTarget(t)
	r, ok := provider.AsReconfigurer(tg.Provider)
	if !ok {
		t.Skip("the provider is not a provider.Reconfigurer")
	}
	ctx := context.Background()
	create := tg.request("a")
	create.Engine = &vmconfig.Config{Generation: 1, Listen: ":3128", ConnectPorts: []int{443}}
	id := mustCreate(t, tg.Provider, create)
	tg.Settle()
	if tg.ReportReady != nil {
		tg.ReportReady(id)
	}
	if tg.ReportGeneration != nil {
		tg.ReportGeneration(id, 1)
	}
	type seen struct {
		State      provider.InstanceState
		UID        string
		Generation int64
	}
	view := func() seen {
		t.Helper()
		in := mustGet(t, tg.Provider, id)
		return seen{in.State, in.UID, in.Generation}
	}
	if diff := cmp.Diff(seen{provider.StateRunning, create.UID, 1}, view()); diff != "" {
		t.Fatalf("a VM created with generation 1, once it serves (-want +got):\n%s", diff)
	}

	// A warm VM changes hands: a new owner and a new configuration.
	req := provider.ReconfigureRequest{
		UID: "99999999-0000-4000-8000-000000000001", Namespace: "conformance", ProxyName: "claimed",
		Engine: &vmconfig.Config{Generation: 2, Listen: ":3128", ConnectPorts: []int{443, 8443}},
	}
	if err := r.Reconfigure(ctx, id, req); err != nil {
		t.Fatalf("Reconfigure(%q): %v", id, err)
	}
	if got := mustGet(t, tg.Provider, id).UID; got != req.UID {
		t.Errorf("Get(%q).UID right after Reconfigure = %q, want the new uid %q", id, got, req.UID)
	}
	list := mustList(t, tg.Provider)
	if len(list) != 1 || list[0].ID != id || list[0].UID != req.UID {
		t.Errorf("ListByTag after Reconfigure = %+v, want %s with uid %s", list, id, req.UID)
	}
	tg.Settle()
	if tg.ReportGeneration != nil {
		tg.ReportGeneration(id, 2)
	}
	want := seen{provider.StateRunning, req.UID, 2}
	if diff := cmp.Diff(want, view()); diff != "" {
		t.Errorf("after Reconfigure and the VM applying it (-want +got):\n%s", diff)
	}

	// The same request again: nothing changes.
	if err := r.Reconfigure(ctx, id, req); err != nil {
		t.Errorf("a repeated Reconfigure(%q): %v, want nil (it is idempotent)", id, err)
	}
	tg.Settle()
	if diff := cmp.Diff(want, view()); diff != "" {
		t.Errorf("after a repeated Reconfigure (-want +got):\n%s", diff)
	}

	if err := r.Reconfigure(ctx, tg.UnknownID, req); !errors.Is(err, provider.ErrNotFound) {
		t.Errorf("Reconfigure(%q), which names no VM: %v, want one that errors.Is ErrNotFound", tg.UnknownID, err)
	}
	if err := tg.Provider.Delete(ctx, id); err != nil {
		t.Fatalf("Delete(%q): %v", id, err)
	}
	tg.Settle()
	if err := r.Reconfigure(ctx, id, req); !errors.Is(err, provider.ErrNotFound) {
		t.Errorf("Reconfigure(%q) of a deleted VM: %v, want one that errors.Is ErrNotFound", id, err)
	}
}
