package dosim

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBench: a lifecycle at the reconciler's floor costs the requests it
// must (the find by the uid's tag and the create, three gets, a delete
// and the get before it: 7), the deployment's firewall 3 once (its tag,
// the list, the create), and the listing of 1000 Droplets reads 12 pages:
// 5 of Droplets (200 a page), 6 of the account's 1009 tags (1000 listed
// Droplets' uid tags, the lifecycles' uid and status id tags, the managed,
// deployment and port tags), 1 of reserved IPs.
func TestBench(t *testing.T) {
	res, err := Bench{}.Run(context.Background(), 3)
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*Result)
	want := map[string]float64{"droplets.list": 1, "droplets.create": 1, "droplets.get": 4, "droplets.delete": 1}
	if diff := cmp.Diff(want, r.Requests); diff != "" {
		t.Errorf("requests per lifecycle (-want +got):\n%s", diff)
	}
	wantList := map[string]int{"droplets.list": 5, "tags.list": 6, "reserved_ips.list": 1}
	if diff := cmp.Diff(wantList, r.ListRequests); diff != "" {
		t.Errorf("the listing's requests (-want +got):\n%s", diff)
	}
	if r.LifecyclesPerHour != 714 || r.FirewallRequests != 3 || r.ListTotal != 12 || r.Tags != 1009 || r.CallMs.N != 15 {
		t.Errorf("%.0f lifecycles an hour, %d firewall requests, %d list requests over %d tags, %d calls timed; want 714, 3, 12, 1009, 15",
			r.LifecyclesPerHour, r.FirewallRequests, r.ListTotal, r.Tags, r.CallMs.N)
	}
	var b strings.Builder
	r.Table(&b)
	if !strings.Contains(b.String(), "7.0 API requests each") || !strings.Contains(b.String(), "12 requests") {
		t.Errorf("the table: %s", b.String())
	}
}
