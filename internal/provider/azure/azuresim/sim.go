// Package azuresim is Azure's part of the simulation and the benchmark,
// over the ARM fake (azurefake): a sim.Cloud (the azure provider itself
// over the fake served in-process, through Microsoft's SDK for Go and its
// pollers, with Azure's faults) and the cloud's phase of make bench
// (Bench: ARM requests per proxy lifecycle, by route, the collector's
// listing of 1,000 VMs, and a live change's PATCH, over the fake).
// Both play the VM side: a VM serves once booted, what its userData says
// now. They are for internal/clouds/cloudsdev's list, whose line for
// them waits on three seeds of make sim (docs/development/simulation.md);
// nothing in production imports this package.
package azuresim

import (
	"context"
	"encoding/base64"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	azcloud "github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v8"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v7"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/azure"
	"github.com/egress-proxies/egress/internal/provider/azure/azurefake"
	"github.com/egress-proxies/egress/internal/provider/vmside"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/sim"
)

// Cloud is Azure in the simulation: the azure provider itself, over the
// ARM fake served in-process (no socket), through the SDK's clients,
// retry policy and pollers. Its VMs are Ready only once the provider's
// Prober sees them serve, and do not call home; a Static proxy's public
// IP outlives each of its VMs and is the next one's. The simulation's
// world hands a cloud no Reconfigure (sim.Cloud), so a change of
// configuration gets a new VM here; what a VM serves is read from its
// userData as it is now, as its agent reads IMDS, so a PATCH of it would
// be served in place. A new proxy is an azure one a quarter of the time
// the clouds before it in the list left it to the mock.
type Cloud struct {
	now  func() time.Time
	rng  *rand.Rand
	fake *azurefake.Server
	// wire is the transport of this deployment's clients: the fake
	// in-process, with the crash a fault arms.
	wire *wire
	// prov is this deployment's provider; mk makes it again, as a new
	// function instance would after a crash (its resume tokens lost).
	prov *azure.Provider
	mk   func() *azure.Provider
	// other is a second deployment's azure provider in the same
	// resource group, over a wire of its own.
	other *azure.Provider
	boot  time.Duration
	// renders are what the Renderer made, by the line it wrote into the
	// user-data: the request each VM's customData (its create) and
	// userData (its create, or the last PATCH) were made for, and when.
	renders map[string]rendered
	// BootFaults are by VM (incarnation: every VM of a proxy has the
	// proxy's providerID).
	sim.BootFaults
	nextSettle time.Time
	// full are the locations and zones ("westeurope/1", "eastus/") out
	// of capacity while faults are on.
	full []string
	// slowOps is set while long-running operations take several polls.
	slowOps bool
}

// rendered is a rendering of the Renderer's: the line that names it, the
// request, and when.
type rendered struct {
	line string
	req  provider.CreateRequest
	at   time.Time
}

var _ sim.Cloud = (*Cloud)(nil)

// The subscription, tenant and resource group of the simulation's Azure.
const (
	subscription = "5e1f0000-0000-4000-a000-00000000a2e0"
	tenant       = "5e1f0000-0000-4000-a000-00000000a2e1"
	group        = "egress-sim"
)

// stream is the seed's stream Azure draws from: one no one else uses
// (the world's are 7, 23, 29, 31 and 37, hetzner's 31, aws's 37,
// digitalocean's 41).
const stream = 43

// locations are the locations of the simulated azure proxies: both have
// three zones, so a zone out of capacity moves a proxy to the next one.
var locations = []string{"westeurope", "eastus"}

// zones are the ARM zones of every location.
var zones = []string{"1", "2", "3"}

// New builds Azure for one schedule. Its draws come from a stream of its
// own (the seed's stream 43), so that the other clouds' and the world's
// draws are what they were without it.
func New(env sim.Env) sim.Cloud {
	a := &Cloud{now: env.Now, rng: rand.New(rand.NewPCG(env.Seed, stream)), renders: map[string]rendered{},
		BootFaults: sim.NewBootFaults()}
	a.fake = azurefake.NewHandler(subscription, tenant)
	a.fake.SetClock(env.Now)
	a.fake.AcceptToken(azure.LocalToken)
	subnets := a.fake.SeedNetwork(group, locations...)
	a.boot = time.Duration(5+a.rng.IntN(60)) * time.Second
	mk := func(deployment string, w *wire) *azure.Provider {
		clients, err := newClients(a.fake.Endpoint(), w, simRetry)
		if err != nil {
			panic(err)
		}
		p, err := azure.New(clients, azure.Config{SubscriptionID: subscription, ResourceGroup: group, Deployment: deployment,
			Subnets: subnets, Renderer: vmside.RendererFunc(a.render), Prober: vmside.ProberFunc(a.probe), Now: env.Now,
			// The provider's waits between two polls, without their
			// time: the simulation's time is its clock's.
			PollEvery: time.Nanosecond})
		if err != nil {
			panic(err)
		}
		return p
	}
	a.wire = &wire{next: a.fake.HTTPClient()}
	a.mk = func() *azure.Provider { return mk(provider.DefaultDeployment, a.wire) }
	a.prov, a.other = a.mk(), mk("other", &wire{next: a.fake.HTTPClient()})
	return a
}

// simRetry is the provider's retry policy (azure.Retry) without its
// sleeps: the attempts and the cap on a Retry-After it waits out are
// the provider's, its backoff a nanosecond, and the wire takes the wait
// out of an answer the policy would wait for, since the simulation's
// time is its clock's. (A RetryDelay of 0 is azcore's default, 800 ms,
// and a negative one makes its backoff overflow to the cap.)
var simRetry = policy.RetryOptions{MaxRetries: azure.Retry.MaxRetries, RetryDelay: time.Nanosecond, MaxRetryDelay: azure.Retry.MaxRetryDelay}

// newClients makes the provider's clients as azure.NewClients does, over
// transport, with the retry policy retry.
func newClients(endpoint string, transport policy.Transporter, retry policy.RetryOptions) (azure.Clients, error) {
	opts := &arm.ClientOptions{ClientOptions: azcore.ClientOptions{
		Retry:     retry,
		Transport: transport,
		Cloud: azcloud.Configuration{Services: map[azcloud.ServiceName]azcloud.ServiceConfiguration{
			azcloud.ResourceManager: {Endpoint: endpoint, Audience: azcloud.AzurePublic.Services[azcloud.ResourceManager].Audience},
		}},
	}}
	var c azure.Clients
	var err error
	if c.VMs, err = armcompute.NewVirtualMachinesClient(subscription, localToken{}, opts); err != nil {
		return c, err
	}
	if c.Disks, err = armcompute.NewDisksClient(subscription, localToken{}, opts); err != nil {
		return c, err
	}
	if c.NICs, err = armnetwork.NewInterfacesClient(subscription, localToken{}, opts); err != nil {
		return c, err
	}
	c.IPs, err = armnetwork.NewPublicIPAddressesClient(subscription, localToken{}, opts)
	return c, err
}

// localToken is the credential of the provider over a fake: it sends
// azure.LocalToken, which the fake takes (AcceptToken), and asks no one.
type localToken struct{}

func (localToken) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: azure.LocalToken, ExpiresOn: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)}, nil
}

// Type is azure.Type.
func (a *Cloud) Type() string { return azure.Type }

// Provider is this deployment's azure provider over the fake.
func (a *Cloud) Provider() provider.Provider { return a.prov }

// render is the Renderer: the user-data it makes names the rendering, so
// that what a VM's customData and userData hold says what it was made or
// changed to serve.
func (a *Cloud) render(req provider.CreateRequest) (string, error) {
	line := "# sim rendering " + strconv.Itoa(len(a.renders)+1)
	a.renders[line] = rendered{line: line, req: req, at: a.now()}
	return "#cloud-config\n" + line + "\n", nil
}

// renderingOf is the rendering a VM's customData or userData (base64)
// holds.
func (a *Cloud) renderingOf(b64 string) (rendered, bool) {
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return rendered{}, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if r, ok := a.renders[line]; ok {
			return r, true
		}
	}
	return rendered{}, false
}

// vm is a VM of the fake as the VM side sees it.
type vm struct {
	azurefake.VM
	id      string // its providerID
	address string // its public IP's address, "" for none
	// created is when its create rendered its customData; serves, what
	// its userData says it serves now.
	created time.Time
	serves  provider.CreateRequest
	// vm names this VM of its providerID, for its boot faults: its
	// providerID and its customData's rendering.
	vm string
}

// incarnation names a VM of a providerID: every VM of a proxy is named
// from its uid, and so has its providerID.
func incarnation(id string, custom rendered) string { return id + " " + custom.line }

// vms are the resource group's VMs.
func (a *Cloud) vms() []vm {
	var out []vm
	for _, name := range a.fake.Inventory(group)["virtualMachines"] {
		v, ok := a.fake.VM(group, name)
		if !ok {
			continue
		}
		x := vm{VM: v, id: "azure://" + v.ID}
		if ip, ok := a.fake.PublicIP(group, name+"-ip"); ok && ip.IPConfiguration != "" {
			x.address = ip.Address
		}
		if r, ok := a.renderingOf(v.CustomData); ok {
			x.created, x.vm = r.at, incarnation(x.id, r)
		}
		if r, ok := a.renderingOf(v.UserData); ok {
			x.serves = r.req
		}
		out = append(out, x)
	}
	return out
}

// probe is the Prober: a VM reached at its public IP answers once it has
// run for its boot time, with the generation its userData holds now (its
// agent reads IMDS), unless it never serves or cannot.
func (a *Cloud) probe(_ context.Context, ip string, _ int32, uid, _ string) (vmside.Status, error) {
	for _, v := range a.vms() {
		if v.address != ip || v.Tags[provider.LabelUID] != uid {
			continue
		}
		switch {
		case a.NeverReady(v.vm) || a.now().Sub(v.created) < a.boot:
			return vmside.Status{}, errors.New("connection refused")
		case a.BootError(v.vm) != "":
			return vmside.Status{Error: a.BootError(v.vm)}, nil
		case v.serves.Engine == nil:
			return vmside.Status{Error: "no engine configuration"}, nil
		}
		return vmside.Status{Ready: true, Generation: v.serves.Engine.Generation}, nil
	}
	return vmside.Status{}, errors.New("no route to host")
}

// Offer makes a new proxy's spec an azure one, a quarter of the time: a
// location, and a third of the time one of its zones.
func (a *Cloud) Offer(spec *proxy.Spec) bool {
	if a.rng.IntN(4) != 0 {
		return false
	}
	loc := locations[a.rng.IntN(len(locations))]
	spec.Provider = azure.Type
	spec.Placement = proxy.Placement{Region: loc}
	if a.rng.IntN(3) == 0 {
		spec.Placement.Zone = azure.Zones(loc)[a.rng.IntN(len(zones))]
	}
	return true
}

// Settle lets Azure finish what is in progress, every 15 s of the
// schedule: the operations nobody polled to their end (a VM's create,
// a delete) end.
func (a *Cloud) Settle(now time.Time) {
	if !now.Before(a.nextSettle) {
		a.fake.Settle()
		a.nextSettle = now.Add(15 * time.Second)
	}
}

// Finish lets Azure finish what it was asked, as it does by itself in
// seconds to minutes.
func (a *Cloud) Finish() { a.fake.Settle() }

// Created ends a crash the wire made in the create: the caller sees its
// call fail, and the next call runs on a new function instance, without
// the resume tokens the first kept (the next create finds what the first
// made by its names), or, for a call cut by its deadline, on the same
// one, which resumes the operation it kept the token of. It gives a VM whose create answered the boot faults
// that wait for one.
func (a *Cloud) Created(req provider.CreateRequest, id string, err error) error {
	if crashed, lost := a.wire.endCrash(); crashed {
		if lost {
			a.prov = a.mk()
		}
		return provider.NewError(provider.KindTransient, "create", req.Name, errors.New("the function instance crashed in the create"))
	}
	if err == nil {
		if v, ok := a.fake.VM(group, req.Name); ok {
			if r, ok := a.renderingOf(v.CustomData); ok {
				a.BootFaults.Created(incarnation(id, r))
			}
		}
	}
	return err
}

// Owns reports whether a providerID is an azure one: a VM's or a public
// IP's (or, for a residue, a NIC's, as Addresses names it).
func (a *Cloud) Owns(id string) bool { return strings.HasPrefix(id, "azure://") }

// nameOf is the resource type and name of an azure providerID.
func nameOf(id string) (typ, name string, ok bool) {
	rest, ok := strings.CutPrefix(id, "azure:///subscriptions/"+subscription+"/resourceGroups/"+group+"/providers/")
	if !ok {
		return "", "", false
	}
	i := strings.LastIndex(rest, "/")
	if i < 0 {
		return "", "", false
	}
	return rest[:i], rest[i+1:], true
}

// Instances are the resource group's VMs, of any deployment or none, as
// the provider reads them (outside the schedule), for the invariants.
func (a *Cloud) Instances() []provider.Instance {
	ctx := context.Background()
	var out []provider.Instance
	for _, v := range a.vms() {
		in := &provider.Instance{ID: v.id, UID: v.Tags[provider.LabelUID], Deployment: v.Tags[provider.LabelDeployment],
			CreatedAt: v.created, State: provider.StateProvisioning}
		switch v.ProvisioningState {
		case "Deleting":
			// What the collector sees of it.
			in.State = provider.StateTerminated
		case "Failed":
			// Failed to provision: the provider's next create deletes it.
			in.State = provider.StateStopped
		default:
			// An error armed while faults were on and met by no call
			// since answers this read, once for each armed: the
			// invariants read what Azure holds, so read again.
			for range 10 {
				got, err := a.prov.Get(ctx, v.id)
				if err == nil {
					in = got
					break
				}
			}
		}
		out = append(out, *in)
	}
	return out
}

// Addresses are every managed public IP and NIC of the resource group,
// held or not, with the uid, deployment and creation time their tags
// say: a Static proxy's IP kept between its VMs, and what a crash in a
// create left (an IP, a NIC, with no VM), which the collector must
// delete once no live proxy claims its uid. So a residue it never
// deletes is a leak the invariants see.
func (a *Cloud) Addresses() []provider.Instance {
	inv := a.fake.Inventory(group)
	var out []provider.Instance
	add := func(id string, tags map[string]string) {
		if tags[provider.LabelManaged] != provider.LabelManagedYes {
			return
		}
		created, _ := time.Parse(time.RFC3339, tags["egress-created"])
		out = append(out, provider.Instance{ID: "azure://" + id, UID: tags[provider.LabelUID], Deployment: tags[provider.LabelDeployment],
			CreatedAt: created, State: provider.StateTerminated})
	}
	for _, name := range inv["publicIPAddresses"] {
		if ip, ok := a.fake.PublicIP(group, name); ok {
			add(ip.ID, ip.Tags)
		}
	}
	for _, name := range inv["networkInterfaces"] {
		if nic, ok := a.fake.NIC(group, name); ok {
			add(nic.ID, nic.Tags)
		}
	}
	return out
}

// UID is the uid tag of what an azure providerID names, if it is there:
// a VM's, a public IP's, a NIC's; for the providerID of a VM that is not
// there, the uid of what a crash left of it (its NIC, its IP), which a
// Delete of that providerID takes.
func (a *Cloud) UID(id string) (string, bool) {
	typ, name, ok := nameOf(id)
	if !ok {
		return "", false
	}
	switch typ {
	case "Microsoft.Compute/virtualMachines":
		if v, ok := a.fake.VM(group, name); ok {
			return v.Tags[provider.LabelUID], true
		}
		if nic, ok := a.fake.NIC(group, name+"-nic"); ok && nic.VM == "" {
			return nic.Tags[provider.LabelUID], true
		}
		if ip, ok := a.fake.PublicIP(group, name+"-ip"); ok && ip.IPConfiguration == "" {
			return ip.Tags[provider.LabelUID], true
		}
	case "Microsoft.Network/publicIPAddresses":
		if ip, ok := a.fake.PublicIP(group, name); ok {
			return ip.Tags[provider.LabelUID], true
		}
	case "Microsoft.Network/networkInterfaces":
		if nic, ok := a.fake.NIC(group, name); ok {
			return nic.Tags[provider.LabelUID], true
		}
	}
	return "", false
}

// Request is the request of the rendering a VM's userData holds now:
// what it serves.
func (a *Cloud) Request(id string) (provider.CreateRequest, bool) {
	typ, name, ok := nameOf(id)
	if !ok || typ != "Microsoft.Compute/virtualMachines" {
		return provider.CreateRequest{}, false
	}
	v, ok := a.fake.VM(group, name)
	if !ok {
		return provider.CreateRequest{}, false
	}
	r, ok := a.renderingOf(v.UserData)
	return r.req, ok
}

// wire is the clients' transport: the fake in-process. It takes out of a
// throttled answer the wait the SDK's retry policy would sleep (a
// Retry-After within its cap, which the policy then retries at once;
// the simulation's time is its clock's), and plays a crash a fault armed
// in the next create: from its VM's NIC (or IP) PUT on, every request
// fails, as a function instance that died there sends none, until the
// create returns (Created).
type wire struct {
	next *http.Client
	mu   sync.Mutex
	// crashAfter is the kind of resource whose PUT the armed crash lets
	// through and then cuts; crashed is set once it did; lose says the
	// instance's memory (its resume tokens) goes with it.
	crashAfter    string
	crashed, lose bool
}

// Do sends r to the fake.
func (w *wire) Do(r *http.Request) (*http.Response, error) {
	w.mu.Lock()
	crashed := w.crashed
	w.mu.Unlock()
	if crashed {
		return nil, errors.New("connection reset: the function instance is gone")
	}
	resp, err := w.next.Do(r)
	if err != nil {
		return resp, err
	}
	w.mu.Lock()
	after := w.crashAfter
	w.mu.Unlock()
	if after != "" && r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/"+after+"/") {
		w.mu.Lock()
		w.crashed = true
		w.mu.Unlock()
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && time.Duration(s)*time.Second <= simRetry.MaxRetryDelay {
			resp.Header.Del("Retry-After")
		}
	}
	return resp, nil
}

// armCrash arms a crash in the next create, right after its PUT of a
// resource of kind (networkInterfaces, publicIPAddresses); lose says the
// instance dies, its resume tokens with it, rather than its call's
// deadline passing.
func (w *wire) armCrash(kind string, lose bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.crashAfter, w.crashed, w.lose = kind, false, lose
}

// endCrash disarms the crash, and reports whether it happened and whether
// the instance's memory went with it.
func (w *wire) endCrash() (crashed, lost bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	crashed, lost = w.crashed, w.crashed && w.lose
	w.crashAfter, w.crashed, w.lose = "", false, false
	return crashed, lost
}
