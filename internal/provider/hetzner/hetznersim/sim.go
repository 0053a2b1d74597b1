// Package hetznersim is Hetzner's part of the simulation and the
// benchmark, over the Hetzner fake: a sim.Cloud (the hetzner provider
// itself over the fake served in-process, with Hetzner's faults) and the
// cloud's phase of make bench (Bench: requests per proxy lifecycle and
// the collector's listing, over the fake on loopback). Both play the VM
// side: a server serves once booted. internal/clouds/cloudsdev lists
// them; nothing in production imports this package.
package hetznersim

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/hetzner"
	"github.com/egress-proxies/egress/internal/provider/hetzner/hetznerfake"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/sim"
)

// Cloud is Hetzner in the simulation: the hetzner provider itself, over
// the Hetzner fake served in-process. Its servers cannot be reconfigured
// (a change of configuration gets a new server), are Ready only once the
// provider's Prober sees them serve, and do not call home: the
// reconciler asks them every PollInterval while they boot
// (provider.Polled). A new proxy is a hetzner one a third of the time.
type Cloud struct {
	now  func() time.Time
	rng  *rand.Rand
	fake *hetznerfake.Server
	prov *hetzner.Provider
	// other is a second deployment's hetzner provider on the same project.
	other *hetzner.Provider
	boot  time.Duration
	// reqs are the create requests by server name, as the Renderer saw
	// them: what each server was made to serve.
	reqs map[string]provider.CreateRequest
	sim.BootFaults
	nextSettle time.Time
	// full are the locations out of capacity while faults are on.
	full []string
	// lostCreates is how many creates to come succeed and lose their
	// answer: the retry meets uniqueness_error and adopts the server.
	lostCreates int
}

var _ sim.Cloud = (*Cloud)(nil)

const token = "sim-token"

// locations are the locations of the network zone the simulated hetzner
// proxies use.
var locations = []string{"fsn1", "nbg1", "hel1"}

// New builds Hetzner for one schedule. Its draws come from a stream of
// its own (the seed's stream 31), as they did when the world held
// Hetzner itself, so that a seed's schedule is the one it was.
func New(env sim.Env) sim.Cloud {
	h := &Cloud{now: env.Now, rng: rand.New(rand.NewPCG(env.Seed, 31)), reqs: map[string]provider.CreateRequest{},
		BootFaults: sim.NewBootFaults()}
	h.fake = hetznerfake.NewHandler(token)
	h.fake.SetClock(env.Now)
	h.boot = time.Duration(5+h.rng.IntN(60)) * time.Second
	mk := func(deployment string) *hetzner.Provider {
		p, err := hetzner.New(hetzner.NewClient(token, h.fake.Endpoint(), h.fake.HTTPClient()), hetzner.Config{
			Deployment: deployment, Renderer: hetzner.RendererFunc(h.render), Prober: hetzner.ProberFunc(h.probe), Now: env.Now,
		})
		if err != nil {
			panic(err)
		}
		return p
	}
	h.prov, h.other = mk(provider.DefaultDeployment), mk("other")
	return h
}

// Type is hetzner.Type.
func (h *Cloud) Type() string { return hetzner.Type }

// Provider is this deployment's hetzner provider over the fake.
func (h *Cloud) Provider() provider.Provider { return h.prov }

// render is the Renderer: it records what the server is made to serve.
func (h *Cloud) render(req provider.CreateRequest) (string, error) {
	h.reqs[req.Name] = req
	return "#cloud-config\n# sim\n", nil
}

// probe is the Prober: a server answers once it has run for its boot
// time, with the generation it was made with, unless it never serves or
// cannot.
func (h *Cloud) probe(_ context.Context, ip string, _ int32, _, _ string) (hetzner.Status, error) {
	for _, sv := range h.fake.Servers() {
		if sv.PublicNet.IPv4.IP != ip || sv.Status != "running" {
			continue
		}
		id := "hcloud://" + strconv.FormatInt(sv.ID, 10)
		switch {
		case h.NeverReady(id) || h.now().Sub(sv.Created) < h.boot:
			return hetzner.Status{}, errors.New("connection refused")
		case h.BootError(id) != "":
			return hetzner.Status{Error: h.BootError(id)}, nil
		}
		req := h.reqs[sv.Name]
		if req.Engine == nil {
			return hetzner.Status{Error: "no engine configuration"}, nil
		}
		return hetzner.Status{Ready: true, Generation: req.Engine.Generation}, nil
	}
	return hetzner.Status{}, errors.New("no route to host")
}

// Offer makes a new proxy's spec a hetzner one, a third of the time.
func (h *Cloud) Offer(spec *proxy.Spec) bool {
	if h.rng.IntN(3) != 0 {
		return false
	}
	spec.Provider = hetzner.Type
	spec.Placement = proxy.Placement{Region: "eu-central"}
	if h.rng.IntN(3) == 0 {
		spec.Placement.Zone = locations[h.rng.IntN(len(locations))]
	}
	return true
}

// Settle lets Hetzner finish what is in progress, every 15 s of the
// schedule: servers boot, deleted ones go.
func (h *Cloud) Settle(now time.Time) {
	if !now.Before(h.nextSettle) {
		h.fake.Settle()
		h.nextSettle = now.Add(15 * time.Second)
	}
}

// Finish lets Hetzner finish what it was asked: it does so by itself, in
// seconds (a Primary IP is free to go once its server is gone).
func (h *Cloud) Finish() { h.fake.Settle() }

// Created loses the answer of a create, when a fault asked for it, and
// gives a server the boot faults that wait for one.
func (h *Cloud) Created(req provider.CreateRequest, id string, err error) error {
	if err == nil && h.lostCreates > 0 {
		h.lostCreates--
		return provider.NewError(provider.KindTransient, "create", req.Name, errors.New("the answer was lost"))
	}
	if err == nil {
		h.BootFaults.Created(id)
	}
	return err
}

// Owns reports whether a providerID is a hetzner one: a server's
// (hcloud://) or a Primary IP's (hcloud-primary-ip://).
func (h *Cloud) Owns(id string) bool { return strings.HasPrefix(id, "hcloud") }

// Instances are every server of the project, as the provider reads them
// (outside the schedule), for the invariants.
func (h *Cloud) Instances() []provider.Instance {
	ctx := context.Background()
	var out []provider.Instance
	for _, sv := range h.fake.Servers() {
		id := "hcloud://" + strconv.FormatInt(sv.ID, 10)
		in, err := h.prov.Get(ctx, id)
		if err != nil {
			// Being deleted: what the collector sees of it.
			in = &provider.Instance{ID: id, UID: sv.Labels[provider.LabelUID], Deployment: sv.Labels[provider.LabelDeployment],
				CreatedAt: sv.Created, State: provider.StateTerminated}
		}
		out = append(out, *in)
	}
	return out
}

// Addresses are every managed Primary IP of the project, in use or not,
// as the mock's Addresses are.
func (h *Cloud) Addresses() []provider.Instance {
	var out []provider.Instance
	for _, ip := range h.fake.PrimaryIPs() {
		if ip.Labels[provider.LabelManaged] == provider.LabelManagedYes {
			out = append(out, provider.Instance{ID: "hcloud-primary-ip://" + strconv.FormatInt(ip.ID, 10), UID: ip.Labels[provider.LabelUID],
				Deployment: ip.Labels[provider.LabelDeployment], CreatedAt: ip.Created, State: provider.StateTerminated})
		}
	}
	return out
}

// UID is the uid label of what a hetzner providerID names, if it is
// there.
func (h *Cloud) UID(id string) (string, bool) {
	if n, ok := strings.CutPrefix(id, "hcloud://"); ok {
		for _, sv := range h.fake.Servers() {
			if strconv.FormatInt(sv.ID, 10) == n {
				return sv.Labels[provider.LabelUID], true
			}
		}
	}
	if n, ok := strings.CutPrefix(id, "hcloud-primary-ip://"); ok {
		for _, ip := range h.fake.PrimaryIPs() {
			if strconv.FormatInt(ip.ID, 10) == n {
				return ip.Labels[provider.LabelUID], true
			}
		}
	}
	return "", false
}

// Request is the create request the server a providerID names was made
// with.
func (h *Cloud) Request(id string) (provider.CreateRequest, bool) {
	n, ok := strings.CutPrefix(id, "hcloud://")
	if !ok {
		return provider.CreateRequest{}, false
	}
	for _, sv := range h.fake.Servers() {
		if strconv.FormatInt(sv.ID, 10) == n {
			req, ok := h.reqs[sv.Name]
			return req, ok
		}
	}
	return provider.CreateRequest{}, false
}
