package gcp

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/gcp/computefake"
	"github.com/egress-proxies/egress/internal/provider/providertest"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

const project = "demo-proxies"

// fakeClients points the real Compute REST clients at the fake.
func fakeClients(t *testing.T, fake *computefake.Server) Clients {
	t.Helper()
	c, err := NewClients(context.Background(), option.WithEndpoint(fake.URL), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// newProvider points the real Compute REST client at a fresh fake.
func newProvider(t *testing.T) (*Provider, *computefake.Server) {
	t.Helper()
	fake := computefake.New()
	t.Cleanup(fake.Close)
	p, err := New(fakeClients(t, fake), Config{Project: project, ServiceAccount: "proxy-vm@demo-proxies.iam.gserviceaccount.com"})
	if err != nil {
		t.Fatal(err)
	}
	return p, fake
}

func TestConformance(t *testing.T) {
	providertest.Run(t, func(t *testing.T) providertest.Target {
		p, fake := newProvider(t)
		return providertest.Target{
			Provider: p,
			Settle:   fake.Settle,
			AddUnmanaged: func(name, uid string) {
				fake.Put("us-central1-a", &computepb.Instance{
					Name: proto.String(name), Status: proto.String("RUNNING"),
					Labels: map[string]string{provider.LabelManaged: "false", provider.LabelUID: uid},
				})
			},
			Deployment: provider.DefaultDeployment,
			AddManaged: func(name, uid, deployment string) {
				labels := map[string]string{provider.LabelManaged: provider.LabelManagedYes, provider.LabelUID: uid}
				if deployment != "" {
					labels[provider.LabelDeployment] = deployment
				}
				fake.Put("europe-west4-b", &computepb.Instance{Name: proto.String(name), Status: proto.String("RUNNING"), Labels: labels})
			},
			UnknownID: instanceID(project, "us-central1-a", "absent"),
			ReportReady: func(id string) {
				id2, _ := parseID(id)
				fake.SetGuestAttribute(id2.scope, id2.name, "egress/ready", "serving on port 3128")
			},
			ReportBootError: func(id, reason string) {
				id2, _ := parseID(id)
				fake.SetGuestAttribute(id2.scope, id2.name, "egress/error", reason)
			},
			ReportGeneration: func(id string, generation int64) {
				id2, _ := parseID(id)
				fake.SetGuestAttribute(id2.scope, id2.name, "egress/ready", strconv.FormatInt(generation, 10))
			},
		}
	})
}

func request() provider.CreateRequest {
	uid := "3f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098"
	return provider.CreateRequest{
		Name: provider.NameFromUID(uid), UID: uid, Namespace: "team-a", ProxyName: "egress-1",
		Placement: provider.Placement{Region: "us-central1", Zone: "us-central1-b", MachineType: "e2-small",
			Image: "projects/debian-cloud/global/images/family/debian-12"},
		StartupScript: "#!/bin/bash\necho the proxy's bootstrap\n",
		Port:          3128,
	}
}

// TestInsertBody checks, field by field, the instance Insert sends, and
// that a retried insert carries the same request id.
func TestInsertBody(t *testing.T) {
	p, fake := newProvider(t)
	req := request()
	ctx := context.Background()
	// The first try fails in flight; the retry must be the same request.
	fake.Fail("insert", 1, computefake.Fault{Code: 503, Reason: "backendError", Message: "try again"})
	if _, err := p.Create(ctx, req); provider.KindOf(err) != provider.KindTransient {
		t.Fatalf("Create during a 503: %v, want a transient error", err)
	}
	id, err := p.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if want := "gce://demo-proxies/us-central1-b/" + req.Name; id != want {
		t.Errorf("providerID %q, want %q", id, want)
	}
	ins := fake.Inserts()
	if len(ins) != 2 {
		t.Fatalf("%d inserts, want 2", len(ins))
	}
	if ins[0].RequestID != ins[1].RequestID || ins[0].RequestID != requestID(req.UID, req.Name) {
		t.Errorf("request ids %q and %q: want both %q", ins[0].RequestID, ins[1].RequestID, requestID(req.UID, req.Name))
	}
	want := &computepb.Instance{
		Name:        proto.String(req.Name),
		Description: proto.String("Egress proxy namespaces/team-a/proxies/egress-1"),
		MachineType: proto.String("zones/us-central1-b/machineTypes/e2-small"),
		Labels:      map[string]string{"proxy-operator-managed": "true", "proxy-operator-uid": req.UID, "egress-deployment": "egress"},
		Tags:        &computepb.Tags{Items: []string{"egress-proxy"}},
		Metadata: &computepb.Metadata{Items: []*computepb.Items{
			{Key: proto.String("startup-script"), Value: proto.String(req.StartupScript)},
			{Key: proto.String("enable-guest-attributes"), Value: proto.String("TRUE")},
		}},
		Disks: []*computepb.AttachedDisk{{
			Boot: proto.Bool(true), AutoDelete: proto.Bool(true), Type: proto.String("PERSISTENT"),
			InitializeParams: &computepb.AttachedDiskInitializeParams{
				SourceImage: proto.String("projects/debian-cloud/global/images/family/debian-12"), DiskSizeGb: proto.Int64(10),
			},
		}},
		NetworkInterfaces: []*computepb.NetworkInterface{{
			Network:       proto.String("global/networks/default"),
			AccessConfigs: []*computepb.AccessConfig{{Name: proto.String("External NAT"), Type: proto.String("ONE_TO_ONE_NAT")}},
		}},
		ServiceAccounts: []*computepb.ServiceAccount{{
			Email: proto.String("proxy-vm@demo-proxies.iam.gserviceaccount.com"),
			Scopes: []string{"https://www.googleapis.com/auth/pubsub",
				"https://www.googleapis.com/auth/devstorage.read_only"},
		}},
	}
	if diff := cmp.Diff(want, ins[1].Instance, protocmp.Transform()); diff != "" {
		t.Errorf("Insert body (-want +got):\n%s", diff)
	}
	if ins[1].Zone != "us-central1-b" || ins[1].Project != project {
		t.Errorf("inserted into %s/%s, want %s/us-central1-b", ins[1].Project, ins[1].Zone, project)
	}
}

// TestMetadata checks what a VM boots with: the default bootstrap as
// startup-script with the attributes it reads, or a spec's own cloud-init
// as user-data and nothing else.
func TestMetadata(t *testing.T) {
	item := func(k, v string) *computepb.Items {
		return &computepb.Items{Key: proto.String(k), Value: proto.String(v)}
	}
	script := "#!/bin/bash\necho bootstrap\n"
	cases := map[string]struct {
		reason string
		cfg    Config
		change func(*provider.CreateRequest)
		want   []*computepb.Items
	}{
		"StartupScriptAndCallHome": {
			reason: "the script reads the engine's configuration, the engine to install, its probe target and what it publishes when it calls home",
			cfg: Config{Project: project, ProbeTarget: "www.google.com:443",
				CallHomeTopic: "projects/demo-proxies/topics/proxy-reconcile", PubSubEndpoint: "http://192.0.2.9:8085",
				EngineURL: "https://storage.googleapis.com/b/egress-proxy", EngineSHA256: strings.Repeat("ab", 32)},
			change: func(r *provider.CreateRequest) {
				r.StartupScript, r.Engine = script, &vmconfig.Config{Listen: ":3128", ConnectPorts: []int{443}}
			},
			want: []*computepb.Items{
				item("startup-script", script),
				item("egress-config", `{"generation":0,"listen":":3128","users":null,"allowedSourceRanges":null,"connectPorts":[443],"denyDestinations":null,"accessLog":false}`),
				item("egress-engine-url", "https://storage.googleapis.com/b/egress-proxy"),
				item("egress-engine-sha256", strings.Repeat("ab", 32)),
				item("enable-guest-attributes", "TRUE"),
				item("egress-probe-target", "www.google.com:443"),
				item("egress-call-home-topic", "projects/demo-proxies/topics/proxy-reconcile"),
				item("egress-pubsub-endpoint", "http://192.0.2.9:8085"),
				item("egress-namespace", "team-a"),
				item("egress-name", "egress-1"),
				item("egress-uid", "3f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098"),
			},
		},
		"StartupScriptWithDefaults": {
			reason: "without a topic there is no call-home; without a probe target the script's default applies",
			cfg:    Config{Project: project},
			change: func(r *provider.CreateRequest) { r.StartupScript = script },
			want:   []*computepb.Items{item("startup-script", script), item("enable-guest-attributes", "TRUE")},
		},
		"OwnCloudInit": {
			reason: "a spec's own cloud-init is user-data, with no startup script or guest attributes",
			cfg:    Config{Project: project, ProbeTarget: "www.google.com:443", CallHomeTopic: "projects/demo-proxies/topics/proxy-reconcile"},
			change: func(r *provider.CreateRequest) { r.StartupScript, r.CloudInit = "", "#cloud-config\n" },
			want:   []*computepb.Items{item("user-data", "#cloud-config\n")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			fake := computefake.New()
			defer fake.Close()
			p, err := New(fakeClients(t, fake), tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			req := request()
			tc.change(&req)
			if _, err := p.Create(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			got := fake.Inserts()[0].Instance.GetMetadata().GetItems()
			if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("%s: metadata items (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestAdoptOrConflict(t *testing.T) {
	cases := map[string]struct {
		reason   string
		uidLabel string
		wantKind provider.Kind
	}{
		"SameUIDAdopted":    {reason: "A VM of the name with our uid is ours (a crash after Insert): adopt it.", uidLabel: request().UID},
		"OtherUIDConflicts": {reason: "A VM of the name with another uid is not ours: a typed conflict.", uidLabel: "someone-else", wantKind: provider.KindAlreadyExists},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, fake := newProvider(t)
			req := request()
			fake.Put("us-central1-b", &computepb.Instance{
				Name: proto.String(req.Name), Status: proto.String("RUNNING"),
				Labels: map[string]string{provider.LabelManaged: "true", provider.LabelUID: tc.uidLabel},
			})
			id, err := p.Create(context.Background(), req)
			if diff := cmp.Diff(tc.wantKind, provider.KindOf(err)); diff != "" {
				t.Errorf("%s\nerror kind (-want +got):\n%s\n%v", tc.reason, diff, err)
			}
			if err == nil && id != instanceID(project, "us-central1-b", req.Name) {
				t.Errorf("adopted id %q", id)
			}
		})
	}
}

func TestState(t *testing.T) {
	cases := map[string]provider.InstanceState{
		"PROVISIONING": provider.StateProvisioning, "STAGING": provider.StateProvisioning,
		"PENDING": provider.StateProvisioning, "REPAIRING": provider.StateProvisioning,
		"RUNNING":  provider.StateRunning,
		"STOPPING": provider.StateStopped, "PENDING_STOP": provider.StateStopped, "STOPPED": provider.StateStopped,
		"SUSPENDING": provider.StateStopped, "SUSPENDED": provider.StateStopped, "TERMINATED": provider.StateStopped,
		"DEPROVISIONING": provider.StateTerminated,
	}
	for status, want := range cases {
		t.Run(status, func(t *testing.T) {
			p, fake := newProvider(t)
			fake.Put("us-central1-a", &computepb.Instance{
				Name: proto.String("vm"), Status: proto.String(status), CreationTimestamp: proto.String("2026-12-01T10:00:00.000-08:00"),
				Labels:            map[string]string{provider.LabelManaged: "true", provider.LabelUID: "u"},
				NetworkInterfaces: []*computepb.NetworkInterface{{AccessConfigs: []*computepb.AccessConfig{{NatIP: proto.String("198.51.100.7")}}}},
			})
			got, err := p.Get(context.Background(), instanceID(project, "us-central1-a", "vm"))
			if err != nil {
				t.Fatal(err)
			}
			wantInst := provider.Instance{ID: instanceID(project, "us-central1-a", "vm"), IP: "198.51.100.7", State: want, UID: "u",
				CreatedAt: time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC), Zone: "us-central1-a"}
			if diff := cmp.Diff(wantInst, *got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
				t.Errorf("Get of a %s instance (-want +got):\n%s", status, diff)
			}
		})
	}
}

func TestParseID(t *testing.T) {
	good := "gce://demo-proxies/us-central1-a/proxy-3f2c"
	if _, err := parseID(good); err != nil {
		t.Errorf("parseID(%q): %v", good, err)
	}
	for _, id := range []string{
		"", "gce://", "mock://proxy-1", "gce://demo-proxies/us-central1-a", "gce://demo-proxies/us-central1-a/proxy/extra",
		"gce:///us-central1-a/proxy-1", "gce://demo-proxies//proxy-1", "gce://demo-proxies/us-central1/proxy-1",
		"gce://demo-proxies/us-central1-a/Proxy_1", "gce://Demo/us-central1-a/proxy-1", "https://demo-proxies/us-central1-a/proxy-1",
	} {
		_, err := parseID(id)
		if provider.KindOf(err) != provider.KindPermanent {
			t.Errorf("parseID(%q): %v, want a permanent error", id, err)
		}
	}
	p, _ := newProvider(t)
	if _, err := p.Get(context.Background(), "gce://demo-proxies/nowhere/x"); provider.KindOf(err) != provider.KindPermanent {
		t.Errorf("Get of a malformed id: %v, want permanent", err)
	}
}

func TestErrorClassification(t *testing.T) {
	cases := map[string]struct {
		fault computefake.Fault
		want  provider.Kind
	}{
		"RateLimited403":  {computefake.Fault{Code: 403, Reason: "rateLimitExceeded", Message: "Rate Limit Exceeded"}, provider.KindRateLimited},
		"TooManyRequests": {computefake.Fault{Code: 429, Reason: "rateLimitExceeded", Message: "Too many requests"}, provider.KindRateLimited},
		"Quota":           {computefake.Fault{Code: 403, Reason: "quotaExceeded", Message: "Quota 'CPUS' exceeded. Limit: 24.0 in region us-central1."}, provider.KindQuota},
		"Capacity":        {computefake.Fault{Code: 503, Reason: "ZONE_RESOURCE_POOL_EXHAUSTED", Message: "The zone does not have enough resources"}, provider.KindCapacity},
		"CapacityInText":  {computefake.Fault{Code: 400, Reason: "resourceNotReady", Message: "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS: e2-micro"}, provider.KindCapacity},
		"ServerError500":  {computefake.Fault{Code: 500, Reason: "backendError", Message: "Internal error"}, provider.KindTransient},
		"ServerError503":  {computefake.Fault{Code: 503, Reason: "backendError", Message: "Service unavailable"}, provider.KindTransient},
		"BadRequest":      {computefake.Fault{Code: 400, Reason: "invalid", Message: "Invalid value for field 'resource.machineType'"}, provider.KindPermanent},
		"Forbidden":       {computefake.Fault{Code: 403, Reason: "forbidden", Message: "Required 'compute.instances.create' permission"}, provider.KindPermanent},
		// An insert answered 404 names an image, zone or network that does
		// not exist: no retry makes it, so it is permanent, not "not found".
		"NotFoundImage":    {computefake.Fault{Code: 404, Reason: "notFound", Message: "The resource 'projects/x/global/images/y' was not found"}, provider.KindPermanent},
		"ResourceInUse409": {computefake.Fault{Code: 409, Reason: "resourceInUseByAnotherResource", Message: "in use"}, provider.KindTransient},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, fake := newProvider(t)
			fake.Fail("insert", 1, tc.fault)
			_, err := p.Create(context.Background(), request())
			if diff := cmp.Diff(tc.want, provider.KindOf(err)); diff != "" {
				t.Errorf("kind of %d %s (-want +got):\n%s\n%v", tc.fault.Code, tc.fault.Reason, diff, err)
			}
		})
	}
}

func TestGetNotFound(t *testing.T) {
	p, _ := newProvider(t)
	_, err := p.Get(context.Background(), instanceID(project, "us-central1-a", "gone"))
	if !errors.Is(err, provider.ErrNotFound) {
		t.Errorf("Get of a missing VM: %v, want ErrNotFound", err)
	}
}

func TestDeleteSkipsWhatIsGoing(t *testing.T) {
	p, fake := newProvider(t)
	ctx := context.Background()
	id, err := p.Create(ctx, request())
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := p.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if n := fake.Calls("delete"); n != 1 {
		t.Errorf("%d delete calls for three Deletes of a VM stopping for deletion, want 1", n)
	}
	fake.Settle()
	if err := p.Delete(ctx, id); err != nil {
		t.Errorf("Delete of a deleted VM: %v, want nil", err)
	}
}

func TestListByTag(t *testing.T) {
	p, fake := newProvider(t)
	ctx := context.Background()
	managed := func(zone, name, uid string) {
		fake.Put(zone, &computepb.Instance{Name: proto.String(name), Status: proto.String("RUNNING"),
			Labels: map[string]string{provider.LabelManaged: "true", provider.LabelUID: uid}})
	}
	managed("us-central1-a", "proxy-a", "uid-a")
	managed("europe-west4-b", "proxy-b", "uid-b")
	fake.Put("us-central1-a", &computepb.Instance{Name: proto.String("other"), Labels: map[string]string{"team": "x"}})
	got, err := p.ListByTag(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, in := range got {
		ids = append(ids, in.ID)
	}
	want := map[string]bool{instanceID(project, "us-central1-a", "proxy-a"): true, instanceID(project, "europe-west4-b", "proxy-b"): true}
	if len(ids) != 2 || !want[ids[0]] || !want[ids[1]] {
		t.Errorf("ListByTag = %v, want the two managed instances", ids)
	}

	fake.SetUnreachable("asia-east1-a")
	if _, err := p.ListByTag(ctx); err == nil || provider.KindOf(err) != provider.KindTransient {
		t.Errorf("ListByTag with an unreachable zone: %v, want a transient error naming it", err)
	}
	fake.SetUnreachable()
	fake.Fail("list", 1, computefake.Fault{Code: http.StatusForbidden, Reason: "forbidden", Message: "no permission"})
	if _, err := p.ListByTag(ctx); provider.KindOf(err) != provider.KindPermanent {
		t.Errorf("ListByTag refused: %v, want permanent", err)
	}
}

// TestReadiness: a VM that boots the default bootstrap is Running only once
// its startup script wrote egress/ready; until then it is Provisioning, with
// the script's reason if it wrote egress/error. A VM with a spec's own
// cloud-init has no such script and is Running when Compute says so.
func TestReadiness(t *testing.T) {
	cases := map[string]struct {
		reason    string
		cloudInit bool
		settle    bool
		attrs     map[string]string
		fault     *computefake.Fault
		want      provider.Instance
		wantKind  provider.Kind
	}{
		"Booting": {
			reason: "PROVISIONING in Compute is Provisioning",
			want:   provider.Instance{State: provider.StateProvisioning},
		},
		"RunningNotYetServing": {
			reason: "RUNNING without egress/ready: booted, not yet proven",
			settle: true,
			want:   provider.Instance{State: provider.StateProvisioning, IP: "198.51.100.1"},
		},
		"Serving": {
			reason: "RUNNING with egress/ready; its text of before generations is generation 1",
			settle: true, attrs: map[string]string{"egress/ready": "serving on port 3128"},
			want: provider.Instance{State: provider.StateRunning, IP: "198.51.100.1", Generation: 1},
		},
		"ServingAGeneration": {
			reason: "egress/ready names the generation of the configuration the VM serves",
			settle: true, attrs: map[string]string{"egress/ready": "12"},
			want: provider.Instance{State: provider.StateRunning, IP: "198.51.100.1", Generation: 12},
		},
		"ServingAsAWarmVM": {
			reason: "a pool's unclaimed VM serves generation 0",
			settle: true, attrs: map[string]string{"egress/ready": "0"},
			want: provider.Instance{State: provider.StateRunning, IP: "198.51.100.1"},
		},
		"SelfTestFailed": {
			reason: "egress/error is the reason, and the VM stays Provisioning",
			settle: true, attrs: map[string]string{"egress/error": "a request without credentials got 200, want 407"},
			want: provider.Instance{State: provider.StateProvisioning, IP: "198.51.100.1", BootError: "a request without credentials got 200, want 407"},
		},
		"ReadyBesideAStaleError": {
			reason: "the script clears both at every boot; a ready beside an error means a clear failed",
			settle: true, attrs: map[string]string{"egress/ready": "serving", "egress/error": "from the boot before"},
			want: provider.Instance{State: provider.StateRunning, IP: "198.51.100.1", Generation: 1},
		},
		"ChangeRefused": {
			reason: "the agent refused generation 4 and serves 3 still: an error that names a later generation than the one served is read as a boot error is, at once",
			settle: true, attrs: map[string]string{"egress/ready": "3", "egress/error": "generation 4: the self-test's CONNECT to www.google.com:443 got 403; the configuration served before is served still"},
			want: provider.Instance{State: provider.StateRunning, IP: "198.51.100.1", Generation: 3, RefusedGeneration: 4,
				BootError: "generation 4: the self-test's CONNECT to www.google.com:443 got 403; the configuration served before is served still"},
		},
		"StaleRefusal": {
			reason: "an error of the generation served (or an earlier one) is one whose clear failed: the VM serves it",
			settle: true, attrs: map[string]string{"egress/ready": "4", "egress/error": "generation 4: the filter did not load; the configuration served before is served still"},
			want: provider.Instance{State: provider.StateRunning, IP: "198.51.100.1", Generation: 4},
		},
		"RefusalOfAWarmVM": {
			reason: "a warm VM (generation 0) that refused its claim's configuration says so too",
			settle: true, attrs: map[string]string{"egress/ready": "0", "egress/error": "generation 1: the engine did not reload; the configuration served before is served still"},
			want: provider.Instance{State: provider.StateRunning, IP: "198.51.100.1", RefusedGeneration: 1,
				BootError: "generation 1: the engine did not reload; the configuration served before is served still"},
		},
		"ServingWithTraffic": {
			reason: "egress/traffic, the engine's counters with the report's time, is the instance's Traffic",
			settle: true, attrs: map[string]string{"egress/ready": "serving on port 3128",
				"egress/traffic": `{"generation":1,"since":"2026-12-03T10:00:00Z","bytesIn":1200,"bytesOut":1048576,"connections":7,"activeTunnels":1,"reportTime":"2026-12-03T10:05:00Z"}`},
			want: provider.Instance{State: provider.StateRunning, IP: "198.51.100.1", Generation: 1, Traffic: &provider.Traffic{
				BytesIn: 1200, BytesOut: 1048576, Connections: 7, ReportTime: time.Date(2026, 12, 3, 10, 5, 0, 0, time.UTC)}},
		},
		"UnreadableTraffic": {
			reason: "a traffic report that is not the engine's counters is no report, and no verdict on the VM",
			settle: true, attrs: map[string]string{"egress/ready": "serving", "egress/traffic": "garbage"},
			want: provider.Instance{State: provider.StateRunning, IP: "198.51.100.1", Generation: 1},
		},
		"OwnCloudInit": {
			reason:    "no startup script, no guest attributes: RUNNING is Running",
			cloudInit: true, settle: true,
			want: provider.Instance{State: provider.StateRunning, IP: "198.51.100.1"},
		},
		"GuestAttributesUnavailable": {
			reason: "a failure to read the attributes is an error to retry, not a verdict on the VM",
			settle: true, fault: &computefake.Fault{Code: 500, Reason: "backendError", Message: "internal error"},
			wantKind: provider.KindTransient,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, fake := newProvider(t)
			req := request()
			if tc.cloudInit {
				req.StartupScript, req.CloudInit = "", "#cloud-config\n"
			}
			id, err := p.Create(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if tc.settle {
				fake.Settle()
			}
			for k, v := range tc.attrs {
				fake.SetGuestAttribute("us-central1-b", req.Name, k, v)
			}
			if tc.fault != nil {
				fake.Fail("guestAttributes", 1, *tc.fault)
			}
			got, err := p.Get(context.Background(), id)
			if tc.wantKind != "" {
				if provider.KindOf(err) != tc.wantKind {
					t.Fatalf("%s: Get error %v, want kind %s", tc.reason, err, tc.wantKind)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.want.ID, tc.want.UID, tc.want.Zone, tc.want.Deployment = id, req.UID, "us-central1-b", provider.DefaultDeployment
			if diff := cmp.Diff(tc.want, *got, cmpopts.IgnoreFields(provider.Instance{}, "CreatedAt")); diff != "" {
				t.Errorf("%s\ninstance (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestConsole reads the end of a VM's serial console, where the guest
// agent copies the startup script's output.
func TestConsole(t *testing.T) {
	p, fake := newProvider(t)
	req := request()
	id, err := p.Create(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	fake.AppendSerial("us-central1-b", req.Name, strings.Repeat("boot noise\n", 2000))
	fake.AppendSerial("us-central1-b", req.Name, "egress-bootstrap: FAILED: tinyproxy does not answer on port 3128\n")
	out, err := p.Console(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > 8<<10 || !strings.HasSuffix(out, "egress-bootstrap: FAILED: tinyproxy does not answer on port 3128\n") {
		t.Errorf("console: %d bytes ending %q; want at most 8 KiB ending with the script's last line", len(out), out[max(0, len(out)-80):])
	}
	if _, err := p.Console(context.Background(), instanceID(project, "us-central1-b", "absent")); !errors.Is(err, provider.ErrNotFound) {
		t.Errorf("console of an absent VM: %v, want ErrNotFound", err)
	}
}

// TestServiceAccountOnlyForTheBootstrap: the proxy VMs' account (logs,
// metrics, the call-home topic) goes only to VMs that run the default
// bootstrap. A spec's own cloud-init is a tenant's root code with no egress
// filter: its VM gets no service account at all, so it holds no token of
// the project (the metadata server has none to give).
func TestServiceAccountOnlyForTheBootstrap(t *testing.T) {
	vmAccount := []*computepb.ServiceAccount{{
		Email:  proto.String("proxy-vm@demo-proxies.iam.gserviceaccount.com"),
		Scopes: DefaultScopes,
	}}
	cases := map[string]struct {
		reason string
		change func(*provider.CreateRequest)
		want   []*computepb.ServiceAccount
	}{
		"DefaultBootstrap": {
			reason: "the startup script writes logs and calls home with the VMs' account",
			change: func(r *provider.CreateRequest) {},
			want:   vmAccount,
		},
		"OwnCloudInit": {
			reason: "a spec's cloud-init runs the tenant's code: no account",
			change: func(r *provider.CreateRequest) { r.StartupScript, r.CloudInit = "", "#cloud-config\nruncmd: [id]\n" },
		},
		"CloudInitBesideAScript": {
			reason: "user-data beside a script still runs the tenant's code: no account",
			change: func(r *provider.CreateRequest) { r.CloudInit = "#cloud-config\n" },
		},
		"NoBootstrap": {
			reason: "a VM that runs nothing of ours has no use for the account",
			change: func(r *provider.CreateRequest) { r.StartupScript = "" },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, fake := newProvider(t)
			req := request()
			tc.change(&req)
			if _, err := p.Create(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			got := fake.Inserts()[0].Instance.GetServiceAccounts()
			if diff := cmp.Diff(tc.want, got, protocmp.Transform(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s: Insert body's serviceAccounts (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
