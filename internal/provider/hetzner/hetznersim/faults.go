package hetznersim

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/hetzner"
	"github.com/egress-proxies/egress/internal/provider/hetzner/hetznerfake"
	"github.com/egress-proxies/egress/internal/sim"
)

// Fault injects one of Hetzner's faults, three steps in a hundred: a
// location out of capacity for a while (resource_unavailable,
// placement_error), the rate limit spent (429, waited out), the server
// limit (resource_limit_exceeded), 5xx and locked answers, lost and
// stopped servers, servers that never serve or say they cannot, creates
// whose answer is lost (the retry meets uniqueness_error and adopts),
// and another deployment's servers and Primary IPs.
func (h *Cloud) Fault() (sim.Fault, bool) {
	if h.rng.Float64() >= 0.03 {
		return sim.Fault{}, false
	}
	own := h.own()
	switch h.rng.IntN(10) {
	case 0:
		// A location out of capacity for a while: resource_unavailable
		// or placement_error on every create there.
		loc := locations[h.rng.IntN(len(locations))]
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
		h.fake.Fail("servers.create", 1, hetznerfake.LimitExceeded("server"))
	case 3:
		route := []string{"servers.create", "servers.get", "servers.delete", "servers.list", "primary_ips.create", "primary_ips.delete"}[h.rng.IntN(6)]
		f := hetznerfake.Fault{Code: "server_error", Status: http.StatusInternalServerError, Message: "internal error"}
		if h.rng.IntN(2) == 0 {
			f = hetznerfake.Fault{Code: "locked", Status: http.StatusLocked, Message: "server is locked"}
		}
		h.fake.Fail(route, 1, f)
	case 4:
		if len(own) > 0 {
			h.fake.SetStatus(own[h.rng.IntN(len(own))], "deleting")
			return sim.Fault{Kind: sim.FaultLost}, true
		}
	case 5:
		if len(own) > 0 {
			h.fake.SetStatus(own[h.rng.IntN(len(own))], "off")
			return sim.Fault{Kind: sim.FaultStopped}, true
		}
	case 6:
		h.HangNext()
		return sim.Fault{Kind: sim.FaultNeverReady}, true
	case 7:
		h.FailNext()
		return sim.Fault{Kind: sim.FaultBootError}, true
	case 8:
		return h.foreign(), true
	case 9:
		h.lostCreates++
	}
	return sim.Fault{Kind: sim.FaultOther}, true
}

// own are the ids of this deployment's servers.
func (h *Cloud) own() []int64 {
	var out []int64
	for _, sv := range h.fake.Servers() {
		if sv.Labels[provider.LabelDeployment] == provider.DefaultDeployment {
			out = append(out, sv.ID)
		}
	}
	return out
}

// foreign plants a server (with its Primary IP, at times) of the second
// deployment, or a managed server without the deployment label.
func (h *Cloud) foreign() sim.Fault {
	uid := fmt.Sprintf("%08x-0000-4000-a000-%012x", h.rng.Uint32(), h.rng.Uint64()&0xffffffffffff)
	if h.rng.IntN(4) == 0 {
		id := h.fake.Put(provider.NameFromUID(uid), "hel1", map[string]string{provider.LabelManaged: provider.LabelManagedYes, provider.LabelUID: uid})
		return sim.Fault{Kind: sim.FaultUnlabelled, Foreign: []string{"hcloud://" + strconv.FormatInt(id, 10)}}
	}
	return sim.PlantOther(h.other, provider.CreateRequest{
		Name: provider.NameFromUID(uid), UID: uid, Namespace: "other-deployment", ProxyName: "p",
		Placement: provider.Placement{Region: "eu-central"}, StaticIP: h.rng.IntN(3) == 0, StartupScript: "#!/bin/sh\n", Port: 3128,
	})
}

// ClearFaults ends the faults that would last: full locations.
func (h *Cloud) ClearFaults() {
	h.fake.ClearCreateFailures()
	h.full = nil
}
