// Package awssim is AWS's part of the simulation and the benchmark, over
// the EC2 fake: a sim.Cloud (the aws provider itself over the fake served
// in-process, through aws-sdk-go-v2 and its retryer, with EC2's faults)
// and the cloud's phase of make bench (Bench: EC2 requests per proxy
// lifecycle, by action, and the collector's listing, over the fake on
// loopback). Both play the VM side: an instance serves once booted.
// internal/clouds/cloudsdev lists them; nothing in production imports
// this package.
package awssim

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"

	"github.com/egress-proxies/egress/internal/provider"
	awsprovider "github.com/egress-proxies/egress/internal/provider/aws"
	"github.com/egress-proxies/egress/internal/provider/aws/ec2fake"
	"github.com/egress-proxies/egress/internal/provider/vmside"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/sim"
)

// Cloud is EC2 in the simulation: the aws provider itself, over the EC2
// fake served in-process, through aws-sdk-go-v2 (its retryer too). Like
// Hetzner's, its instances cannot be reconfigured, are Ready only once
// the provider's Prober sees them serve, and do not call home; a Static
// proxy's Elastic IP is put on each of its instances by Get. A new proxy
// is an aws one a quarter of the time the clouds before it in the list
// left it to the mock.
type Cloud struct {
	now  func() time.Time
	rng  *rand.Rand
	fake *ec2fake.Server
	prov *awsprovider.Provider
	// other is a second deployment's aws provider in the same account.
	other *awsprovider.Provider
	boot  time.Duration
	// reqs are the create requests by uid, as the Renderer saw them last:
	// what the proxy's newest instance was made to serve.
	reqs map[string]provider.CreateRequest
	// BootFaults are by EC2 id.
	sim.BootFaults
	nextSettle time.Time
	// full are the zones out of capacity while faults are on.
	full []string
}

var _ sim.Cloud = (*Cloud)(nil)

// region is the region of the simulated aws proxies, and zones its
// zones.
const region = "us-east-1"

var zones = []string{"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1e", "us-east-1f"}

// key signs the simulation's requests to the fake: a key of no account.
var key = sdkaws.CredentialsProviderFunc(func(context.Context) (sdkaws.Credentials, error) {
	return sdkaws.Credentials{AccessKeyID: "EGRESS-SIM", SecretAccessKey: "sim"}, nil
})

// New builds EC2 for one schedule. Its draws come from a stream of its
// own (the seed's stream 37), as they did when the world held EC2
// itself, so that a seed's schedule is the one it was.
func New(env sim.Env) sim.Cloud {
	a := &Cloud{now: env.Now, rng: rand.New(rand.NewPCG(env.Seed, 37)), reqs: map[string]provider.CreateRequest{},
		BootFaults: sim.NewBootFaults()}
	a.fake = ec2fake.NewHandler()
	a.fake.SetClock(env.Now)
	a.boot = time.Duration(5+a.rng.IntN(60)) * time.Second
	mk := func(deployment string) *awsprovider.Provider {
		c := awsprovider.NewClient(awsprovider.ClientOptions{Credentials: key, Endpoint: a.fake.Endpoint(), HTTPClient: a.fake.HTTPClient(),
			// The SDK's retries, without its sleeps: the simulation's
			// time is its clock's.
			Backoff: retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })})
		p, err := awsprovider.New(c, awsprovider.Config{Deployment: deployment, Regions: []string{region},
			Renderer: vmside.RendererFunc(a.render), Prober: vmside.ProberFunc(a.probe), Now: env.Now})
		if err != nil {
			panic(err)
		}
		return p
	}
	a.prov, a.other = mk(provider.DefaultDeployment), mk("other")
	return a
}

// Type is the aws provider's type.
func (a *Cloud) Type() string { return awsprovider.Type }

// Provider is this deployment's aws provider over the fake.
func (a *Cloud) Provider() provider.Provider { return a.prov }

// render is the Renderer: it records what the instance is made to serve.
func (a *Cloud) render(req provider.CreateRequest) (string, error) {
	a.reqs[req.UID] = req
	return "#cloud-config\n# sim\n", nil
}

// probe is the Prober: an instance answers once it has run for its boot
// time, with the generation it was made with, unless it never serves or
// cannot.
func (a *Cloud) probe(_ context.Context, ip string, _ int32, uid, _ string) (vmside.Status, error) {
	for _, in := range a.fake.Instances() {
		if in.PublicIP != ip || in.State != "running" || in.Tags[provider.LabelUID] != uid {
			continue
		}
		switch {
		case a.NeverReady(in.ID) || a.now().Sub(in.Created) < a.boot:
			return vmside.Status{}, errors.New("connection refused")
		case a.BootError(in.ID) != "":
			return vmside.Status{Error: a.BootError(in.ID)}, nil
		}
		req := a.reqs[uid]
		if req.Engine == nil {
			return vmside.Status{Error: "no engine configuration"}, nil
		}
		return vmside.Status{Ready: true, Generation: req.Engine.Generation}, nil
	}
	return vmside.Status{}, errors.New("no route to host")
}

// Offer makes a new proxy's spec an aws one, a quarter of the time.
func (a *Cloud) Offer(spec *proxy.Spec) bool {
	if a.rng.IntN(4) != 0 {
		return false
	}
	spec.Provider = awsprovider.Type
	spec.Placement = proxy.Placement{Region: region}
	if a.rng.IntN(3) == 0 {
		spec.Placement.Zone = zones[a.rng.IntN(len(zones))]
	}
	return true
}

// Settle lets EC2 finish what is in progress, every 10 s of the
// schedule: instances boot, terminated ones go.
func (a *Cloud) Settle(now time.Time) {
	if !now.Before(a.nextSettle) {
		a.fake.Settle()
		a.nextSettle = now.Add(10 * time.Second)
	}
}

// Finish lets EC2 finish what it was asked, as it does by itself in
// seconds.
func (a *Cloud) Finish() { a.fake.Settle() }

// Created gives an instance the boot faults that wait for one. A lost
// answer is the fake's own fault (LoseAnswers), which the SDK meets.
func (a *Cloud) Created(_ provider.CreateRequest, id string, err error) error {
	if err == nil {
		a.BootFaults.Created(id[strings.LastIndex(id, "/")+1:])
	}
	return err
}

// Owns reports whether a providerID is an aws one: an instance's
// (aws://) or an Elastic IP's (aws-eip://).
func (a *Cloud) Owns(id string) bool { return strings.HasPrefix(id, "aws") }

// Instances are the account's instances that are not gone, as the
// provider reads them (outside the schedule), for the invariants.
func (a *Cloud) Instances() []provider.Instance {
	ctx := context.Background()
	var out []provider.Instance
	for _, in := range a.fake.Instances() {
		if in.State == "terminated" {
			continue // gone: EC2 lists it for an hour, and bills nothing
		}
		id := "aws://" + in.Region + "/" + in.ID
		got, err := a.prov.Get(ctx, id)
		if err != nil {
			// Shutting down: what the collector sees of it.
			got = &provider.Instance{ID: id, UID: in.Tags[provider.LabelUID], Deployment: in.Tags[provider.LabelDeployment],
				CreatedAt: in.Created, State: provider.StateTerminated}
		}
		out = append(out, *got)
	}
	return out
}

// Addresses are every managed Elastic IP of the account, in use or not,
// as the mock's Addresses are.
func (a *Cloud) Addresses() []provider.Instance {
	var out []provider.Instance
	for _, e := range a.fake.Addresses() {
		if e.Tags[provider.LabelManaged] == provider.LabelManagedYes {
			out = append(out, provider.Instance{ID: "aws-eip://" + e.Region + "/" + e.AllocationID, UID: e.Tags[provider.LabelUID],
				Deployment: e.Tags[provider.LabelDeployment], CreatedAt: e.Allocated, State: provider.StateTerminated})
		}
	}
	return out
}

// UID is the uid tag of what an aws providerID names, if it is there.
func (a *Cloud) UID(id string) (string, bool) {
	rest, ok := strings.CutPrefix(id, "aws://")
	if ok {
		for _, in := range a.fake.Instances() {
			if in.Region+"/"+in.ID == rest {
				return in.Tags[provider.LabelUID], true
			}
		}
	}
	if rest, ok := strings.CutPrefix(id, "aws-eip://"); ok {
		for _, e := range a.fake.Addresses() {
			if e.Region+"/"+e.AllocationID == rest {
				return e.Tags[provider.LabelUID], true
			}
		}
	}
	return "", false
}

// Request is the create request the instance a providerID names was made
// with.
func (a *Cloud) Request(id string) (provider.CreateRequest, bool) {
	uid, ok := a.UID(id)
	if !ok || !strings.HasPrefix(id, "aws://") {
		return provider.CreateRequest{}, false
	}
	req, ok := a.reqs[uid]
	return req, ok
}
