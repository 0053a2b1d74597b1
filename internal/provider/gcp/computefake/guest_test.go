package computefake_test

import (
	"context"
	"strings"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
)

// TestGuestAttributes reads what the VM wrote by queryPath and by
// variableKey, and checks the 404 of a path with nothing under it.
func TestGuestAttributes(t *testing.T) {
	const zone = "us-central1-a"
	self := link("zones/" + zone + "/instances/vm-a/getGuestAttributes")
	entry := func(ns, key, value string) *computepb.GuestAttributesEntry {
		return &computepb.GuestAttributesEntry{Namespace: proto.String(ns), Key: proto.String(key), Value: proto.String(value)}
	}
	byPath := func(path string, items ...*computepb.GuestAttributesEntry) *computepb.GuestAttributes {
		return &computepb.GuestAttributes{Kind: proto.String("compute#guestAttributes"), SelfLink: proto.String(self),
			QueryPath: proto.String(path), QueryValue: &computepb.GuestAttributesValue{Items: items}}
	}
	cases := map[string]struct {
		reason    string
		instance  string
		path, key string
		want      *computepb.GuestAttributes
		wantCode  int
		wantInMsg string
	}{
		"Namespace": {reason: "NAMESPACE/ lists the namespace's keys, sorted.", path: "egress/",
			want: byPath("egress/", entry("egress", "port", "3128"), entry("egress", "ready", "ok"), entry("egress", "ready-since", "10:00"))},
		"Key": {reason: "NAMESPACE/KEY lists that key and no key it begins.", path: "egress/ready", want: byPath("egress/ready", entry("egress", "ready", "ok"))},
		"All": {reason: "The empty path is every namespace.",
			want: byPath("", entry("egress", "port", "3128"), entry("egress", "ready", "ok"), entry("egress", "ready-since", "10:00"), entry("other", "x", "y"))},
		"VariableKey": {reason: "variableKey answers variableKey and variableValue.", key: "egress/ready",
			want: &computepb.GuestAttributes{Kind: proto.String("compute#guestAttributes"), SelfLink: proto.String(self),
				VariableKey: proto.String("egress/ready"), VariableValue: proto.String("ok")}},
		"NothingUnderPath": {reason: "A namespace nothing was written to is a 404 that names the path.", path: "boot/",
			wantCode: 404, wantInMsg: "instances/vm-a/guestAttributes/boot/"},
		"AbsentKey": {reason: "An unwritten key is a 404 too.", key: "egress/absent",
			wantCode: 404, wantInMsg: "guestAttributes/egress/absent"},
		"AbsentInstance": {reason: "An absent instance is the instance's 404, whose message names no guest attributes.", instance: "vm-absent", path: "egress/",
			wantCode: 404, wantInMsg: "The resource 'projects/" + project + "/zones/" + zone + "/instances/vm-absent' was not found"},
		"BadPath": {reason: "A path of none of the documented forms is refused.", path: "egress",
			wantCode: 400, wantInMsg: "queryPath"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.insert(t, zone, "vm-a", "")
			e.fake.SetGuestAttribute(zone, "vm-a", "egress/ready", "ok")
			e.fake.SetGuestAttribute(zone, "vm-a", "egress/port", "3128")
			e.fake.SetGuestAttribute(zone, "vm-a", "egress/ready-since", "10:00")
			e.fake.SetGuestAttribute(zone, "vm-a", "other/x", "y")
			instance := tc.instance
			if instance == "" {
				instance = "vm-a"
			}
			req := &computepb.GetGuestAttributesInstanceRequest{Project: project, Zone: zone, Instance: instance}
			if tc.path != "" {
				req.QueryPath = proto.String(tc.path)
			}
			if tc.key != "" {
				req.VariableKey = proto.String(tc.key)
			}
			got, err := e.instances.GetGuestAttributes(context.Background(), req)
			if diff := cmp.Diff(tc.wantCode, code(err)); diff != "" {
				t.Fatalf("%s\nerror %v (-want +got code):\n%s", tc.reason, err, diff)
			}
			if err != nil {
				wantReason := map[int]string{404: "notFound", 400: "invalid"}[tc.wantCode]
				if reason(err) != wantReason || !strings.Contains(err.Error(), tc.wantInMsg) {
					t.Errorf("%s\nerror %v: want reason %s and a message with %q", tc.reason, err, wantReason, tc.wantInMsg)
				}
				if tc.wantCode == 404 && tc.instance == "" && strings.Contains(err.Error(), "instances/vm-a' was not found") {
					t.Errorf("%s\nthe 404 of an empty path reads as the instance's: %v", tc.reason, err)
				}
				return
			}
			if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestGuestAttributesGoWithTheInstance checks that an instance made again
// under a deleted one's name starts with no guest attributes.
func TestGuestAttributesGoWithTheInstance(t *testing.T) {
	e := newEnv(t)
	const zone = "us-central1-a"
	e.insert(t, zone, "vm-a", "")
	e.fake.SetGuestAttribute(zone, "vm-a", "egress/ready", "ok")
	e.delete(t, zone, "vm-a", "")
	e.fake.Settle()
	e.insert(t, zone, "vm-a", "")
	_, err := e.instances.GetGuestAttributes(context.Background(), &computepb.GetGuestAttributesInstanceRequest{
		Project: project, Zone: zone, Instance: "vm-a", QueryPath: proto.String("egress/")})
	if code(err) != 404 {
		t.Errorf("guest attributes of a new instance under an old name: %v, want 404", err)
	}
}
