package computefake_test

import (
	"context"
	"strings"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/egress-proxies/egress/internal/provider/gcp/computefake"
)

func (e *env) serial(zone, name string, port int32, start *int64) (*computepb.SerialPortOutput, error) {
	req := &computepb.GetSerialPortOutputInstanceRequest{Project: project, Zone: zone, Instance: name, Start: start}
	if port != 0 {
		req.Port = proto.Int32(port)
	}
	return e.instances.GetSerialPortOutput(context.Background(), req)
}

// TestSerialPortOutput reads a console by start positions, as a caller
// following next does.
func TestSerialPortOutput(t *testing.T) {
	const zone = "us-central1-a"
	output := func(contents string, start, next int64) *computepb.SerialPortOutput {
		return &computepb.SerialPortOutput{Kind: proto.String("compute#serialPortOutput"), Contents: proto.String(contents),
			Start: proto.Int64(start), Next: proto.Int64(next), SelfLink: proto.String(link("zones/" + zone + "/instances/vm-a/serialPort"))}
	}
	cases := map[string]struct {
		reason   string
		instance string
		port     int32
		start    *int64
		want     *computepb.SerialPortOutput
		wantCode int
	}{
		"FromTheStart":  {reason: "No start is the first byte.", want: output("boot\nready\n", 0, 11)},
		"FromNext":      {reason: "A start inside the output returns what follows.", start: proto.Int64(5), want: output("ready\n", 5, 11)},
		"AtTheEnd":      {reason: "A start at next returns nothing new.", start: proto.Int64(11), want: output("", 11, 11)},
		"Negative":      {reason: "A negative start is the most recent bytes.", start: proto.Int64(-6), want: output("ready\n", 5, 11)},
		"NegativeBound": {reason: "A negative start is bounded by what there is.", start: proto.Int64(-100), want: output("boot\nready\n", 0, 11)},
		"PastTheEnd":    {reason: "The fake's assumption: past the end is nothing, and next stays start.", start: proto.Int64(20), want: output("", 20, 20)},
		"OtherPort":     {reason: "A port nothing was written to is empty.", port: 2, want: output("", 0, 0)},
		"BadPort":       {reason: "Ports are 1 to 4.", port: 5, wantCode: 400},
		"NoInstance":    {reason: "An absent instance is not found.", instance: "vm-absent", wantCode: 404},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.insert(t, zone, "vm-a", "")
			e.fake.AppendSerial(zone, "vm-a", "boot\n")
			e.fake.AppendSerial(zone, "vm-a", "ready\n")
			instance := tc.instance
			if instance == "" {
				instance = "vm-a"
			}
			got, err := e.serial(zone, instance, tc.port, tc.start)
			if diff := cmp.Diff(tc.wantCode, code(err)); diff != "" {
				t.Fatalf("%s\nerror %v (-want +got code):\n%s", tc.reason, err, diff)
			}
			if diff := cmp.Diff(tc.want, got, protocmp.Transform()); err == nil && diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestSerialPortDiscardsOldest overflows the buffer: a start in the
// discarded output is moved to the oldest byte kept, and the answer says
// so.
func TestSerialPortDiscardsOldest(t *testing.T) {
	const zone = "us-central1-a"
	e := newEnv(t)
	e.insert(t, zone, "vm-a", "")
	e.fake.AppendSerial(zone, "vm-a", strings.Repeat("a", computefake.SerialPortBuffer))
	e.fake.AppendSerial(zone, "vm-a", "tail\n")
	got, err := e.serial(zone, "vm-a", 1, proto.Int64(0))
	if err != nil {
		t.Fatal(err)
	}
	type window struct {
		Start, Next int64
		Length      int
		Ends        bool
	}
	want := window{Start: 5, Next: computefake.SerialPortBuffer + 5, Length: computefake.SerialPortBuffer, Ends: true}
	if diff := cmp.Diff(want, window{got.GetStart(), got.GetNext(), len(got.GetContents()), strings.HasSuffix(got.GetContents(), "tail\n")}); diff != "" {
		t.Errorf("read from 0 after the buffer overflowed (-want +got):\n%s", diff)
	}
	e.fake.AppendSerial(zone, "vm-a", "more\n")
	got, err = e.serial(zone, "vm-a", 1, proto.Int64(want.Next))
	if err != nil {
		t.Fatal(err)
	}
	if got.GetContents() != "more\n" || got.GetStart() != want.Next {
		t.Errorf("read from next = %q at %d, want %q at %d", got.GetContents(), got.GetStart(), "more\n", want.Next)
	}
}
