package computefake_test

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/proto"

	"github.com/egress-proxies/egress/internal/provider/gcp/computefake"
)

const project = "demo-proxies"

// t0 is when every test's fake clock starts.
var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// stamp is how Compute writes a time, as the fake must.
func stamp(t time.Time) string { return t.Format("2006-01-02T15:04:05.000-07:00") }

// env is a fake on a fixed clock and the real Compute clients pointed at
// it.
type env struct {
	fake      *computefake.Server
	instances *compute.InstancesClient
	zoneOps   *compute.ZoneOperationsClient
	addresses *compute.AddressesClient
	regionOps *compute.RegionOperationsClient
	opts      []option.ClientOption
}

func newEnv(t *testing.T) *env {
	t.Helper()
	fake := computefake.New()
	t.Cleanup(fake.Close)
	fake.SetClock(func() time.Time { return t0 })
	ctx := context.Background()
	opts := []option.ClientOption{option.WithEndpoint(fake.URL), option.WithoutAuthentication()}
	e := &env{fake: fake, opts: opts}
	var err error
	if e.instances, err = compute.NewInstancesRESTClient(ctx, opts...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.instances.Close() })
	if e.zoneOps, err = compute.NewZoneOperationsRESTClient(ctx, opts...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.zoneOps.Close() })
	if e.addresses, err = compute.NewAddressesRESTClient(ctx, opts...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.addresses.Close() })
	if e.regionOps, err = compute.NewRegionOperationsRESTClient(ctx, opts...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.regionOps.Close() })
	return e
}

// insert inserts an instance named name and returns the operation the
// insert answered.
func (e *env) insert(t *testing.T, zone, name, requestID string) *computepb.Operation {
	t.Helper()
	req := &computepb.InsertInstanceRequest{Project: project, Zone: zone, InstanceResource: &computepb.Instance{Name: proto.String(name)}}
	if requestID != "" {
		req.RequestId = proto.String(requestID)
	}
	op, err := e.instances.Insert(context.Background(), req)
	if err != nil {
		t.Fatalf("insert %s/%s: %v", zone, name, err)
	}
	return op.Proto()
}

// delete deletes an instance and returns the operation the delete answered.
func (e *env) delete(t *testing.T, zone, name, requestID string) *computepb.Operation {
	t.Helper()
	req := &computepb.DeleteInstanceRequest{Project: project, Zone: zone, Instance: name}
	if requestID != "" {
		req.RequestId = proto.String(requestID)
	}
	op, err := e.instances.Delete(context.Background(), req)
	if err != nil {
		t.Fatalf("delete %s/%s: %v", zone, name, err)
	}
	return op.Proto()
}

// zoneOp reads an operation back through zoneOperations.get.
func (e *env) zoneOp(t *testing.T, zone, name string) *computepb.Operation {
	t.Helper()
	op, err := e.zoneOps.Get(context.Background(), &computepb.GetZoneOperationRequest{Project: project, Zone: zone, Operation: name})
	if err != nil {
		t.Fatalf("zoneOperations.get %s/%s: %v", zone, name, err)
	}
	return op
}

// code is the HTTP status of a Compute error, 0 for no error, and -1 for
// an error that is no answer of Compute's (a dropped connection), so that
// a test wanting success fails on it.
func code(err error) int {
	var gerr *googleapi.Error
	switch {
	case err == nil:
		return 0
	case errors.As(err, &gerr):
		return gerr.Code
	default:
		return -1
	}
}

// reason is the first errors[].reason of a Compute error.
func reason(err error) string {
	var gerr *googleapi.Error
	if errors.As(err, &gerr) && len(gerr.Errors) > 0 {
		return gerr.Errors[0].Reason
	}
	return ""
}

func link(parts string) string {
	return "https://www.googleapis.com/compute/v1/projects/" + project + "/" + parts
}

// instanceNames lists every instance through the aggregated list, as
// zone/name, sorted.
func (e *env) instanceNames(t *testing.T) []string {
	t.Helper()
	it := e.instances.AggregatedList(context.Background(), &computepb.AggregatedListInstancesRequest{Project: project})
	var out []string
	for {
		pair, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			t.Fatalf("aggregated list: %v", err)
		}
		for _, inst := range pair.Value.GetInstances() {
			out = append(out, strings.TrimPrefix(pair.Key, "zones/")+"/"+inst.GetName())
		}
	}
	sort.Strings(out)
	return out
}
