package gcp_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/option"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/gcp"
	"github.com/egress-proxies/egress/internal/provider/gcp/computefake"
	"github.com/egress-proxies/egress/internal/provider/providerbench"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// TestCallsAsCounted holds the plugin's calls per method, which the
// project's budget is spent by, to the Compute requests the fake counted
// for each method of a warm process's lifecycle.
func TestCallsAsCounted(t *testing.T) {
	fake := computefake.New()
	t.Cleanup(fake.Close)
	clients, err := gcp.NewClients(context.Background(), option.WithEndpoint(fake.URL), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { clients.Close() })
	p, err := gcp.New(clients, gcp.Config{Project: "demo-calls"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := providerbench.CallsOf(context.Background(), p, fake.Settle, fake.Requests, func(i int) provider.CreateRequest {
		uid := []string{"6f1c2d3e-4a5b-4c6d-8e7f-000000000001", "6f1c2d3e-4a5b-4c6d-8e7f-000000000002"}[i]
		// A cloud-init of its own: the VM is Running without the startup
		// script's report, which no VM here makes.
		return provider.CreateRequest{Name: provider.NameFromUID(uid), UID: uid, Namespace: "calls", ProxyName: "p",
			Placement: provider.Placement{Region: "us-central1"}, CloudInit: "#cloud-config\n", Port: 3128}
	})
	if err != nil {
		t.Fatal(err)
	}
	// The optional methods, on a VM of a third create: a Reconfigure
	// that changes its uid label and its configuration, a read of its
	// console, and a read of the region's quotas.
	ctx := context.Background()
	uid := "6f1c2d3e-4a5b-4c6d-8e7f-000000000003"
	id, err := p.Create(ctx, provider.CreateRequest{Name: provider.NameFromUID(uid), UID: uid, Namespace: "calls", ProxyName: "p",
		Placement: provider.Placement{Region: "us-central1"}, CloudInit: "#cloud-config\n", Port: 3128})
	if err != nil {
		t.Fatal(err)
	}
	fake.Settle()
	before := fake.Requests()
	if err := p.Reconfigure(ctx, id, provider.ReconfigureRequest{UID: "6f1c2d3e-4a5b-4c6d-8e7f-000000000004", Namespace: "calls", ProxyName: "q",
		Engine: &vmconfig.Config{Generation: 2}}); err != nil {
		t.Fatal(err)
	}
	got.Reconfigure = fake.Requests() - before
	before = fake.Requests()
	if _, err := provider.ReadConsole(ctx, p, id); err != nil {
		t.Fatal(err)
	}
	got.Console = fake.Requests() - before
	// And a read of the region's quotas, as placement reads an account's.
	before = fake.Requests()
	if _, err := p.Quotas(ctx, "us-central1"); err != nil {
		t.Fatal(err)
	}
	got.Quotas = fake.Requests() - before
	want := gcp.Plugin.Calls
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the plugin's calls per method (-want) against the fake's count (+got):\n%s", diff)
	}
}
