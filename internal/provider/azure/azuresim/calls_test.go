package azuresim

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/azure"
	"github.com/egress-proxies/egress/internal/provider/providerbench"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// TestCallsAsCounted holds the plugin's calls per method, which the
// subscription's budget is spent by, to the ARM requests the Azure fake
// counted for each method of a warm process's lifecycle, and for a
// Reconfigure of a running VM.
func TestCallsAsCounted(t *testing.T) {
	g, err := newRig()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.fake.Close)
	requests := func() int { return len(g.fake.Requests()) }
	ctx := context.Background()
	got, err := providerbench.CallsOf(ctx, g.p, g.settle, requests, func(i int) provider.CreateRequest { return benchRequest(i, 1) })
	if err != nil {
		t.Fatal(err)
	}
	id, err := g.p.Create(ctx, benchRequest(2, 1))
	if err != nil {
		t.Fatal(err)
	}
	g.settle()
	before := requests()
	req := benchRequest(2, 2)
	if err := g.p.(provider.Reconfigurer).Reconfigure(ctx, id, provider.ReconfigureRequest{UID: req.UID, Namespace: req.Namespace, ProxyName: req.ProxyName,
		Engine: &vmconfig.Config{Generation: 2}}); err != nil {
		t.Fatal(err)
	}
	got.Reconfigure = requests() - before
	if diff := cmp.Diff(azure.Plugin.Calls, got); diff != "" {
		t.Errorf("the plugin's calls per method (-want) against the fake's count (+got):\n%s", diff)
	}
}
