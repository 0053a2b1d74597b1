package hetznersim

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBench: a lifecycle at the reconciler's floor costs the requests it
// must (one create, three gets, a delete and the get before it), and the
// listing of 1000 servers reads them in pages of 50.
func TestBench(t *testing.T) {
	res, err := Bench{}.Run(context.Background(), 3)
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*Result)
	want := map[string]float64{"servers.create": 1, "servers.get": 4, "servers.delete": 1}
	if diff := cmp.Diff(want, r.Requests); diff != "" {
		t.Errorf("requests per lifecycle (-want +got):\n%s", diff)
	}
	if r.LifecyclesPerHour != 600 || r.ListRequests != 21 || r.CallMs.N != 15 {
		t.Errorf("%.0f lifecycles an hour, %d list requests, %d calls timed; want 600, 21 (20 pages of servers, 1 of Primary IPs), 15", r.LifecyclesPerHour, r.ListRequests, r.CallMs.N)
	}
	var b strings.Builder
	r.Table(&b)
	if !strings.Contains(b.String(), "6.0 API requests each") {
		t.Errorf("the table: %s", b.String())
	}
}
