package aws

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/aws/ec2fake"
	"github.com/egress-proxies/egress/internal/provider/providertest"
	"github.com/egress-proxies/egress/internal/provider/vmside"
	"github.com/egress-proxies/egress/internal/provider/vmside/vmsidetest"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

// testCredentials sign the tests' requests to the fake: a key no
// account has, given in code, since the provider reads none from the
// environment.
var testCredentials = sdk.CredentialsProviderFunc(func(context.Context) (sdk.Credentials, error) {
	return sdk.Credentials{AccessKeyID: "EGRESS-FAKE-TEST-KEY", SecretAccessKey: "not-a-secret", Source: "tests"}, nil
})

// noWait is the retryer's backoff in tests: the attempts are counted,
// not timed.
var noWait = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })

type env struct {
	p    *Provider
	fake *ec2fake.Server
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

// newEnv points the SDK's client at a fresh fake, with cfg's settings
// (the regions us-east-1 and eu-west-1 by default) and opts' client.
func newEnv(t *testing.T, change ...func(*Config, *ClientOptions)) *env {
	t.Helper()
	fake := ec2fake.New()
	t.Cleanup(fake.Close)
	e := &env{fake: fake, st: vmsidetest.NewStatuses(), logs: &syncBuffer{}}
	cfg := Config{Regions: []string{"us-east-1", "eu-west-1"}, Renderer: vmsidetest.Renderer, Prober: e.st,
		Log: slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	opts := ClientOptions{Credentials: testCredentials, Endpoint: fake.Endpoint(), HTTPClient: fake.Client(), Backoff: noWait}
	for _, c := range change {
		c(&cfg, &opts)
	}
	p, err := New(NewClient(opts), cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.p = p
	return e
}

// instance is what the fake holds of the instance a providerID names.
func (e *env) instance(t *testing.T, providerID string) ec2fake.Instance {
	t.Helper()
	id, err := parseID(providerID)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range e.fake.Instances() {
		if in.ID == id.id {
			return in
		}
	}
	t.Fatalf("no instance %s", providerID)
	return ec2fake.Instance{}
}

func TestConformance(t *testing.T) {
	providertest.Run(t, func(t *testing.T) providertest.Target {
		e := newEnv(t)
		return providertest.Target{
			Provider: e.p,
			Settle:   e.fake.Settle,
			AddUnmanaged: func(name, uid string) {
				e.fake.Put("us-east-1", "us-east-1a", map[string]string{provider.LabelManaged: "false", provider.LabelUID: uid, "Name": name})
			},
			Deployment: provider.DefaultDeployment,
			AddManaged: func(name, uid, deployment string) {
				tags := map[string]string{provider.LabelManaged: provider.LabelManagedYes, provider.LabelUID: uid, "Name": name}
				if deployment != "" {
					tags[provider.LabelDeployment] = deployment
				}
				e.fake.Put("eu-west-1", "eu-west-1b", tags)
			},
			UnknownID: instanceID("us-east-1", "i-0000000000000dead"),
			ReportReady: func(id string) {
				e.st.Set(e.instance(t, id).Tags[provider.LabelUID], vmside.Status{Generation: 1, Ready: true})
			},
			ReportBootError: func(id, reason string) {
				e.st.Set(e.instance(t, id).Tags[provider.LabelUID], vmside.Status{Error: reason})
			},
			Placement: provider.Placement{Region: "us-east-1", Zone: "us-east-1b", MachineType: "t3.micro", Image: "debian-12"},
		}
	})
}

func request() provider.CreateRequest {
	uid := "9b7c3f0e-5a41-4c2d-8e6f-1a2b3c4d5e6f"
	return provider.CreateRequest{
		Name: provider.NameFromUID(uid), UID: uid, Namespace: "team-a", ProxyName: "egress-1",
		Placement:     provider.Placement{Region: "us-east-1"},
		StartupScript: "#!/bin/sh\n", Port: 3128, RequestID: "attempt-1",
	}
}

// TestRunInstancesRequest: what the launch asks of EC2: the newest of
// Debian's own Debian 13 AMIs (not another owner's of a Debian name), the
// default type, the zone chosen from the uid, the deployment's security
// group, the rendered user-data, the three tags (and the name) on the
// instance, its volume and its interface in the launch itself, IMDSv2
// only with a hop limit of 1 and no tags in IMDS; and no CreateTags.
func TestRunInstancesRequest(t *testing.T) {
	e := newEnv(t)
	req := request()
	id, err := e.p.Create(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	in := e.instance(t, id)
	zone, _ := provider.ChooseZone(req.UID, []string{"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1e", "us-east-1f"}, nil)
	type launch struct {
		Image, Type, Zone, UserData string
		Groups                      []string
		Tags, Metadata              map[string]string
	}
	want := launch{
		Image: e.fake.ImageID("us-east-1", "debian-13-amd64-20251117-2299"), Type: "t3.micro", Zone: zone,
		UserData: "#cloud-config\n# egress proxy " + req.UID + ", generation 0\n", Groups: []string{"egress-proxy-egress"},
		Tags: map[string]string{provider.LabelManaged: "true", provider.LabelUID: req.UID, provider.LabelDeployment: "egress", "Name": req.Name, "egress-proxy-port": "3128",
			vmside.LabelStatusID: vmstatus.StatusID(req)},
		Metadata: map[string]string{"HttpTokens": "required", "HttpPutResponseHopLimit": "1", "HttpEndpoint": "enabled", "InstanceMetadataTags": "disabled"},
	}
	got := launch{Image: in.ImageID, Type: in.Type, Zone: in.Zone, UserData: in.UserData, Groups: in.SecurityGroups, Tags: in.Tags, Metadata: in.MetadataOptions}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the launch (-want +got):\n%s", diff)
	}
	if n := e.fake.Actions()["CreateTags"]; n != 0 {
		t.Errorf("%d CreateTags calls: the tags are set in the launch, never after it", n)
	}
	for _, c := range e.fake.Calls() {
		if c.Region != "us-east-1" {
			t.Errorf("%s was sent to %s, want us-east-1", c.Action, c.Region)
		}
	}
}

// TestCreateIsKeyedByClientToken: a retry of an attempt, with its answer
// lost or not, answers the instance the first call made; a new attempt
// makes a new one; a retry of an attempt whose request changed since
// (IdempotentParameterMismatch) finds the attempt's instance by its
// token and adopts it. Never a second instance for one attempt.
func TestCreateIsKeyedByClientToken(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	req := request()
	e.fake.LoseAnswers("RunInstances", 1) // done, then a 500: the SDK retries with the token
	first, err := e.p.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.p.Create(ctx, req)
	if err != nil || again != first {
		t.Errorf("a retry of the attempt = %q, %v; want %q", again, err, first)
	}
	changed := req
	changed.Placement.MachineType = "t3.small"
	adopted, err := e.p.Create(ctx, changed)
	if err != nil || adopted != first {
		t.Errorf("a retry of the attempt with another type = %q, %v; want the attempt's %q adopted", adopted, err, first)
	}
	if !strings.Contains(e.logs.String(), "aws instance of this create attempt adopted") {
		t.Errorf("no log line says the instance was adopted:\n%s", e.logs)
	}
	next := req
	next.RequestID = "attempt-2"
	second, err := e.p.Create(ctx, next)
	if err != nil || second == first {
		t.Errorf("a new attempt = %q, %v; want a new instance", second, err)
	}
	if n := len(e.fake.Instances()); n != 2 {
		t.Errorf("%d instances after two attempts, want 2", n)
	}
}

// TestAdoptRefusesAnotherUID: an instance a token made with another uid
// tag is not the request's.
func TestAdoptRefusesAnotherUID(t *testing.T) {
	e := newEnv(t)
	req := request()
	_, err := e.p.adopt(context.Background(), "us-east-1", clientToken(req, "us-east-1a"), req)
	if provider.KindOf(err) != provider.KindPermanent {
		t.Errorf("adopting a token no instance has: %v, want a permanent error", err)
	}
}

// TestCapacityMovesOn: InsufficientInstanceCapacity and Unsupported are
// capacity errors naming the zone, tried once (the SDK would retry the
// first, a 500, by itself), and the next create avoids the zone; a
// placement that names its zone gets no zone to avoid.
func TestCapacityMovesOn(t *testing.T) {
	for name, tc := range map[string]struct {
		reason string
		fault  func(f *ec2fake.Server, zone string)
		code   string
	}{
		"InsufficientInstanceCapacity": {"the zone has no room for now", func(f *ec2fake.Server, z string) { f.NoCapacity(z) }, "InsufficientInstanceCapacity"},
		"Unsupported":                  {"the zone does not offer the type", func(f *ec2fake.Server, z string) { f.Unsupported(z, "t3.micro") }, "Unsupported"},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			req := request()
			zone, _ := provider.ChooseZone(req.UID, []string{"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1e", "us-east-1f"}, nil)
			tc.fault(e.fake, zone)
			_, err := e.p.Create(ctx, req)
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Kind != provider.KindCapacity || pe.Zone != zone || errorCode(err) != tc.code {
				t.Fatalf("create in a zone where %s: %v, want a capacity error naming %s", tc.reason, err, zone)
			}
			if n := e.fake.Actions()["RunInstances"]; n != 1 {
				t.Errorf("%d RunInstances calls, want 1: a capacity error is not retried in the same zone", n)
			}
			req.AvoidZones = []string{zone}
			id, err := e.p.Create(ctx, req)
			if err != nil {
				t.Fatalf("create avoiding %s: %v", zone, err)
			}
			if got := e.instance(t, id).Zone; got == zone {
				t.Errorf("the instance is in %s, which it was to avoid", got)
			}
			pinned := request()
			pinned.RequestID, pinned.Placement.Zone = "attempt-pinned", zone
			_, err = e.p.Create(ctx, pinned)
			if !errors.As(err, &pe) || pe.Kind != provider.KindCapacity || pe.Zone != "" {
				t.Errorf("create pinned to %s: %v, want a capacity error naming no zone to avoid", zone, err)
			}
			if !strings.Contains(e.logs.String(), `"msg":"aws zone out of capacity","zone":"`+zone+`"`) {
				t.Errorf("no log line names the zone out of capacity:\n%s", e.logs)
			}
		})
	}
}

// TestQuotaIsSurfaced: the account's limits are quota errors, with
// EC2's message, which the reconciler puts into the status.
func TestQuotaIsSurfaced(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.fake.SetInstanceLimit(1)
	req := request()
	if _, err := e.p.Create(ctx, req); err != nil {
		t.Fatal(err)
	}
	req.RequestID = "attempt-2"
	_, err := e.p.Create(ctx, req)
	if provider.KindOf(err) != provider.KindQuota || !strings.Contains(err.Error(), "InstanceLimitExceeded") {
		t.Errorf("create past the instance limit: %v, want a quota error naming InstanceLimitExceeded", err)
	}
	e.fake.SetInstanceLimit(0)
	e.fake.Fail("RunInstances", "VcpuLimitExceeded", 1)
	_, err = e.p.Create(ctx, req)
	if provider.KindOf(err) != provider.KindQuota || !strings.Contains(err.Error(), "vCPU limit") {
		t.Errorf("create past the vCPU limit: %v, want a quota error with EC2's message", err)
	}
}

// TestRequestLimitIsNotRetried: RequestLimitExceeded is rate limited at
// once, with the wait for a token of EC2's slowest refill, and the SDK
// does not retry it (one DescribeInstances sent), so every call spends
// the account's tokens once and the reconciler decides when to call
// again.
func TestRequestLimitIsNotRetried(t *testing.T) {
	e := newEnv(t)
	e.fake.Fail("DescribeInstances", "RequestLimitExceeded", 1)
	_, err := e.p.ListByTag(context.Background())
	type outcome struct {
		Kind  provider.Kind
		Wait  time.Duration
		Calls int
	}
	got := outcome{provider.KindOf(err), provider.RetryAfter(err), e.fake.Actions()["DescribeInstances"]}
	if diff := cmp.Diff(outcome{provider.KindRateLimited, requestLimitWait, 1}, got); diff != "" {
		t.Errorf("a list past RequestLimitExceeded (-want +got):\n%s\n%v", diff, err)
	}
}

// TestCreateMeetsTheRateLimit: a Create that meets EC2's throttling at
// any of its requests, with EC2's own buckets (EC2RateLimits), is
// RateLimited with requestLimitWait, one request refused, and the Create
// after the wait makes the one instance (providertest.RunRateLimit).
func TestCreateMeetsTheRateLimit(t *testing.T) {
	providertest.RunRateLimit(t, requestLimitWait, func(t *testing.T, remaining int) providertest.RateLimited {
		now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
		e := newEnv(t, func(c *Config, _ *ClientOptions) { c.Now = func() time.Time { return now } })
		e.fake.SetClock(func() time.Time { return now }) // both clocks read it
		e.fake.SetRateLimits(ec2fake.EC2RateLimits)
		if remaining >= 0 {
			e.fake.SetRateLimitRemaining(remaining)
		}
		req := request()
		req.StaticIP = true // the Elastic IP's requests too
		return providertest.RateLimited{Provider: e.p, Request: req,
			Requests:  func() int { return len(e.fake.Calls()) },
			Refused:   e.fake.Throttled,
			Instances: func() int { return len(e.fake.Instances()) },
			Advance:   func(d time.Duration) { now = now.Add(d) }}
	})
}

// TestErrorKinds holds the table of EC2's codes (kinds) to what the SDK
// makes of each as EC2 answers it: every code of the table, answered
// with its HTTP status, is classified as the table says; a code not in
// it by its status.
func TestErrorKinds(t *testing.T) {
	e := newEnv(t, func(_ *Config, o *ClientOptions) { o.MaxAttempts = 1 })
	ctx := context.Background()
	id, err := e.p.Create(ctx, request())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]provider.Kind{"SomethingNew": provider.KindPermanent, "InternalSomething": provider.KindPermanent}
	got := map[string]provider.Kind{}
	for code, kind := range kinds {
		want[code] = kind
	}
	for code := range want {
		e.fake.Fail("DescribeInstances", code, 1)
		_, err := e.p.Get(ctx, id)
		got[code] = provider.KindOf(err)
		if code == "InvalidInstanceID.NotFound" && !errors.Is(err, provider.ErrNotFound) {
			t.Errorf("%s: %v does not errors.Is ErrNotFound", code, err)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kinds by EC2 code (-want +got):\n%s", diff)
	}
	if k := classify(errors.New("dial tcp: connection refused")); k != provider.KindTransient {
		t.Errorf("no answer: %s, want transient", k)
	}
}

// TestGetStates: EC2's states as the provider reads them: pending is
// Provisioning, running is Running only once the proxy says it serves,
// stopped is Stopped, shutting-down and terminated are gone.
func TestGetStates(t *testing.T) {
	type seen struct {
		State      provider.InstanceState
		BootError  string
		Generation int64
		NotFound   bool
	}
	for _, tc := range []struct {
		name   string
		state  string
		status *vmside.Status
		// names is the instance the answer names: "self", another's id,
		// or "" for none.
		names string
		want  seen
	}{
		{"pending", "pending", nil, "", seen{State: provider.StateProvisioning}},
		{"running, the proxy does not answer yet", "running", nil, "", seen{State: provider.StateProvisioning}},
		{"running, the proxy says it cannot serve", "running", &vmside.Status{Error: "no engine binary"}, "", seen{State: provider.StateProvisioning, BootError: "no engine binary"}},
		{"serving", "running", &vmside.Status{Ready: true, Generation: 3}, "", seen{State: provider.StateRunning, Generation: 3}},
		{"serving, naming itself", "running", &vmside.Status{Ready: true, Generation: 3}, "self", seen{State: provider.StateRunning, Generation: 3}},
		// The Elastic IP still on the instance this one replaces, which
		// holds the same uid's status credential.
		{"another instance answers", "running", &vmside.Status{Ready: true, Generation: 2}, "i-0000000000000beef", seen{State: provider.StateProvisioning}},
		{"stopping", "stopping", nil, "", seen{State: provider.StateStopped}},
		{"stopped", "stopped", nil, "", seen{State: provider.StateStopped}},
		{"shutting-down", "shutting-down", nil, "", seen{NotFound: true}},
		{"terminated", "terminated", nil, "", seen{NotFound: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			req := request()
			id, err := e.p.Create(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			e.fake.SetState(e.instance(t, id).ID, tc.state)
			if tc.status != nil {
				st := *tc.status
				if st.Instance = tc.names; tc.names == "self" {
					st.Instance = e.instance(t, id).ID
				}
				e.st.Set(req.UID, st)
			}
			in, err := e.p.Get(context.Background(), id)
			var got seen
			if err != nil {
				got.NotFound = errors.Is(err, provider.ErrNotFound)
			} else {
				got = seen{State: in.State, BootError: in.BootError, Generation: in.Generation}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Get of a %s instance (-want +got):\n%s", tc.state, diff)
			}
		})
	}
}

// TestCreatedAtSurvivesAStart: a stopped instance started again has a
// new LaunchTime; CreatedAt stays its launch (the collector's grace).
func TestCreatedAtSurvivesAStart(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	e := newEnv(t)
	e.fake.SetClock(func() time.Time { return now })
	id, err := e.p.Create(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	e.fake.SetState(e.instance(t, id).ID, "stopped")
	now = now.Add(3 * time.Hour)
	e.fake.SetState(e.instance(t, id).ID, "running")
	in, err := e.p.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC); !in.CreatedAt.Equal(want) {
		t.Errorf("CreatedAt after a stop and a start = %v, want the launch %v", in.CreatedAt, want)
	}
}

// TestStaticElasticIP: a Static proxy's Elastic IP is allocated with the
// three tags before its first instance, associated once the instance
// runs (Provisioning until then), kept for the next instance, which gets
// it once the first is gone; Delete of it waits while an instance holds
// it, and is idempotent.
func TestStaticElasticIP(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	req := request()
	req.StaticIP = true
	e.st.Set(req.UID, vmside.Status{Ready: true, Generation: 1})
	first, err := e.p.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	addrs := e.fake.Addresses()
	if len(addrs) != 1 {
		t.Fatalf("%d Elastic IPs after a Static create, want 1", len(addrs))
	}
	eip := addrs[0]
	wantTags := map[string]string{provider.LabelManaged: "true", provider.LabelUID: req.UID, provider.LabelDeployment: "egress", "Name": req.Name}
	gotTags := eip.Tags
	delete(gotTags, tagCreated)
	if diff := cmp.Diff(wantTags, gotTags); diff != "" {
		t.Errorf("the Elastic IP's tags (-want +got):\n%s", diff)
	}
	if in, err := e.p.Get(ctx, first); err != nil || in.State != provider.StateProvisioning || in.AddressID != eipID("us-east-1", eip.AllocationID) {
		t.Errorf("Get before the instance runs = %+v, %v; want Provisioning with the address's ID", in, err)
	}
	e.fake.Settle()
	in, err := e.p.Get(ctx, first)
	if err != nil || in.State != provider.StateRunning || in.IP != eip.PublicIP {
		t.Fatalf("Get once it runs = %+v, %v; want Running on %s", in, err, eip.PublicIP)
	}
	if err := e.p.Delete(ctx, in.AddressID); provider.KindOf(err) != provider.KindTransient {
		t.Errorf("Delete of the address an instance holds: %v, want transient", err)
	}

	// A replacement: the first instance goes, a new attempt gets the
	// same address once the first has let it go.
	if err := e.p.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	req.RequestID = "attempt-2"
	second, err := e.p.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(e.fake.Addresses()); n != 1 {
		t.Errorf("%d Elastic IPs after the second instance, want the one kept", n)
	}
	e.fake.Settle()
	in, err = e.p.Get(ctx, second)
	if err != nil || in.State != provider.StateRunning || in.IP != eip.PublicIP {
		t.Errorf("the second instance = %+v, %v; want Running on %s", in, err, eip.PublicIP)
	}
	if err := e.p.Delete(ctx, second); err != nil {
		t.Fatal(err)
	}
	e.fake.Settle()
	list, err := e.p.ListByTag(ctx)
	if err != nil || len(list) != 1 || list[0].ID != in.AddressID || list[0].State != provider.StateTerminated || list[0].UID != req.UID || list[0].CreatedAt.IsZero() {
		t.Errorf("ListByTag with no instance = %+v, %v; want the free Elastic IP %s, Terminated, with its uid and allocation time", list, err, in.AddressID)
	}
	for i := range 2 {
		if err := e.p.Delete(ctx, in.AddressID); err != nil {
			t.Errorf("Delete #%d of the free address: %v", i+1, err)
		}
	}
	if n := len(e.fake.Addresses()); n != 0 {
		t.Errorf("%d Elastic IPs after its release, want 0", n)
	}
}

// TestEphemeralLeavesNoElasticIP: an Ephemeral proxy allocates none.
func TestEphemeralLeavesNoElasticIP(t *testing.T) {
	e := newEnv(t)
	if _, err := e.p.Create(context.Background(), request()); err != nil {
		t.Fatal(err)
	}
	e.fake.Settle()
	if a := e.fake.Actions(); a["AllocateAddress"] != 0 || len(e.fake.Addresses()) != 0 {
		t.Errorf("an Ephemeral proxy: %d AllocateAddress calls, %d Elastic IPs; want none", a["AllocateAddress"], len(e.fake.Addresses()))
	}
}

// TestListByTagPagesEveryAllowedRegion: the list reads every page of
// every allowed region, and nothing of a region the operator does not
// allow.
func TestListByTagPagesEveryAllowedRegion(t *testing.T) {
	e := newEnv(t, func(c *Config, _ *ClientOptions) { c.PageSize = 5 })
	managed := map[string]string{provider.LabelManaged: "true", provider.LabelDeployment: "egress"}
	want := map[string]bool{}
	for i := range 7 {
		want[instanceID("us-east-1", e.fake.Put("us-east-1", "us-east-1a", withUID(managed, i)))] = true
	}
	for i := range 2 {
		want[instanceID("eu-west-1", e.fake.Put("eu-west-1", "eu-west-1a", withUID(managed, 10+i)))] = true
	}
	e.fake.Put("us-west-2", "us-west-2a", withUID(managed, 20))
	got := map[string]bool{}
	list, err := e.p.ListByTag(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range list {
		got[in.ID] = true
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ListByTag (-want +got):\n%s", diff)
	}
	// Pages read, not requests: the SDK retries a request whose
	// connection broke (a loaded machine's kept-alive connection closed
	// under it), and the retry is the same page again.
	pages := map[string]int{}
	read := map[[2]string]bool{}
	for _, c := range e.fake.Calls() {
		if c.Action == "DescribeInstances" && !read[[2]string{c.Region, c.NextToken}] {
			read[[2]string{c.Region, c.NextToken}] = true
			pages[c.Region]++
		}
	}
	if diff := cmp.Diff(map[string]int{"us-east-1": 2, "eu-west-1": 1}, pages); diff != "" {
		t.Errorf("DescribeInstances pages by region (-want +got):\n%s", diff)
	}
	if e.p.Lists(instanceID("us-west-2", "i-0123456789abcdef0")) || !e.p.Lists(instanceID("eu-west-1", "i-0123456789abcdef0")) {
		t.Errorf("Lists: us-west-2 is not allowed and eu-west-1 is")
	}
}

func withUID(tags map[string]string, i int) map[string]string {
	out := map[string]string{provider.LabelUID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i)}
	for k, v := range tags {
		out[k] = v
	}
	return out
}

func TestProviderIDs(t *testing.T) {
	for id, want := range map[string]*parsed{
		"aws://us-east-1/i-0123456789abcdef0":                 {region: "us-east-1", id: "i-0123456789abcdef0"},
		"aws://eu-west-1/i-01234567":                          {region: "eu-west-1", id: "i-01234567"},
		"aws-eip://ap-southeast-1/eipalloc-0123456789abcdef0": {eip: true, region: "ap-southeast-1", id: "eipalloc-0123456789abcdef0"},
		"aws://us-east-1/eipalloc-0123456789abcdef0":          nil,
		"aws://us-east-1a/i-0123456789abcdef0":                nil,
		"aws://i-0123456789abcdef0":                           nil,
		"hcloud://42":                                         nil,
		"aws://us-east-1/i-0123456789ABCDEF0":                 nil,
	} {
		got, err := parseID(id)
		switch {
		case want == nil && err == nil:
			t.Errorf("parseID(%q) = %+v, want an error", id, got)
		case want != nil && (err != nil || got != *want):
			t.Errorf("parseID(%q) = %+v, %v; want %+v", id, got, err, *want)
		}
	}
}

// TestAllocationIsNotRetried: AllocateAddress has no idempotency token,
// so the SDK must not retry it after a lost answer (that would make a
// second Elastic IP); the create fails, and its next try finds the one
// that was made by its tags.
func TestAllocationIsNotRetried(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	req := request()
	req.StaticIP = true
	e.fake.LoseAnswers("AllocateAddress", 1)
	if _, err := e.p.Create(ctx, req); provider.KindOf(err) != provider.KindTransient {
		t.Fatalf("a create whose allocation's answer was lost: %v, want a transient error", err)
	}
	if _, err := e.p.Create(ctx, req); err != nil {
		t.Fatalf("its next try: %v", err)
	}
	if a := e.fake.Actions(); a["AllocateAddress"] != 1 || len(e.fake.Addresses()) != 1 || len(e.fake.Instances()) != 1 {
		t.Errorf("%d AllocateAddress calls, %d Elastic IPs, %d instances; want one of each", a["AllocateAddress"], len(e.fake.Addresses()), len(e.fake.Instances()))
	}
}

// TestListByTagGivesTheStatusPort: an instance that runs the default
// bootstrap lists with the port its proxy answers the status request on
// (what the access pull asks it on); one that boots a cloud-init of its
// own lists with none, and is never asked.
func TestListByTagGivesTheStatusPort(t *testing.T) {
	e := newEnv(t)
	id, err := e.p.Create(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	own := request()
	own.UID, own.Name, own.RequestID = "0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5", provider.NameFromUID("0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5"), "attempt-1"
	own.StartupScript, own.CloudInit = "", "#cloud-config\n"
	ownID, err := e.p.Create(context.Background(), own)
	if err != nil {
		t.Fatal(err)
	}
	list, err := e.p.ListByTag(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int32{}
	for _, in := range list {
		got[in.ID] = in.StatusPort
	}
	if diff := cmp.Diff(map[string]int32{id: 3128, ownID: 0}, got); diff != "" {
		t.Errorf("the listed instances' status ports (-want +got):\n%s", diff)
	}
}
