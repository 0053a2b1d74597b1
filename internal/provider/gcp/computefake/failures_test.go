package computefake_test

import (
	"context"
	"fmt"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/egress-proxies/egress/internal/provider/gcp/computefake"
)

// TestInsertFailsInOperation checks that a failing insert answers a
// RUNNING operation, that no instance appears, and that after Settle the
// operation is DONE with the error, which the real client's Poll reports
// as an error of the operation's HTTP status.
func TestInsertFailsInOperation(t *testing.T) {
	const a, b = "us-central1-a", "us-central1-b"
	quota := computefake.QuotaExceeded("CPUS", "us-central1", 24)
	cases := map[string]struct {
		reason   string
		setup    func(f *computefake.Server)
		zones    []string // one insert per zone, in order
		failed   []bool   // which of them fail
		wantCode string
		wantHTTP int
	}{
		"NextInsert": {
			reason: "FailInserts with no zone fails the next insert wherever it goes, and only it.",
			setup:  func(f *computefake.Server) { f.FailInserts("", 1, quota) },
			zones:  []string{b, a}, failed: []bool{true, false},
			wantCode: "QUOTA_EXCEEDED", wantHTTP: 403,
		},
		"NextTwoInZone": {
			reason: "FailInserts in a zone leaves other zones alone and stops after n.",
			setup:  func(f *computefake.Server) { f.FailInserts(b, 2, computefake.Stockout(project, b)) },
			zones:  []string{a, b, b, b}, failed: []bool{false, true, true, false},
			wantCode: "ZONE_RESOURCE_POOL_EXHAUSTED", wantHTTP: 503,
		},
		"ZoneOutOfCapacity": {
			reason: "FailEveryInsert fails every insert in the zone.",
			setup:  func(f *computefake.Server) { f.FailEveryInsert(a, computefake.Stockout(project, a)) },
			zones:  []string{a, a, a, b}, failed: []bool{true, true, true, false},
			wantCode: "ZONE_RESOURCE_POOL_EXHAUSTED", wantHTTP: 503,
		},
		"Cleared": {
			reason: "ClearInsertFailures gives the zone its capacity back.",
			setup: func(f *computefake.Server) {
				f.FailEveryInsert(a, computefake.Stockout(project, a))
				f.ClearInsertFailures()
			},
			zones: []string{a}, failed: []bool{false},
		},
		"ExplicitStatus": {
			reason: "An OperationError's HTTPStatus overrides the one the code implies.",
			setup: func(f *computefake.Server) {
				f.FailInserts("", 1, computefake.OperationError{Code: "RESOURCE_NOT_FOUND", Message: "gone", HTTPStatus: 410})
			},
			zones: []string{a}, failed: []bool{true},
			wantCode: "RESOURCE_NOT_FOUND", wantHTTP: 410,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			tc.setup(e.fake)
			var ops []*compute.Operation
			var want []string
			for i, zone := range tc.zones {
				vm := fmt.Sprintf("vm-%d", i)
				op, err := e.instances.Insert(ctx, &computepb.InsertInstanceRequest{Project: project, Zone: zone,
					InstanceResource: &computepb.Instance{Name: proto.String(vm)}})
				if err != nil {
					t.Fatalf("%s\ninsert %d into %s: %v, want the 200 of an accepted insert", tc.reason, i, zone, err)
				}
				if s := op.Proto().GetStatus(); s != computepb.Operation_RUNNING {
					t.Errorf("%s\ninsert %d answered a %s operation, want RUNNING", tc.reason, i, s)
				}
				ops = append(ops, op)
				if !tc.failed[i] {
					want = append(want, zone+"/"+vm)
				}
			}
			if diff := cmp.Diff(want, e.instanceNames(t), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\ninstances before Settle (-want +got):\n%s", tc.reason, diff)
			}
			e.fake.Settle()
			for i, op := range ops {
				err := op.Poll(ctx)
				if !op.Done() {
					t.Errorf("%s\noperation %d not done after Settle", tc.reason, i)
				}
				if !tc.failed[i] {
					if err != nil || op.Proto().GetError() != nil {
						t.Errorf("%s\ninsert %d: Poll %v, error %v; want a clean DONE", tc.reason, i, err, op.Proto().GetError())
					}
					continue
				}
				if code(err) != tc.wantHTTP {
					t.Errorf("%s\ninsert %d: Poll = %v, want an error of HTTP status %d", tc.reason, i, err, tc.wantHTTP)
				}
				if got := op.Proto().GetError().GetErrors(); len(got) != 1 || got[0].GetCode() != tc.wantCode {
					t.Errorf("%s\ninsert %d: operation errors %v, want one %s", tc.reason, i, got, tc.wantCode)
				}
			}
			if diff := cmp.Diff(want, e.instanceNames(t), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\ninstances after Settle (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestFailedOperation pins the whole of a failed insert's operation as
// zoneOperations.get serves it after Settle.
func TestFailedOperation(t *testing.T) {
	e := newEnv(t)
	zone := "us-central1-a"
	quota := computefake.QuotaExceeded("CPUS", "us-central1", 24)
	e.fake.FailInserts(zone, 1, quota)
	ins := e.insert(t, zone, "vm-a", "6f1e1c1a-5a47-4d43-8a55-1b1e0c3a2b10")
	e.fake.Settle()
	want := &computepb.Operation{
		Kind:              proto.String("compute#operation"),
		Id:                ins.Id,
		Name:              ins.Name,
		Zone:              proto.String(link("zones/" + zone)),
		OperationType:     proto.String("insert"),
		Status:            computepb.Operation_DONE.Enum(),
		Progress:          proto.Int32(100),
		TargetLink:        proto.String(link("zones/" + zone + "/instances/vm-a")),
		InsertTime:        proto.String(stamp(t0)),
		StartTime:         proto.String(stamp(t0)),
		EndTime:           proto.String(stamp(t0)),
		SelfLink:          proto.String(link("zones/" + zone + "/operations/" + ins.GetName())),
		User:              proto.String(computefake.User),
		ClientOperationId: proto.String("6f1e1c1a-5a47-4d43-8a55-1b1e0c3a2b10"),
		Error: &computepb.Error{Errors: []*computepb.Errors{{
			Code:    proto.String("QUOTA_EXCEEDED"),
			Message: proto.String("Quota 'CPUS' exceeded. Limit: 24.0 in region us-central1."),
			ErrorDetails: []*computepb.ErrorDetails{{QuotaInfo: &computepb.QuotaExceededInfo{
				MetricName: proto.String("compute.googleapis.com/cpus"),
				LimitName:  proto.String("CPUS-per-project-region"),
				Dimensions: map[string]string{"region": "us-central1"},
				Limit:      proto.Float64(24),
			}}},
		}}},
		HttpErrorStatusCode: proto.Int32(403),
		HttpErrorMessage:    proto.String("FORBIDDEN"),
	}
	if diff := cmp.Diff(want, e.zoneOp(t, zone, ins.GetName()), protocmp.Transform()); diff != "" {
		t.Errorf("failed insert's operation after Settle (-want +got):\n%s", diff)
	}
	_, err := e.instances.Get(context.Background(), &computepb.GetInstanceRequest{Project: project, Zone: zone, Instance: "vm-a"})
	if code(err) != 404 {
		t.Errorf("Get of the instance a failed insert named: %v, want 404", err)
	}
}
