package dosim

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/digitalocean"
	"github.com/egress-proxies/egress/internal/provider/digitalocean/dofake"
	"github.com/egress-proxies/egress/internal/provider/providerbench"
)

// Bench is the digitalocean phase of make bench: proxy lifecycles on the
// digitalocean provider itself, over the DigitalOcean fake on loopback
// (godo, over HTTP), as the reconciler drives one at its floor: Create
// (a find by the uid's tag, then the create: DigitalOcean has no request
// token), a Get while it boots, a Get that sees it serve, Delete (a Get,
// the destroy, a list of the Droplets of its uid's tag, which keep the
// tags they carry, and the deletes of its uid's tag and its own tag), a
// Get that finds it gone. What it counts is
// DigitalOcean API requests, by route: DigitalOcean allows a token 5,000
// an hour, so requests per lifecycle say how many lifecycles an hour an
// account sustains. The deployment's firewall, which a provider makes or
// checks once before its first create, is counted apart. Then one
// ListByTag over Listed Droplets, the collector's listing: its requests
// (pages of 200 Droplets, of the account's tags, of its reserved IPs) and
// time.
type Bench struct{}

var _ providerbench.Phase = Bench{}

// Listed is how many Droplets the listing of the phase reads.
const Listed = 1000

// Result is the digitalocean phase's figures.
type Result struct {
	Lifecycles int `json:"lifecycles"`
	// Requests are the API requests of one lifecycle, by route, and
	// their sum; LifecyclesPerHour what DigitalOcean's limit allows.
	Requests          map[string]float64 `json:"requestsPerLifecycle"`
	RequestsTotal     float64            `json:"requestsPerLifecycleTotal"`
	LifecyclesPerHour float64            `json:"lifecyclesPerHourAtTheLimit"`
	// FirewallRequests are the requests of the deployment's firewall,
	// once per provider, before its first create.
	FirewallRequests int `json:"firewallRequests"`
	// CallMs is the time of each provider call of the lifecycles, on
	// loopback: the provider's and godo's own cost.
	CallMs providerbench.Latency `json:"callMs"`
	// TagsLeft are the account's tags once the lifecycles are done: the
	// deployment's, the managed and the port tag (a Droplet's own tags go
	// with it; before they did, each lifecycle left two).
	TagsLeft int `json:"tagsLeft"`
	// Listed Droplets, read by ListRequests requests in ListMs; Tags, the
	// account's tags then, which the listing reads too (each listed
	// Droplet's uid tag, and the TagsLeft).
	Listed       int            `json:"listed"`
	ListRequests map[string]int `json:"listRequests"`
	ListTotal    int            `json:"listRequestsTotal"`
	ListMs       float64        `json:"listMs"`
	Tags         int            `json:"tags"`
}

// routes are the routes a lifecycle uses, in the order the table shows
// them; firewallRoutes the firewall's; listRoutes the listing's.
var (
	routes         = []string{"droplets.list", "droplets.create", "droplets.get", "droplets.delete", "tags.delete"}
	firewallRoutes = []string{"tags.create", "firewalls.list", "firewalls.create", "firewalls.update"}
	listRoutes     = []string{"droplets.list", "tags.list", "reserved_ips.list"}
)

// Name is the phase's name: the provider's type.
func (Bench) Name() string { return digitalocean.Type }

// Run plays n lifecycles and the listing.
func (Bench) Run(ctx context.Context, n int) (providerbench.Result, error) {
	r, err := phase(ctx, n)
	if err != nil {
		return nil, err
	}
	return r, nil
}

func phase(ctx context.Context, n int) (*Result, error) {
	fake := dofake.New(benchToken)
	defer fake.Close()
	p, err := benchProvider(fake)
	if err != nil {
		return nil, err
	}
	// A new account's 10 Droplets would stop the listing's fleet.
	fake.SetDropletLimit(0)
	r := &Result{Lifecycles: n, Requests: map[string]float64{}, Listed: Listed, ListRequests: map[string]int{}}
	count := func(rs []string) map[string]int {
		out := map[string]int{}
		for _, rt := range rs {
			out[rt] = fake.Calls(rt)
		}
		return out
	}
	before, fwBefore := count(routes), count(firewallRoutes)
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
	for _, rt := range firewallRoutes {
		r.FirewallRequests += fake.Calls(rt) - fwBefore[rt]
	}
	r.LifecyclesPerHour = providerbench.Round(dofake.DefaultRateLimit/r.RequestsTotal, 0)
	r.CallMs = providerbench.Summarize(calls)

	r.TagsLeft = len(fake.Tags())
	for i := range Listed {
		uid := fmt.Sprintf("00000000-0000-4000-9000-%012d", i)
		fake.Put(fmt.Sprintf("listed-%04d", i), "nyc3", []string{digitalocean.ManagedTag, digitalocean.Tag(provider.LabelUID, uid),
			digitalocean.DeploymentTag(provider.DefaultDeployment)})
	}
	r.Tags = len(fake.Tags())
	before = count(listRoutes)
	start := time.Now()
	list, err := p.ListByTag(ctx)
	r.ListMs = providerbench.Ms(time.Since(start))
	if err != nil || len(list) != Listed {
		return r, fmt.Errorf("ListByTag of %d Droplets: %d, %v", Listed, len(list), err)
	}
	for _, rt := range listRoutes {
		r.ListRequests[rt] = fake.Calls(rt) - before[rt]
		r.ListTotal += r.ListRequests[rt]
	}
	return r, nil
}

// Table prints the phase's figures.
func (r *Result) Table(w io.Writer) {
	fmt.Fprintf(w, "digitalocean provider over the DigitalOcean fake (loopback HTTP), %d lifecycles at the reconciler's floor: %.1f API requests each (", r.Lifecycles, r.RequestsTotal)
	sep := ""
	for _, rt := range routes {
		if v, ok := r.Requests[rt]; ok {
			fmt.Fprintf(w, "%s%s %.1f", sep, rt, v)
			sep = ", "
		}
	}
	fmt.Fprintf(w, "), so %.0f lifecycles an hour within DigitalOcean's 5000 requests; the firewall %d requests once; a provider call %.1f ms p50, %.1f ms p99;\n",
		r.LifecyclesPerHour, r.FirewallRequests, r.CallMs.P50, r.CallMs.P99)
	fmt.Fprintf(w, "  %d tags left in the account after them; ListByTag of %d Droplets (%d tags in the account): %d requests (", r.TagsLeft, r.Listed, r.Tags, r.ListTotal)
	sep = ""
	for _, rt := range listRoutes {
		fmt.Fprintf(w, "%s%s %d", sep, rt, r.ListRequests[rt])
		sep = ", "
	}
	fmt.Fprintf(w, "), %.0f ms\n", r.ListMs)
}

// benchToken is the bench's API token.
const benchToken = "bench-token"

// benchProvider is the digitalocean provider over fake, its Droplets
// serving once booted.
func benchProvider(fake *dofake.Server) (provider.Provider, error) {
	c, err := digitalocean.NewClient(benchToken, fake.Endpoint(), nil)
	if err != nil {
		return nil, err
	}
	return digitalocean.New(c, digitalocean.Config{
		Firewall: digitalocean.Firewall{ProxyPorts: []string{"3128"}, SourceRanges: []string{"0.0.0.0/0"}, StatusSourceRanges: []string{"192.0.2.0/28"}},
		Renderer: digitalocean.RendererFunc(func(provider.CreateRequest) (string, error) { return "#cloud-config\n", nil }),
		Prober: digitalocean.ProberFunc(func(context.Context, string, int32, string, string) (digitalocean.Status, error) {
			return digitalocean.Status{Ready: true, Generation: 1}, nil
		}),
	})
}

// benchRequest is the bench's i-th create.
func benchRequest(i int) provider.CreateRequest {
	uid := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
	return provider.CreateRequest{Name: provider.NameFromUID(uid), UID: uid, Namespace: "bench", ProxyName: "p",
		Placement: provider.Placement{Region: "nyc"}, StartupScript: "#!/bin/sh\n", Port: 3128}
}
