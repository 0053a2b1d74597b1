package digitalocean

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/digitalocean/dofake"
	"github.com/egress-proxies/egress/internal/provider/providertest"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

// TestCreateBody checks the create DigitalOcean receives: the name, the
// region chosen from the uid, the size and image, every tag in the same
// call, the rendered user-data, IPv6; and that the Droplet is behind the
// deployment's firewall from its create, which opens what Config says.
func TestCreateBody(t *testing.T) {
	made := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	e := newEnv(t, func(c *Config) { c.Now = func() time.Time { return made } })
	req := request()
	id, err := e.p.Create(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	creates := e.fake.Creates()
	if len(creates) != 1 {
		t.Fatalf("%d creates, want 1", len(creates))
	}
	c := creates[0]
	wantRegion, _ := provider.ChooseZone(req.UID, []string{"nyc1", "nyc3"}, nil)
	type body struct {
		Name, Region, Size, Image, UserData string
		Tags                                []string
		IPv6                                bool
	}
	want := body{Name: req.Name, Region: wantRegion, Size: "s-1vcpu-2gb", Image: "debian-12-x64",
		UserData: "#cloud-config\n# egress proxy " + req.UID + ", generation 0\n",
		Tags: []string{"proxy-operator-managed:true", "proxy-operator-uid:" + req.UID, "egress-deployment:egress",
			"egress-proxy-port:3128", "egress-droplet:egress:" + req.UID + ":" + vmstatus.StatusID(req) + ":1796605200"},
		IPv6: true}
	got := body{Name: c.Name, Region: c.Region, Size: c.Size, Image: c.Image.Slug, UserData: c.UserData, Tags: c.Tags, IPv6: c.IPv6}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the create (-want +got):\n%s", diff)
	}
	if got := e.fake.Behind(e.droplet(t, id)); !slices.Equal(got, []string{"egress-proxy-allow-egress"}) {
		t.Errorf("the Droplet is behind %v, want the deployment's firewall", got)
	}
	fws := e.fake.Firewalls()
	if len(fws) != 1 {
		t.Fatalf("%d firewalls, want 1", len(fws))
	}
	wantFW := testFirewall.Request("egress")
	if !sameFirewall(&fws[0], wantFW) {
		t.Errorf("the firewall opens %+v %+v to %v, want %+v %+v to %v", fws[0].InboundRules, fws[0].OutboundRules, fws[0].Tags,
			wantFW.InboundRules, wantFW.OutboundRules, wantFW.Tags)
	}
	in, err := e.p.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if in.Zone != wantRegion || in.IP == "" || in.IPv6 == "" || in.State != provider.StateProvisioning {
		t.Errorf("Get right after Create: %+v, want region %s, both addresses, Provisioning", in, wantRegion)
	}

	// A spec's own cloud-init goes as it is, with no probe port: "active"
	// is all such a Droplet says.
	custom := another("aaaaaaaa")
	custom.StartupScript, custom.CloudInit = "", "#cloud-config\nruncmd: [echo mine]\n"
	cid, err := e.p.Create(context.Background(), custom)
	if err != nil {
		t.Fatal(err)
	}
	c = e.fake.Creates()[1]
	if c.UserData != custom.CloudInit || Labels(c.Tags)[tagProbePort] != "" {
		t.Errorf("a custom cloud-init's create: user_data %q, probe port tag %q; want the spec's, none", c.UserData, Labels(c.Tags)[tagProbePort])
	}
	e.fake.Settle()
	if in, err := e.p.Get(context.Background(), cid); err != nil || in.State != provider.StateRunning {
		t.Errorf("an active Droplet of a custom cloud-init: %+v, %v; want Running", in, err)
	}
	if n := e.fake.Calls("firewalls.create") + e.fake.Calls("firewalls.update"); n != 1 {
		t.Errorf("the firewall was written %d times for two creates, want once", n)
	}
}

// TestCreateIsKeyedByName: a repeated create (a lost answer, a crash)
// finds the Droplet by the uid's tag and its name, and sends no second
// create; a Droplet of the name that lacks the uid's tag (another tool's:
// names are not unique on DigitalOcean) is not adopted, nor one being
// destroyed (a replacement's predecessor).
func TestCreateIsKeyedByName(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	req := request()
	first, err := e.p.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.p.Create(ctx, req)
	if err != nil || again != first {
		t.Errorf("a repeated create: %q, %v; want %q (adopted)", again, err, first)
	}
	if n := len(e.fake.Creates()); n != 1 {
		t.Errorf("%d creates sent, want 1: the find answers a repeat", n)
	}
	if !strings.Contains(e.logs.String(), "adopted") {
		t.Errorf("the adoption is not logged:\n%s", e.logs)
	}
	// Another tool's Droplet of the same name, without the uid's tag.
	e.fake.Put(another("bbbbbbbb").Name, "nyc1", []string{"web"})
	other := another("bbbbbbbb")
	oid, err := e.p.Create(ctx, other)
	if err != nil || e.uidOf(t, oid) != other.UID {
		t.Errorf("a create beside another tool's Droplet of its name: %q, %v; want a Droplet of its own", oid, err)
	}
	// A replacement: the old Droplet is being destroyed, Get calls it
	// gone, and the create makes the new one at once.
	if err := e.p.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	next, err := e.p.Create(ctx, req)
	if err != nil || next == first {
		t.Errorf("a create while its predecessor is destroyed: %q, %v; want a new Droplet", next, err)
	}
	// Two of one name and uid (a create the find raced): the oldest is
	// the proxy's, and it is said.
	e.fake.Settle()
	tags, _ := e.p.tagsFor(req)
	dup := e.fake.Put(req.Name, "nyc1", tags)
	if got, err := e.p.Create(ctx, req); err != nil || got != next || dropletID(dup) == got {
		t.Errorf("a create with a duplicate: %q, %v; want the oldest, %q", got, err, next)
	}
	if !strings.Contains(e.logs.String(), "the collector takes the others") {
		t.Errorf("the duplicate is not logged:\n%s", e.logs)
	}
}

// TestCapacityMovesOn: a region where the size is not available is a
// capacity error naming it, so the reconciler asks again past it; a
// create past it goes to the metro's other region, and one with every
// region full says so. A named region is not left.
func TestCapacityMovesOn(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	req := request()
	first, _ := provider.ChooseZone(req.UID, []string{"nyc1", "nyc3"}, nil)
	e.fake.FailCreates(first, -1, dofake.SizeUnavailable())
	_, err := e.p.Create(ctx, req)
	if provider.KindOf(err) != provider.KindCapacity || provider.FullZone(err) != first {
		t.Fatalf("a create into a full region: %v, want Capacity naming %s", err, first)
	}
	req.AvoidZones = []string{first}
	id, err := e.p.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	second, _ := provider.ChooseZone(req.UID, []string{"nyc1", "nyc3"}, req.AvoidZones)
	if in, _ := e.p.Get(ctx, id); in.Zone != second || second == first {
		t.Errorf("the Droplet is in %s, want %s, the metro's other region", in.Zone, second)
	}
	other := another("cccccccc")
	other.AvoidZones = []string{"nyc1", "nyc3"}
	if _, err := e.p.Create(ctx, other); provider.KindOf(err) != provider.KindCapacity || provider.FullZone(err) != "" {
		t.Errorf("every region full: %v, want Capacity naming no region", err)
	}
	named := another("dddddddd")
	named.Placement.Zone = first
	if _, err := e.p.Create(ctx, named); provider.KindOf(err) != provider.KindCapacity || provider.FullZone(err) != "" {
		t.Errorf("a named region full: %v, want Capacity naming no region (the spec's stays)", err)
	}
	e.fake.ClearCreateFailures()
	e.fake.FailCreates("", 1, dofake.RegionUnavailable())
	if _, err := e.p.Create(ctx, another("eeeeeeee")); provider.KindOf(err) != provider.KindCapacity {
		t.Errorf("a region that takes no Droplets for now: %v, want Capacity", err)
	}
}

// TestDropletLimitIsQuota: the account's Droplet limit (10 for a new
// account) is a quota error that says the limit and what to do, with
// DigitalOcean's words.
func TestDropletLimitIsQuota(t *testing.T) {
	e := newEnv(t)
	for i := range dofake.DefaultDropletLimit {
		e.fake.Put("someone-else-"+string(rune('a'+i)), "nyc1", nil)
	}
	_, err := e.p.Create(context.Background(), request())
	for _, want := range []string{"Droplet limit (10) is reached", "ask DigitalOcean to raise it", "will exceed your droplet limit"} {
		if provider.KindOf(err) != provider.KindQuota || !strings.Contains(err.Error(), want) {
			t.Errorf("a create past the Droplet limit: %v, want Quota saying %q", err, want)
		}
	}
	if n := len(e.fake.Droplets()); n != dofake.DefaultDropletLimit {
		t.Errorf("%d Droplets, want the limit's %d", n, dofake.DefaultDropletLimit)
	}
}

// TestRateLimitWaits: a 429 is rate limited with the wait to its
// ratelimit-reset (when the oldest request of the window expires), and
// the call after that wait passes.
func TestRateLimitWaits(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	e := newEnv(t, func(c *Config) { c.Now = func() time.Time { return now } })
	e.fake.SetClock(func() time.Time { return now })
	e.fake.SetRateLimit(time.Minute, 250, 250)
	_, err := e.p.Create(context.Background(), request())
	if provider.KindOf(err) != provider.KindRateLimited || provider.RetryAfter(err) != time.Minute {
		t.Fatalf("a create at the minute's limit: %v (wait %v), want RateLimited, wait 1m", err, provider.RetryAfter(err))
	}
	now = now.Add(30 * time.Second) // both clocks read it
	if _, err := e.p.ListByTag(context.Background()); provider.RetryAfter(err) != 30*time.Second {
		t.Errorf("half a minute on: wait %v, want 30s", provider.RetryAfter(err))
	}
	now = now.Add(30 * time.Second)
	if _, err := e.p.Create(context.Background(), request()); err != nil {
		t.Errorf("after the wait: %v", err)
	}
	e.fake.SetRateLimit(time.Hour, 5000, 5000)
	if _, err := e.p.ListByTag(context.Background()); provider.RetryAfter(err) != time.Hour {
		t.Errorf("at the hour's limit: wait %v, want 1h", provider.RetryAfter(err))
	}
	// A 429 with the hour's headers and requests left in it: a limit of
	// a minute refused, whatever the hour's reset says.
	now = now.Add(30 * time.Minute)
	e.fake.SetRateLimit(time.Hour, 5000, 1) // the oldest of the hour expires an hour on
	e.fake.Fail("droplets.list", 1, dofake.Status(http.StatusTooManyRequests))
	if _, err := e.p.ListByTag(context.Background()); provider.KindOf(err) != provider.KindRateLimited || provider.RetryAfter(err) != time.Minute {
		t.Errorf("a 429 with the hour not spent: %v, wait %v, want RateLimited, 1m", err, provider.RetryAfter(err))
	}
	if !strings.Contains(e.logs.String(), "rate limit") {
		t.Errorf("the rate limit is not logged:\n%s", e.logs)
	}
}

// TestCreateMeetsTheRateLimit: a Create that meets the minute's limit at
// any of its requests is RateLimited with the minute to ratelimit-reset,
// one request refused (godo's retries, off unless RetryConfig.RetryMax
// is set, stay off), and the Create after the wait makes the one Droplet
// (providertest.RunRateLimit).
func TestCreateMeetsTheRateLimit(t *testing.T) {
	providertest.RunRateLimit(t, time.Minute, func(t *testing.T, remaining int) providertest.RateLimited {
		now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
		e := newEnv(t, func(c *Config) { c.Now = func() time.Time { return now } })
		e.fake.SetClock(func() time.Time { return now }) // both clocks read it
		if remaining >= 0 {
			e.fake.SetRateLimit(time.Minute, dofake.DefaultMinuteRateLimit, dofake.DefaultMinuteRateLimit-remaining)
		}
		return providertest.RateLimited{Provider: e.p, Request: request(),
			Requests:  func() int { return e.fake.Tokens()[testToken] },
			Refused:   func() int { return e.fake.Calls("ratelimited") },
			Instances: func() int { return len(e.fake.Droplets()) },
			Advance:   func(d time.Duration) { now = now.Add(d) }}
	})
}

// TestErrorKinds holds the table of DigitalOcean's statuses and messages
// to the contract's kinds, each as godo reads the fake's answer.
func TestErrorKinds(t *testing.T) {
	cases := map[string]struct {
		reason string
		fault  dofake.Fault
		want   provider.Kind
	}{
		"NotFound":       {"a Droplet that is not there", dofake.Status(404), provider.KindNotFound},
		"RateLimit":      {"too many requests", dofake.Status(429), provider.KindRateLimited},
		"DropletLimit":   {"the account's Droplet limit", dofake.DropletLimit(), provider.KindQuota},
		"ReservedLimit":  {"the account's reserved IP limit", dofake.ReservedIPLimit(3), provider.KindQuota},
		"SizeSoldOut":    {"the size not sold in the region now", dofake.SizeUnavailable(), provider.KindCapacity},
		"RegionClosed":   {"the region takes no Droplets now", dofake.RegionUnavailable(), provider.KindCapacity},
		"PendingEvent":   {"another event on the Droplet", dofake.Fault{Status: 422, ID: "unprocessable_entity", Message: "Droplet already has a pending event."}, provider.KindTransient},
		"Invalid":        {"a bad field", dofake.Fault{Status: 422, ID: "unprocessable_entity", Message: "Size is invalid"}, provider.KindPermanent},
		"BadRequest":     {"a bad body", dofake.Status(400), provider.KindPermanent},
		"Unauthorized":   {"a bad token", dofake.Status(401), provider.KindPermanent},
		"Forbidden":      {"a token without the scope", dofake.Status(403), provider.KindPermanent},
		"Conflict":       {"changed meanwhile", dofake.Status(409), provider.KindTransient},
		"ServerError":    {"DigitalOcean's fault", dofake.Status(500), provider.KindTransient},
		"Unavailable":    {"DigitalOcean is away", dofake.Status(503), provider.KindTransient},
		"UnknownClient":  {"a 4xx the table lacks", dofake.Fault{Status: 418, ID: "teapot", Message: "I'm a teapot"}, provider.KindPermanent},
		"UnknownServer":  {"a 5xx the table lacks", dofake.Fault{Status: 599, ID: "odd", Message: "odd"}, provider.KindTransient},
		"UpperCaseWords": {"the message's case does not matter", dofake.Fault{Status: 422, ID: "unprocessable_entity", Message: "Creating this droplet will exceed your Droplet Limit"}, provider.KindQuota},
	}
	e := newEnv(t)
	// Statuses the description does not document (418, 599) are the
	// table's own edge, not DigitalOcean's: not checked.
	e.check.report = func(error) {}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e.fake.Fail("droplets.list", 1, tc.fault)
			_, err := e.p.ListByTag(context.Background())
			if got := provider.KindOf(err); got != tc.want {
				t.Errorf("%s: %v is %s, want %s", tc.reason, err, got, tc.want)
			}
		})
	}
}

// TestGetStates maps DigitalOcean's Droplet statuses, and what the
// Droplet's proxy answers, onto the contract's states.
func TestGetStates(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	id, err := e.p.Create(ctx, request())
	if err != nil {
		t.Fatal(err)
	}
	uid := request().UID
	type seen struct {
		State      provider.InstanceState
		BootError  string
		Generation int64
		NotFound   bool
	}
	cases := []struct {
		reason string
		status string
		answer *Status
		want   seen
	}{
		{"booting", "new", nil, seen{State: provider.StateProvisioning}},
		{"active, the proxy not answering yet", "active", nil, seen{State: provider.StateProvisioning}},
		{"active, the proxy says it cannot serve", "active", &Status{Error: "no engine binary"}, seen{State: provider.StateProvisioning, BootError: "no engine binary"}},
		{"serving", "active", &Status{Ready: true, Generation: 3}, seen{State: provider.StateRunning, Generation: 3}},
		{"powered off", "off", nil, seen{State: provider.StateStopped}},
		{"being destroyed: gone", "archive", nil, seen{NotFound: true}},
	}
	for _, tc := range cases {
		e.fake.SetStatus(e.droplet(t, id), tc.status)
		if tc.answer != nil {
			e.st.Set(uid, *tc.answer)
		}
		in, err := e.p.Get(ctx, id)
		var got seen
		if err != nil {
			got.NotFound = provider.KindOf(err) == provider.KindNotFound
		} else {
			got = seen{State: in.State, BootError: in.BootError, Generation: in.Generation}
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (status %s) (-want +got):\n%s", tc.reason, tc.status, diff)
		}
	}
	if len(e.st.Probes()) == 0 || !strings.HasSuffix(e.st.Probes()[0], ":3128/"+uid+"/"+vmstatus.StatusID(request())) {
		t.Errorf("probes %v, want the Droplet's IP on port 3128 for uid %s and its status id tag", e.st.Probes(), uid)
	}
}

// TestStaticReservedIP: a Static proxy's reserved IP is reserved onto its
// first Droplet once it is active, recorded, kept across a replacement
// (which goes to the address's region), listed for the collector once no
// Droplet holds it, and released by Delete of its ID, record and all.
func TestStaticReservedIP(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	req := request()
	req.StaticIP = true
	id, err := e.p.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if in, _ := e.p.Get(ctx, id); in.State != provider.StateProvisioning || in.AddressID != "" {
		t.Errorf("a new Droplet of a Static proxy: %+v, want Provisioning without an address", in)
	}
	e.fake.Settle()
	e.st.Set(req.UID, Status{Ready: true, Generation: 1})
	e.st.Routed(req.UID)
	// The first Get once active reserves the address onto the Droplet;
	// it holds it by the next.
	if in, err := e.p.Get(ctx, id); err != nil || in.State != provider.StateProvisioning {
		t.Fatalf("the Get that reserves: %+v, %v; want Provisioning", in, err)
	}
	in, err := e.p.Get(ctx, id)
	if err != nil || in.State != provider.StateRunning || in.AddressID == "" || !strings.HasPrefix(in.IP, "203.0.113.") {
		t.Fatalf("Get of a Static proxy's Droplet holding its address: %+v, %v; want Running at a reserved IP", in, err)
	}
	if probes := e.st.Probes(); !strings.HasPrefix(probes[len(probes)-1], in.IP+":") {
		t.Errorf("the last probe %s, want one through the reserved IP %s", probes[len(probes)-1], in.IP)
	}
	addr, err := e.p.Get(ctx, in.AddressID)
	if err != nil || addr.IP != in.IP || addr.UID != req.UID || addr.Deployment != "egress" || addr.State != provider.StateRunning || addr.CreatedAt.IsZero() {
		t.Fatalf("Get of the reserved IP: %+v, %v; want %s, in use, recorded", addr, err, in.IP)
	}
	if err := e.p.Delete(ctx, in.AddressID); provider.KindOf(err) != provider.KindTransient {
		t.Errorf("Delete of a reserved IP in use: %v, want transient (the Droplet goes first)", err)
	}
	// A replacement: the Droplet goes, the next has the same address, in
	// its region though the placement would choose from the metro.
	if err := e.p.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	e.fake.Settle()
	list, err := e.p.ListByTag(ctx)
	if err != nil || len(list) != 1 || list[0].ID != in.AddressID || list[0].State != provider.StateTerminated || list[0].UID != req.UID {
		t.Fatalf("ListByTag with the Droplet gone: %+v, %v; want the unused reserved IP alone", list, err)
	}
	next, err := e.p.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	e.fake.Settle()
	e.p.Get(ctx, next) // assigns
	if again, err := e.p.Get(ctx, next); err != nil || again.IP != in.IP || again.Zone != in.Zone || again.State != provider.StateRunning {
		t.Errorf("the replacement: %+v, %v; want Running at %s in %s", again, err, in.IP, in.Zone)
	}
	if n := len(e.fake.ReservedIPs()); n != 1 {
		t.Errorf("%d reserved IPs after a replacement, want 1", n)
	}
	// Its region full: a Static proxy waits, it cannot move.
	if err := e.p.Delete(ctx, next); err != nil {
		t.Fatal(err)
	}
	e.fake.Settle()
	req.AvoidZones = []string{in.Zone}
	if _, err := e.p.Create(ctx, req); provider.KindOf(err) != provider.KindCapacity || provider.FullZone(err) != "" {
		t.Errorf("a Static proxy whose region is full: %v, want Capacity naming no region", err)
	}
	if err := e.p.Delete(ctx, in.AddressID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.p.Get(ctx, in.AddressID); provider.KindOf(err) != provider.KindNotFound {
		t.Errorf("Get of the released reserved IP: %v, want not found", err)
	}
	if n := len(e.fake.ReservedIPs()); n != 0 {
		t.Errorf("%d reserved IPs left, want 0", n)
	}
	for _, tag := range e.fake.Tags() {
		if strings.HasPrefix(tag, recordKey) {
			t.Errorf("the record %s is left", tag)
		}
	}
	if err := e.p.Delete(ctx, in.AddressID); err != nil {
		t.Errorf("a second release: %v, want nil", err)
	}
}

// TestReservedIPCrashBeforeRecord: a try that reserved the address onto
// the Droplet and could not write its record (a crash, a 5xx) leaves an
// address the Droplet holds, which the next Get records; never a second
// address.
func TestReservedIPCrashBeforeRecord(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	req := request()
	req.StaticIP = true
	id, err := e.p.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	e.fake.Settle()
	e.fake.Fail("tags.create", 1, dofake.Status(500))
	if _, err := e.p.Get(ctx, id); provider.KindOf(err) != provider.KindTransient {
		t.Fatalf("the Get whose record failed: %v, want transient", err)
	}
	e.st.Set(req.UID, Status{Ready: true})
	e.st.Routed(req.UID)
	in, err := e.p.Get(ctx, id)
	if err != nil || in.State != provider.StateRunning || in.AddressID == "" {
		t.Fatalf("the next Get: %+v, %v; want Running with its address", in, err)
	}
	if n := len(e.fake.ReservedIPs()); n != 1 {
		t.Errorf("%d reserved IPs, want 1", n)
	}
	if addr, _ := e.p.Get(ctx, in.AddressID); addr.UID != req.UID {
		t.Errorf("the address's record names %q, want %q", addr.UID, req.UID)
	}
}

// TestListByTagKeepsAnotherDeployments: another deployment's Droplets and
// reserved IPs on the same account are never listed, and each
// deployment's provider lists its own.
func TestListByTagKeepsAnotherDeployments(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	mine := request()
	mine.StaticIP = true
	if _, err := e.p.Create(ctx, mine); err != nil {
		t.Fatal(err)
	}
	e.fake.Put("theirs", "nyc1", []string{ManagedTag, Tag(provider.LabelUID, "11111111-2222-4333-8444-555555555555"), DeploymentTag("staging")})
	theirIP := e.fake.PutReservedIP("nyc1")
	e.fake.PutTag(recordTag(theirIP, time.Now(), "staging", "11111111-2222-4333-8444-555555555555"))
	unlabelled := e.fake.Put("old", "nyc1", []string{ManagedTag, Tag(provider.LabelUID, "22222222-2222-4333-8444-555555555555")})
	list, err := e.p.ListByTag(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, in := range list {
		got[in.UID] = in.Deployment
	}
	want := map[string]string{mine.UID: "egress", "22222222-2222-4333-8444-555555555555": ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ListByTag (uid → deployment) (-want +got):\n%s", diff)
	}
	// Staging's own provider, on the same account, lists staging's.
	c, err := NewClient(testToken, e.fake.Endpoint(), nil)
	if err != nil {
		t.Fatal(err)
	}
	staging, err := New(c, Config{Deployment: "staging", Firewall: testFirewall, Renderer: e.p.cfg.Renderer, Prober: e.st})
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := staging.ListByTag(ctx)
	var ids []string
	for _, in := range theirs {
		ids = append(ids, in.ID+"/"+in.Deployment)
	}
	slices.Sort(ids)
	wantIDs := []string{dropletID(unlabelled) + "/", "digitalocean://" + itoa(e.dropletOf(t, "theirs")) + "/staging", reservedIPID(theirIP) + "/staging"}
	slices.Sort(wantIDs)
	if diff := cmp.Diff(wantIDs, ids); err != nil || diff != "" {
		t.Errorf("staging's ListByTag: %v (-want +got):\n%s", err, diff)
	}
}

func itoa(n int) string { return strings.TrimPrefix(dropletID(n), dropletPrefix) }

// dropletOf is the id of the fake's Droplet of a name.
func (e *env) dropletOf(t *testing.T, name string) int {
	t.Helper()
	for _, d := range e.fake.Droplets() {
		if d.Name == name {
			return d.ID
		}
	}
	t.Fatalf("no Droplet %s", name)
	return 0
}

// TestFirewallIsPutBack: a provider whose firewall settings changed (a
// new port, a new range) puts the deployment's firewall's rules back to
// them before its first create, once; a firewall that cannot be written
// refuses the create, and no Droplet is made outside it.
func TestFirewallIsPutBack(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.p.Create(ctx, request()); err != nil {
		t.Fatal(err)
	}
	wider := Firewall{ProxyPorts: []string{"3128", "1080"}, SourceRanges: []string{"203.0.113.0/24", "192.0.2.0/24"}, StatusSourceRanges: testFirewall.StatusSourceRanges}
	c, err := NewClient(testToken, e.fake.Endpoint(), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(c, Config{Firewall: wider, Renderer: e.p.cfg.Renderer, Prober: e.st})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Create(ctx, another("aaaaaaaa")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Create(ctx, another("bbbbbbbb")); err != nil {
		t.Fatal(err)
	}
	fws := e.fake.Firewalls()
	if len(fws) != 1 || !sameFirewall(&fws[0], wider.Request("egress")) {
		t.Errorf("the firewalls %+v, want one opening %+v", fws, wider.Request("egress").InboundRules)
	}
	if n := e.fake.Calls("firewalls.update"); n != 1 {
		t.Errorf("%d firewall updates, want 1", n)
	}
	fresh := newEnv(t)
	fresh.check.report = func(error) {} // the 500 is the test's
	fresh.fake.Fail("firewalls.create", 1, dofake.Status(500))
	if _, err := fresh.p.Create(ctx, request()); provider.KindOf(err) != provider.KindTransient {
		t.Errorf("a create whose firewall could not be made: %v, want transient", err)
	}
	if n := len(fresh.fake.Droplets()); n != 0 {
		t.Errorf("%d Droplets made without their firewall, want 0", n)
	}
}

// TestTheTokenIsSentNeverLogged: every call carries the token, and
// nothing the provider logs, at debug, through a lifecycle with a rate
// limit, an adoption and a capacity error, holds it.
func TestTheTokenIsSentNeverLogged(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	req := request()
	id, _ := e.p.Create(ctx, req)
	e.p.Create(ctx, req)
	e.fake.FailCreates("", 1, dofake.SizeUnavailable())
	e.p.Create(ctx, another("cccccccc"))
	e.fake.SetRateLimit(time.Hour, 5000, 5000)
	e.p.Get(ctx, id)
	e.fake.SetRateLimit(time.Hour, 5000, 0)
	e.p.Get(ctx, id)
	e.p.Delete(ctx, id)
	tokens := e.fake.Tokens()
	if len(tokens) != 1 || tokens[testToken] == 0 {
		t.Errorf("the fake saw tokens %v, want only the provider's", tokens)
	}
	logs := e.logs.String()
	for _, want := range []string{"adopted", "out of capacity", "rate limit"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the logs say nothing of %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, testToken) {
		t.Errorf("the provider logged the token:\n%s", logs)
	}
}

func TestProviderIDs(t *testing.T) {
	for _, bad := range []string{"", "digitalocean://", "digitalocean://abc", "digitalocean://-1", "digitalocean://012", "hcloud://1",
		"digitalocean-reserved-ip://x", "digitalocean-reserved-ip://2001:db8::1", "digitalocean-reserved-ip://203.0.113.07",
		// A residue's ID names a Droplet's own tag or a record, and no
		// other tag: Delete of it must never delete a tag of anyone's.
		"digitalocean-tag://", "digitalocean-tag://web", "digitalocean-tag://" + uidTag("u"), "digitalocean-tag://egress-droplet:egress:u:nothex:1",
		"digitalocean-tag://egress-droplet:egress:u:" + strings.Repeat("0", 32)} {
		if _, err := parseID(bad); provider.KindOf(err) != provider.KindPermanent {
			t.Errorf("parseID(%q): %v, want a permanent error", bad, err)
		}
	}
	for _, good := range []string{dropletID(42), reservedIPID("203.0.113.7"), tagID(dropletTag("egress", "u", strings.Repeat("0", 32), time.Unix(1, 0))),
		tagID(recordTag("203.0.113.7", time.Unix(1, 0), "egress", "u"))} {
		if _, err := parseID(good); err != nil {
			t.Errorf("parseID(%q): %v", good, err)
		}
	}
}

// TestTagsRoundTrip: each label's value comes back off its tag, whatever
// its text, every tag is one DigitalOcean takes, and a uid or deployment
// name reads as itself.
func TestTagsRoundTrip(t *testing.T) {
	cases := map[string]struct {
		value, tag string
	}{
		"UUID":       {"3f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098", "proxy-operator-uid:3f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098"},
		"UpperCase":  {"Team-A", "proxy-operator-uid:_54eam-_41"},
		"Colon":      {"a:b", "proxy-operator-uid:a_3ab"},
		"Underscore": {"a_b", "proxy-operator-uid:a_5fb"},
		"Unicode":    {"é", "proxy-operator-uid:_c3_a9"},
		"Empty":      {"", "proxy-operator-uid:"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tag := Tag(provider.LabelUID, tc.value)
			if tag != tc.tag {
				t.Errorf("Tag(%q) = %q, want %q", tc.value, tag, tc.tag)
			}
			if got := Labels([]string{tag, "web", "k:_zz"})[provider.LabelUID]; got != tc.value {
				t.Errorf("Labels of %q: %q, want %q", tag, got, tc.value)
			}
		})
	}
	if got := Labels([]string{"k:_zz", "k2:_4"}); len(got) != 0 {
		t.Errorf("tags this encoding cannot have written read as labels: %v", got)
	}
	rec := recordTag("203.0.113.7", time.Unix(1765000000, 0), "egress", "3f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098")
	r, ok := parseRecord(rec)
	want := record{Tag: rec, Address: "203.0.113.7", Created: time.Unix(1765000000, 0).UTC(), Deployment: "egress", UID: "3f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098"}
	if diff := cmp.Diff(want, r); !ok || diff != "" {
		t.Errorf("a record round trip (-want +got):\n%s", diff)
	}
}

// FuzzLabels: what a tag says is outside input; Labels never fails on it,
// and a label it reads is one Tag writes back as the same tag.
func FuzzLabels(f *testing.F) {
	for _, s := range []string{"proxy-operator-uid:abc", "k:_41", "k:_", "k:_zz", ":x", "web", "egress-reserved-ip:203-0-113-7:1:egress:u"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tag string) {
		for k, v := range Labels([]string{tag}) {
			if again := Tag(k, v); again != tag {
				t.Errorf("%q reads as %s=%q, which is the tag %q", tag, k, v, again)
			}
		}
	})
}

// TestStaticEgress: a Static proxy's Droplet that serves is Running only
// once its proxy says its outbound traffic leaves from the proxy's
// reserved IP (what its agent says once it routed through the address's
// anchor gateway): before, its first requests would reach their targets
// from the Droplet's own address. Waiting for it is no boot error. An
// Ephemeral proxy's Droplet is read as before, whatever it says of its
// egress.
func TestStaticEgress(t *testing.T) {
	type seen struct {
		State      provider.InstanceState
		BootError  string
		Generation int64
	}
	cases := map[string]struct {
		reason string
		static bool
		// answer is what the Droplet says, given its reserved IP (""
		// for an Ephemeral one) and its own address.
		answer func(reserved, own string) Status
		want   seen
	}{
		"Ephemeral": {
			reason: "its address is its own: nothing to wait for",
			answer: func(_, _ string) Status { return Status{Ready: true, Generation: 2} },
			want:   seen{State: provider.StateRunning, Generation: 2},
		},
		"Static, not routed yet": {
			reason: "it serves, but says no egress address: Provisioning, no boot error",
			static: true,
			answer: func(_, _ string) Status { return Status{Ready: true, Generation: 2} },
			want:   seen{State: provider.StateProvisioning},
		},
		"Static, leaving by its own address": {
			reason: "an egress that is the Droplet's own address is not the reserved IP",
			static: true,
			answer: func(_, own string) Status { return Status{Ready: true, Generation: 2, Egress: own} },
			want:   seen{State: provider.StateProvisioning},
		},
		"Static, leaving from another address": {
			reason: "a reserved IP that is not the proxy's (one it held before)",
			static: true,
			answer: func(_, _ string) Status { return Status{Ready: true, Generation: 2, Egress: "198.51.100.99"} },
			want:   seen{State: provider.StateProvisioning},
		},
		"Static, routed": {
			reason: "its traffic leaves from the reserved IP: Running at the generation it serves",
			static: true,
			answer: func(reserved, _ string) Status { return Status{Ready: true, Generation: 2, Egress: reserved} },
			want:   seen{State: provider.StateRunning, Generation: 2},
		},
		"Static, cannot serve": {
			reason: "a boot error stays one, egress or not",
			static: true,
			answer: func(reserved, _ string) Status { return Status{Error: "no engine binary", Egress: reserved} },
			want:   seen{State: provider.StateProvisioning, BootError: "no engine binary"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			req := request()
			req.StaticIP = tc.static
			id, err := e.p.Create(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			e.fake.Settle()
			// The first Get of the active Droplet reserves a Static
			// proxy's address onto it.
			if _, err := e.p.Get(ctx, id); err != nil {
				t.Fatal(err)
			}
			reserved := ""
			if ips := e.fake.ReservedIPs(); len(ips) == 1 {
				reserved = ips[0].IP
			} else if tc.static {
				t.Fatalf("%d reserved IPs after the first Get of a Static proxy's active Droplet, want 1", len(ips))
			}
			own, _ := e.fake.Droplets()[0].PublicIPv4()
			e.st.Set(req.UID, tc.answer(reserved, own))
			in, err := e.p.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, seen{State: in.State, BootError: in.BootError, Generation: in.Generation}); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// FuzzOwnTag: a tag that reads as a Droplet's own tag is the one tag its
// fields make (so a residue's ID names exactly one tag, and Delete of it
// deletes that one), and never reads as a label or a record.
func FuzzOwnTag(f *testing.F) {
	for _, s := range []string{dropletTag("egress", "3f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098", strings.Repeat("ab", 16), time.Unix(1796605200, 0)),
		"egress-droplet:egress:u:" + strings.Repeat("0", 32) + ":-1", "egress-droplet:_41:u:" + strings.Repeat("0", 32) + ":1", "egress-droplet:a:b:c:d", "web"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tag string) {
		o, ok := parseOwnTag(tag)
		if !ok {
			return
		}
		if again := dropletTag(o.Deployment, o.UID, o.ID, o.Created); again != tag {
			t.Errorf("%q reads as %+v, which is the tag %q", tag, o, again)
		}
		if _, rec := parseRecord(tag); rec || len(Labels([]string{tag})) != 0 {
			t.Errorf("%q reads as a Droplet's own tag and as a record or a label", tag)
		}
	})
}
