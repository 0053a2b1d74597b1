package hetznersim

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/hetzner"
	"github.com/egress-proxies/egress/internal/provider/hetzner/hetznerfake"
	"github.com/egress-proxies/egress/internal/provider/providerbench"
)

// Bench is the hetzner phase of make bench: proxy lifecycles on the
// hetzner provider itself, over the Hetzner fake on loopback (the real
// SDK, over HTTP), as the reconciler drives one at its floor: Create, a
// Get while it boots, a Get that sees it serve, Delete, a Get that finds
// it gone. What it counts is Hetzner API requests, by route: Hetzner
// allows a project 3600 an hour, so requests per lifecycle say how many
// lifecycles an hour a project sustains. Then one ListByTag over Listed
// servers, the collector's listing: its requests (pages of 50) and time.
type Bench struct{}

var _ providerbench.Phase = Bench{}

// Listed is how many servers the listing of the phase reads.
const Listed = 1000

// Result is the hetzner phase's figures.
type Result struct {
	Lifecycles int `json:"lifecycles"`
	// Requests are the API requests of one lifecycle, by route, and
	// their sum; LifecyclesPerHour what Hetzner's default limit allows.
	Requests          map[string]float64 `json:"requestsPerLifecycle"`
	RequestsTotal     float64            `json:"requestsPerLifecycleTotal"`
	LifecyclesPerHour float64            `json:"lifecyclesPerHourAtTheDefaultLimit"`
	// CallMs is the time of each provider call of the lifecycles, on
	// loopback: the provider's and the SDK's own cost.
	CallMs providerbench.Latency `json:"callMs"`
	// Listed servers, read by ListRequests requests in ListMs.
	Listed       int     `json:"listed"`
	ListRequests int     `json:"listRequests"`
	ListMs       float64 `json:"listMs"`
}

// routes are the routes a lifecycle and a listing use, in the order the
// table shows them.
var routes = []string{"servers.create", "servers.get", "servers.delete", "servers.list", "primary_ips.list"}

// Name is the phase's name: the provider's type.
func (Bench) Name() string { return hetzner.Type }

// Run plays n lifecycles and the listing.
func (Bench) Run(ctx context.Context, n int) (providerbench.Result, error) {
	r, err := phase(ctx, n)
	if err != nil {
		return nil, err
	}
	return r, nil
}

func phase(ctx context.Context, n int) (*Result, error) {
	fake := hetznerfake.New(benchToken)
	defer fake.Close()
	p, err := benchProvider(fake)
	if err != nil {
		return nil, err
	}
	r := &Result{Lifecycles: n, Requests: map[string]float64{}, Listed: Listed}
	before := map[string]int{}
	for _, rt := range routes {
		before[rt] = fake.Calls(rt)
	}
	calls, err := providerbench.Lifecycles(ctx, p, fake.Settle, n, benchRequest)
	if err != nil {
		return r, err
	}
	for _, rt := range routes {
		if d := fake.Calls(rt) - before[rt]; d > 0 {
			r.Requests[rt] = float64(d) / float64(n)
			r.RequestsTotal += float64(d) / float64(n)
		}
	}
	r.LifecyclesPerHour = providerbench.Round(hetznerfake.DefaultRateLimit/r.RequestsTotal, 0)
	r.CallMs = providerbench.Summarize(calls)

	for i := range Listed {
		fake.Put(fmt.Sprintf("listed-%04d", i), "fsn1", map[string]string{provider.LabelManaged: provider.LabelManagedYes,
			provider.LabelUID: fmt.Sprintf("00000000-0000-4000-9000-%012d", i), provider.LabelDeployment: provider.DefaultDeployment})
	}
	for _, rt := range routes {
		before[rt] = fake.Calls(rt)
	}
	start := time.Now()
	list, err := p.ListByTag(ctx)
	r.ListMs = providerbench.Ms(time.Since(start))
	if err != nil || len(list) != Listed {
		return r, fmt.Errorf("ListByTag of %d servers: %d, %v", Listed, len(list), err)
	}
	r.ListRequests = fake.Calls("servers.list") + fake.Calls("primary_ips.list") - before["servers.list"] - before["primary_ips.list"]
	return r, nil
}

// Table prints the phase's figures.
func (h *Result) Table(w io.Writer) {
	fmt.Fprintf(w, "hetzner provider over the Hetzner fake (loopback HTTP), %d lifecycles at the reconciler's floor: %.1f API requests each (", h.Lifecycles, h.RequestsTotal)
	sep := ""
	for _, rt := range routes {
		if v, ok := h.Requests[rt]; ok {
			fmt.Fprintf(w, "%s%s %.1f", sep, rt, v)
			sep = ", "
		}
	}
	fmt.Fprintf(w, "), so %.0f lifecycles an hour within Hetzner's default 3600 requests; a provider call %.1f ms p50, %.1f ms p99;\n",
		h.LifecyclesPerHour, h.CallMs.P50, h.CallMs.P99)
	fmt.Fprintf(w, "  ListByTag of %d servers: %d requests, %.0f ms\n", h.Listed, h.ListRequests, h.ListMs)
}

// benchToken is the bench's API token.
const benchToken = "bench-token"

// benchProvider is the hetzner provider over fake, its VMs serving once
// booted.
func benchProvider(fake *hetznerfake.Server) (*hetzner.Provider, error) {
	return hetzner.New(hetzner.NewClient(benchToken, fake.Endpoint(), nil), hetzner.Config{
		Renderer: hetzner.RendererFunc(func(provider.CreateRequest) (string, error) { return "#cloud-config\n", nil }),
		Prober: hetzner.ProberFunc(func(context.Context, string, int32, string, string) (hetzner.Status, error) {
			return hetzner.Status{Ready: true, Generation: 1}, nil
		}),
	})
}

// benchRequest is the bench's i-th create.
func benchRequest(i int) provider.CreateRequest {
	uid := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
	return provider.CreateRequest{Name: provider.NameFromUID(uid), UID: uid, Namespace: "bench", ProxyName: "p",
		Placement: provider.Placement{Region: "eu-central"}, StartupScript: "#!/bin/sh\n", Port: 3128}
}
