// Package mock is an in-memory provider for local runs and tests. It keeps
// the provider contract exactly — idempotent Create by name, ErrNotFound,
// idempotent Delete, labels and CreatedAt — and is deterministic: time comes
// from an injected clock, IPs from fixed sequences in the documentation
// ranges, and nothing is random. Instances go Provisioning → Running once
// the configured provisioning delay has passed on that clock, and then, as
// a real VM's startup script does, call home (Options.CallHome) once.
//
// It also behaves as Compute does where the reconciler must cope: a
// request id seen within the hour is ignored (the first answer comes back
// and nothing is made); a placement with only a region gets one of its
// zones (-a, -b, -c) chosen from the uid; a create can be accepted and fail
// later, as a stockout or a quota does, which Get then reports (Op
// "create"); and a Static request keeps the proxy's address across its VMs,
// listed once unused as a Terminated instance of its own kind.
//
// It is a provider.Reconfigurer: a VM takes a new owner and engine
// configuration in place, and reports the new generation and calls home
// after Options.ReconfigureDelay, as a VM's agent does; or, as an agent
// that cannot serve it does, refuses it, keeps serving the one before,
// and says so (Instance.RefusedGeneration) and calls home.
//
// Faults are injected on purpose (faults.go) so that reconcile, GC and the
// simulation can exercise every error path without a cloud. The files:
// mock.go (types), calls.go (the contract's methods), reconfigure.go
// (Reconfigure), addresses.go (static addresses), faults.go (what tests
// make happen), serve.go (the proxy engine a VM of the local stack runs
// on loopback).
package mock

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/provider"
)

// Type is the registry type of this provider.
const Type = "mock"

// The prefixes of the providerIDs this provider issues: a VM's, a static
// address's.
const (
	idPrefix      = "mock://"
	addressPrefix = "mock-address://"
)

// RequestIDWindow is how long a request id is remembered, as Compute
// remembers one.
const RequestIDWindow = time.Hour

// Method names a provider method, for fault injection and call counts.
type Method string

const (
	MethodCreate    Method = "Create"
	MethodGet       Method = "Get"
	MethodDelete    Method = "Delete"
	MethodListByTag Method = "ListByTag"
	// MethodReconfigure is provider.Reconfigurer's method.
	MethodReconfigure Method = "Reconfigure"
)

// Options configure a Provider. The zero value is valid: wall clock, no
// provisioning delay (instances are Running on the first Get after Create),
// no call-home.
type Options struct {
	// Clock is the time source; nil is the wall clock. Tests pass a fake.
	Clock clock.Clock
	// ProvisioningDelay is how long an instance stays Provisioning after
	// Create, measured on Clock.
	ProvisioningDelay time.Duration
	// ReconfigureDelay is how long a running instance takes to apply a
	// Reconfigure: then it reports the new generation and calls home, as
	// a VM's agent does once the metadata server has shown it the change
	// and its self-test passed again. Measured on Clock.
	ReconfigureDelay time.Duration
	// DeletionDelay is how long a deleted instance is still there, Stopped,
	// before it is gone, as a cloud VM takes a while to go.
	DeletionDelay time.Duration
	// Deployment is the deployment this provider acts for
	// (provider.LabelDeployment); empty is provider.DefaultDeployment.
	// InDeployment gives another deployment's view of the same project.
	Deployment string
	// CallHome, if set, is called once for each new instance that boots
	// the default bootstrap (no CloudInit) when its provisioning delay
	// ends, as a real VM's startup script publishes {namespace, name, uid}
	// when its self-test passes. The composition root wires it to the
	// call-home topic, so the local stack takes the production path.
	CallHome func(CallHome)
	// Serve, if set, runs the proxy engine for each instance, on loopback
	// (serve.go): the local stack's proxies then really serve.
	Serve *Serve
}

// CallHome is what a VM says when its startup script's self-test ends:
// which proxy it serves, and, when the test failed, why.
type CallHome struct {
	Namespace, Name, UID string
	// Instance is the VM's own name, which its identity token names.
	Instance string
	// Pool is a warm pool's VM's pool (CreateRequest.Pool), until a
	// Reconfigure gives the VM to a proxy.
	Pool string
	// BootError is empty when the VM is ready.
	BootError string
}

// instance is the stored state of one VM.
type instance struct {
	inst provider.Instance
	name string
	// unmanaged is set for a foreign instance not labelled
	// LabelManaged=LabelManagedYes. The other two labels are inst's UID
	// and Deployment: an instance carries no map of its own, so that a
	// fleet of them costs what the collector's benchmark can afford.
	unmanaged bool
	// neverReady keeps it Provisioning with nothing reported (NeverReady).
	neverReady bool
	seq        int
	// req is the request that created it: what a real VM would boot with.
	req provider.CreateRequest
	// createErr, for a create accepted and failed since, is what Get says
	// of it; such an instance does not exist otherwise.
	createErr error
	// bootError is what its bootstrap reported (FailBoot).
	bootError string
	// address is its static address, if it has one.
	address *address
	// console is what its serial console would show after the line of
	// its creation (Console).
	console []string
	// goneAt, once it is deleted, is when it is gone.
	goneAt time.Time
	// served is its running engine, with Options.Serve.
	served *served
	// reconfigs counts its Reconfigures; pending, after one, is the
	// generation it reports from pendingAt on (Options.ReconfigureDelay),
	// or, when refusal is set, the one it reports it refused, with that
	// reason, still serving the one before (RefuseReconfigures).
	reconfigs int
	pending   *int64
	pendingAt time.Time
	refusal   string
}

// fault is an injected failure of the next calls to one method.
type fault struct {
	remaining int
	err       error
	// takeEffect makes the call do its work before it fails, like a Create
	// whose response was lost.
	takeEffect bool
}

// asyncFailure makes creates (in zone, or any) accepted and failed later.
type asyncFailure struct {
	zone      string
	remaining int // < 0: every create in zone
	err       *provider.Error
}

// seenRequest is the answer to a request id, and when it was first seen.
type seenRequest struct {
	id string
	at time.Time
}

// Provider is the mock provider: one deployment's view of a project. It is
// safe for concurrent use.
type Provider struct {
	*project
	deployment string
}

// project is what a cloud project holds: the VMs and addresses of every
// deployment that shares it, and the faults planted in it.
type project struct {
	clock            clock.Clock
	delay            time.Duration
	reconfigureDelay time.Duration
	deletionDelay    time.Duration
	callHome         func(CallHome)

	mu        sync.Mutex
	instances map[string]*instance // by name
	addresses map[string]*address  // by name
	requests  map[string]seenRequest
	nextSeq   int
	faults    map[Method][]*fault
	async     []*asyncFailure
	latency   map[Method]time.Duration
	calls     map[Method]int
	// deleted holds the deleted instances until they are gone, earliest
	// first (purge).
	deleted deletions
	// visits counts the records calls looked at (Visits).
	visits int
	// neverReady and skipCallHome count the next new instances that will
	// never be ready, or that will be ready without calling home.
	neverReady, skipCallHome int
	// refuse counts the next reconfigurations of running instances their
	// agent refuses, for refuseReason (RefuseReconfigures).
	refuse       int
	refuseReason string
	// serveOpts is Options.Serve; nextServed and nextStatic walk the
	// loopback ranges the served instances' addresses come from.
	serveOpts              *Serve
	nextServed, nextStatic int
}

// New returns an empty mock provider.
func New(opts Options) *Provider {
	clk := opts.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	deployment := opts.Deployment
	if deployment == "" {
		deployment = provider.DefaultDeployment
	}
	return &Provider{deployment: deployment, project: &project{
		clock:            clk,
		delay:            opts.ProvisioningDelay,
		reconfigureDelay: opts.ReconfigureDelay,
		deletionDelay:    opts.DeletionDelay,
		callHome:         opts.CallHome,
		serveOpts:        opts.Serve,
		instances:        map[string]*instance{},
		addresses:        map[string]*address{},
		requests:         map[string]seenRequest{},
		faults:           map[Method][]*fault{},
		latency:          map[Method]time.Duration{},
		calls:            map[Method]int{},
	}}
}

// InDeployment returns a provider of the same project acting for another
// deployment: it sees the same VMs and addresses, creates its own with its
// name, and lists only its own and the unlabelled ones, as a second
// deployment sharing a cloud project would. Faults and call counts are the
// project's, shared by every view.
func (p *Provider) InDeployment(name string) *Provider {
	return &Provider{project: p.project, deployment: name}
}

var (
	_ provider.Provider      = (*Provider)(nil)
	_ provider.ConsoleReader = (*Provider)(nil)
	_ provider.Reconfigurer  = (*Provider)(nil)
)

// zonesOf are the zones of a region, as the mock has them.
func zonesOf(region string) []string {
	return []string{region + "-a", region + "-b", region + "-c"}
}

// parseID checks that providerID is one this provider issued and returns
// the name in it and whether it names an address.
func parseID(providerID string) (name string, isAddress bool, err error) {
	if name, ok := strings.CutPrefix(providerID, addressPrefix); ok && name != "" {
		return name, true, nil
	}
	name, ok := strings.CutPrefix(providerID, idPrefix)
	if !ok || name == "" {
		return "", false, provider.NewError(provider.KindPermanent, "parse", providerID,
			fmt.Errorf("providerID %q is not a mock ID: want %s<name> or %s<name>", providerID, idPrefix, addressPrefix))
	}
	return name, false, nil
}

// documentation ranges (RFC 5737), so no mock address is ever routable.
var ranges = []netip.Prefix{
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
}

// addressFor returns the seq-th address of the documentation ranges, hosts
// .1 to .254 of each in turn. There are 762 of them; past that the sequence
// starts again, so a mock running more than 762 instances at once has
// repeated IPs — harmless, since nothing ever connects to them.
func addressFor(seq int) netip.Addr {
	n := (seq - 1) % (254 * len(ranges))
	a := ranges[n/254].Addr().As4()
	a[3] = byte(n%254 + 1)
	return netip.AddrFrom4(a)
}
