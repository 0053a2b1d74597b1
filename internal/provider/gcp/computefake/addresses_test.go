package computefake_test

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
)

// reserve inserts an external address and returns the insert's operation.
func (e *env) reserve(t *testing.T, region, name string, labels map[string]string) *computepb.Operation {
	t.Helper()
	op, err := e.addresses.Insert(context.Background(), &computepb.InsertAddressRequest{Project: project, Region: region,
		AddressResource: &computepb.Address{Name: proto.String(name), Labels: labels,
			AddressType: proto.String("EXTERNAL"), NetworkTier: proto.String("STANDARD")}})
	if err != nil {
		t.Fatalf("reserve %s/%s: %v", region, name, err)
	}
	return op.Proto()
}

func (e *env) address(t *testing.T, region, name string) *computepb.Address {
	t.Helper()
	a, err := e.addresses.Get(context.Background(), &computepb.GetAddressRequest{Project: project, Region: region, Address: name})
	if err != nil {
		t.Fatalf("get address %s/%s: %v", region, name, err)
	}
	return a
}

// insertWithNAT inserts an instance whose access config asks for natIP.
func (e *env) insertWithNAT(zone, name, natIP string) error {
	_, err := e.instances.Insert(context.Background(), &computepb.InsertInstanceRequest{Project: project, Zone: zone,
		InstanceResource: &computepb.Instance{Name: proto.String(name), NetworkInterfaces: []*computepb.NetworkInterface{{
			AccessConfigs: []*computepb.AccessConfig{{Name: proto.String("External NAT"), Type: proto.String("ONE_TO_ONE_NAT"), NatIP: proto.String(natIP)}},
		}}}})
	return err
}

// TestAddressLifecycle reserves an address, gives it to an instance, and
// follows it back to RESERVED and then gone.
func TestAddressLifecycle(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	region, zone := "us-central1", "us-central1-a"
	labels := map[string]string{"proxy-operator-managed": "true", "proxy-operator-uid": "3f2c1b0a"}
	ins := e.reserve(t, region, "egress-ip", labels)
	if got, err := e.regionOps.Get(ctx, &computepb.GetRegionOperationRequest{Project: project, Region: region, Operation: ins.GetName()}); err != nil ||
		got.GetStatus() != computepb.Operation_RUNNING || got.GetRegion() != link("regions/"+region) || got.GetZone() != "" {
		t.Errorf("regionOperations.get of the address insert = %v, %v; want a RUNNING regional operation", got, err)
	}
	want := &computepb.Address{
		Kind:              proto.String("compute#address"),
		Id:                ins.TargetId,
		Name:              proto.String("egress-ip"),
		Address:           proto.String("203.0.113.1"),
		AddressType:       proto.String("EXTERNAL"),
		NetworkTier:       proto.String("STANDARD"),
		Labels:            labels,
		Status:            proto.String("RESERVED"),
		Region:            proto.String(link("regions/" + region)),
		SelfLink:          proto.String(link("regions/" + region + "/addresses/egress-ip")),
		CreationTimestamp: proto.String(stamp(t0)),
	}
	if diff := cmp.Diff(want, e.address(t, region, "egress-ip"), protocmp.Transform()); diff != "" {
		t.Errorf("reserved address (-want +got):\n%s", diff)
	}

	if err := e.insertWithNAT(zone, "vm-a", "203.0.113.1"); err != nil {
		t.Fatalf("insert with the reserved natIP: %v", err)
	}
	vmA := link("zones/" + zone + "/instances/vm-a")
	want.Status, want.Users = proto.String("IN_USE"), []string{vmA}
	if diff := cmp.Diff(want, e.address(t, region, "egress-ip"), protocmp.Transform()); diff != "" {
		t.Errorf("address given to an instance (-want +got):\n%s", diff)
	}
	e.fake.Settle()
	inst, err := e.instances.Get(ctx, &computepb.GetInstanceRequest{Project: project, Zone: zone, Instance: "vm-a"})
	if err != nil {
		t.Fatal(err)
	}
	if ip := inst.GetNetworkInterfaces()[0].GetAccessConfigs()[0].GetNatIP(); inst.GetStatus() != "RUNNING" || ip != "203.0.113.1" {
		t.Errorf("instance after Settle: %s with natIP %q, want RUNNING with the static 203.0.113.1", inst.GetStatus(), ip)
	}

	_, err = e.addresses.Delete(ctx, &computepb.DeleteAddressRequest{Project: project, Region: region, Address: "egress-ip"})
	if code(err) != 400 || reason(err) != "resourceInUseByAnotherResource" || !strings.Contains(err.Error(), "projects/"+project+"/zones/"+zone+"/instances/vm-a") {
		t.Errorf("delete of an address in use: %v, want 400 resourceInUseByAnotherResource naming the instance", err)
	}

	e.delete(t, zone, "vm-a", "")
	if got := e.address(t, region, "egress-ip").GetStatus(); got != "IN_USE" {
		t.Errorf("address of an instance still stopping: %s, want IN_USE until the instance is gone", got)
	}
	e.fake.Settle()
	want.Status, want.Users = proto.String("RESERVED"), nil
	if diff := cmp.Diff(want, e.address(t, region, "egress-ip"), protocmp.Transform()); diff != "" {
		t.Errorf("address after its instance is gone (-want +got):\n%s", diff)
	}

	del, err := e.addresses.Delete(ctx, &computepb.DeleteAddressRequest{Project: project, Region: region, Address: "egress-ip"})
	if err != nil {
		t.Fatalf("delete of a reserved address: %v", err)
	}
	e.fake.Settle()
	if _, err := e.addresses.Get(ctx, &computepb.GetAddressRequest{Project: project, Region: region, Address: "egress-ip"}); code(err) != 404 {
		t.Errorf("get of a deleted address after Settle: %v, want 404", err)
	}
	var kinds []string
	it := e.regionOps.List(ctx, &computepb.ListRegionOperationsRequest{Project: project, Region: region,
		Filter: proto.String(`(targetLink = "` + want.GetSelfLink() + `") AND (status = "DONE")`)})
	for {
		op, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, op.GetOperationType())
	}
	if diff := cmp.Diff([]string{"insert", "delete"}, kinds); diff != "" {
		t.Errorf("regionOperations.list of the address's done operations (-want +got):\n%s", diff)
	}
	if del.Proto().GetOperationType() != "delete" {
		t.Errorf("address delete answered a %q operation", del.Proto().GetOperationType())
	}
}

// TestAddressErrors checks what the fake refuses, as Compute does.
func TestAddressErrors(t *testing.T) {
	ctx := context.Background()
	cases := map[string]struct {
		reason     string
		call       func(e *env) error
		wantCode   int
		wantReason string
		wantIn     string // a part of the message
	}{
		"InsertExisting": {
			reason: "A second address of a name is a conflict.",
			call: func(e *env) error {
				_, err := e.addresses.Insert(ctx, &computepb.InsertAddressRequest{Project: project, Region: "us-central1",
					AddressResource: &computepb.Address{Name: proto.String("ip-1")}})
				return err
			},
			wantCode: 409, wantReason: "alreadyExists", wantIn: "projects/" + project + "/regions/us-central1/addresses/ip-1",
		},
		"GetUnknown": {
			reason: "An unknown address is not found.",
			call: func(e *env) error {
				_, err := e.addresses.Get(ctx, &computepb.GetAddressRequest{Project: project, Region: "us-central1", Address: "absent"})
				return err
			},
			wantCode: 404, wantReason: "notFound", wantIn: "addresses/absent",
		},
		"GetInOtherRegion": {
			reason: "Addresses are regional: the name in another region is not found.",
			call: func(e *env) error {
				_, err := e.addresses.Get(ctx, &computepb.GetAddressRequest{Project: project, Region: "europe-west4", Address: "ip-1"})
				return err
			},
			wantCode: 404, wantReason: "notFound",
		},
		"DeleteUnknown": {
			reason: "Deleting an unknown address is not found.",
			call: func(e *env) error {
				_, err := e.addresses.Delete(ctx, &computepb.DeleteAddressRequest{Project: project, Region: "us-central1", Address: "absent"})
				return err
			},
			wantCode: 404, wantReason: "notFound",
		},
		"NATNotReserved": {
			reason:   "A natIP that is no reserved address of the region is refused in the insert's answer.",
			call:     func(e *env) error { return e.insertWithNAT("us-central1-a", "vm-x", "192.0.2.9") },
			wantCode: 400, wantReason: "invalid",
			wantIn: "Invalid value for field 'resource.networkInterfaces[0].accessConfigs[0].natIP': '192.0.2.9'. The specified external IP address '192.0.2.9' was not found in region 'us-central1'.",
		},
		"NATOfOtherRegion": {
			reason:   "A reserved address of another region is not the instance's region's.",
			call:     func(e *env) error { return e.insertWithNAT("europe-west4-b", "vm-x", "203.0.113.1") },
			wantCode: 400, wantReason: "invalid", wantIn: "was not found in region 'europe-west4'",
		},
		"NATInUse": {
			reason: "An address another instance uses is refused.",
			call: func(e *env) error {
				if err := e.insertWithNAT("us-central1-a", "vm-1", "203.0.113.1"); err != nil {
					return err
				}
				return e.insertWithNAT("us-central1-b", "vm-2", "203.0.113.1")
			},
			wantCode: 400, wantReason: "invalid", wantIn: "instances/vm-1",
		},
		"UnknownFilter": {
			reason: "The aggregated list takes only labels.KEY=VALUE.",
			call: func(e *env) error {
				_, err := e.addresses.AggregatedList(ctx, &computepb.AggregatedListAddressesRequest{Project: project, Filter: proto.String(`status = "RESERVED"`)}).Next()
				return err
			},
			wantCode: 400, wantReason: "invalid",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.reserve(t, "us-central1", "ip-1", nil)
			err := tc.call(e)
			got := struct {
				Code   int
				Reason string
			}{code(err), reason(err)}
			want := struct {
				Code   int
				Reason string
			}{tc.wantCode, tc.wantReason}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s\nerror %v (-want +got):\n%s", tc.reason, err, diff)
			}
			if err != nil && !strings.Contains(err.Error(), tc.wantIn) {
				t.Errorf("%s\nerror %q does not say %q", tc.reason, err, tc.wantIn)
			}
		})
	}
}

// TestAggregatedAddresses lists addresses of two regions, all and by label.
func TestAggregatedAddresses(t *testing.T) {
	e := newEnv(t)
	managed := map[string]string{"proxy-operator-managed": "true"}
	e.reserve(t, "us-central1", "ip-b", managed)
	e.reserve(t, "us-central1", "ip-a", managed)
	e.reserve(t, "europe-west4", "ip-c", managed)
	e.reserve(t, "europe-west4", "other", map[string]string{"team": "x"})
	cases := map[string]struct {
		filter string
		want   []string // scope/name
	}{
		"All":     {want: []string{"regions/europe-west4/ip-c", "regions/europe-west4/other", "regions/us-central1/ip-a", "regions/us-central1/ip-b"}},
		"ByLabel": {filter: "labels.proxy-operator-managed=true", want: []string{"regions/europe-west4/ip-c", "regions/us-central1/ip-a", "regions/us-central1/ip-b"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := &computepb.AggregatedListAddressesRequest{Project: project}
			if tc.filter != "" {
				req.Filter = proto.String(tc.filter)
			}
			var got []string
			it := e.addresses.AggregatedList(context.Background(), req)
			for {
				pair, err := it.Next()
				if errors.Is(err, iterator.Done) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range pair.Value.GetAddresses() {
					got = append(got, pair.Key+"/"+a.GetName())
				}
			}
			sort.Strings(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("aggregated list with filter %q (-want +got):\n%s", tc.filter, diff)
			}
		})
	}
}

// TestAddressRequestID repeats an address insert's request id after the
// address was deleted: nothing is reserved again.
func TestAddressRequestID(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	req := func() *computepb.InsertAddressRequest {
		return &computepb.InsertAddressRequest{Project: project, Region: "us-central1", RequestId: proto.String("9a3f2b1c-0d4e-4f5a-8b6c-7d8e9f0a1b2c"),
			AddressResource: &computepb.Address{Name: proto.String("ip-1")}}
	}
	first, err := e.addresses.Insert(ctx, req())
	if err != nil {
		t.Fatal(err)
	}
	e.fake.Settle()
	if _, err := e.addresses.Delete(ctx, &computepb.DeleteAddressRequest{Project: project, Region: "us-central1", Address: "ip-1"}); err != nil {
		t.Fatal(err)
	}
	e.fake.Settle()
	second, err := e.addresses.Insert(ctx, req())
	if err != nil {
		t.Fatal(err)
	}
	if second.Proto().GetName() != first.Proto().GetName() || second.Proto().GetId() != first.Proto().GetId() {
		t.Errorf("repeated address insert answered %s, want the first insert's %s", second.Proto().GetName(), first.Proto().GetName())
	}
	if _, err := e.addresses.Get(ctx, &computepb.GetAddressRequest{Project: project, Region: "us-central1", Address: "ip-1"}); code(err) != 404 {
		t.Errorf("get after the repeated insert: %v, want 404: the repeat must reserve nothing", err)
	}
}
