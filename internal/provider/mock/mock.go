// Package mock is an in-memory provider for local runs and tests. It keeps
// the provider contract exactly — idempotent Create by name, ErrNotFound,
// idempotent Delete, labels and CreatedAt — and is deterministic: time comes
// from an injected clock, IPs from a fixed sequence in the documentation
// ranges, and nothing is random. Instances go Provisioning → Running once
// the configured provisioning delay has passed on that clock, and then, as
// a real VM's startup script does, call home (Options.CallHome) once.
//
// Faults are injected on purpose (FailNext, SetLatency, Lose, Stop,
// FailBoot, NeverReady, SkipCallHome) so that reconcile, GC and the
// simulation can exercise every error path without a cloud.
package mock

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/provider"
)

// Type is the registry type of this provider.
const Type = "mock"

// idPrefix starts every providerID this provider issues.
const idPrefix = "mock://"

// Method names a provider method, for fault injection and call counts.
type Method string

const (
	MethodCreate    Method = "Create"
	MethodGet       Method = "Get"
	MethodDelete    Method = "Delete"
	MethodListByTag Method = "ListByTag"
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
	// DeletionDelay is how long a deleted instance is still there, Stopped,
	// before it is gone, as a cloud VM takes a while to go.
	DeletionDelay time.Duration
	// CallHome, if set, is called once for each new instance when its
	// provisioning delay ends, as a real VM's startup script publishes
	// {namespace, name, uid} when its self-test passes. The composition
	// root wires it to the reconcile topic, so the local stack takes the
	// production path.
	CallHome func(CallHome)
}

// CallHome is what a VM says when its startup script's self-test ends:
// which proxy it serves, and, when the test failed, why.
type CallHome struct {
	Namespace, Name, UID string
	// BootError is empty when the VM is ready.
	BootError string
}

// instance is the stored state of one VM.
type instance struct {
	inst   provider.Instance
	name   string
	labels map[string]string
	seq    int
	// req is the request that created it: what a real VM would boot with.
	req provider.CreateRequest
	// bootError is what its bootstrap reported (FailBoot); neverReady
	// keeps it Provisioning with nothing reported (NeverReady).
	bootError  string
	neverReady bool
	// console is what its serial console would show.
	console []string
	// goneAt, once it is deleted, is when it is gone.
	goneAt time.Time
}

// fault is an injected failure of the next calls to one method.
type fault struct {
	remaining int
	err       error
	// takeEffect makes the call do its work before it fails, like a Create
	// whose response was lost.
	takeEffect bool
}

// Provider is the mock provider. It is safe for concurrent use.
type Provider struct {
	clock         clock.Clock
	delay         time.Duration
	deletionDelay time.Duration
	callHome      func(CallHome)

	mu        sync.Mutex
	instances map[string]*instance // by name
	nextSeq   int
	faults    map[Method][]*fault
	latency   map[Method]time.Duration
	calls     map[Method]int
	// neverReady and skipCallHome count the next new instances that will
	// never be ready, or that will be ready without calling home.
	neverReady, skipCallHome int
}

// New returns an empty mock provider.
func New(opts Options) *Provider {
	clk := opts.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	return &Provider{
		clock:         clk,
		delay:         opts.ProvisioningDelay,
		deletionDelay: opts.DeletionDelay,
		callHome:      opts.CallHome,
		instances:     map[string]*instance{},
		faults:        map[Method][]*fault{},
		latency:       map[Method]time.Duration{},
		calls:         map[Method]int{},
	}
}

var (
	_ provider.Provider      = (*Provider)(nil)
	_ provider.ConsoleReader = (*Provider)(nil)
)

// Create makes an instance named req.Name, or returns the existing one's ID
// if an instance of that name exists (the contract's idempotency by name).
func (p *Provider) Create(ctx context.Context, req provider.CreateRequest) (string, error) {
	if err := p.enter(ctx, MethodCreate); err != nil {
		return "", err
	}
	if req.Name == "" {
		return "", provider.NewError(provider.KindPermanent, "create", "", fmt.Errorf("request has no name"))
	}
	p.mu.Lock()
	p.purge()
	f := p.takeFault(MethodCreate)
	if f != nil && !f.takeEffect {
		p.mu.Unlock()
		return "", f.err
	}
	id := idPrefix + req.Name
	in, existed := p.instances[req.Name]
	callHome := false
	if !existed {
		p.nextSeq++
		in = &instance{
			name: req.Name,
			seq:  p.nextSeq,
			req:  req,
			labels: map[string]string{
				provider.LabelManaged: provider.LabelManagedYes,
				provider.LabelUID:     req.UID,
			},
			inst: provider.Instance{
				ID:        id,
				State:     provider.StateProvisioning,
				UID:       req.UID,
				CreatedAt: p.clock.Now(),
			},
			console: []string{"mock: instance " + req.Name + " created; booting"},
		}
		if p.neverReady > 0 {
			p.neverReady--
			in.neverReady = true
		}
		callHome = p.callHome != nil && !in.neverReady
		if callHome && p.skipCallHome > 0 {
			p.skipCallHome--
			callHome = false
		}
		p.instances[req.Name] = in
	}
	p.mu.Unlock()
	if callHome {
		// Outside the lock: a fake clock calls back at once for no delay.
		p.clock.AfterFunc(p.delay, func() { p.ready(in) })
	}
	if f != nil {
		return "", f.err
	}
	return id, nil
}

// ready calls home for an instance whose boot has ended, unless it is gone
// or failed meanwhile: a VM calls home only from a self-test that passed.
func (p *Provider) ready(in *instance) {
	p.mu.Lock()
	cur, ok := p.instances[in.name]
	live := ok && cur == in && in.bootError == "" && in.inst.State != provider.StateStopped && in.inst.State != provider.StateTerminated
	if live {
		in.console = append(in.console, "egress-bootstrap: proxy ready on port "+fmt.Sprint(in.req.Port))
	}
	p.mu.Unlock()
	if live {
		p.callHome(CallHome{Namespace: in.req.Namespace, Name: in.req.ProxyName, UID: in.req.UID})
	}
}

// Get returns the instance's current state, advancing it to Running once the
// provisioning delay has passed.
func (p *Provider) Get(ctx context.Context, providerID string) (*provider.Instance, error) {
	if err := p.enter(ctx, MethodGet); err != nil {
		return nil, err
	}
	name, err := parseID(providerID)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.purge()
	if f := p.takeFault(MethodGet); f != nil {
		return nil, f.err
	}
	in, ok := p.instances[name]
	if !ok {
		return nil, provider.NewError(provider.KindNotFound, "get", providerID, provider.ErrNotFound)
	}
	p.advance(in)
	out := in.inst
	return &out, nil
}

// Console returns what the instance's serial console would show: its
// creation and what its bootstrap reported.
func (p *Provider) Console(ctx context.Context, providerID string) (string, error) {
	name, err := parseID(providerID)
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.purge()
	in, ok := p.instances[name]
	if !ok {
		return "", provider.NewError(provider.KindNotFound, "console", providerID, provider.ErrNotFound)
	}
	return strings.Join(in.console, "\n") + "\n", nil
}

// Delete removes the instance. Deleting one that does not exist succeeds.
func (p *Provider) Delete(ctx context.Context, providerID string) error {
	if err := p.enter(ctx, MethodDelete); err != nil {
		return err
	}
	name, err := parseID(providerID)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.takeFault(MethodDelete)
	if f != nil && !f.takeEffect {
		return f.err
	}
	if in, ok := p.instances[name]; ok && in.goneAt.IsZero() {
		// It stops, and is gone once the deletion delay has passed.
		in.goneAt = p.clock.Now().Add(p.deletionDelay)
		in.inst.State, in.inst.IP = provider.StateStopped, ""
	}
	p.purge()
	if f != nil {
		return f.err
	}
	return nil
}

// purge removes the deleted instances whose deletion delay has passed.
// p.mu must be held.
func (p *Provider) purge() {
	now := p.clock.Now()
	for name, in := range p.instances {
		if !in.goneAt.IsZero() && !now.Before(in.goneAt) {
			delete(p.instances, name)
		}
	}
}

// ListByTag returns every instance labelled LabelManaged=LabelManagedYes,
// ordered by creation.
func (p *Provider) ListByTag(ctx context.Context) ([]provider.Instance, error) {
	if err := p.enter(ctx, MethodListByTag); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if f := p.takeFault(MethodListByTag); f != nil {
		return nil, f.err
	}
	return p.snapshot(true), nil
}

// Instances returns every instance the provider holds, managed or not,
// ordered by creation. It is the read-only view the local stack serves at
// /debug/instances; it makes no call count and triggers no fault.
func (p *Provider) Instances() []provider.Instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.snapshot(false)
}

func (p *Provider) snapshot(managedOnly bool) []provider.Instance {
	p.purge()
	list := make([]*instance, 0, len(p.instances))
	for _, in := range p.instances {
		if managedOnly && in.labels[provider.LabelManaged] != provider.LabelManagedYes {
			continue
		}
		list = append(list, in)
	}
	slices.SortFunc(list, func(a, b *instance) int { return a.seq - b.seq })
	out := make([]provider.Instance, len(list))
	for i, in := range list {
		p.advance(in)
		out[i] = in.inst
	}
	return out
}

// advance moves a Provisioning instance to Running once its delay is over,
// and gives it its address then, as a cloud assigns the external IP when the
// VM starts; an instance whose bootstrap failed or hangs stays
// Provisioning.
func (p *Provider) advance(in *instance) {
	if in.inst.State != provider.StateProvisioning || in.bootError != "" || in.neverReady {
		return
	}
	if p.clock.Now().Sub(in.inst.CreatedAt) < p.delay {
		return
	}
	in.inst.State = provider.StateRunning
	in.inst.IP = addressFor(in.seq).String()
}

// enter counts the call, honours cancellation and waits out injected latency.
func (p *Provider) enter(ctx context.Context, m Method) error {
	p.mu.Lock()
	p.calls[m]++
	lat := p.latency[m]
	p.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("mock %s: %w", strings.ToLower(string(m)), err)
	}
	if lat <= 0 {
		return nil
	}
	if err := p.clock.Sleep(ctx, lat); err != nil {
		return fmt.Errorf("mock %s: %w", strings.ToLower(string(m)), err)
	}
	return nil
}

// takeFault pops one use of the first fault queued for m. p.mu must be held.
func (p *Provider) takeFault(m Method) *fault {
	q := p.faults[m]
	if len(q) == 0 {
		return nil
	}
	f := q[0]
	f.remaining--
	if f.remaining <= 0 {
		p.faults[m] = q[1:]
	}
	return f
}

// FailNext makes the next n calls of m fail with err without doing anything.
// Faults queue: a second FailNext applies after the first is used up.
func (p *Provider) FailNext(m Method, n int, err error) {
	p.addFault(m, &fault{remaining: n, err: err})
}

// FailNextAfterEffect makes the next n calls of m do their work and then
// return err, like a Create whose response was lost on the way back.
// Get and ListByTag have no effect to take, so for them it is FailNext.
func (p *Provider) FailNextAfterEffect(m Method, n int, err error) {
	p.addFault(m, &fault{remaining: n, err: err, takeEffect: true})
}

func (p *Provider) addFault(m Method, f *fault) {
	if f.remaining <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults[m] = append(p.faults[m], f)
}

// SetLatency makes every call of m wait d (or until its context ends) before
// it does anything. Zero removes the latency.
func (p *Provider) SetLatency(m Method, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency[m] = d
}

// Lose makes an instance vanish without a Delete, as a VM reclaimed or
// deleted by hand outside the system does. It reports whether it existed.
func (p *Provider) Lose(providerID string) bool {
	name, err := parseID(providerID)
	if err != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.instances[name]
	delete(p.instances, name)
	return ok
}

// Stop puts an instance in the given state (StateStopped or
// StateTerminated), as a VM stopped by hand or preempted is. It reports
// whether the instance existed.
func (p *Provider) Stop(providerID string, state provider.InstanceState) bool {
	name, err := parseID(providerID)
	if err != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	in, ok := p.instances[name]
	if ok {
		in.inst.State = state
		in.inst.IP = ""
	}
	return ok
}

// FailBoot makes an instance's bootstrap report that the proxy cannot
// serve, with reason, as a failed self-test (at the first boot, or after a
// reboot of a VM that served) does: it is Provisioning with that BootError
// from now on, and calls home to say so. It reports whether the instance
// exists.
func (p *Provider) FailBoot(providerID, reason string) bool {
	name, err := parseID(providerID)
	if err != nil {
		return false
	}
	p.mu.Lock()
	in, ok := p.instances[name]
	if ok {
		in.bootError = reason
		in.inst.State, in.inst.IP, in.inst.BootError = provider.StateProvisioning, "", reason
		in.console = append(in.console, "egress-bootstrap: FAILED: "+reason)
	}
	p.mu.Unlock()
	if ok && p.callHome != nil {
		p.callHome(CallHome{Namespace: in.req.Namespace, Name: in.req.ProxyName, UID: in.req.UID, BootError: reason})
	}
	return ok
}

// NeverReady makes the next n new instances hang in their boot: they stay
// Provisioning, report nothing and never call home, as a VM whose startup
// script never ran would.
func (p *Provider) NeverReady(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.neverReady += n
}

// SkipCallHome makes the next n new instances become ready without calling
// home, as a VM whose message was lost: only the reconciler's sweep finds
// them.
func (p *Provider) SkipCallHome(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.skipCallHome += n
}

// AddForeign plants an instance that this system did not create, with the
// given labels, as another tool sharing the project would. Tests use it to
// check that only instances labelled managed are listed and collected.
func (p *Provider) AddForeign(name string, labels map[string]string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextSeq++
	id := idPrefix + name
	p.instances[name] = &instance{
		name:   name,
		seq:    p.nextSeq,
		labels: maps.Clone(labels),
		inst: provider.Instance{
			ID:        id,
			State:     provider.StateRunning,
			IP:        addressFor(p.nextSeq).String(),
			UID:       labels[provider.LabelUID],
			CreatedAt: p.clock.Now(),
		},
	}
	return id
}

// CreateRequest returns the request that created the instance, for tests
// that check what a VM would boot with. It makes no call count.
func (p *Provider) CreateRequest(providerID string) (provider.CreateRequest, bool) {
	name, err := parseID(providerID)
	if err != nil {
		return provider.CreateRequest{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	in, ok := p.instances[name]
	if !ok {
		return provider.CreateRequest{}, false
	}
	return in.req, true
}

// Calls returns how many times m was called, failed calls included.
func (p *Provider) Calls(m Method) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[m]
}

// parseID checks that providerID is one this provider issued.
func parseID(providerID string) (string, error) {
	name, ok := strings.CutPrefix(providerID, idPrefix)
	if !ok || name == "" {
		return "", provider.NewError(provider.KindPermanent, "parse", providerID,
			fmt.Errorf("providerID %q is not a mock ID: want %s<name>", providerID, idPrefix))
	}
	return name, nil
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
