package awssim

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBench: a lifecycle at the reconciler's floor costs the requests it
// must (one launch, three describes, a terminate; the region's zones and
// Debian's image once for all), and the listing of 1000 instances reads
// them in pages of 500 and the Elastic IPs in one.
func TestBench(t *testing.T) {
	res, err := Bench{}.Run(context.Background(), 4)
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*Result)
	want := map[string]float64{"DescribeAvailabilityZones": 0.25, "DescribeImages": 0.25, "RunInstances": 1, "DescribeInstances": 3, "TerminateInstances": 1}
	if diff := cmp.Diff(want, r.Requests); diff != "" {
		t.Errorf("requests per lifecycle (-want +got):\n%s", diff)
	}
	if r.ListRequests != 3 || r.CallMs.N != 20 {
		t.Errorf("%d list requests, %d calls timed; want 3 (2 pages of instances, 1 of Elastic IPs), 20", r.ListRequests, r.CallMs.N)
	}
	var b strings.Builder
	r.Table(&b)
	if !strings.Contains(b.String(), "5.50 API requests each") {
		t.Errorf("the table: %s", b.String())
	}
}
