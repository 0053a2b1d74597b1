package sim

import (
	"context"
	"slices"
	"time"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
)

// Cloud is a simulated cloud beside the mock: a cloud's real provider
// over its fake, served in-process on the schedule's clock, with the
// cloud's own faults. A cloud's package brings one (its <cloud>sim
// package, beside its fake), and internal/clouds/cloudsdev lists it: the
// world names no cloud.
//
// The world offers each new proxy's spec to the clouds in the list's
// order until one takes it (the mock keeps the rest), injects and clears
// the cloud's faults, lets its fake settle on the schedule, and reads
// its VMs and addresses outside the schedule for the invariants. It
// calls Provider through its adapter, each call a step of the schedule
// and a crash point, and hides Reconfigure from the reconciler: a
// cloud's VMs take no change in place (a change of configuration gets a
// new VM), and do not call home (the reconciler's sweep finds them Ready
// through the provider's Get).
//
// Every draw a Cloud makes comes from a stream of its own (Env.Seed and a
// constant of the cloud's), so that a cloud added to the list leaves the
// world's and the other clouds' draws as they were. None of its methods
// is called concurrently with another: the schedule runs one step at a
// time.
type Cloud interface {
	// Type is the provider type of the cloud's proxies' specs.
	Type() string
	// Provider is this deployment's provider over the cloud's fake.
	Provider() provider.Provider
	// Offer makes a new proxy's spec (the mock's, with the world's
	// ranges, port, IP policy and maxAge) the cloud's some of the time:
	// its provider type and a placement of the cloud's, a zone now and
	// then. It reports whether it took the spec.
	Offer(spec *proxy.Spec) bool
	// Fault injects, a few steps in a hundred, one of the cloud's faults,
	// and says what it did; ok is false on a step it injected none.
	Fault() (f Fault, ok bool)
	// ClearFaults ends the faults that would outlast the faults' time
	// (zones out of capacity, errors armed and not yet met), when faults
	// stop.
	ClearFaults()
	// Settle is called on every step with the schedule's time: the fake
	// finishes what is in progress (VMs boot, deleted ones go) at the
	// cloud's own pace, every few seconds of the schedule.
	Settle(now time.Time)
	// Finish lets the fake finish what is in progress at once, as the
	// cloud does by itself in seconds: called outside the schedule,
	// after the operator's runs and before the invariants.
	Finish()
	// Created hears the answer of each Create of this deployment's
	// provider (req as the provider was asked, id and err as it
	// answered), and returns the error the caller sees: a fault may lose
	// a successful answer (the retry must find the VM). A VM whose create
	// answered gets the boot faults waiting for one (BootFaults).
	Created(req provider.CreateRequest, id string, err error) error
	// Owns reports whether a providerID, a VM's or a static address's, is
	// the cloud's.
	Owns(id string) bool
	// UID is the uid label of what a providerID of the cloud names (a VM
	// or a static address), if it is there now.
	UID(id string) (string, bool)
	// Request is the create request the VM a providerID names was made
	// with, as its Renderer saw it: what the VM serves.
	Request(id string) (provider.CreateRequest, bool)
	// Instances are every VM of the account, of any deployment or none,
	// as this deployment's provider reads them (one being deleted as the
	// collector sees it); Addresses every managed static address, in use
	// or not. Both are read outside the schedule, for the invariants.
	Instances() []provider.Instance
	Addresses() []provider.Instance
}

// NewCloud builds a simulated cloud for one schedule.
type NewCloud func(Env) Cloud

// Env is what a schedule gives the clouds it builds.
type Env struct {
	// Seed is the schedule's seed: a cloud draws from streams of its own,
	// seeded from it (rand.NewPCG(Seed, k)), so that the schedule
	// replays. The world's streams are k = 7, 23, 29, 31, 37, 47 and 53
	// (the runs' lease holders); the hetzner and aws clouds kept 31 and
	// 37, which they had before they were plug-ins, so that the seeds'
	// schedules stayed as they were (their draws run beside the world's
	// revocations and budget with the same numbers), and digitalocean
	// and azure took 41 and 43. A new cloud takes a k no one uses.
	Seed uint64
	// Now is the schedule's clock, which the cloud's fake, its provider
	// and its VMs' boots run on.
	Now func() time.Time
}

// Fault is what one of a cloud's faults did, as the world counts it
// across clouds (Stats) and holds the collector to it.
type Fault struct {
	Kind FaultKind
	// Foreign are the resources the fault planted that belong to another
	// deployment or carry no deployment label: the collector must never
	// delete one.
	Foreign []string
}

// FaultKind is the kind of a cloud's fault the world counts beside the
// mock's of the same kind.
type FaultKind int

const (
	// FaultOther is counted among the cloud's faults only (a zone out of
	// capacity, an error answered, a lost answer, or a fault that found
	// nothing to act on).
	FaultOther FaultKind = iota
	// FaultLost is a VM of this deployment lost (deleted or terminated
	// by the cloud), FaultStopped one stopped.
	FaultLost
	FaultStopped
	// FaultNeverReady is a VM to come that will never serve,
	// FaultBootError one that will say it cannot (BootFaults).
	FaultNeverReady
	FaultBootError
	// FaultOtherDeployment is a VM (with its static address, at times) a
	// second deployment made on the same account, FaultUnlabelled a
	// managed VM without the deployment label (a release before the
	// label): Foreign names them.
	FaultOtherDeployment
	FaultUnlabelled
)

// PlantOther makes, with a second deployment's provider on the same
// account, the VM req asks for (and its static address, if req.StaticIP):
// a fault of kind FaultOtherDeployment naming both. When a fault of the
// cloud met the create, nothing was made (or the other deployment's own
// collector would take it) and the fault is FaultOther.
func PlantOther(other provider.Provider, req provider.CreateRequest) Fault {
	ctx := context.Background()
	id, err := other.Create(ctx, req)
	if err != nil {
		return Fault{Kind: FaultOther}
	}
	f := Fault{Kind: FaultOtherDeployment, Foreign: []string{id}}
	if in, err := other.Get(ctx, id); err == nil && in.AddressID != "" {
		f.Foreign = append(f.Foreign, in.AddressID)
	}
	return f
}

// CloudStats are what a schedule did with one simulated cloud.
type CloudStats struct {
	// Type is the cloud's provider type.
	Type string
	// Proxies are the proxies whose spec the cloud took; Faults, the
	// cloud's faults injected; ReadyAtEnd, its proxies Ready when the
	// invariants were checked (the others deleted by their users, or
	// Failed after their boots failed).
	Proxies, Faults, ReadyAtEnd int
}

// Cloud returns the stats of the cloud of provider type typ (zero when
// the schedules had no such cloud).
func (s Stats) Cloud(typ string) CloudStats {
	for _, c := range s.Clouds {
		if c.Type == typ {
			return c
		}
	}
	return CloudStats{Type: typ}
}

// cloudFault counts a fault the i-th cloud injected, and keeps what it
// planted of another deployment.
func (w *World) cloudFault(i int, f Fault) {
	w.stats.Clouds[i].Faults++
	switch f.Kind {
	case FaultLost:
		w.stats.Lost++
	case FaultStopped:
		w.stats.Stopped++
	case FaultNeverReady:
		w.stats.NeverReady++
	case FaultBootError:
		w.stats.BootErrors++
	case FaultOtherDeployment:
		w.stats.OtherDeployment++
	case FaultUnlabelled:
		w.stats.Unlabelled++
	}
	w.foreign = append(w.foreign, f.Foreign...)
}

// cloudOf is the cloud whose providerID id is, or nil (the mock's).
func (w *World) cloudOf(id string) Cloud {
	for _, c := range w.clouds {
		if c.Owns(id) {
			return c
		}
	}
	return nil
}

// offer offers a new proxy's spec to the clouds in their order, until
// one takes it.
func (w *World) offer(spec *proxy.Spec) {
	for i, c := range w.clouds {
		if c.Offer(spec) {
			w.stats.Clouds[i].Proxies++
			return
		}
	}
}

// isCloudType reports whether typ is a simulated cloud's provider type
// (not the mock's).
func (w *World) isCloudType(typ string) bool {
	return slices.ContainsFunc(w.clouds, func(c Cloud) bool { return c.Type() == typ })
}
