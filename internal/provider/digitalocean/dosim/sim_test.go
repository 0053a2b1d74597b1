package dosim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/digitalocean"
	"github.com/egress-proxies/egress/internal/provider/digitalocean/dofake"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/sim"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// world is a Cloud on a clock the test moves.
type world struct {
	*Cloud
	at time.Time
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{at: time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)}
	w.Cloud = New(sim.Env{Seed: 1, Now: func() time.Time { return w.at }}).(*Cloud)
	return w
}

// pass moves the clock on by d and lets the fake settle, as the
// schedule's steps do.
func (w *world) pass(d time.Duration) {
	w.at = w.at.Add(d)
	w.Settle(w.at)
}

func request(uid string, static bool) provider.CreateRequest {
	return provider.CreateRequest{Name: provider.NameFromUID(uid), UID: uid, Namespace: "sim", ProxyName: "p",
		Placement: provider.Placement{Region: "nyc"}, StaticIP: static, StartupScript: "#!/bin/sh\n", Port: 3128,
		Engine: &vmconfig.Config{Generation: 1}}
}

// create is the world's Create: the provider's, its answer through
// Created.
func (w *world) create(t *testing.T, req provider.CreateRequest) (string, error) {
	t.Helper()
	id, err := w.prov.Create(context.Background(), req)
	return id, w.Created(req, id, err)
}

// ready reads the Droplet until it serves, moving the clock past its
// boot.
func (w *world) ready(t *testing.T, id string) *provider.Instance {
	t.Helper()
	for range 20 {
		in, err := w.prov.Get(context.Background(), id)
		if err != nil {
			t.Fatalf("Get %s: %v", id, err)
		}
		if in.State == provider.StateRunning {
			return in
		}
		w.pass(15 * time.Second)
	}
	t.Fatalf("%s never served", id)
	return nil
}

const uid = "0badcafe-0000-4000-8000-000000000001"

// TestALostCreateAnswerIsAdopted: a create whose answer is lost made its
// Droplet, and the retry's find adopts it: one Droplet, one create sent.
func TestALostCreateAnswerIsAdopted(t *testing.T) {
	w := newWorld(t)
	w.lostCreates = 1
	req := request(uid, false)
	if _, err := w.create(t, req); provider.KindOf(err) != provider.KindTransient {
		t.Fatalf("the create whose answer is lost: %v, want a transient error", err)
	}
	id, err := w.create(t, req)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(w.fake.Droplets()); n != 1 || len(w.fake.Creates()) != 1 {
		t.Errorf("%d Droplets and %d creates sent after a lost answer and its retry, want 1 and 1", n, len(w.fake.Creates()))
	}
	if got, ok := w.UID(id); !ok || got != uid {
		t.Errorf("UID(%s) = %q, %v; want %s", id, got, ok, uid)
	}
	if in := w.ready(t, id); in.Generation != 1 {
		t.Errorf("the adopted Droplet serves generation %d, want 1", in.Generation)
	}
}

// TestAFullRegionMovesTheProxyOn: a region out of capacity answers
// "Size is not available in this region.", which the provider reads as
// capacity in that region, and the next try goes to the metro's other
// region.
func TestAFullRegionMovesTheProxyOn(t *testing.T) {
	for _, closed := range []bool{false, true} {
		w := newWorld(t)
		w.fillRegion("nyc1", closed)
		w.fillRegion("nyc3", closed)
		w.ClearFaults()
		w.fillRegion("nyc1", closed)
		req := request(uid, false)
		_, err := w.create(t, req)
		if provider.KindOf(err) == provider.KindCapacity {
			// The uid chose nyc1: the reconciler avoids it next.
			if zone := provider.FullZone(err); zone != "nyc1" {
				t.Fatalf("capacity in %q, want nyc1", zone)
			}
			req.AvoidZones = []string{"nyc1"}
			_, err = w.create(t, req)
		}
		if err != nil {
			t.Fatal(err)
		}
		if ds := w.fake.Droplets(); len(ds) != 1 || ds[0].Region.Slug != "nyc3" {
			t.Errorf("closed %v: the Droplet is in %v, want nyc3 (nyc1 out of capacity)", closed, ds)
		}
	}
}

// TestTheDropletLimitIsQuotaUntilRaised: with the account at its Droplet
// limit a create is quota, whose message names the limit; once the
// limit's time is over, the create passes.
func TestTheDropletLimitIsQuotaUntilRaised(t *testing.T) {
	w := newWorld(t)
	if _, err := w.create(t, request("0badcafe-0000-4000-8000-000000000002", false)); err != nil {
		t.Fatal(err)
	}
	w.reachDropletLimit(5 * time.Minute)
	_, err := w.create(t, request(uid, false))
	if provider.KindOf(err) != provider.KindQuota || !strings.Contains(err.Error(), "Droplet limit (1)") {
		t.Fatalf("a create at the limit: %v, want quota naming the limit of 1", err)
	}
	w.pass(5 * time.Minute)
	if _, err := w.create(t, request(uid, false)); err != nil {
		t.Errorf("a create once the limit is raised: %v", err)
	}
}

// TestTheRateLimitIsWaitedOut: with the minute's requests spent, a call
// is rate limited and says to wait the minute ratelimit-reset gives; a
// minute on, the hour's window is back and the call passes.
func TestTheRateLimitIsWaitedOut(t *testing.T) {
	w := newWorld(t)
	w.spendRateLimit()
	_, err := w.create(t, request(uid, false))
	var perr *provider.Error
	if provider.KindOf(err) != provider.KindRateLimited || !errors.As(err, &perr) || perr.RetryAfter != time.Minute {
		t.Fatalf("a create with the rate limit spent: %v, want rate limited, to wait 1m", err)
	}
	w.pass(time.Minute)
	if _, err := w.create(t, request(uid, false)); err != nil {
		t.Errorf("a create a minute on: %v", err)
	}
}

// TestAStaticProxyKeepsItsReservedIP: a Static proxy's Droplet gets a
// reserved IP (recorded for the proxy), and a Droplet made after the
// first is destroyed gets the same; the address is the proxy's in
// Addresses and UID, and the destroyed Droplet's own tag is a residue
// there.
func TestAStaticProxyKeepsItsReservedIP(t *testing.T) {
	w := newWorld(t)
	req := request(uid, true)
	id, err := w.create(t, req)
	if err != nil {
		t.Fatal(err)
	}
	first := w.ready(t, id)
	if first.AddressID == "" {
		t.Fatalf("a Static proxy's Droplet is Running without a reserved IP: %+v", first)
	}
	n, own, made := 0, "", time.Time{}
	for _, dr := range w.fake.Droplets() {
		n, made = dr.ID, created(dr)
		for _, t := range dr.Tags {
			if strings.HasPrefix(t, "egress-droplet:egress:"+uid+":") {
				own = t
			}
		}
	}
	w.fake.SetStatus(n, "archive") // destroyed by someone
	w.pass(15 * time.Second)
	id2, err := w.create(t, req)
	if err != nil {
		t.Fatal(err)
	}
	second := w.ready(t, id2)
	if id2 == id || second.IP != first.IP || second.AddressID != first.AddressID {
		t.Errorf("the replacement %s is at %s (%s), want a new Droplet at %s (%s)", id2, second.IP, second.AddressID, first.IP, first.AddressID)
	}
	// Its first Droplet, destroyed by someone, left its own tag: a
	// residue, which the collector deletes once the proxy is gone.
	want := []provider.Instance{{ID: first.AddressID, IP: first.IP, Zone: second.Zone, State: provider.StateTerminated, UID: uid,
		Deployment: provider.DefaultDeployment, CreatedAt: w.Addresses()[0].CreatedAt},
		{ID: tagPrefix + own, State: provider.StateTerminated, UID: uid, Deployment: provider.DefaultDeployment, CreatedAt: made}}
	if diff := cmp.Diff(want, w.Addresses()); diff != "" {
		t.Errorf("Addresses (-want +got):\n%s", diff)
	}
	if got, ok := w.UID(first.AddressID); !ok || got != uid {
		t.Errorf("UID(%s) = %q, %v; want %s", first.AddressID, got, ok, uid)
	}
	if req, ok := w.Request(id2); !ok || req.UID != uid {
		t.Errorf("Request(%s) = %+v, %v", id2, req, ok)
	}
}

// TestAnotherDeploymentsDropletsAreKept: what foreign plants is another
// deployment's Droplet (with its reserved IP, for a Static one) or a
// managed Droplet without the deployment tag; this deployment's
// collector lists none of it.
func TestAnotherDeploymentsDropletsAreKept(t *testing.T) {
	w := newWorld(t)
	kinds := map[sim.FaultKind]int{}
	var foreign []string
	for range 40 {
		f := w.foreign()
		kinds[f.Kind]++
		foreign = append(foreign, f.Foreign...)
	}
	addresses := 0
	for _, id := range foreign {
		if strings.HasPrefix(id, reservedIPPrefix) {
			addresses++
		}
	}
	if kinds[sim.FaultOtherDeployment] == 0 || kinds[sim.FaultUnlabelled] == 0 || addresses == 0 {
		t.Fatalf("40 plants made %v and %d reserved IPs, want some of each", kinds, addresses)
	}
	list, err := w.prov.ListByTag(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range list {
		if in.Deployment != "" {
			t.Errorf("this deployment's collector lists %s of deployment %q", in.ID, in.Deployment)
		}
	}
	for _, in := range w.Addresses() {
		if in.Deployment != "other" {
			t.Errorf("reserved IP %s is of deployment %q, want other", in.ID, in.Deployment)
		}
	}
}

// TestOffer: a quarter of the specs offered are digitalocean's, in a
// metro with, a third of the time, one of its regions as the zone.
func TestOffer(t *testing.T) {
	w := newWorld(t)
	taken, zoned := 0, 0
	for range 4000 {
		spec := proxy.Spec{Provider: "mock"}
		if !w.Offer(&spec) {
			continue
		}
		taken++
		pl := spec.Placement
		if spec.Provider != digitalocean.Type || metros[pl.Region] == nil {
			t.Fatalf("an offered spec: %+v", spec)
		}
		if pl.Zone != "" {
			zoned++
			if !strings.HasPrefix(pl.Zone, pl.Region) {
				t.Fatalf("zone %s is not of metro %s", pl.Zone, pl.Region)
			}
		}
	}
	if taken < 900 || taken > 1100 || zoned < taken/4 || zoned > taken*5/12 {
		t.Errorf("took %d of 4000 specs (%d with a zone), want about 1000 (a third of them zoned)", taken, zoned)
	}
}

// TestAccountLimits: outside the Droplet limit's fault, the account
// takes more Droplets and reserved IPs than a new account's (10 and the
// fake's 3), which a schedule's fleet can pass.
func TestAccountLimits(t *testing.T) {
	w := newWorld(t)
	var ids []string
	for i := range dofake.DefaultDropletLimit + 2 {
		uid := fmt.Sprintf("0badcafe-0000-4000-8000-%012d", 100+i)
		id, err := w.create(t, request(uid, true))
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		if in := w.ready(t, id); in.AddressID == "" {
			t.Errorf("%s is Running without its reserved IP", id)
		}
	}
	if n := len(w.Addresses()); n != len(ids) {
		t.Errorf("%d reserved IPs for %d Static proxies", n, len(ids))
	}
}
