package computefake_test

import (
	"context"
	"testing"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/proto"

	"github.com/egress-proxies/egress/internal/provider/gcp/computefake"
)

// TestRequestIDs repeats a request id after the first request and checks
// whether the fake ignored the second request: it answers the first
// request's operation (same name and id) and changes nothing.
func TestRequestIDs(t *testing.T) {
	const (
		zone = "us-central1-a"
		id1  = "0d4cb6b2-7b56-4a8e-9a0e-6a1d6b1f3c01"
		id2  = "0d4cb6b2-7b56-4a8e-9a0e-6a1d6b1f3c02"
	)
	deleteAndSettle := func(t *testing.T, e *env) { e.delete(t, zone, "vm-a", ""); e.fake.Settle() }
	cases := map[string]struct {
		reason        string
		first         func(t *testing.T, e *env) *computepb.Operation
		between       func(t *testing.T, e *env)
		second        func(t *testing.T, e *env) *computepb.Operation
		wantFirst     bool     // the second request answers the first's operation
		wantInstances []string // zone/name after the second request
	}{
		"InsertAgainAfterDelete": {
			reason:    "The instance the first insert made is gone; the repeated insert still creates nothing.",
			between:   deleteAndSettle,
			second:    func(t *testing.T, e *env) *computepb.Operation { return e.insert(t, zone, "vm-a", id1) },
			wantFirst: true,
		},
		"InsertAgainWithOtherBody": {
			reason:        "A repeated id is the same request whatever the body says.",
			second:        func(t *testing.T, e *env) *computepb.Operation { return e.insert(t, "us-central1-b", "vm-b", id1) },
			wantFirst:     true,
			wantInstances: []string{zone + "/vm-a"},
		},
		"NewIDAfterDelete": {
			reason:        "A new request id is a new request: the instance is made again.",
			between:       deleteAndSettle,
			second:        func(t *testing.T, e *env) *computepb.Operation { return e.insert(t, zone, "vm-a", id2) },
			wantInstances: []string{zone + "/vm-a"},
		},
		"JustInsideWindow": {
			reason: "A second before the window ends the id is still remembered.",
			between: func(t *testing.T, e *env) {
				deleteAndSettle(t, e)
				e.fake.Advance(computefake.RequestIDWindow - time.Second)
			},
			second:    func(t *testing.T, e *env) *computepb.Operation { return e.insert(t, zone, "vm-a", id1) },
			wantFirst: true,
		},
		"AfterWindow": {
			reason: "Once the window has passed, a repeated id is a new request.",
			between: func(t *testing.T, e *env) {
				deleteAndSettle(t, e)
				e.fake.Advance(computefake.RequestIDWindow)
			},
			second:        func(t *testing.T, e *env) *computepb.Operation { return e.insert(t, zone, "vm-a", id1) },
			wantInstances: []string{zone + "/vm-a"},
		},
		"OtherProject": {
			reason:  "Request ids are remembered per project.",
			between: deleteAndSettle,
			second: func(t *testing.T, e *env) *computepb.Operation {
				op, err := e.instances.Insert(context.Background(), &computepb.InsertInstanceRequest{Project: "other-project", Zone: zone,
					RequestId: proto.String(id1), InstanceResource: &computepb.Instance{Name: proto.String("vm-a")}})
				if err != nil {
					t.Fatal(err)
				}
				return op.Proto()
			},
			wantInstances: []string{zone + "/vm-a"},
		},
		"InsertAgainAfterFailedInsert": {
			reason: "A retry of an insert that failed in its operation is ignored too: it answers the failed operation and creates nothing.",
			first: func(t *testing.T, e *env) *computepb.Operation {
				e.fake.FailInserts(zone, 1, computefake.Stockout(project, zone))
				return e.insert(t, zone, "vm-a", id1)
			},
			between:   func(t *testing.T, e *env) { e.fake.Settle() },
			second:    func(t *testing.T, e *env) *computepb.Operation { return e.insert(t, zone, "vm-a", id1) },
			wantFirst: true,
		},
		"DeleteAgainAfterGone": {
			reason: "A repeated delete answers its first operation, not a 404 for the instance now gone.",
			first: func(t *testing.T, e *env) *computepb.Operation {
				e.insert(t, zone, "vm-a", "")
				return e.delete(t, zone, "vm-a", id1)
			},
			between:   func(t *testing.T, e *env) { e.fake.Settle() },
			second:    func(t *testing.T, e *env) *computepb.Operation { return e.delete(t, zone, "vm-a", id1) },
			wantFirst: true,
		},
		"DeleteWithAnInsertsID": {
			reason:        "The id is the request's, whichever method repeats it: a delete with the insert's id deletes nothing.",
			second:        func(t *testing.T, e *env) *computepb.Operation { return e.delete(t, zone, "vm-a", id1) },
			wantFirst:     true,
			wantInstances: []string{zone + "/vm-a"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			var first *computepb.Operation
			if tc.first != nil {
				first = tc.first(t, e)
			} else {
				first = e.insert(t, zone, "vm-a", id1)
			}
			if tc.between != nil {
				tc.between(t, e)
			}
			second := tc.second(t, e)
			same := second.GetName() == first.GetName() && second.GetId() == first.GetId()
			if same != tc.wantFirst {
				t.Errorf("%s\nsecond request answered operation %s (id %d); the first was %s (id %d); want the first's: %t",
					tc.reason, second.GetName(), second.GetId(), first.GetName(), first.GetId(), tc.wantFirst)
			}
			if diff := cmp.Diff(tc.wantInstances, e.instanceNames(t), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\ninstances after the second request (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
