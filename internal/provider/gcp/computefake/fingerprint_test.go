package computefake_test

import (
	"context"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
)

func items(kv ...string) []*computepb.Items {
	var out []*computepb.Items
	for i := 0; i < len(kv); i += 2 {
		out = append(out, &computepb.Items{Key: proto.String(kv[i]), Value: proto.String(kv[i+1])})
	}
	return out
}

// TestSetMetadataChecksTheFingerprint: through the real Go client, a
// setMetadata without a fingerprint, or with one read before another
// client's change, is refused 412 conditionNotMet and changes nothing; one
// with the fingerprint just read replaces the items, gives a new
// fingerprint, and answers a setMetadata operation on the instance.
func TestSetMetadataChecksTheFingerprint(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.insert(t, "us-central1-a", "vm-1", "")
	get := func() *computepb.Instance {
		t.Helper()
		inst, err := e.instances.Get(ctx, &computepb.GetInstanceRequest{Project: project, Zone: "us-central1-a", Instance: "vm-1"})
		if err != nil {
			t.Fatal(err)
		}
		return inst
	}
	set := func(fp *string, md []*computepb.Items) error {
		_, err := e.instances.SetMetadata(ctx, &computepb.SetMetadataInstanceRequest{
			Project: project, Zone: "us-central1-a", Instance: "vm-1",
			MetadataResource: &computepb.Metadata{Fingerprint: fp, Items: md},
		})
		return err
	}
	first := get().GetMetadata().GetFingerprint()
	if first == "" {
		t.Fatal("a new instance has no metadata fingerprint")
	}

	if err := set(nil, items("a", "1")); code(err) != 412 || reason(err) != "conditionNotMet" {
		t.Errorf("setMetadata without a fingerprint: %v, want 412 conditionNotMet", err)
	}
	e.fake.Touch("us-central1-a", "vm-1", true, "someone-else", "x")
	if err := set(proto.String(first), items("a", "1")); code(err) != 412 || reason(err) != "conditionNotMet" {
		t.Errorf("setMetadata with the fingerprint read before another change: %v, want 412 conditionNotMet", err)
	}
	inst := get()
	if diff := cmp.Diff(items("someone-else", "x"), inst.GetMetadata().GetItems(), protocmp.Transform()); diff != "" {
		t.Errorf("metadata after the refusals (-want +got):\n%s", diff)
	}

	op, err := e.instances.SetMetadata(ctx, &computepb.SetMetadataInstanceRequest{
		Project: project, Zone: "us-central1-a", Instance: "vm-1",
		MetadataResource: &computepb.Metadata{Fingerprint: inst.GetMetadata().Fingerprint, Items: items("someone-else", "x", "a", "1")},
	})
	if err != nil {
		t.Fatalf("setMetadata with the fingerprint just read: %v", err)
	}
	if got := op.Proto(); got.GetOperationType() != "setMetadata" || got.GetTargetLink() != link("zones/us-central1-a/instances/vm-1") {
		t.Errorf("operation %s on %s, want setMetadata on the instance", got.GetOperationType(), got.GetTargetLink())
	}
	after := get()
	if diff := cmp.Diff(items("someone-else", "x", "a", "1"), after.GetMetadata().GetItems(), protocmp.Transform()); diff != "" {
		t.Errorf("metadata after the setMetadata (-want +got):\n%s", diff)
	}
	if fp := after.GetMetadata().GetFingerprint(); fp == inst.GetMetadata().GetFingerprint() {
		t.Errorf("the fingerprint stayed %q after a change", fp)
	}
	if err := set(inst.GetMetadata().Fingerprint, items("b", "2")); code(err) != 412 {
		t.Errorf("setMetadata with the fingerprint the last change replaced: %v, want 412", err)
	}
	if n := len(e.fake.SetMetadataCalls()); n != 4 {
		t.Errorf("the fake recorded %d setMetadata calls, want 4", n)
	}
}

// TestSetLabelsChecksTheFingerprint: setLabels replaces the labels under
// labelFingerprint as setMetadata does the items; the labels a caller
// sends back are kept, and a missing instance is 404.
func TestSetLabelsChecksTheFingerprint(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.fake.Put("europe-west4-b", &computepb.Instance{Name: proto.String("vm-2"), Status: proto.String("RUNNING"),
		Labels: map[string]string{"managed": "true", "uid": "old"}})
	get := func() *computepb.Instance {
		t.Helper()
		inst, err := e.instances.Get(ctx, &computepb.GetInstanceRequest{Project: project, Zone: "europe-west4-b", Instance: "vm-2"})
		if err != nil {
			t.Fatal(err)
		}
		return inst
	}
	set := func(name string, fp *string, labels map[string]string) error {
		_, err := e.instances.SetLabels(ctx, &computepb.SetLabelsInstanceRequest{
			Project: project, Zone: "europe-west4-b", Instance: name,
			InstancesSetLabelsRequestResource: &computepb.InstancesSetLabelsRequest{LabelFingerprint: fp, Labels: labels},
		})
		return err
	}
	read := get()
	e.fake.Touch("europe-west4-b", "vm-2", false, "team", "b")
	if err := set("vm-2", read.LabelFingerprint, map[string]string{"managed": "true", "uid": "new"}); code(err) != 412 || reason(err) != "conditionNotMet" {
		t.Errorf("setLabels with a stale fingerprint: %v, want 412 conditionNotMet", err)
	}
	if err := set("vm-2", nil, map[string]string{"uid": "new"}); code(err) != 412 {
		t.Errorf("setLabels without a fingerprint: %v, want 412", err)
	}
	read = get()
	labels := read.GetLabels()
	labels["uid"] = "new"
	if err := set("vm-2", read.LabelFingerprint, labels); err != nil {
		t.Fatalf("setLabels with the fingerprint just read: %v", err)
	}
	after := get()
	if diff := cmp.Diff(map[string]string{"managed": "true", "uid": "new", "team": "b"}, after.GetLabels()); diff != "" {
		t.Errorf("labels after setLabels (-want +got):\n%s", diff)
	}
	if after.GetLabelFingerprint() == read.GetLabelFingerprint() {
		t.Errorf("the label fingerprint stayed %q after a change", after.GetLabelFingerprint())
	}
	if err := set("vm-absent", after.LabelFingerprint, labels); code(err) != 404 {
		t.Errorf("setLabels of a missing instance: %v, want 404", err)
	}
}
