package awssim

import (
	"fmt"
	"slices"

	"github.com/egress-proxies/egress/internal/provider"
	awsprovider "github.com/egress-proxies/egress/internal/provider/aws"
	"github.com/egress-proxies/egress/internal/provider/aws/ec2fake"
	"github.com/egress-proxies/egress/internal/sim"
)

// Fault injects one of EC2's faults, three steps in a hundred: a zone
// out of capacity (InsufficientInstanceCapacity, which the SDK must not
// retry) or without the type (Unsupported), RequestLimitExceeded on any
// action one to four times (rate limited at once, the SDK retrying none;
// the reconciler waits), InstanceLimitExceeded
// and VcpuLimitExceeded, InternalError and Unavailable, lost (terminated)
// and stopped instances, instances that never serve or say they cannot,
// answers lost after EC2 acted (a launch the SDK retries with its
// ClientToken, an allocation it must not retry), and another
// deployment's instances and Elastic IPs.
func (a *Cloud) Fault() (sim.Fault, bool) {
	if a.rng.Float64() >= 0.03 {
		return sim.Fault{}, false
	}
	own := a.own()
	actions := ec2fake.Served()
	switch a.rng.IntN(10) {
	case 0:
		// A zone out of capacity for a while (the SDK must not retry it),
		// or one that does not offer the type.
		zone := zones[a.rng.IntN(len(zones))]
		if !slices.Contains(a.full, zone) {
			a.full = append(a.full, zone)
			if a.rng.IntN(2) == 0 {
				a.fake.NoCapacity(zone)
			} else {
				a.fake.Unsupported(zone, awsprovider.DefaultInstanceType)
			}
		}
	case 1:
		// The request rate: the provider answers rate limited with its
		// wait, and the reconciler calls again after it.
		a.fake.Fail(actions[a.rng.IntN(len(actions))], "RequestLimitExceeded", 1+a.rng.IntN(4))
	case 2:
		a.fake.Fail("RunInstances", []string{"InstanceLimitExceeded", "VcpuLimitExceeded"}[a.rng.IntN(2)], 1)
	case 3:
		a.fake.Fail(actions[a.rng.IntN(len(actions))], []string{"InternalError", "Unavailable"}[a.rng.IntN(2)], 1+a.rng.IntN(3))
	case 4:
		if len(own) > 0 {
			a.fake.SetState(own[a.rng.IntN(len(own))], "terminated")
			return sim.Fault{Kind: sim.FaultLost}, true
		}
	case 5:
		if len(own) > 0 {
			a.fake.SetState(own[a.rng.IntN(len(own))], "stopped")
			return sim.Fault{Kind: sim.FaultStopped}, true
		}
	case 6:
		a.HangNext()
		return sim.Fault{Kind: sim.FaultNeverReady}, true
	case 7:
		a.FailNext()
		return sim.Fault{Kind: sim.FaultBootError}, true
	case 8:
		return a.foreign(), true
	case 9:
		// Done, and the answer lost: a launch is retried with its
		// ClientToken, an allocation is not retried by the SDK.
		a.fake.LoseAnswers([]string{"RunInstances", "AllocateAddress", "TerminateInstances", "AssociateAddress"}[a.rng.IntN(4)], 1)
	}
	return sim.Fault{Kind: sim.FaultOther}, true
}

// own are the ids of this deployment's instances that are pending or
// running: what EC2 may lose or someone may stop.
func (a *Cloud) own() []string {
	var out []string
	for _, in := range a.fake.Instances() {
		if in.Tags[provider.LabelDeployment] == provider.DefaultDeployment && (in.State == "pending" || in.State == "running") {
			out = append(out, in.ID)
		}
	}
	return out
}

// foreign plants an instance (with its Elastic IP, at times) of the
// second deployment, or a managed instance without the deployment tag.
func (a *Cloud) foreign() sim.Fault {
	uid := fmt.Sprintf("%08x-0000-4000-b000-%012x", a.rng.Uint32(), a.rng.Uint64()&0xffffffffffff)
	if a.rng.IntN(4) == 0 {
		id := a.fake.Put(region, "us-east-1a", map[string]string{provider.LabelManaged: provider.LabelManagedYes, provider.LabelUID: uid})
		return sim.Fault{Kind: sim.FaultUnlabelled, Foreign: []string{"aws://" + region + "/" + id}}
	}
	return sim.PlantOther(a.other, provider.CreateRequest{
		Name: provider.NameFromUID(uid), UID: uid, Namespace: "other-deployment", ProxyName: "p",
		Placement: provider.Placement{Region: region}, StaticIP: a.rng.IntN(3) == 0, StartupScript: "#!/bin/sh\n", Port: 3128,
	})
}

// ClearFaults ends the faults that would last: zones out of capacity,
// injected errors and lost answers still waiting.
func (a *Cloud) ClearFaults() {
	a.fake.ClearFaults()
	a.full = nil
}
