package dosim

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/digitalocean"
	"github.com/egress-proxies/egress/internal/provider/digitalocean/dofake"
	"github.com/egress-proxies/egress/internal/sim"
)

// Fault injects one of DigitalOcean's faults, three steps in a hundred:
// a region out of capacity for a while ("Size is not available in this
// region.", or the region taking no new Droplets: the provider moves to
// the metro's next region), the per-minute rate limit spent (429 with
// ratelimit-reset, waited out), the account's Droplet limit reached for
// a while (quota, its limit in the proxy's status), 5xx, 409 and 423
// answers on any route the provider uses, lost (destroyed) and
// powered-off Droplets, Droplets that never serve or say they cannot,
// creates whose answer is lost (the retry's find adopts the Droplet, and
// makes no second one), and another deployment's Droplets (with a
// reserved IP, at times) or a managed Droplet without the deployment tag.
func (d *Cloud) Fault() (sim.Fault, bool) {
	if d.rng.Float64() >= 0.03 {
		return sim.Fault{}, false
	}
	own := d.own()
	switch d.rng.IntN(10) {
	case 0:
		if region := regions[d.rng.IntN(len(regions))]; !slices.Contains(d.full, region) {
			d.fillRegion(region, d.rng.IntN(2) == 0)
		}
	case 1:
		d.spendRateLimit()
	case 2:
		d.reachDropletLimit(time.Duration(1+d.rng.IntN(10)) * time.Minute)
	case 3:
		route := []string{"droplets.create", "droplets.get", "droplets.list", "droplets.delete", "reserved_ips.create",
			"reserved_ips.get", "reserved_ips.actions", "tags.create", "tags.list", "tags.delete"}[d.rng.IntN(10)]
		f := []dofake.Fault{dofake.Status(http.StatusInternalServerError), dofake.Status(http.StatusServiceUnavailable),
			dofake.Status(http.StatusConflict), dofake.Status(http.StatusLocked)}[d.rng.IntN(4)]
		d.fake.Fail(route, 1, f)
	case 4:
		if len(own) > 0 {
			// Destroyed by someone: gone at the next settle, its reserved
			// IP unassigned and kept.
			d.fake.SetStatus(own[d.rng.IntN(len(own))], "archive")
			return sim.Fault{Kind: sim.FaultLost}, true
		}
	case 5:
		if len(own) > 0 {
			d.fake.SetStatus(own[d.rng.IntN(len(own))], "off")
			return sim.Fault{Kind: sim.FaultStopped}, true
		}
	case 6:
		d.HangNext()
		return sim.Fault{Kind: sim.FaultNeverReady}, true
	case 7:
		d.FailNext()
		return sim.Fault{Kind: sim.FaultBootError}, true
	case 8:
		return d.foreign(), true
	case 9:
		d.lostCreates++
	}
	return sim.Fault{Kind: sim.FaultOther}, true
}

// fillRegion runs a region out of capacity until ClearFaults: every
// create there answers that the size is not available in it, or that
// the region takes no new Droplets.
func (d *Cloud) fillRegion(region string, closed bool) {
	if slices.Contains(d.full, region) {
		return
	}
	d.full = append(d.full, region)
	f := dofake.SizeUnavailable()
	if closed {
		f = dofake.RegionUnavailable()
	}
	d.fake.FailCreates(region, -1, f)
}

// spendRateLimit spends the minute's 250 requests: 429 until the oldest
// is a minute old, which ratelimit-reset says; the hour's window counts
// on meanwhile.
func (d *Cloud) spendRateLimit() {
	d.fake.SetRateLimit(time.Minute, 250, 250)
	d.rateUntil = d.now().Add(time.Minute)
}

// reachDropletLimit makes the account's Droplet limit as many Droplets
// as there are now, for a while (until someone asks DigitalOcean to
// raise it); Droplets that go make room under it.
func (d *Cloud) reachDropletLimit(until time.Duration) {
	live := 0
	for _, dr := range d.fake.Droplets() {
		if dr.Status != "archive" {
			live++
		}
	}
	d.fake.SetDropletLimit(max(live, 1))
	d.limitedUntil = d.now().Add(until)
}

// own are the ids of this deployment's Droplets that are new or active:
// what someone may destroy or power off.
func (d *Cloud) own() []int {
	var out []int
	for _, dr := range d.fake.Droplets() {
		if digitalocean.Labels(dr.Tags)[provider.LabelDeployment] == provider.DefaultDeployment && (dr.Status == "new" || dr.Status == "active") {
			out = append(out, dr.ID)
		}
	}
	return out
}

// foreign plants a Droplet of the second deployment (for a Static one,
// booted and given its reserved IP by that deployment's own Get), or a
// managed Droplet without the deployment tag.
func (d *Cloud) foreign() sim.Fault {
	uid := fmt.Sprintf("%08x-0000-4000-d000-%012x", d.rng.Uint32(), d.rng.Uint64()&0xffffffffffff)
	if d.rng.IntN(4) == 0 {
		n := d.fake.Put(provider.NameFromUID(uid), "ams3", []string{digitalocean.ManagedTag, digitalocean.Tag(provider.LabelUID, uid)})
		return sim.Fault{Kind: sim.FaultUnlabelled, Foreign: []string{dropletID(n)}}
	}
	static := d.rng.IntN(3) == 0
	f := sim.PlantOther(d.other, provider.CreateRequest{
		Name: provider.NameFromUID(uid), UID: uid, Namespace: "other-deployment", ProxyName: "p",
		Placement: provider.Placement{Region: "nyc"}, StaticIP: static, StartupScript: "#!/bin/sh\n", Port: 3128,
	})
	if !static || f.Kind != sim.FaultOtherDeployment {
		return f
	}
	// A reserved IP is assigned to an active Droplet only: the Droplet
	// boots, and the other deployment's reconciler reads it twice (a
	// reserve onto it, then the Droplet holding it). A fault met on the
	// way leaves the Droplet without an address, which is still theirs.
	n := 0
	fmt.Sscan(strings.TrimPrefix(f.Foreign[0], dropletPrefix), &n)
	d.fake.SetStatus(n, "active")
	ctx := context.Background()
	for range 2 {
		if in, err := d.other.Get(ctx, f.Foreign[0]); err == nil && in.AddressID != "" {
			f.Foreign = append(f.Foreign, in.AddressID)
			break
		}
	}
	return f
}

// ClearFaults ends the faults that would last: full regions, the
// Droplet limit reached and the rate limit spent.
func (d *Cloud) ClearFaults() {
	d.fake.ClearCreateFailures()
	d.full = nil
	d.fake.SetDropletLimit(accountLimit)
	d.limitedUntil = time.Time{}
	if !d.rateUntil.IsZero() {
		d.fake.SetRateLimit(time.Minute, dofake.DefaultMinuteRateLimit, 0)
		d.rateUntil = time.Time{}
	}
}
