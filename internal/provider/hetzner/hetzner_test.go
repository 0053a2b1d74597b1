package hetzner

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/hetzner/hetznerfake"
	"github.com/egress-proxies/egress/internal/provider/providertest"
	"github.com/egress-proxies/egress/internal/provider/vmside"
	"github.com/egress-proxies/egress/internal/provider/vmside/vmsidetest"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

// testToken is the fake's token: one no real project has (Hetzner's are
// 64 characters of letters and digits).
const testToken = "test-token-0123456789abcdef"

type env struct {
	p    *Provider
	fake *hetznerfake.Server
	st   *vmsidetest.Statuses
	logs *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newEnv points the SDK's client at a fresh fake, with cfg's settings.
func newEnv(t *testing.T, change ...func(*Config)) *env {
	t.Helper()
	fake := hetznerfake.New(testToken)
	t.Cleanup(fake.Close)
	e := &env{fake: fake, st: vmsidetest.NewStatuses(), logs: &syncBuffer{}}
	cfg := Config{Renderer: vmsidetest.Renderer, Prober: e.st, Log: slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	for _, c := range change {
		c(&cfg)
	}
	p, err := New(NewClient(testToken, fake.Endpoint(), nil), cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.p = p
	return e
}

// uidOf is the uid label of the server a providerID names.
func (e *env) uidOf(t *testing.T, providerID string) string {
	t.Helper()
	id, err := parseID(providerID)
	if err != nil {
		t.Fatal(err)
	}
	for _, sv := range e.fake.Servers() {
		if sv.ID == id.id {
			return sv.Labels[provider.LabelUID]
		}
	}
	t.Fatalf("no server %s", providerID)
	return ""
}

func TestConformance(t *testing.T) {
	providertest.Run(t, func(t *testing.T) providertest.Target {
		e := newEnv(t)
		return providertest.Target{
			Provider: e.p,
			Settle:   e.fake.Settle,
			AddUnmanaged: func(name, uid string) {
				e.fake.Put(name, "fsn1", map[string]string{provider.LabelManaged: "false", provider.LabelUID: uid})
			},
			Deployment: provider.DefaultDeployment,
			AddManaged: func(name, uid, deployment string) {
				labels := map[string]string{provider.LabelManaged: provider.LabelManagedYes, provider.LabelUID: uid}
				if deployment != "" {
					labels[provider.LabelDeployment] = deployment
				}
				e.fake.Put(name, "hel1", labels)
			},
			UnknownID:   serverID(999999),
			ReportReady: func(id string) { e.st.Set(e.uidOf(t, id), Status{Generation: 1, Ready: true}) },
			ReportBootError: func(id, reason string) {
				e.st.Set(e.uidOf(t, id), Status{Error: reason})
			},
			Placement: provider.Placement{Region: "eu-central", Zone: "nbg1", MachineType: "cx23", Image: "debian-12"},
		}
	})
}

func request() provider.CreateRequest {
	uid := "3f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098"
	return provider.CreateRequest{
		Name: provider.NameFromUID(uid), UID: uid, Namespace: "team-a", ProxyName: "egress-1",
		Placement:     provider.Placement{Region: "eu-central", MachineType: "cx33", Image: "debian-12"},
		StartupScript: "#!/bin/bash\necho the proxy's bootstrap\n",
		Port:          3128,
	}
}

// TestCreateBody checks the create Hetzner receives: the name, the type,
// image and location, the three labels and the probe's port in the same
// call, the rendered user-data, both address families.
func TestCreateBody(t *testing.T) {
	e := newEnv(t)
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
	wantLoc, _ := provider.ChooseZone(req.UID, []string{"fsn1", "nbg1", "hel1"}, nil)
	type body struct {
		Name, ServerType, Image, Location, UserData string
		Labels                                      map[string]string
		IPv4, IPv6                                  bool
	}
	want := body{Name: req.Name, ServerType: "cx33", Image: "debian-12", Location: wantLoc,
		UserData: "#cloud-config\n# egress proxy " + req.UID + ", generation 0\n",
		Labels: map[string]string{"proxy-operator-managed": "true", "proxy-operator-uid": req.UID, "egress-deployment": "egress", "egress-proxy-port": "3128",
			vmside.LabelStatusID: vmstatus.StatusID(req)},
		IPv4: true, IPv6: true}
	got := body{Name: c.Name, ServerType: c.ServerType.Name, Image: c.Image.Name, Location: c.Location, UserData: c.UserData, Labels: *c.Labels,
		IPv4: c.PublicNet.EnableIPv4, IPv6: c.PublicNet.EnableIPv6}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the create (-want +got):\n%s", diff)
	}
	in, err := e.p.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if in.Zone != wantLoc || in.IP == "" || in.State != provider.StateProvisioning {
		t.Errorf("Get right after Create: %+v, want location %s, an IP, Provisioning", in, wantLoc)
	}

	// A spec's own cloud-init goes as it is, with no probe port: Hetzner's
	// "running" is all such a server says.
	custom := request()
	custom.UID, custom.Name = "aaaaaaaa-9e8d-4c7b-a6f5-e4d3c2b1a098", provider.NameFromUID("aaaaaaaa-9e8d-4c7b-a6f5-e4d3c2b1a098")
	custom.StartupScript, custom.CloudInit = "", "#cloud-config\nruncmd: [echo mine]\n"
	cid, err := e.p.Create(context.Background(), custom)
	if err != nil {
		t.Fatal(err)
	}
	c = e.fake.Creates()[1]
	if c.UserData != custom.CloudInit || (*c.Labels)[labelProbePort] != "" {
		t.Errorf("a custom cloud-init's create: user_data %q, probe port label %q; want the spec's, none", c.UserData, (*c.Labels)[labelProbePort])
	}
	e.fake.Settle()
	if in, err := e.p.Get(context.Background(), cid); err != nil || in.State != provider.StateRunning {
		t.Errorf("a running server of a custom cloud-init: %+v, %v; want Running", in, err)
	}
}

// TestCreateIsKeyedByName: a repeated create (a lost answer, a crash)
// finds the server through uniqueness_error and adopts it when its uid
// label is the request's; a server of that name of another uid is
// refused, and no second server is ever made.
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
	other := req
	other.UID = "0000aaaa-9e8d-4c7b-a6f5-e4d3c2b1a098"
	if _, err := e.p.Create(ctx, other); provider.KindOf(err) != provider.KindAlreadyExists {
		t.Errorf("a create of the name for another uid: %v, want AlreadyExists", err)
	}
	if n := len(e.fake.Servers()); n != 1 {
		t.Errorf("%d servers, want 1", n)
	}
	if got := e.fake.Calls("servers.create"); got != 3 {
		t.Errorf("%d creates sent, want 3 (each try asks; Hetzner's uniqueness keeps it one)", got)
	}
	// A replacement has its predecessor's name: while Hetzner still
	// deletes the old server (Get calls it gone), a create waits for it
	// rather than adopt it, and makes the new one once it is gone.
	if err := e.p.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	if _, err := e.p.Create(ctx, req); provider.KindOf(err) != provider.KindTransient {
		t.Errorf("a create while the server of its name is being deleted: %v, want transient", err)
	}
	e.fake.Settle()
	if next, err := e.p.Create(ctx, req); err != nil || next == first {
		t.Errorf("a create once it is gone: %q, %v; want a new server", next, err)
	}
	if !strings.Contains(e.logs.String(), "adopted") {
		t.Errorf("the adoption is not logged:\n%s", e.logs)
	}
}

// TestCapacityMovesOn: a location out of capacity (resource_unavailable,
// placement_error) is a capacity error naming it, so the reconciler asks
// again past it; a create past it goes elsewhere in the network zone, and
// one with every location full says so. A named location is not left.
func TestCapacityMovesOn(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	req := request()
	first, _ := provider.ChooseZone(req.UID, []string{"fsn1", "nbg1", "hel1"}, nil)
	e.fake.FailCreates(first, -1, hetznerfake.ResourceUnavailable(first, "cx33"))
	_, err := e.p.Create(ctx, req)
	if provider.KindOf(err) != provider.KindCapacity || provider.FullZone(err) != first {
		t.Fatalf("a create into a full location: %v, want Capacity naming %s", err, first)
	}
	req.AvoidZones = []string{first}
	second, _ := provider.ChooseZone(req.UID, []string{"fsn1", "nbg1", "hel1"}, req.AvoidZones)
	e.fake.FailCreates(second, 1, hetznerfake.PlacementError(second))
	if _, err = e.p.Create(ctx, req); provider.FullZone(err) != second {
		t.Fatalf("a placement_error: %v, want Capacity naming %s", err, second)
	}
	req.AvoidZones = append(req.AvoidZones, second)
	id, err := e.p.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	third, _ := provider.ChooseZone(req.UID, []string{"fsn1", "nbg1", "hel1"}, req.AvoidZones)
	if in, _ := e.p.Get(ctx, id); in.Zone != third {
		t.Errorf("the server is in %s, want %s, the one location left", in.Zone, third)
	}
	req.AvoidZones = []string{"fsn1", "nbg1", "hel1"}
	if _, err := e.p.Create(ctx, req); provider.KindOf(err) != provider.KindCapacity || provider.FullZone(err) != "" {
		t.Errorf("every location full: %v, want Capacity naming no location", err)
	}
	named := request()
	named.UID, named.Name = "bbbbbbbb-9e8d-4c7b-a6f5-e4d3c2b1a098", provider.NameFromUID("bbbbbbbb-9e8d-4c7b-a6f5-e4d3c2b1a098")
	named.Placement.Zone = first
	if _, err := e.p.Create(ctx, named); provider.KindOf(err) != provider.KindCapacity || provider.FullZone(err) != "" {
		t.Errorf("a named location full: %v, want Capacity naming no location (the spec's stays)", err)
	}
}

// TestQuotaIsSurfaced: the project's server limit is a quota error with
// Hetzner's words.
func TestQuotaIsSurfaced(t *testing.T) {
	e := newEnv(t)
	e.fake.SetServerLimit(1)
	e.fake.Put("someone-else", "fsn1", nil)
	_, err := e.p.Create(context.Background(), request())
	if provider.KindOf(err) != provider.KindQuota || !strings.Contains(err.Error(), "server limit exceeded") {
		t.Errorf("a create past the server limit: %v, want Quota with Hetzner's message", err)
	}
}

// TestRateLimitWaits: a 429 is rate limited with the wait the
// RateLimit-* headers give (the bucket refills one request a second at
// 3600 an hour), and the call after that wait passes.
func TestRateLimitWaits(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	e := newEnv(t, func(c *Config) { c.Now = func() time.Time { return now } })
	e.fake.SetClock(func() time.Time { return now })
	e.fake.SetRateLimit(3600, 0)
	_, err := e.p.Create(context.Background(), request())
	if provider.KindOf(err) != provider.KindRateLimited || provider.RetryAfter(err) != time.Second {
		t.Fatalf("a create at the rate limit: %v (wait %v), want RateLimited, wait 1s", err, provider.RetryAfter(err))
	}
	e.fake.SetRateLimit(60, 0) // a request a minute
	if _, err := e.p.ListByTag(context.Background()); provider.RetryAfter(err) != time.Minute {
		t.Errorf("at 60 an hour: wait %v, want 1m", provider.RetryAfter(err))
	}
	e.fake.Advance(time.Minute)
	if _, err := e.p.Create(context.Background(), request()); err != nil {
		t.Errorf("after the wait: %v", err)
	}
}

// TestCreateMeetsTheRateLimit: a Create that meets the rate limit at any
// of its requests is RateLimited with the second the RateLimit-* headers
// give at 3600 an hour, one request refused (hcloud-go's own retries,
// on by default for rate_limit_exceeded, are off), and the Create after
// the wait makes the one server (providertest.RunRateLimit).
func TestCreateMeetsTheRateLimit(t *testing.T) {
	providertest.RunRateLimit(t, time.Second, func(t *testing.T, remaining int) providertest.RateLimited {
		now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
		e := newEnv(t, func(c *Config) { c.Now = func() time.Time { return now } })
		e.fake.SetClock(func() time.Time { return now }) // both clocks read it
		if remaining >= 0 {
			e.fake.SetRateLimit(hetznerfake.DefaultRateLimit, remaining)
		}
		return providertest.RateLimited{Provider: e.p, Request: request(),
			Requests:  func() int { return e.fake.Tokens()[testToken] },
			Refused:   func() int { return e.fake.Calls("ratelimited") },
			Instances: func() int { return len(e.fake.Servers()) },
			Advance:   func(d time.Duration) { now = now.Add(d) }}
	})
}

// TestErrorKinds holds the table of Hetzner's codes to the contract's
// kinds, each as the SDK reads the fake's answer.
func TestErrorKinds(t *testing.T) {
	cases := map[string]struct {
		reason string
		fault  hetznerfake.Fault
		want   provider.Kind
	}{
		"NotFound":      {"a server that is not there", hetznerfake.Fault{Code: "not_found", Status: 404}, provider.KindNotFound},
		"Uniqueness":    {"a name in use", hetznerfake.Fault{Code: "uniqueness_error", Status: 409}, provider.KindAlreadyExists},
		"Unavailable":   {"no room in the location", hetznerfake.ResourceUnavailable("fsn1", "cx23"), provider.KindCapacity},
		"Placement":     {"placement failed", hetznerfake.PlacementError("fsn1"), provider.KindCapacity},
		"Limit":         {"the project's limit", hetznerfake.LimitExceeded("server"), provider.KindQuota},
		"RateLimit":     {"too many requests", hetznerfake.Fault{Code: "rate_limit_exceeded", Status: 429}, provider.KindRateLimited},
		"Locked":        {"an action runs", hetznerfake.Fault{Code: "locked", Status: 423}, provider.KindTransient},
		"Conflict":      {"changed meanwhile", hetznerfake.Fault{Code: "conflict", Status: 409}, provider.KindTransient},
		"Maintenance":   {"maintenance", hetznerfake.Fault{Code: "maintenance", Status: 503}, provider.KindTransient},
		"ServerError":   {"Hetzner's fault", hetznerfake.Fault{Code: "server_error", Status: 500}, provider.KindTransient},
		"Timeout":       {"no answer in time", hetznerfake.Fault{Code: "timeout", Status: 504}, provider.KindTransient},
		"Invalid":       {"a bad field", hetznerfake.Fault{Code: "invalid_input", Status: 400}, provider.KindPermanent},
		"Unauthorized":  {"a bad token", hetznerfake.Fault{Code: "unauthorized", Status: 401}, provider.KindPermanent},
		"Forbidden":     {"a read-only token", hetznerfake.Fault{Code: "forbidden", Status: 403}, provider.KindPermanent},
		"Protected":     {"delete protection", hetznerfake.Fault{Code: "protected", Status: 403}, provider.KindPermanent},
		"UnknownClient": {"a code the table lacks, a 4xx", hetznerfake.Fault{Code: "something_new", Status: 422}, provider.KindPermanent},
		"UnknownServer": {"a code the table lacks, a 5xx", hetznerfake.Fault{Code: "something_new", Status: 502}, provider.KindTransient},
	}
	e := newEnv(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e.fake.Fail("servers.list", 1, tc.fault)
			_, err := e.p.ListByTag(context.Background())
			if got := provider.KindOf(err); got != tc.want {
				t.Errorf("%s: %v is %s, want %s", tc.reason, err, got, tc.want)
			}
		})
	}
}

// TestGetStates maps Hetzner's server statuses, and what the server's
// proxy answers, onto the contract's states.
func TestGetStates(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	id, err := e.p.Create(ctx, request())
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := parseID(id)
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
		{"booting", "initializing", nil, seen{State: provider.StateProvisioning}},
		{"starting", "starting", nil, seen{State: provider.StateProvisioning}},
		{"booted, the proxy not answering yet", "running", nil, seen{State: provider.StateProvisioning}},
		{"booted, the proxy says it cannot serve", "running", &Status{Error: "no engine binary"}, seen{State: provider.StateProvisioning, BootError: "no engine binary"}},
		{"serving", "running", &Status{Ready: true, Generation: 3}, seen{State: provider.StateRunning, Generation: 3}},
		{"powered off", "off", nil, seen{State: provider.StateStopped}},
		{"stopping", "stopping", nil, seen{State: provider.StateStopped}},
		{"migrating", "migrating", nil, seen{State: provider.StateProvisioning}},
		{"being deleted: gone", "deleting", nil, seen{NotFound: true}},
	}
	for _, tc := range cases {
		e.fake.SetStatus(pid.id, tc.status)
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
		t.Errorf("probes %v, want the server's IP on port 3128 for uid %s and its status id label", e.st.Probes(), uid)
	}
}

// TestStaticPrimaryIP: a Static proxy's Primary IP is reserved before
// its server, labelled like it, kept across a replacement, listed for the
// collector once no server uses it, and released by Delete of its ID.
func TestStaticPrimaryIP(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	req := request()
	req.StaticIP = true
	id, err := e.p.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	e.fake.Settle()
	in, err := e.p.Get(ctx, id)
	if err != nil || in.AddressID == "" {
		t.Fatalf("Get of a Static proxy's server: %+v, %v; want an AddressID", in, err)
	}
	addr, err := e.p.Get(ctx, in.AddressID)
	if err != nil || addr.IP != in.IP || addr.UID != req.UID || addr.Deployment != "egress" || addr.State != provider.StateRunning {
		t.Fatalf("Get of the Primary IP: %+v, %v; want %s, in use, labelled", addr, err, in.IP)
	}
	if err := e.p.Delete(ctx, in.AddressID); provider.KindOf(err) != provider.KindTransient {
		t.Errorf("Delete of a Primary IP in use: %v, want transient (the server goes first)", err)
	}
	// A replacement: the server goes, the next has the same address.
	if err := e.p.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	e.fake.Settle()
	list, err := e.p.ListByTag(ctx)
	if err != nil || len(list) != 1 || list[0].ID != in.AddressID || list[0].State != provider.StateTerminated {
		t.Fatalf("ListByTag with the server gone: %+v, %v; want the unused Primary IP alone", list, err)
	}
	req.Placement.Zone = ""
	next, err := e.p.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := e.p.Get(ctx, next); again.IP != in.IP || again.Zone != in.Zone {
		t.Errorf("the replacement: %s in %s, want %s in %s", again.IP, again.Zone, in.IP, in.Zone)
	}
	// A retry of that create, whose answer was lost: the server that
	// holds the Primary IP is the one of its name, adopted.
	if again, err := e.p.Create(ctx, req); err != nil || again != next {
		t.Errorf("a repeated create of a Static proxy: %q, %v; want %q (adopted)", again, err, next)
	}
	// Its location full: a Static proxy waits, it cannot move.
	if err := e.p.Delete(ctx, next); err != nil {
		t.Fatal(err)
	}
	e.fake.Settle()
	req.AvoidZones = []string{in.Zone}
	if _, err := e.p.Create(ctx, req); provider.KindOf(err) != provider.KindCapacity || provider.FullZone(err) != "" {
		t.Errorf("a Static proxy whose location is full: %v, want Capacity naming no location", err)
	}
	if err := e.p.Delete(ctx, in.AddressID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.p.Get(ctx, in.AddressID); provider.KindOf(err) != provider.KindNotFound {
		t.Errorf("Get of the released Primary IP: %v, want not found", err)
	}
	if n := len(e.fake.PrimaryIPs()); n != 0 {
		t.Errorf("%d Primary IPs left, want 0", n)
	}
}

// TestEphemeralLeavesNoPrimaryIP: an Ephemeral proxy's addresses go with
// its server.
func TestEphemeralLeavesNoPrimaryIP(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	id, err := e.p.Create(ctx, request())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(e.fake.PrimaryIPs()); n != 2 {
		t.Errorf("%d Primary IPs with the server, want 2 (its IPv4 and IPv6)", n)
	}
	if err := e.p.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	e.fake.Settle()
	if n, m := len(e.fake.Servers()), len(e.fake.PrimaryIPs()); n+m != 0 {
		t.Errorf("%d servers and %d Primary IPs left, want none", n, m)
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
	e.fake.FailCreates("", 1, hetznerfake.ResourceUnavailable("fsn1", "cx33"))
	other := request()
	other.UID, other.Name = "cccccccc-9e8d-4c7b-a6f5-e4d3c2b1a098", provider.NameFromUID("cccccccc-9e8d-4c7b-a6f5-e4d3c2b1a098")
	e.p.Create(ctx, other)
	e.fake.SetRateLimit(3600, 0)
	e.p.Get(ctx, id)
	e.fake.SetRateLimit(3600, 3600)
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
	for _, bad := range []string{"", "hcloud://", "hcloud://abc", "hcloud://-1", "hcloud://012", "gce://p/z/n", "hcloud-primary-ip://x"} {
		if _, err := parseID(bad); provider.KindOf(err) != provider.KindPermanent {
			t.Errorf("parseID(%q): %v, want a permanent error", bad, err)
		}
	}
	for _, good := range []string{serverID(42), primaryIPID(7)} {
		if _, err := parseID(good); err != nil {
			t.Errorf("parseID(%q): %v", good, err)
		}
	}
}
