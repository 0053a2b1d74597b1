package dosim

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBench: a lifecycle at the reconciler's floor costs the requests it
// must (the find by the uid's tag and the create, three gets, a delete
// with the get before it, the list of its uid's Droplets and the deletes
// of its two own tags: 10), and leaves no tag of its own behind: the
// account keeps 3 tags (the managed, deployment and port tags) where it
// kept 2 more for each lifecycle. The deployment's firewall costs 3 once
// (its tag, the list, the create), and the listing of 1000 Droplets reads
// 12 pages: 5 of Droplets (200 a page), 6 of the account's 1003 tags
// (1000 listed Droplets' uid tags and the 3), 1 of reserved IPs.
func TestBench(t *testing.T) {
	res, err := Bench{}.Run(context.Background(), 3)
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*Result)
	want := map[string]float64{"droplets.list": 2, "droplets.create": 1, "droplets.get": 4, "droplets.delete": 1, "tags.delete": 2}
	if diff := cmp.Diff(want, r.Requests); diff != "" {
		t.Errorf("requests per lifecycle (-want +got):\n%s", diff)
	}
	wantList := map[string]int{"droplets.list": 5, "tags.list": 6, "reserved_ips.list": 1}
	if diff := cmp.Diff(wantList, r.ListRequests); diff != "" {
		t.Errorf("the listing's requests (-want +got):\n%s", diff)
	}
	type figures struct{ PerHour, Firewall, List, TagsLeft, Tags, Timed int }
	wantFig := figures{PerHour: 500, Firewall: 3, List: 12, TagsLeft: 3, Tags: 1003, Timed: 15}
	got := figures{int(r.LifecyclesPerHour), r.FirewallRequests, r.ListTotal, r.TagsLeft, r.Tags, r.CallMs.N}
	if diff := cmp.Diff(wantFig, got); diff != "" {
		t.Errorf("the phase's figures (-want +got):\n%s", diff)
	}
	var b strings.Builder
	r.Table(&b)
	if !strings.Contains(b.String(), "10.0 API requests each") || !strings.Contains(b.String(), "3 tags left") || !strings.Contains(b.String(), "12 requests") {
		t.Errorf("the table: %s", b.String())
	}
}
