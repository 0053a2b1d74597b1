package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/hetzner"
	"github.com/egress-proxies/egress/internal/provider/hetzner/hetznerfake"
)

// The hetzner phase: proxy lifecycles on the hetzner provider itself,
// over the Hetzner fake on loopback (the real SDK, over HTTP), as the
// reconciler drives one at its floor: Create, a Get while it boots, a Get
// that sees it serve, Delete, a Get that finds it gone. What it counts is
// Hetzner API requests, by route: Hetzner allows a project 3600 an hour,
// so requests per lifecycle say how many lifecycles an hour a project
// sustains. Then one ListByTag over hetznerListed servers, the
// collector's listing: its requests (pages of 50) and time. It needs no
// stack, and the VM's side is played: every server serves once booted.

// hetznerListed is how many servers the listing of the phase reads.
const hetznerListed = 1000

// hetznerResult is the hetzner phase's figures.
type hetznerResult struct {
	Lifecycles int `json:"lifecycles"`
	// Requests are the API requests of one lifecycle, by route, and
	// their sum; LifecyclesPerHour what Hetzner's default limit allows.
	Requests          map[string]float64 `json:"requestsPerLifecycle"`
	RequestsTotal     float64            `json:"requestsPerLifecycleTotal"`
	LifecyclesPerHour float64            `json:"lifecyclesPerHourAtTheDefaultLimit"`
	// CallMs is the time of each provider call of the lifecycles, on
	// loopback: the provider's and the SDK's own cost.
	CallMs latency `json:"callMs"`
	// Listed servers, read by ListRequests requests in ListMs.
	Listed       int     `json:"listed"`
	ListRequests int     `json:"listRequests"`
	ListMs       float64 `json:"listMs"`
}

// hetznerRoutes are the routes a lifecycle and a listing use, in the
// order the table shows them.
var hetznerRoutes = []string{"servers.create", "servers.get", "servers.delete", "servers.list", "primary_ips.list"}

func hetznerPhase(ctx context.Context, n int) (hetznerResult, error) {
	const token = "bench-token"
	fake := hetznerfake.New(token)
	defer fake.Close()
	p, err := hetzner.New(hetzner.NewClient(token, fake.Endpoint(), nil), hetzner.Config{
		Renderer: hetzner.RendererFunc(func(provider.CreateRequest) (string, error) { return "#cloud-config\n", nil }),
		Prober: hetzner.ProberFunc(func(context.Context, string, int32, string, string) (hetzner.Status, error) {
			return hetzner.Status{Ready: true, Generation: 1}, nil
		}),
	})
	if err != nil {
		return hetznerResult{}, err
	}
	r := hetznerResult{Lifecycles: n, Requests: map[string]float64{}, Listed: hetznerListed}
	var calls []time.Duration
	timed := func(f func() error) error {
		start := time.Now()
		err := f()
		calls = append(calls, time.Since(start))
		return err
	}
	before := map[string]int{}
	for _, rt := range hetznerRoutes {
		before[rt] = fake.Calls(rt)
	}
	for i := range n {
		uid := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		req := provider.CreateRequest{Name: provider.NameFromUID(uid), UID: uid, Namespace: "bench", ProxyName: "p",
			Placement: provider.Placement{Region: "eu-central"}, StartupScript: "#!/bin/sh\n", Port: 3128}
		for _, step := range lifecycle(ctx, p, fake.Settle, req) {
			if err := timed(step); err != nil {
				return r, fmt.Errorf("lifecycle %d: %w", i, err)
			}
		}
	}
	for _, rt := range hetznerRoutes {
		if d := fake.Calls(rt) - before[rt]; d > 0 {
			r.Requests[rt] = float64(d) / float64(n)
			r.RequestsTotal += float64(d) / float64(n)
		}
	}
	r.LifecyclesPerHour = round(hetznerfake.DefaultRateLimit/r.RequestsTotal, 0)
	r.CallMs = summarize(calls)

	for i := range hetznerListed {
		fake.Put(fmt.Sprintf("listed-%04d", i), "fsn1", map[string]string{provider.LabelManaged: provider.LabelManagedYes,
			provider.LabelUID: fmt.Sprintf("00000000-0000-4000-9000-%012d", i), provider.LabelDeployment: provider.DefaultDeployment})
	}
	for _, rt := range hetznerRoutes {
		before[rt] = fake.Calls(rt)
	}
	start := time.Now()
	list, err := p.ListByTag(ctx)
	r.ListMs = ms(time.Since(start))
	if err != nil || len(list) != hetznerListed {
		return r, fmt.Errorf("ListByTag of %d servers: %d, %v", hetznerListed, len(list), err)
	}
	r.ListRequests = fake.Calls("servers.list") + fake.Calls("primary_ips.list") - before["servers.list"] - before["primary_ips.list"]
	return r, nil
}

// lifecycle is one proxy's life at the reconciler's floor, as the cloud
// phases drive it: Create, a Get while the VM boots, a Get once the
// cloud settled that sees it serve, Delete, and a Get once the cloud
// settled that finds it gone.
func lifecycle(ctx context.Context, p provider.Provider, settle func(), req provider.CreateRequest) []func() error {
	var id string
	return []func() error{
		func() (err error) { id, err = p.Create(ctx, req); return err },
		func() error { return expectState(p.Get(ctx, id))(provider.StateProvisioning) },
		func() error { settle(); return expectState(p.Get(ctx, id))(provider.StateRunning) },
		func() error { return p.Delete(ctx, id) },
		func() error {
			settle()
			if _, err := p.Get(ctx, id); provider.KindOf(err) != provider.KindNotFound {
				return fmt.Errorf("Get of the deleted %s: %v, want not found", id, err)
			}
			return nil
		},
	}
}

// expectState checks what a Get said.
func expectState(in *provider.Instance, err error) func(provider.InstanceState) error {
	return func(want provider.InstanceState) error {
		if err != nil {
			return err
		}
		if in.State != want {
			return fmt.Errorf("%s is %s, want %s", in.ID, in.State, want)
		}
		return nil
	}
}

func (h hetznerResult) table(w io.Writer) {
	fmt.Fprintf(w, "hetzner provider over the Hetzner fake (loopback HTTP), %d lifecycles at the reconciler's floor: %.1f API requests each (", h.Lifecycles, h.RequestsTotal)
	sep := ""
	for _, rt := range hetznerRoutes {
		if v, ok := h.Requests[rt]; ok {
			fmt.Fprintf(w, "%s%s %.1f", sep, rt, v)
			sep = ", "
		}
	}
	fmt.Fprintf(w, "), so %.0f lifecycles an hour within Hetzner's default 3600 requests; a provider call %.1f ms p50, %.1f ms p99;\n",
		h.LifecyclesPerHour, h.CallMs.P50, h.CallMs.P99)
	fmt.Fprintf(w, "  ListByTag of %d servers: %d requests, %.0f ms\n", h.Listed, h.ListRequests, h.ListMs)
}

// hetzner runs the hetzner phase (hetznerPhase) as a phase of the run.
func (b *bench) hetzner(ctx context.Context, r *results) error {
	var err error
	r.Hetzner, err = hetznerPhase(ctx, b.s.lifecycles)
	return err
}
