package gcp

import (
	"context"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/gcp/computefake"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// reconfigured is a VM made with the call-home items, as a warm pool's VM
// (of pool ci) is, and the provider over the fake that holds it.
func reconfigured(t *testing.T) (*Provider, *computefake.Server, string) {
	t.Helper()
	fake := computefake.New()
	t.Cleanup(fake.Close)
	p, err := New(fakeClients(t, fake), Config{Project: project, CallHomeTopic: "projects/demo-proxies/topics/proxy-callhome"})
	if err != nil {
		t.Fatal(err)
	}
	req := request()
	req.Pool = "ci"
	req.Engine = &vmconfig.Config{Generation: 0, Listen: ":3128"}
	id, err := p.Create(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	fake.Settle()
	return p, fake, id
}

func reconfigureRequest() provider.ReconfigureRequest {
	return provider.ReconfigureRequest{
		UID: "7d6c5b4a-3928-4716-a5f4-e3d2c1b0a987", Namespace: "team-b", ProxyName: "ci-runner",
		Engine: &vmconfig.Config{Generation: 3, Listen: ":3128", ConnectPorts: []int{443}},
	}
}

// TestReconfigureWrites: the labels and the metadata Reconfigure sends,
// whole: LabelUID changed and every other label kept; the engine's
// configuration and the call-home items replaced, the warm pool's item
// gone (the VM is the proxy's now), every other item (one another client
// added too) kept in its place; each write carrying the
// fingerprint just read.
func TestReconfigureWrites(t *testing.T) {
	p, fake, id := reconfigured(t)
	ctx := context.Background()
	fake.Touch("us-central1-b", request().Name, true, "someone-elses", "kept")
	before, err := p.c.Instances.Get(ctx, &computepb.GetInstanceRequest{Project: project, Zone: "us-central1-b", Instance: request().Name})
	if err != nil {
		t.Fatal(err)
	}
	pool := ""
	for _, it := range before.GetMetadata().GetItems() {
		if it.GetKey() == "egress-pool" {
			pool = it.GetValue()
		}
	}
	if pool != "ci" {
		t.Errorf("a warm pool's VM was made with egress-pool %q, want ci: its call-home names its member by pool", pool)
	}
	req := reconfigureRequest()
	if err := p.Reconfigure(ctx, id, req); err != nil {
		t.Fatal(err)
	}

	labels := fake.SetLabelsCalls()
	wantLabels := []*computepb.InstancesSetLabelsRequest{{
		LabelFingerprint: before.LabelFingerprint,
		Labels:           map[string]string{"proxy-operator-managed": "true", "proxy-operator-uid": req.UID, "egress-deployment": "egress"},
	}}
	if diff := cmp.Diff(wantLabels, labels, protocmp.Transform()); diff != "" {
		t.Errorf("setLabels calls (-want +got):\n%s", diff)
	}
	item := func(k, v string) *computepb.Items {
		return &computepb.Items{Key: proto.String(k), Value: proto.String(v)}
	}
	wantMetadata := []*computepb.Metadata{{
		Fingerprint: before.GetMetadata().Fingerprint,
		Items: []*computepb.Items{
			item("startup-script", request().StartupScript),
			item("egress-config", `{"generation":3,"listen":":3128","users":null,"allowedSourceRanges":null,"connectPorts":[443],"denyDestinations":null,"accessLog":false}`),
			item("enable-guest-attributes", "TRUE"),
			item("egress-call-home-topic", "projects/demo-proxies/topics/proxy-callhome"),
			item("egress-namespace", "team-b"),
			item("egress-name", "ci-runner"),
			item("egress-uid", req.UID),
			item("someone-elses", "kept"),
		},
	}}
	if diff := cmp.Diff(wantMetadata, fake.SetMetadataCalls(), protocmp.Transform()); diff != "" {
		t.Errorf("setMetadata calls (-want +got):\n%s", diff)
	}
}

// TestReconfigureIsIdempotent: the same request again reads the VM and
// writes nothing; a request that changes only the configuration writes
// only the metadata.
func TestReconfigureIsIdempotent(t *testing.T) {
	p, fake, id := reconfigured(t)
	ctx := context.Background()
	req := reconfigureRequest()
	if err := p.Reconfigure(ctx, id, req); err != nil {
		t.Fatal(err)
	}
	gets := fake.Calls("get")
	if err := p.Reconfigure(ctx, id, req); err != nil {
		t.Fatal(err)
	}
	type counts struct{ Gets, SetLabels, SetMetadata int }
	if diff := cmp.Diff(counts{1, 1, 1}, counts{fake.Calls("get") - gets, fake.Calls("setLabels"), fake.Calls("setMetadata")}); diff != "" {
		t.Errorf("calls after a repeated Reconfigure (-want +got):\n%s", diff)
	}
	req.Engine = &vmconfig.Config{Generation: 4, Listen: ":3128", ConnectPorts: []int{443, 8443}}
	if err := p.Reconfigure(ctx, id, req); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(counts{2, 1, 2}, counts{fake.Calls("get") - gets, fake.Calls("setLabels"), fake.Calls("setMetadata")}); diff != "" {
		t.Errorf("calls after a new configuration for the same owner (-want +got):\n%s", diff)
	}
}

// TestReconfigureConflicts: a write Compute refuses for its fingerprint
// (412 conditionNotMet: someone wrote in between) is read again and
// retried, up to reconfigureAttempts rounds, then a transient error; any
// other refusal is not retried.
func TestReconfigureConflicts(t *testing.T) {
	stale := computefake.Fault{Code: 412, Reason: "conditionNotMet", Message: "Supplied fingerprint does not match current metadata fingerprint."}
	cases := map[string]struct {
		reason   string
		method   string
		faults   int
		fault    computefake.Fault
		wantKind provider.Kind
		wantGets int
	}{
		"MetadataOnce": {reason: "one lost race on the metadata: read again, write again", method: "setMetadata", faults: 1, fault: stale, wantGets: 2},
		"LabelsOnce":   {reason: "one lost race on the labels: read again, write again", method: "setLabels", faults: 1, fault: stale, wantGets: 2},
		"EveryTime": {reason: "a writer that never stops: give up, transient, after the bound",
			method: "setMetadata", faults: reconfigureAttempts, fault: stale, wantKind: provider.KindTransient, wantGets: reconfigureAttempts},
		"Forbidden": {reason: "a refusal that is no conflict is not retried",
			method: "setMetadata", faults: 1, fault: computefake.Fault{Code: 403, Reason: "forbidden", Message: "Required 'compute.instances.setMetadata' permission"},
			wantKind: provider.KindPermanent, wantGets: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, fake, id := reconfigured(t)
			gets := fake.Calls("get")
			fake.Fail(tc.method, tc.faults, tc.fault)
			err := p.Reconfigure(context.Background(), id, reconfigureRequest())
			if diff := cmp.Diff(tc.wantKind, provider.KindOf(err)); diff != "" {
				t.Errorf("%s\nerror kind (-want +got):\n%s\n%v", tc.reason, diff, err)
			}
			if got := fake.Calls("get") - gets; got != tc.wantGets {
				t.Errorf("%s: %d reads of the VM, want %d", tc.reason, got, tc.wantGets)
			}
			if tc.wantKind != "" {
				return
			}
			inst, err := p.Get(context.Background(), id)
			if err != nil || inst.UID != reconfigureRequest().UID {
				t.Errorf("%s: after the retry, Get = %+v, %v; want uid %s", tc.reason, inst, err, reconfigureRequest().UID)
			}
		})
	}
}

// TestGeneration: egress/ready names the generation the VM serves; the
// text VMs wrote before generations is generation 1.
func TestGeneration(t *testing.T) {
	cases := map[string]int64{"0": 0, "1": 1, "42": 42, "serving on port 3128": 1, "": 1, "-3": 1}
	for ready, want := range cases {
		if got := generation(ready); got != want {
			t.Errorf("generation(%q) = %d, want %d", ready, got, want)
		}
	}
}
