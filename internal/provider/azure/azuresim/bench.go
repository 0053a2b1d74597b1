package azuresim

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/azure"
	"github.com/egress-proxies/egress/internal/provider/azure/azurefake"
	"github.com/egress-proxies/egress/internal/provider/providerbench"
	"github.com/egress-proxies/egress/internal/provider/vmside"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// Bench is the azure phase of make bench: proxy lifecycles on the azure
// provider itself, over the ARM fake on loopback (plain HTTP, through the
// SDK's clients as azure.NewClients makes them, its retry policy
// included), as the reconciler drives one at its floor: Create (a read of
// the VM's name, the public IP's and the NIC's reads and PUTs, each PUT's
// operation polled to its end, the VM's PUT), a Get while it boots, a Get
// that sees it serve (the VM with its instance view, its IP), Delete (the
// VM's DELETE, whose deleteOptions take its NIC, disk and IP, and the
// reads of what it might have left), a Get that finds it gone. What it
// counts is ARM requests, by route: ARM throttles a subscription's reads
// and writes by the hour and by the 5 minutes, so requests per lifecycle
// say how many lifecycles the limits allow. Then one ListByTag over
// Listed VMs, the collector's listing (its pages of VMs, public IPs and
// NICs) and its time; and a live change of each of the lifecycles'
// number of running VMs: Reconfigure (a read of the VM, its userData
// PATCHed in place) and a Get that sees the VM serve the new generation,
// timed, for its p99 beside the stack's PATCH on Google Cloud (make
// bench's reconfigure phase, through the mock's VMs). The changes must
// land in place: a VM made while they run (a VM PUT, or a VM the
// resource group did not hold) fails the phase, so that a regression to
// replacement is an error, not a figure.
//
// The provider's wait between two polls of an operation is 1 ms here
// (2 s in production, azure.DefaultPollEvery): the times are the
// provider's and the SDK's own cost on loopback, not ARM's.
type Bench struct{}

var _ providerbench.Phase = Bench{}

// Listed is how many VMs the listing of the phase reads.
const Listed = 1000

// Result is the azure phase's figures.
type Result struct {
	Lifecycles int `json:"lifecycles"`
	// Requests are the ARM requests of one lifecycle, by route
	// (operations.get: the polls of an operation), and their sum.
	Requests      map[string]float64 `json:"requestsPerLifecycle"`
	RequestsTotal float64            `json:"requestsPerLifecycleTotal"`
	// Writes and Reads of a lifecycle, as ARM counts them against a
	// subscription's buckets (PUT, PATCH and DELETE are writes).
	Writes float64 `json:"writesPerLifecycle"`
	Reads  float64 `json:"readsPerLifecycle"`
	// CallMs is the time of each provider call of the lifecycles.
	CallMs providerbench.Latency `json:"callMs"`
	// Left is what the lifecycles left in the resource group: VMs, NICs,
	// public IPs and disks (none, when each Delete took its all).
	Left int `json:"left"`
	// Listed VMs (each with its NIC and public IP), read by ListRequests
	// requests (pages of PageSize) in ListMs.
	Listed       int            `json:"listed"`
	PageSize     int            `json:"pageSize"`
	ListRequests map[string]int `json:"listRequests"`
	ListTotal    int            `json:"listRequestsTotal"`
	ListMs       float64        `json:"listMs"`
	// Reconfigure is the live changes' time, in the shape and under the
	// key of Google Cloud's PATCH in make bench's JSON: from Reconfigure's
	// call to the Get that sees the VM serve the new generation.
	// PatchRequests are a change's ARM requests, by route, per change
	// (never a VM PUT: the phase fails if one is made).
	Reconfigure   providerbench.Reconfigure `json:"reconfigure"`
	PatchRequests map[string]float64        `json:"patchRequests"`
}

var _ providerbench.LiveChanges = (*Result)(nil)

// LiveChange is the live changes' row beside Google Cloud's PATCH: what
// it times is the provider's side alone, on loopback.
func (r *Result) LiveChange() (string, providerbench.Latency) {
	return "the provider over the ARM fake, no stack (Reconfigure, userData PATCHed in place, no new VM; the Get that sees the new generation)", r.Reconfigure.ReadyMs
}

// lifecycleRoutes are the routes a lifecycle may use, in the order the
// table shows them; listRoutes the listing's; patchRoutes a live
// change's.
var (
	lifecycleRoutes = []string{"virtualMachines.get", "virtualMachines.put", "virtualMachines.delete",
		"publicIPAddresses.get", "publicIPAddresses.put", "publicIPAddresses.delete",
		"networkInterfaces.get", "networkInterfaces.put", "networkInterfaces.delete",
		"disks.get", "disks.delete", "operations.get", "operations.location"}
	listRoutes  = []string{"virtualMachines.list", "publicIPAddresses.list", "networkInterfaces.list"}
	patchRoutes = []string{"virtualMachines.get", "virtualMachines.patch", "publicIPAddresses.get"}
)

// Name is the phase's name: the provider's type.
func (Bench) Name() string { return azure.Type }

// Run plays n lifecycles, the listing and n live changes.
func (Bench) Run(ctx context.Context, n int) (providerbench.Result, error) {
	r, err := phase(ctx, n)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// benchGroup is the bench's resource group.
const benchGroup = "egress-bench"

// reconfigurable is a provider that changes a running VM, as the azure
// provider is.
type reconfigurable interface {
	provider.Provider
	provider.Reconfigurer
}

// rig is the phase's provider over its fake, and what the prober reads.
type rig struct {
	fake *azurefake.Server
	p    reconfigurable
	// served is what each VM serves, by public IP: the generation its
	// userData holds once the fake settled (readServed).
	served map[string]int64
}

// newRig starts the fake and makes the provider over it, its prober
// answering with the generation a VM's userData holds.
func newRig() (*rig, error) {
	fake := azurefake.NewHTTP(subscription, tenant)
	fake.AcceptToken(azure.LocalToken)
	subnets := fake.SeedNetwork(benchGroup, "westeurope")
	clients, err := azure.NewClients(subscription, localToken{}, fake.Endpoint(), nil)
	if err != nil {
		fake.Close()
		return nil, err
	}
	g := &rig{fake: fake, served: map[string]int64{}}
	g.p, err = azure.New(clients, azure.Config{SubscriptionID: subscription, ResourceGroup: benchGroup, Subnets: subnets,
		Renderer: vmside.RendererFunc(func(req provider.CreateRequest) (string, error) {
			gen := int64(0)
			if req.Engine != nil {
				gen = req.Engine.Generation
			}
			return fmt.Sprintf("#cloud-config\n# generation %d\n", gen), nil
		}),
		Prober: vmside.ProberFunc(func(_ context.Context, ip string, _ int32, _, _ string) (vmside.Status, error) {
			return vmside.Status{Ready: true, Generation: g.served[ip]}, nil
		}),
		PollEvery: time.Millisecond,
	})
	if err != nil {
		fake.Close()
		return nil, err
	}
	return g, nil
}

// readServed has the prober read the generation of each VM from its
// userData.
func (g *rig) readServed() {
	for _, name := range g.fake.Inventory(benchGroup)["virtualMachines"] {
		v, _ := g.fake.VM(benchGroup, name)
		ip, _ := g.fake.PublicIP(benchGroup, name+"-ip")
		var gen int64
		fmt.Sscanf(decode(v.UserData), "#cloud-config\n# generation %d", &gen)
		g.served[ip.Address] = gen
	}
}

// settle lets the fake finish what is in progress, and reads what the
// VMs serve.
func (g *rig) settle() { g.fake.Settle(); g.readServed() }

// count is the fake's requests so far, by route.
func (g *rig) count(rs []string) map[string]int {
	out := map[string]int{}
	for _, rt := range rs {
		out[rt] = g.fake.Calls(rt)
	}
	return out
}

// benchRequest is the i-th proxy's create, its engine at generation gen.
func benchRequest(i int, gen int64) provider.CreateRequest {
	uid := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
	return provider.CreateRequest{Name: provider.NameFromUID(uid), UID: uid, Namespace: "bench", ProxyName: "p",
		Placement: provider.Placement{Region: "westeurope"}, StartupScript: "#!/bin/sh\n", Port: 3128,
		Engine: &vmconfig.Config{Generation: gen}}
}

// liveChangeBase is the first index of the live changes' proxies, apart
// from the lifecycles'.
const liveChangeBase = 1000000

// liveChanges changes each of ids, the running VMs of the proxies
// liveChangeBase+i at generation 1, to generation 2 through p, and times
// each change until a Get sees the VM serve it. It fails if a VM was made
// meanwhile: the fake's VM PUTs, and the resource group's VMs, are the
// same after the changes as before.
func (g *rig) liveChanges(ctx context.Context, p reconfigurable, ids []string) ([]time.Duration, error) {
	puts, vms := g.fake.Calls("virtualMachines.put"), g.fake.Inventory(benchGroup)["virtualMachines"]
	var patches []time.Duration
	for i, id := range ids {
		req := benchRequest(liveChangeBase+i, 2)
		start := time.Now()
		if err := p.Reconfigure(ctx, id, provider.ReconfigureRequest{UID: req.UID, Namespace: req.Namespace, ProxyName: req.ProxyName, Engine: req.Engine}); err != nil {
			return patches, fmt.Errorf("live change of %s: %w", id, err)
		}
		g.readServed()
		in, err := p.Get(ctx, id)
		patches = append(patches, time.Since(start))
		if err != nil || in.State != provider.StateRunning || in.Generation != 2 {
			return patches, fmt.Errorf("Get of %s after its live change: %+v, %v; want it Running, serving generation 2", id, in, err)
		}
	}
	g.fake.Settle()
	if d, after := g.fake.Calls("virtualMachines.put")-puts, g.fake.Inventory(benchGroup)["virtualMachines"]; d != 0 || !slices.Equal(vms, after) {
		return patches, fmt.Errorf("%d live changes made %d VM PUTs and left the VMs %q where there were %q: want no PUT and the same VMs, each change in place",
			len(ids), d, after, vms)
	}
	return patches, nil
}

func phase(ctx context.Context, n int) (*Result, error) {
	g, err := newRig()
	if err != nil {
		return nil, err
	}
	defer g.fake.Close()
	p, fake := g.p, g.fake
	r := &Result{Lifecycles: n, Requests: map[string]float64{}, Listed: Listed, PageSize: azurefake.DefaultPageSize,
		ListRequests: map[string]int{}, PatchRequests: map[string]float64{}}

	before := g.count(lifecycleRoutes)
	calls, err := providerbench.Lifecycles(ctx, p, g.settle, n, func(i int) provider.CreateRequest { return benchRequest(i, 1) })
	if err != nil {
		return r, err
	}
	for _, rt := range lifecycleRoutes {
		if d := fake.Calls(rt) - before[rt]; d > 0 {
			per := float64(d) / float64(n)
			r.Requests[rt] = per
			r.RequestsTotal += per
			switch rt {
			case "virtualMachines.put", "virtualMachines.delete", "publicIPAddresses.put", "publicIPAddresses.delete",
				"networkInterfaces.put", "networkInterfaces.delete", "disks.delete":
				r.Writes += per
			default:
				r.Reads += per
			}
		}
	}
	r.CallMs = providerbench.Summarize(calls)
	for _, names := range fake.Inventory(benchGroup) {
		r.Left += len(names)
	}

	// Live changes: n VMs running generation 1, each changed to 2.
	var ids []string
	for i := range n {
		id, err := p.Create(ctx, benchRequest(liveChangeBase+i, 1))
		if err != nil {
			return r, fmt.Errorf("the live changes' VM %d: %w", i, err)
		}
		ids = append(ids, id)
	}
	g.settle()
	before = g.count(patchRoutes)
	patches, err := g.liveChanges(ctx, p, ids)
	if err != nil {
		return r, err
	}
	r.Reconfigure.ReadyMs = providerbench.Summarize(patches)
	for _, rt := range patchRoutes {
		if d := fake.Calls(rt) - before[rt]; d > 0 {
			r.PatchRequests[rt] = float64(d) / float64(n)
		}
	}
	for _, id := range ids {
		if err := p.Delete(ctx, id); err != nil {
			return r, err
		}
	}
	fake.Settle()

	for i := range Listed {
		uid := fmt.Sprintf("00000000-0000-4000-9000-%012d", i)
		fake.PutVM(benchGroup, fmt.Sprintf("listed-%04d", i), "westeurope", map[string]string{provider.LabelManaged: provider.LabelManagedYes,
			provider.LabelUID: uid, provider.LabelDeployment: provider.DefaultDeployment})
	}
	before = g.count(listRoutes)
	start := time.Now()
	list, err := p.ListByTag(ctx)
	r.ListMs = providerbench.Ms(time.Since(start))
	if err != nil || len(list) != Listed {
		return r, fmt.Errorf("ListByTag of %d VMs: %d, %v", Listed, len(list), err)
	}
	for _, rt := range listRoutes {
		r.ListRequests[rt] = fake.Calls(rt) - before[rt]
		r.ListTotal += r.ListRequests[rt]
	}
	return r, nil
}

// Table prints the phase's figures.
func (r *Result) Table(w io.Writer) {
	fmt.Fprintf(w, "azure provider over the ARM fake (loopback HTTP), %d lifecycles at the reconciler's floor: %.1f ARM requests each, %.1f writes and %.1f reads (",
		r.Lifecycles, r.RequestsTotal, r.Writes, r.Reads)
	sep := ""
	for _, rt := range lifecycleRoutes {
		if v, ok := r.Requests[rt]; ok {
			fmt.Fprintf(w, "%s%s %.1f", sep, rt, v)
			sep = ", "
		}
	}
	fmt.Fprintf(w, "); a provider call %.1f ms p50, %.1f ms p99; %d resources left after them;\n", r.CallMs.P50, r.CallMs.P99, r.Left)
	fmt.Fprintf(w, "  ListByTag of %d VMs: %d requests in pages of %d (", r.Listed, r.ListTotal, r.PageSize)
	sep = ""
	for _, rt := range listRoutes {
		fmt.Fprintf(w, "%s%s %d", sep, rt, r.ListRequests[rt])
		sep = ", "
	}
	fmt.Fprintf(w, "), %.0f ms; a live change (Reconfigure, userData PATCHed in place, and the Get that sees the new generation): %.1f ms p50, %.1f ms p99 of %d (",
		r.ListMs, r.Reconfigure.ReadyMs.P50, r.Reconfigure.ReadyMs.P99, r.Reconfigure.ReadyMs.N)
	sep = ""
	for _, rt := range patchRoutes {
		if v, ok := r.PatchRequests[rt]; ok {
			fmt.Fprintf(w, "%s%s %.1f", sep, rt, v)
			sep = ", "
		}
	}
	fmt.Fprintf(w, " requests each)\n")
}

// decode is a VM's base64 userData as text, "" when it is not base64.
func decode(b64 string) string {
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return ""
	}
	return string(b)
}
