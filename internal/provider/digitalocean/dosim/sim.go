// Package dosim is DigitalOcean's part of the simulation and the
// benchmark, over the DigitalOcean fake: a sim.Cloud (the digitalocean
// provider itself over the fake served in-process, through godo, with
// DigitalOcean's faults) and the cloud's phase of make bench (Bench: API
// requests per proxy lifecycle, by route, and the collector's listing,
// over the fake on loopback). Both play the VM side: a Droplet serves
// once booted. internal/clouds/cloudsdev lists them; nothing in
// production imports this package.
package dosim

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/digitalocean/godo"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/digitalocean"
	"github.com/egress-proxies/egress/internal/provider/digitalocean/dofake"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/sim"
)

// Cloud is DigitalOcean in the simulation: the digitalocean provider
// itself, over the DigitalOcean fake served in-process, through godo.
// Like Hetzner's, its Droplets cannot be reconfigured (a change of
// configuration gets a new Droplet), are Ready only once the provider's
// Prober sees them serve, and do not call home; a Static proxy's reserved
// IP is put on each of its Droplets by Get and kept across them. A new
// proxy is a digitalocean one a quarter of the time the clouds before it
// in the list left it to the mock.
type Cloud struct {
	now  func() time.Time
	rng  *rand.Rand
	fake *dofake.Server
	prov *digitalocean.Provider
	// other is a second deployment's digitalocean provider on the same
	// account.
	other *digitalocean.Provider
	boot  time.Duration
	// reqs are the create requests by Droplet name (the proxy's, from its
	// uid), as the Renderer saw them last: what the proxy's newest
	// Droplet was made to serve.
	reqs map[string]provider.CreateRequest
	// BootFaults are by providerID.
	sim.BootFaults
	nextSettle time.Time
	// full are the regions out of capacity while faults are on.
	full []string
	// lostCreates is how many creates to come succeed and lose their
	// answer: the retry's find adopts the Droplet.
	lostCreates int
	// limitedUntil is when the account's Droplet limit, reached by a
	// fault, is raised again (zero: it is not reached); rateUntil when
	// the minute's requests a fault spent have expired.
	limitedUntil, rateUntil time.Time
}

var _ sim.Cloud = (*Cloud)(nil)

const token = "sim-token"

// stream is the seed's stream DigitalOcean draws from: one no one else
// uses (the world's are 7, 23, 29, 31 and 37, hetzner's 31, aws's 37).
const stream = 41

// metros are the metros the simulated digitalocean proxies use, with
// their regions (a placement's zones): two of them have two regions, so
// a region out of capacity moves a proxy on to the other, and ams has
// one, where a full region makes the proxy wait.
var metros = map[string][]string{"nyc": {"nyc1", "nyc3"}, "sfo": {"sfo2", "sfo3"}, "ams": {"ams3"}}

// metroNames are metros' keys in a fixed order, for the draws.
var metroNames = []string{"nyc", "sfo", "ams"}

// regions are every region of metros, in a fixed order.
var regions = []string{"nyc1", "nyc3", "sfo2", "sfo3", "ams3"}

// accountLimit is the account's Droplet and reserved IP limit outside
// the Droplet limit's fault: far above what a schedule makes (a new
// account's 10 Droplets and the fake's 3 reserved IPs would refuse the
// schedules' ordinary fleets, which is not the fault to simulate).
const accountLimit = 1000

// New builds DigitalOcean for one schedule. Its draws come from a stream
// of its own (the seed's stream 41), so that the other clouds' and the
// world's draws are what they were without it.
func New(env sim.Env) sim.Cloud {
	d := &Cloud{now: env.Now, rng: rand.New(rand.NewPCG(env.Seed, stream)), reqs: map[string]provider.CreateRequest{},
		BootFaults: sim.NewBootFaults()}
	d.fake = dofake.NewHandler(token)
	d.fake.SetClock(env.Now)
	d.fake.SetDropletLimit(accountLimit)
	d.fake.SetReservedIPLimit(accountLimit)
	d.boot = time.Duration(5+d.rng.IntN(60)) * time.Second
	mk := func(deployment string) *digitalocean.Provider {
		c, err := digitalocean.NewClient(token, d.fake.Endpoint(), d.fake.HTTPClient())
		if err != nil {
			panic(err)
		}
		p, err := digitalocean.New(c, digitalocean.Config{
			Deployment: deployment,
			Firewall: digitalocean.Firewall{ProxyPorts: []string{"1024-65535"}, SourceRanges: []string{"0.0.0.0/0"},
				StatusSourceRanges: []string{"192.0.2.0/28"}},
			Renderer: digitalocean.RendererFunc(d.render), Prober: digitalocean.ProberFunc(d.probe), Now: env.Now,
		})
		if err != nil {
			panic(err)
		}
		return p
	}
	d.prov, d.other = mk(provider.DefaultDeployment), mk("other")
	return d
}

// Type is digitalocean.Type.
func (d *Cloud) Type() string { return digitalocean.Type }

// Provider is this deployment's digitalocean provider over the fake.
func (d *Cloud) Provider() provider.Provider { return d.prov }

// render is the Renderer: it records what the Droplet is made to serve.
func (d *Cloud) render(req provider.CreateRequest) (string, error) {
	d.reqs[req.Name] = req
	return "#cloud-config\n# sim\n", nil
}

// probe is the Prober: an active Droplet of the proxy of uid, reached at
// its own address or at the reserved IP it holds, answers once it has run
// for its boot time, with the generation it was made with, unless it
// never serves or cannot.
func (d *Cloud) probe(_ context.Context, ip string, _ int32, uid, _ string) (digitalocean.Status, error) {
	held := map[int]string{}
	for _, r := range d.fake.ReservedIPs() {
		if r.Droplet != 0 {
			held[r.Droplet] = r.IP
		}
	}
	for _, dr := range d.fake.Droplets() {
		own, _ := dr.PublicIPv4()
		if (own != ip && held[dr.ID] != ip) || dr.Status != "active" || digitalocean.Labels(dr.Tags)[provider.LabelUID] != uid {
			continue
		}
		id := dropletID(dr.ID)
		switch {
		case d.NeverReady(id) || d.now().Sub(created(dr)) < d.boot:
			return digitalocean.Status{}, errors.New("connection refused")
		case d.BootError(id) != "":
			return digitalocean.Status{Error: d.BootError(id)}, nil
		}
		req := d.reqs[dr.Name]
		if req.Engine == nil {
			return digitalocean.Status{Error: "no engine configuration"}, nil
		}
		st := digitalocean.Status{Ready: true, Generation: req.Engine.Generation}
		if held[dr.ID] == ip {
			// Reached at the reserved IP it holds, it routes through it
			// too, as its agent does once the metadata says the address
			// is its (package dovm, anchor.go).
			st.Egress = ip
		}
		return st, nil
	}
	return digitalocean.Status{}, errors.New("no route to host")
}

// Offer makes a new proxy's spec a digitalocean one, a quarter of the
// time: a metro, and a third of the time one of its regions as the zone.
func (d *Cloud) Offer(spec *proxy.Spec) bool {
	if d.rng.IntN(4) != 0 {
		return false
	}
	metro := metroNames[d.rng.IntN(len(metroNames))]
	spec.Provider = digitalocean.Type
	spec.Placement = proxy.Placement{Region: metro}
	if d.rng.IntN(3) == 0 {
		spec.Placement.Zone = metros[metro][d.rng.IntN(len(metros[metro]))]
	}
	return true
}

// Settle lets DigitalOcean finish what is in progress, every 15 s of the
// schedule: Droplets boot, destroyed ones go and leave their reserved
// IPs. A Droplet limit whose time is over is lifted.
func (d *Cloud) Settle(now time.Time) {
	if !d.limitedUntil.IsZero() && !now.Before(d.limitedUntil) {
		d.fake.SetDropletLimit(accountLimit)
		d.limitedUntil = time.Time{}
	}
	if !d.rateUntil.IsZero() && !now.Before(d.rateUntil) {
		d.rateUntil = time.Time{} // the minute's requests expired by themselves
	}
	if !now.Before(d.nextSettle) {
		d.fake.Settle()
		d.nextSettle = now.Add(15 * time.Second)
	}
}

// Finish lets DigitalOcean finish what it was asked: it does so by
// itself, in seconds (a reserved IP is unassigned once its Droplet is
// gone).
func (d *Cloud) Finish() { d.fake.Settle() }

// Created loses the answer of a create, when a fault asked for it (the
// Droplet is made: the retry's find must adopt it), and gives a Droplet
// the boot faults that wait for one.
func (d *Cloud) Created(req provider.CreateRequest, id string, err error) error {
	if err == nil && d.lostCreates > 0 {
		d.lostCreates--
		return provider.NewError(provider.KindTransient, "create", req.Name, errors.New("the answer was lost"))
	}
	if err == nil {
		d.BootFaults.Created(id)
	}
	return err
}

// The prefixes of the provider's providerIDs: a Droplet's, a reserved
// IP's, a residue's (a tag a crash left).
const (
	dropletPrefix    = "digitalocean://"
	reservedIPPrefix = "digitalocean-reserved-ip://"
	tagPrefix        = "digitalocean-tag://"
)

func dropletID(n int) string { return dropletPrefix + strconv.Itoa(n) }

// created is when a Droplet was made.
func created(dr godo.Droplet) time.Time {
	t, _ := time.Parse(time.RFC3339, dr.Created)
	return t
}

// Owns reports whether a providerID is a digitalocean one: a Droplet's
// or a reserved IP's.
func (d *Cloud) Owns(id string) bool { return strings.HasPrefix(id, "digitalocean") }

// Instances are every Droplet of the account, as the provider reads them
// (outside the schedule), for the invariants. Only this deployment's
// active Droplets are read through the provider (what they serve is
// asked by its Get): its Get of another deployment's Static Droplet
// would reserve it an address, and a Droplet that is not active has
// nothing to ask.
func (d *Cloud) Instances() []provider.Instance {
	ctx := context.Background()
	var out []provider.Instance
	for _, dr := range d.fake.Droplets() {
		labels := digitalocean.Labels(dr.Tags)
		id := dropletID(dr.ID)
		in := &provider.Instance{ID: id, UID: labels[provider.LabelUID], Deployment: labels[provider.LabelDeployment],
			CreatedAt: created(dr), State: provider.StateProvisioning}
		switch dr.Status {
		case "archive":
			// Being destroyed: what the collector sees of it.
			in.State = provider.StateTerminated
		case "off":
			in.State = provider.StateStopped
		case "active":
			in.State = provider.StateRunning
			if in.Deployment == provider.DefaultDeployment {
				// An error armed while faults were on and met by no call
				// since answers this read, once for each armed: the
				// invariants read what DigitalOcean holds, so read again.
				for range 10 {
					got, err := d.prov.Get(ctx, id)
					if err == nil {
						in = got
						break
					}
				}
			}
		}
		out = append(out, *in)
	}
	return out
}

// Addresses are every reserved IP of the account, held or not, with the
// uid, deployment and time of its record (a tag: reserved IPs carry
// none); one without a record belongs to no deployment the collector
// can tell. And the tags a crash left, which the provider lists as
// residues for the collector to delete as it releases an address: a
// Droplet's own tag that no Droplet carries, a record whose address is
// gone. So a residue the collector never deletes is a leak the
// invariants see.
func (d *Cloud) Addresses() []provider.Instance {
	recs := d.records()
	var out []provider.Instance
	ips := map[string]bool{}
	for _, r := range d.fake.ReservedIPs() {
		ips[r.IP] = true
		in := provider.Instance{ID: reservedIPPrefix + r.IP, IP: r.IP, Zone: r.Region, State: provider.StateTerminated}
		if rec, ok := recs[r.IP]; ok {
			in.UID, in.Deployment, in.CreatedAt = rec.uid, rec.deployment, rec.created
		}
		out = append(out, in)
	}
	for addr, rec := range recs {
		if !ips[addr] {
			out = append(out, provider.Instance{ID: tagPrefix + rec.tag, UID: rec.uid, Deployment: rec.deployment, CreatedAt: rec.created, State: provider.StateTerminated})
		}
	}
	carried := map[string]bool{}
	for _, dr := range d.fake.Droplets() {
		for _, t := range dr.Tags {
			carried[t] = true
		}
	}
	for _, t := range d.fake.Tags() {
		if own, ok := ownTag(t); ok && !carried[t] {
			out = append(out, own)
		}
	}
	slices.SortFunc(out, func(a, b provider.Instance) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// ownTag reads a Droplet's own tag off the fake as a residue:
// egress-droplet:DEPLOYMENT:UID:ID:CREATED, the deployment and uid
// encoded as label values are (the provider's tags.go).
func ownTag(t string) (provider.Instance, bool) {
	parts := strings.SplitN(t, ":", 5)
	if len(parts) != 5 || parts[0] != "egress-droplet" {
		return provider.Instance{}, false
	}
	secs, err := strconv.ParseInt(parts[4], 10, 64)
	if err != nil {
		return provider.Instance{}, false
	}
	v := digitalocean.Labels([]string{"d:" + parts[1], "u:" + parts[2]})
	return provider.Instance{ID: tagPrefix + t, UID: v["u"], Deployment: v["d"], CreatedAt: time.Unix(secs, 0).UTC(), State: provider.StateTerminated}, true
}

// record is what a reserved IP's record tag says of it.
type record struct {
	tag, uid, deployment string
	created              time.Time
}

// records reads the reserved IPs' record tags off the fake, by address:
// egress-reserved-ip:ADDRESS-DASHED:UNIX:DEPLOYMENT:UID, the deployment
// and uid encoded as label values are (the provider's package doc).
func (d *Cloud) records() map[string]record {
	out := map[string]record{}
	for _, t := range d.fake.Tags() {
		parts := strings.SplitN(t, ":", 5)
		if len(parts) != 5 || parts[0] != "egress-reserved-ip" {
			continue
		}
		secs, err := strconv.ParseInt(parts[2], 10, 64)
		if err != nil {
			continue
		}
		// A label value's encoding, read back by Labels.
		v := digitalocean.Labels([]string{"d:" + parts[3], "u:" + parts[4]})
		out[strings.ReplaceAll(parts[1], "-", ".")] = record{tag: t, uid: v["u"], deployment: v["d"], created: time.Unix(secs, 0).UTC()}
	}
	return out
}

// UID is the uid of what a digitalocean providerID names, if it is
// there: a Droplet's uid tag, a reserved IP's record.
func (d *Cloud) UID(id string) (string, bool) {
	if n, ok := strings.CutPrefix(id, dropletPrefix); ok {
		for _, dr := range d.fake.Droplets() {
			if strconv.Itoa(dr.ID) == n {
				return digitalocean.Labels(dr.Tags)[provider.LabelUID], true
			}
		}
	}
	if addr, ok := strings.CutPrefix(id, reservedIPPrefix); ok {
		if slices.ContainsFunc(d.fake.ReservedIPs(), func(r dofake.ReservedIP) bool { return r.IP == addr }) {
			return d.records()[addr].uid, true
		}
	}
	return "", false
}

// Request is the create request the Droplet a providerID names was made
// with.
func (d *Cloud) Request(id string) (provider.CreateRequest, bool) {
	n, ok := strings.CutPrefix(id, dropletPrefix)
	if !ok {
		return provider.CreateRequest{}, false
	}
	for _, dr := range d.fake.Droplets() {
		if strconv.Itoa(dr.ID) == n {
			req, ok := d.reqs[dr.Name]
			return req, ok
		}
	}
	return provider.CreateRequest{}, false
}
