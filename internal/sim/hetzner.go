package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/hetzner"
	"github.com/egress-proxies/egress/internal/provider/hetzner/hetznerfake"
	"github.com/egress-proxies/egress/internal/proxy"
)

// The second real provider of the fleets: the hetzner provider itself,
// over the Hetzner fake served in-process, with Hetzner's faults. Its
// servers cannot be reconfigured (a change of configuration gets a new
// server), are Ready only once the provider's Prober sees them serve,
// and do not call home: the reconciler asks them every PollInterval
// while they boot (provider.Polled). A new proxy is a
// hetzner one a third of the time.

// hetznerState is the world's part of Hetzner.
type hetznerState struct {
	rng  *rand.Rand
	fake *hetznerfake.Server
	prov *hetzner.Provider
	// other is a second deployment's hetzner provider on the same project.
	other *hetzner.Provider
	boot  time.Duration
	// reqs are the create requests by server name, as the Renderer saw
	// them: what each server was made to serve.
	reqs map[string]provider.CreateRequest
	bootFaults
	nextSettle time.Time
	// full are the locations out of capacity while faults are on.
	full []string
	// lostCreates is how many creates to come succeed and lose their
	// answer: the retry meets uniqueness_error and adopts the server.
	lostCreates int
}

const hetznerToken = "sim-token"

// hetznerLocations are the locations of the network zone the simulated
// hetzner proxies use.
var hetznerLocations = []string{"fsn1", "nbg1", "hel1"}

func (w *World) newHetzner(seed uint64) {
	h := &hetznerState{rng: rand.New(rand.NewPCG(seed, 31)), reqs: map[string]provider.CreateRequest{},
		bootFaults: newBootFaults()}
	h.fake = hetznerfake.NewHandler(hetznerToken)
	h.fake.SetClock(w.clock.Now)
	h.boot = time.Duration(5+h.rng.IntN(60)) * time.Second
	mk := func(deployment string) *hetzner.Provider {
		p, err := hetzner.New(hetzner.NewClient(hetznerToken, h.fake.Endpoint(), h.fake.HTTPClient()), hetzner.Config{
			Deployment: deployment, Renderer: hetzner.RendererFunc(w.renderHetzner), Prober: hetzner.ProberFunc(w.probeHetzner), Now: w.clock.Now,
		})
		if err != nil {
			panic(err)
		}
		return p
	}
	h.prov, h.other = mk(provider.DefaultDeployment), mk("other")
	w.hz = h
}

// renderHetzner is the Renderer: it records what the server is made to
// serve.
func (w *World) renderHetzner(req provider.CreateRequest) (string, error) {
	w.hz.reqs[req.Name] = req
	return "#cloud-config\n# sim\n", nil
}

// probeHetzner is the Prober: a server answers once it has run for its
// boot time, with the generation it was made with, unless it never
// serves or cannot.
func (w *World) probeHetzner(_ context.Context, ip string, _ int32, _, _ string) (hetzner.Status, error) {
	for _, sv := range w.hz.fake.Servers() {
		if sv.PublicNet.IPv4.IP != ip || sv.Status != "running" {
			continue
		}
		id := "hcloud://" + strconv.FormatInt(sv.ID, 10)
		switch {
		case w.hz.neverReady[id] || w.clock.Now().Sub(sv.Created) < w.hz.boot:
			return hetzner.Status{}, errors.New("connection refused")
		case w.hz.bootError[id] != "":
			return hetzner.Status{Error: w.hz.bootError[id]}, nil
		}
		req := w.hz.reqs[sv.Name]
		if req.Engine == nil {
			return hetzner.Status{Error: "no engine configuration"}, nil
		}
		return hetzner.Status{Ready: true, Generation: req.Engine.Generation}, nil
	}
	return hetzner.Status{}, errors.New("no route to host")
}

// hetznerSpec makes a new proxy's spec a hetzner one, a third of the
// time.
func (w *World) hetznerSpec(spec *proxy.Spec) {
	if w.hz.rng.IntN(3) != 0 {
		return
	}
	w.stats.HetznerProxies++
	spec.Provider = hetzner.Type
	spec.Placement = proxy.Placement{Region: "eu-central"}
	if w.hz.rng.IntN(3) == 0 {
		spec.Placement.Zone = hetznerLocations[w.hz.rng.IntN(len(hetznerLocations))]
	}
}

// settleHetzner lets Hetzner finish what is in progress, every few
// seconds of the schedule: servers boot, deleted ones go.
func (w *World) settleHetzner() {
	if now := w.clock.Now(); !now.Before(w.hz.nextSettle) {
		w.hz.fake.Settle()
		w.hz.nextSettle = now.Add(15 * time.Second)
	}
}

// hetznerFault injects one of Hetzner's faults, at times.
func (w *World) hetznerFault() {
	h := w.hz
	if h.rng.Float64() >= 0.03 {
		return
	}
	w.stats.HetznerFaults++
	own := w.hetznerOwn()
	switch h.rng.IntN(10) {
	case 0:
		// A location out of capacity for a while: resource_unavailable
		// or placement_error on every create there.
		loc := hetznerLocations[h.rng.IntN(len(hetznerLocations))]
		if !slices.Contains(h.full, loc) {
			h.full = append(h.full, loc)
			f := hetznerfake.ResourceUnavailable(loc, hetzner.DefaultServerType)
			if h.rng.IntN(2) == 0 {
				f = hetznerfake.PlacementError(loc)
			}
			h.fake.FailCreates(loc, -1, f)
		}
	case 1:
		// The rate limit spent: what comes within the next second is 429.
		h.fake.SetRateLimit(hetznerfake.DefaultRateLimit, 0)
	case 2:
		h.fake.Fail("servers.create", 1, hetznerfake.LimitExceeded("server", 10))
	case 3:
		route := []string{"servers.create", "servers.get", "servers.delete", "servers.list", "primary_ips.create", "primary_ips.delete"}[h.rng.IntN(6)]
		f := hetznerfake.Fault{Code: "server_error", Status: http.StatusInternalServerError, Message: "internal error"}
		if h.rng.IntN(2) == 0 {
			f = hetznerfake.Fault{Code: "locked", Status: http.StatusLocked, Message: "server is locked"}
		}
		h.fake.Fail(route, 1, f)
	case 4:
		if len(own) > 0 {
			w.stats.Lost++
			h.fake.SetStatus(own[h.rng.IntN(len(own))], "deleting")
		}
	case 5:
		if len(own) > 0 {
			w.stats.Stopped++
			h.fake.SetStatus(own[h.rng.IntN(len(own))], "off")
		}
	case 6:
		w.stats.NeverReady++
		h.neverReadyNext++
	case 7:
		w.stats.BootErrors++
		h.bootErrorNext++
	case 8:
		w.hetznerForeign()
	case 9:
		h.lostCreates++
	}
}

// hetznerCreated gives a server the boot faults that wait for one.
func (w *World) hetznerCreated(id string) { w.hz.created(id) }

// hetznerOwn are the ids of this deployment's servers.
func (w *World) hetznerOwn() []int64 {
	var out []int64
	for _, sv := range w.hz.fake.Servers() {
		if sv.Labels[provider.LabelDeployment] == provider.DefaultDeployment {
			out = append(out, sv.ID)
		}
	}
	return out
}

// hetznerForeign plants a server (with its Primary IP, at times) of the
// second deployment, or a managed server without the deployment label.
func (w *World) hetznerForeign() {
	h := w.hz
	uid := fmt.Sprintf("%08x-0000-4000-a000-%012x", h.rng.Uint32(), h.rng.Uint64()&0xffffffffffff)
	if h.rng.IntN(4) == 0 {
		w.stats.Unlabelled++
		id := h.fake.Put(provider.NameFromUID(uid), "hel1", map[string]string{provider.LabelManaged: provider.LabelManagedYes, provider.LabelUID: uid})
		w.foreign = append(w.foreign, "hcloud://"+strconv.FormatInt(id, 10))
		return
	}
	id, err := h.other.Create(context.Background(), provider.CreateRequest{
		Name: provider.NameFromUID(uid), UID: uid, Namespace: "other-deployment", ProxyName: "p",
		Placement: provider.Placement{Region: "eu-central"}, StaticIP: h.rng.IntN(3) == 0, StartupScript: "#!/bin/sh\n", Port: 3128,
	})
	if err != nil {
		return // a fault met it: nothing was made
	}
	w.stats.OtherDeployment++
	w.foreign = append(w.foreign, id)
	if in, err := h.other.Get(context.Background(), id); err == nil && in.AddressID != "" {
		w.foreign = append(w.foreign, in.AddressID)
	}
}

// clearHetznerFaults ends the faults that would last: full locations.
func (w *World) clearHetznerFaults() {
	w.hz.fake.ClearCreateFailures()
	w.hz.full = nil
}

// hetznerInstances are every server of the project, as the provider
// reads them (outside the schedule), for the invariants.
func (w *World) hetznerInstances() []provider.Instance {
	ctx := context.Background()
	var out []provider.Instance
	for _, sv := range w.hz.fake.Servers() {
		id := "hcloud://" + strconv.FormatInt(sv.ID, 10)
		in, err := w.hz.prov.Get(ctx, id)
		if err != nil {
			// Being deleted: what the collector sees of it.
			in = &provider.Instance{ID: id, UID: sv.Labels[provider.LabelUID], Deployment: sv.Labels[provider.LabelDeployment],
				CreatedAt: sv.Created, State: provider.StateTerminated}
		}
		out = append(out, *in)
	}
	return out
}

// hetznerAddresses are every managed Primary IP of the project, in use
// or not, as the mock's Addresses are.
func (w *World) hetznerAddresses() []provider.Instance {
	var out []provider.Instance
	for _, ip := range w.hz.fake.PrimaryIPs() {
		if ip.Labels[provider.LabelManaged] == provider.LabelManagedYes {
			out = append(out, provider.Instance{ID: "hcloud-primary-ip://" + strconv.FormatInt(ip.ID, 10), UID: ip.Labels[provider.LabelUID],
				Deployment: ip.Labels[provider.LabelDeployment], CreatedAt: ip.Created, State: provider.StateTerminated})
		}
	}
	return out
}

// hetznerUID is the uid label of what a hetzner providerID names, if it
// is there.
func (w *World) hetznerUID(id string) (string, bool) {
	if n, ok := strings.CutPrefix(id, "hcloud://"); ok {
		for _, sv := range w.hz.fake.Servers() {
			if strconv.FormatInt(sv.ID, 10) == n {
				return sv.Labels[provider.LabelUID], true
			}
		}
	}
	if n, ok := strings.CutPrefix(id, "hcloud-primary-ip://"); ok {
		for _, ip := range w.hz.fake.PrimaryIPs() {
			if strconv.FormatInt(ip.ID, 10) == n {
				return ip.Labels[provider.LabelUID], true
			}
		}
	}
	return "", false
}

// hetznerRequest is the create request the server a providerID names was
// made with.
func (w *World) hetznerRequest(id string) (provider.CreateRequest, bool) {
	n, ok := strings.CutPrefix(id, "hcloud://")
	if !ok {
		return provider.CreateRequest{}, false
	}
	for _, sv := range w.hz.fake.Servers() {
		if strconv.FormatInt(sv.ID, 10) == n {
			req, ok := w.hz.reqs[sv.Name]
			return req, ok
		}
	}
	return provider.CreateRequest{}, false
}

// isHetzner reports whether a providerID is a hetzner one.
func isHetzner(id string) bool { return strings.HasPrefix(id, "hcloud") }
