package computefake_test

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"testing"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/egress-proxies/egress/internal/provider/gcp/computefake"
)

// TestOperationLifecycle follows an insert's and a delete's operations
// through zoneOperations.get: RUNNING when answered, DONE with an end time
// after Settle.
func TestOperationLifecycle(t *testing.T) {
	e := newEnv(t)
	zone := "us-central1-a"
	ins := e.insert(t, zone, "vm-a", "")
	inst, err := e.instances.Get(context.Background(), &computepb.GetInstanceRequest{Project: project, Zone: zone, Instance: "vm-a"})
	if err != nil {
		t.Fatal(err)
	}
	want := &computepb.Operation{
		Kind:          proto.String("compute#operation"),
		Id:            ins.Id,
		Name:          ins.Name,
		Zone:          proto.String(link("zones/" + zone)),
		OperationType: proto.String("insert"),
		Status:        computepb.Operation_RUNNING.Enum(),
		Progress:      proto.Int32(0),
		TargetLink:    proto.String(link("zones/" + zone + "/instances/vm-a")),
		TargetId:      inst.Id,
		InsertTime:    proto.String(stamp(t0)),
		StartTime:     proto.String(stamp(t0)),
		SelfLink:      proto.String(link("zones/" + zone + "/operations/" + ins.GetName())),
		User:          proto.String(computefake.User),
	}
	if diff := cmp.Diff(want, ins, protocmp.Transform()); diff != "" {
		t.Errorf("the insert's answer (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, e.zoneOp(t, zone, ins.GetName()), protocmp.Transform()); diff != "" {
		t.Errorf("zoneOperations.get before Settle (-want +got):\n%s", diff)
	}

	e.fake.Advance(90 * time.Second)
	e.fake.Settle()
	want.Status, want.Progress, want.EndTime = computepb.Operation_DONE.Enum(), proto.Int32(100), proto.String(stamp(t0.Add(90*time.Second)))
	if diff := cmp.Diff(want, e.zoneOp(t, zone, ins.GetName()), protocmp.Transform()); diff != "" {
		t.Errorf("zoneOperations.get after Settle (-want +got):\n%s", diff)
	}

	del := e.delete(t, zone, "vm-a", "")
	if got := e.zoneOp(t, zone, del.GetName()); got.GetStatus() != computepb.Operation_RUNNING || got.GetOperationType() != "delete" || got.GetTargetLink() != want.GetTargetLink() {
		t.Errorf("the delete's operation before Settle = %v, want a RUNNING delete of %s", got, want.GetTargetLink())
	}
	e.fake.Settle()
	if got := e.zoneOp(t, zone, del.GetName()); got.GetStatus() != computepb.Operation_DONE || got.GetEndTime() == "" {
		t.Errorf("the delete's operation after Settle = %v, want DONE with an end time", got)
	}

	for _, where := range []struct{ zone, name string }{{zone, "operation-absent"}, {"us-central1-b", ins.GetName()}} {
		_, err := e.zoneOps.Get(context.Background(), &computepb.GetZoneOperationRequest{Project: project, Zone: where.zone, Operation: where.name})
		if code(err) != 404 || reason(err) != "notFound" {
			t.Errorf("zoneOperations.get %s/%s: %v, want 404 notFound", where.zone, where.name, err)
		}
	}
}

// TestListOperationsFilter lists a zone's operations with the filters the
// fake understands, and checks that it refuses the ones it does not.
func TestListOperationsFilter(t *testing.T) {
	e := newEnv(t)
	zone := "us-central1-a"
	ops := map[string]string{} // what an operation is → its name
	ops["insert a"] = e.insert(t, zone, "vm-a", "").GetName()
	e.fake.Advance(time.Second)
	ops["insert b"] = e.insert(t, zone, "vm-b", "").GetName()
	e.insert(t, "us-central1-b", "vm-c", "") // another zone's: never listed here
	e.fake.Settle()
	e.fake.Advance(time.Second)
	ops["delete a"] = e.delete(t, zone, "vm-a", "").GetName()
	vmA := link("zones/" + zone + "/instances/vm-a")

	cases := map[string]struct {
		reason   string
		filter   string
		want     []string // keys of ops, in list order
		wantCode int
	}{
		"None":              {reason: "No filter lists every operation of the zone, oldest first (by name).", want: []string{"insert a", "insert b", "delete a"}},
		"Type":              {reason: "A single comparison.", filter: `operationType = "insert"`, want: []string{"insert a", "insert b"}},
		"Unquoted":          {reason: "A value may be unquoted.", filter: `operationType=delete`, want: []string{"delete a"}},
		"Status":            {reason: "status is the enum's name.", filter: `status = "RUNNING"`, want: []string{"delete a"}},
		"NotEqual":          {reason: "!= is documented too.", filter: `status != "RUNNING"`, want: []string{"insert a", "insert b"}},
		"ExplicitAND":       {reason: "Parenthesised comparisons joined by AND.", filter: `(targetLink = "` + vmA + `") AND (operationType = "insert")`, want: []string{"insert a"}},
		"ImplicitAND":       {reason: "Compute documents juxtaposed comparisons as AND.", filter: `(targetLink = "` + vmA + `") (status = "DONE")`, want: []string{"insert a"}},
		"ThreeTerms":        {reason: "Any number of terms.", filter: `(targetLink = "` + vmA + `") AND (operationType = "insert") AND (status = "RUNNING")`},
		"OR":                {reason: "OR is documented but not understood: refused, not ignored.", filter: `(operationType = "insert") OR (status = "DONE")`, wantCode: 400},
		"UnknownField":      {reason: "A field the fake does not filter on is refused.", filter: `zone = "` + link("zones/"+zone) + `"`, wantCode: 400},
		"RegexForm":         {reason: "The eq/ne regular-expression form is refused.", filter: `name eq operation-.*`, wantCode: 400},
		"OtherOperator":     {reason: "Operators other than = and != are refused.", filter: `insertTime > "2026-01-01"`, wantCode: 400},
		"Unbalanced":        {reason: "A malformed filter is refused.", filter: `(status = "DONE"`, wantCode: 400},
		"LowercaseAnd":      {reason: "AND is upper case.", filter: `(status = "DONE") and (operationType = "insert")`, wantCode: 400},
		"NestedParentheses": {reason: "Nesting is not understood.", filter: `((status = "DONE"))`, wantCode: 400},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := &computepb.ListZoneOperationsRequest{Project: project, Zone: zone}
			if tc.filter != "" {
				req.Filter = proto.String(tc.filter)
			}
			var got []string
			it := e.zoneOps.List(context.Background(), req)
			var err error
			for {
				var op *computepb.Operation
				op, err = it.Next()
				if err != nil {
					break
				}
				got = append(got, op.GetName())
			}
			if errors.Is(err, iterator.Done) {
				err = nil
			}
			if diff := cmp.Diff(tc.wantCode, code(err)); diff != "" {
				t.Fatalf("%s\nfilter %s: error %v (-want +got code):\n%s", tc.reason, tc.filter, err, diff)
			}
			var want []string
			for _, k := range tc.want {
				want = append(want, ops[k])
			}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nfilter %s (-want +got):\n%s", tc.reason, tc.filter, diff)
			}
		})
	}
	// The names sort as the operations began, which the "None" case relies on.
	names := []string{ops["insert a"], ops["insert b"], ops["delete a"]}
	if !sort.StringsAreSorted(names) {
		t.Errorf("operation names %v do not sort in the order the operations began", names)
	}
}

// TestWaitOperation follows zoneOperations.wait and regionOperations.wait:
// a DONE operation is answered at once; a running one once Settle has run,
// which the OnWait hook lets the test do when the request blocks; an
// unknown one is a 404; a client that gives up leaves the operation as it
// was.
func TestWaitOperation(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	zone := "us-central1-a"

	done := e.insert(t, zone, "vm-done", "")
	e.fake.Settle()
	got, err := e.zoneOps.Wait(ctx, &computepb.WaitZoneOperationRequest{Project: project, Zone: zone, Operation: done.GetName()})
	if err != nil || got.GetStatus() != computepb.Operation_DONE {
		t.Fatalf("wait on a DONE operation: %v, %v; want it DONE at once", got.GetStatus(), err)
	}

	var hooked []string
	e.fake.OnWait(func(op string) {
		hooked = append(hooked, op)
		e.fake.Settle()
	})
	running := e.insert(t, zone, "vm-running", "")
	got, err = e.zoneOps.Wait(ctx, &computepb.WaitZoneOperationRequest{Project: project, Zone: zone, Operation: running.GetName()})
	if err != nil {
		t.Fatal(err)
	}
	want := e.zoneOp(t, zone, running.GetName())
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" || got.GetStatus() != computepb.Operation_DONE {
		t.Errorf("wait on a running operation answered %v, want it DONE as get then reads it (-get +wait):\n%s", got.GetStatus(), diff)
	}

	// A regional operation (an address's) waits the same way, by its id too.
	addr, err := e.addresses.Insert(ctx, &computepb.InsertAddressRequest{Project: project, Region: "us-central1",
		AddressResource: &computepb.Address{Name: proto.String("addr-a")}})
	if err != nil {
		t.Fatal(err)
	}
	id := strconv.FormatUint(addr.Proto().GetId(), 10)
	rgot, err := e.regionOps.Wait(ctx, &computepb.WaitRegionOperationRequest{Project: project, Region: "us-central1", Operation: id})
	if err != nil || rgot.GetStatus() != computepb.Operation_DONE || rgot.GetName() != addr.Proto().GetName() {
		t.Errorf("regionOperations.wait by id: %v %v, %v; want %s DONE", rgot.GetName(), rgot.GetStatus(), err, addr.Proto().GetName())
	}
	if diff := cmp.Diff([]string{running.GetName(), addr.Proto().GetName()}, hooked); diff != "" {
		t.Errorf("OnWait calls (-want +got):\n%s", diff)
	}

	// A client that gives up while the operation runs: nothing settles.
	gaveUp, cancel := context.WithCancel(ctx)
	e.fake.OnWait(func(string) { cancel() })
	left := e.insert(t, zone, "vm-left", "")
	if _, err := e.zoneOps.Wait(gaveUp, &computepb.WaitZoneOperationRequest{Project: project, Zone: zone, Operation: left.GetName()}); err == nil {
		t.Error("a wait whose client gave up answered")
	}
	if got := e.zoneOp(t, zone, left.GetName()); got.GetStatus() != computepb.Operation_RUNNING {
		t.Errorf("after an abandoned wait the operation is %v, want RUNNING", got.GetStatus())
	}

	_, err = e.zoneOps.Wait(ctx, &computepb.WaitZoneOperationRequest{Project: project, Zone: zone, Operation: "operation-absent"})
	if code(err) != 404 || reason(err) != "notFound" {
		t.Errorf("wait on an absent operation: %v, want 404 notFound", err)
	}
	if n := e.fake.Calls("operations.wait"); n != 5 {
		t.Errorf("the fake counted %d waits, want 5", n)
	}
}

// TestAggregatedOperations lists every operation of the project by scope,
// zonal and regional, with a filter, as gcloud compute operations list
// reads them.
func TestAggregatedOperations(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a := e.insert(t, "us-central1-a", "vm-a", "")
	b := e.insert(t, "europe-west1-b", "vm-b", "")
	addr, err := e.addresses.Insert(ctx, &computepb.InsertAddressRequest{Project: project, Region: "us-central1",
		AddressResource: &computepb.Address{Name: proto.String("addr-a")}})
	if err != nil {
		t.Fatal(err)
	}
	e.fake.Settle()
	del := e.delete(t, "us-central1-a", "vm-a", "")

	global, err := compute.NewGlobalOperationsRESTClient(ctx, e.opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer global.Close()
	list := func(filter string) map[string][]string {
		req := &computepb.AggregatedListGlobalOperationsRequest{Project: project}
		if filter != "" {
			req.Filter = proto.String(filter)
		}
		out := map[string][]string{}
		it := global.AggregatedList(ctx, req)
		for {
			pair, err := it.Next()
			if errors.Is(err, iterator.Done) {
				return out
			}
			if err != nil {
				t.Fatalf("aggregated operations, filter %q: %v", filter, err)
			}
			for _, op := range pair.Value.GetOperations() {
				out[pair.Key] = append(out[pair.Key], op.GetName())
			}
		}
	}
	want := map[string][]string{
		"zones/us-central1-a":  {a.GetName(), del.GetName()},
		"zones/europe-west1-b": {b.GetName()},
		"regions/us-central1":  {addr.Proto().GetName()},
	}
	if diff := cmp.Diff(want, list("")); diff != "" {
		t.Errorf("every operation by scope (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string][]string{"zones/us-central1-a": {del.GetName()}}, list(`status = "RUNNING"`)); diff != "" {
		t.Errorf("the running ones (-want +got):\n%s", diff)
	}
}
