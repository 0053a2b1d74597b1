package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"

	"github.com/egress-proxies/egress/internal/provider"
	awsprovider "github.com/egress-proxies/egress/internal/provider/aws"
	"github.com/egress-proxies/egress/internal/provider/aws/ec2fake"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/provider/vmside"
	"github.com/egress-proxies/egress/internal/proxy"
)

// The third provider of the fleets: the aws provider itself, over the
// EC2 fake served in-process, through aws-sdk-go-v2 (its retryer too),
// with EC2's faults. Like hetzner's, its instances cannot be
// reconfigured, are Ready only once the provider's Prober sees them
// serve, and do not call home; a Static proxy's Elastic IP is put on
// each of its instances by Get. A new proxy is an aws one a quarter of
// the time it is not a hetzner one.

// awsState is the world's part of AWS.
type awsState struct {
	rng  *rand.Rand
	fake *ec2fake.Server
	prov *awsprovider.Provider
	// other is a second deployment's aws provider in the same account.
	other *awsprovider.Provider
	boot  time.Duration
	// reqs are the create requests by uid, as the Renderer saw them last:
	// what the proxy's newest instance was made to serve.
	reqs map[string]provider.CreateRequest
	// bootFaults are by EC2 id.
	bootFaults
	nextSettle time.Time
	// full are the zones out of capacity while faults are on.
	full []string
}

// awsRegion is the region of the simulated aws proxies, and awsZones its
// zones.
const awsRegion = "us-east-1"

var awsZones = []string{"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1e", "us-east-1f"}

// awsKey signs the simulation's requests to the fake: a key of no
// account.
var awsKey = sdkaws.CredentialsProviderFunc(func(context.Context) (sdkaws.Credentials, error) {
	return sdkaws.Credentials{AccessKeyID: "EGRESS-SIM", SecretAccessKey: "sim"}, nil
})

func (w *World) newAWS(seed uint64) {
	a := &awsState{rng: rand.New(rand.NewPCG(seed, 37)), reqs: map[string]provider.CreateRequest{},
		bootFaults: newBootFaults()}
	a.fake = ec2fake.NewHandler()
	a.fake.SetClock(w.clock.Now)
	a.boot = time.Duration(5+a.rng.IntN(60)) * time.Second
	mk := func(deployment string) *awsprovider.Provider {
		c := awsprovider.NewClient(awsprovider.ClientOptions{Credentials: awsKey, Endpoint: a.fake.Endpoint(), HTTPClient: a.fake.HTTPClient(),
			// The SDK's retries, without its sleeps: the simulation's
			// time is its clock's.
			Backoff: retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })})
		p, err := awsprovider.New(c, awsprovider.Config{Deployment: deployment, Regions: []string{awsRegion},
			Renderer: vmside.RendererFunc(w.renderAWS), Prober: vmside.ProberFunc(w.probeAWS), Now: w.clock.Now})
		if err != nil {
			panic(err)
		}
		return p
	}
	a.prov, a.other = mk(provider.DefaultDeployment), mk("other")
	w.aws = a
}

// renderAWS is the Renderer: it records what the instance is made to
// serve.
func (w *World) renderAWS(req provider.CreateRequest) (string, error) {
	w.aws.reqs[req.UID] = req
	return "#cloud-config\n# sim\n", nil
}

// probeAWS is the Prober: an instance answers once it has run for its
// boot time, with the generation it was made with, unless it never
// serves or cannot.
func (w *World) probeAWS(_ context.Context, ip string, _ int32, uid, _ string) (vmside.Status, error) {
	for _, in := range w.aws.fake.Instances() {
		if in.PublicIP != ip || in.State != "running" || in.Tags[provider.LabelUID] != uid {
			continue
		}
		switch {
		case w.aws.neverReady[in.ID] || w.clock.Now().Sub(in.Created) < w.aws.boot:
			return vmside.Status{}, errors.New("connection refused")
		case w.aws.bootError[in.ID] != "":
			return vmside.Status{Error: w.aws.bootError[in.ID]}, nil
		}
		req := w.aws.reqs[uid]
		if req.Engine == nil {
			return vmside.Status{Error: "no engine configuration"}, nil
		}
		return vmside.Status{Ready: true, Generation: req.Engine.Generation}, nil
	}
	return vmside.Status{}, errors.New("no route to host")
}

// awsSpec makes a new proxy's spec an aws one, a quarter of the time.
func (w *World) awsSpec(spec *proxy.Spec) {
	if spec.Provider != mock.Type || w.aws.rng.IntN(4) != 0 {
		return
	}
	w.stats.AWSProxies++
	spec.Provider = awsprovider.Type
	spec.Placement = proxy.Placement{Region: awsRegion}
	if w.aws.rng.IntN(3) == 0 {
		spec.Placement.Zone = awsZones[w.aws.rng.IntN(len(awsZones))]
	}
}

// settleAWS lets EC2 finish what is in progress, every few seconds of
// the schedule: instances boot, terminated ones go.
func (w *World) settleAWS() {
	if now := w.clock.Now(); !now.Before(w.aws.nextSettle) {
		w.aws.fake.Settle()
		w.aws.nextSettle = now.Add(10 * time.Second)
	}
}

// awsFault injects one of EC2's faults, at times.
func (w *World) awsFault() {
	a := w.aws
	if a.rng.Float64() >= 0.03 {
		return
	}
	w.stats.AWSFaults++
	own := w.awsOwn()
	actions := ec2fake.Served()
	switch a.rng.IntN(10) {
	case 0:
		// A zone out of capacity for a while (the SDK must not retry it),
		// or one that does not offer the type.
		zone := awsZones[a.rng.IntN(len(awsZones))]
		if !slices.Contains(a.full, zone) {
			a.full = append(a.full, zone)
			if a.rng.IntN(2) == 0 {
				a.fake.NoCapacity(zone)
			} else {
				a.fake.Unsupported(zone, awsprovider.DefaultInstanceType)
			}
		}
	case 1:
		// The request rate: the SDK retries with backoff, and gives up
		// after its attempts.
		a.fake.Fail(actions[a.rng.IntN(len(actions))], "RequestLimitExceeded", 1+a.rng.IntN(4))
	case 2:
		a.fake.Fail("RunInstances", []string{"InstanceLimitExceeded", "VcpuLimitExceeded"}[a.rng.IntN(2)], 1)
	case 3:
		a.fake.Fail(actions[a.rng.IntN(len(actions))], []string{"InternalError", "Unavailable"}[a.rng.IntN(2)], 1+a.rng.IntN(3))
	case 4:
		if len(own) > 0 {
			w.stats.Lost++
			a.fake.SetState(own[a.rng.IntN(len(own))], "terminated")
		}
	case 5:
		if len(own) > 0 {
			w.stats.Stopped++
			a.fake.SetState(own[a.rng.IntN(len(own))], "stopped")
		}
	case 6:
		w.stats.NeverReady++
		a.neverReadyNext++
	case 7:
		w.stats.BootErrors++
		a.bootErrorNext++
	case 8:
		w.awsForeign()
	case 9:
		// Done, and the answer lost: a launch is retried with its
		// ClientToken, an allocation is not retried by the SDK.
		a.fake.LoseAnswers([]string{"RunInstances", "AllocateAddress", "TerminateInstances", "AssociateAddress"}[a.rng.IntN(4)], 1)
	}
}

// awsCreated gives an instance the boot faults that wait for one.
func (w *World) awsCreated(providerID string) {
	w.aws.created(providerID[strings.LastIndex(providerID, "/")+1:])
}

// awsOwn are the ids of this deployment's instances that are pending or
// running: what EC2 may lose or someone may stop.
func (w *World) awsOwn() []string {
	var out []string
	for _, in := range w.aws.fake.Instances() {
		if in.Tags[provider.LabelDeployment] == provider.DefaultDeployment && (in.State == "pending" || in.State == "running") {
			out = append(out, in.ID)
		}
	}
	return out
}

// awsForeign plants an instance (with its Elastic IP, at times) of the
// second deployment, or a managed instance without the deployment tag.
func (w *World) awsForeign() {
	a := w.aws
	uid := fmt.Sprintf("%08x-0000-4000-b000-%012x", a.rng.Uint32(), a.rng.Uint64()&0xffffffffffff)
	if a.rng.IntN(4) == 0 {
		w.stats.Unlabelled++
		id := a.fake.Put(awsRegion, "us-east-1a", map[string]string{provider.LabelManaged: provider.LabelManagedYes, provider.LabelUID: uid})
		w.foreign = append(w.foreign, "aws://"+awsRegion+"/"+id)
		return
	}
	id, err := a.other.Create(context.Background(), provider.CreateRequest{
		Name: provider.NameFromUID(uid), UID: uid, Namespace: "other-deployment", ProxyName: "p",
		Placement: provider.Placement{Region: awsRegion}, StaticIP: a.rng.IntN(3) == 0, StartupScript: "#!/bin/sh\n", Port: 3128,
	})
	if err != nil {
		return // a fault met it: nothing was made, or the other deployment's own collector would take it
	}
	w.stats.OtherDeployment++
	w.foreign = append(w.foreign, id)
	if in, err := a.other.Get(context.Background(), id); err == nil && in.AddressID != "" {
		w.foreign = append(w.foreign, in.AddressID)
	}
}

// clearAWSFaults ends the faults that would last: zones out of capacity,
// injected errors and lost answers still waiting.
func (w *World) clearAWSFaults() {
	w.aws.fake.ClearFaults()
	w.aws.full = nil
}

// awsInstances are the account's instances that are not gone, as the
// provider reads them (outside the schedule), for the invariants.
func (w *World) awsInstances() []provider.Instance {
	ctx := context.Background()
	var out []provider.Instance
	for _, in := range w.aws.fake.Instances() {
		if in.State == "terminated" {
			continue // gone: EC2 lists it for an hour, and bills nothing
		}
		id := "aws://" + in.Region + "/" + in.ID
		got, err := w.aws.prov.Get(ctx, id)
		if err != nil {
			// Shutting down: what the collector sees of it.
			got = &provider.Instance{ID: id, UID: in.Tags[provider.LabelUID], Deployment: in.Tags[provider.LabelDeployment],
				CreatedAt: in.Created, State: provider.StateTerminated}
		}
		out = append(out, *got)
	}
	return out
}

// awsAddresses are every managed Elastic IP of the account, in use or
// not, as the mock's Addresses are.
func (w *World) awsAddresses() []provider.Instance {
	var out []provider.Instance
	for _, a := range w.aws.fake.Addresses() {
		if a.Tags[provider.LabelManaged] == provider.LabelManagedYes {
			out = append(out, provider.Instance{ID: "aws-eip://" + a.Region + "/" + a.AllocationID, UID: a.Tags[provider.LabelUID],
				Deployment: a.Tags[provider.LabelDeployment], CreatedAt: a.Allocated, State: provider.StateTerminated})
		}
	}
	return out
}

// awsUID is the uid tag of what an aws providerID names, if it is there.
func (w *World) awsUID(id string) (string, bool) {
	rest, ok := strings.CutPrefix(id, "aws://")
	if ok {
		for _, in := range w.aws.fake.Instances() {
			if in.Region+"/"+in.ID == rest {
				return in.Tags[provider.LabelUID], true
			}
		}
	}
	if rest, ok := strings.CutPrefix(id, "aws-eip://"); ok {
		for _, a := range w.aws.fake.Addresses() {
			if a.Region+"/"+a.AllocationID == rest {
				return a.Tags[provider.LabelUID], true
			}
		}
	}
	return "", false
}

// awsRequest is the create request the instance a providerID names was
// made with.
func (w *World) awsRequest(id string) (provider.CreateRequest, bool) {
	uid, ok := w.awsUID(id)
	if !ok || !strings.HasPrefix(id, "aws://") {
		return provider.CreateRequest{}, false
	}
	req, ok := w.aws.reqs[uid]
	return req, ok
}

// isAWS reports whether a providerID is an aws one.
func isAWS(id string) bool { return strings.HasPrefix(id, "aws") }
