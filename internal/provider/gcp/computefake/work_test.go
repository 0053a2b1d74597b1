package computefake_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/egress-proxies/egress/internal/provider/gcp/computefake"
	"github.com/egress-proxies/egress/internal/worktest"
)

// TestWorkIsBoundedByWhatACallTouches holds a fleet of 100,000 running
// instances and, beside it, inserts and deletes instances over the REST
// API one at a time (one in five on a reserved static address), settling
// after each call, then lists the fleet through the aggregated list. It
// bounds the resources the fake looked at (Visits): an insert, a delete
// and a Settle look at what they touch and what is in progress, never the
// fleet; a list at what it lists. A call that walks the whole fleet
// (Settle looking at every instance for the booting ones, a natIP found
// by walking every address) fails here at once: the bound is checked after
// every call.
func TestWorkIsBoundedByWhatACallTouches(t *testing.T) {
	const (
		fleet   = 100_000
		cycles  = 500
		zone    = "us-central1-a"
		region  = "us-central1"
		managed = "egress-managed"
	)
	fake := computefake.New()
	t.Cleanup(fake.Close)
	fake.SetClock(func() time.Time { return t0 })
	for i := range fleet {
		fake.Put(zone, &computepb.Instance{Name: proto.String(fmt.Sprintf("fleet-%06d", i)), Status: proto.String("RUNNING"),
			Labels: map[string]string{managed: "true"}})
	}
	check := worktest.NewBudget(t, fake.Visits, 0).Spend
	call := func(method, path, body string) {
		t.Helper()
		req, err := http.NewRequest(method, fake.URL+"/compute/v1/projects/"+project+"/"+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if raw, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %s %s", method, path, resp.Status, raw)
		}
	}
	for i := range cycles / 5 {
		call(http.MethodPost, "regions/"+region+"/addresses", fmt.Sprintf(`{"name":"address-%d"}`, i))
		fake.Settle()
		// Settle finishes the insert's operation.
		check("reserve an address, and settle", 1)
	}
	for i := range cycles {
		nat := ""
		if i%5 == 0 {
			// The addresses are 203.0.113.1 on, in order.
			nat = fmt.Sprintf(`,"networkInterfaces":[{"accessConfigs":[{"natIP":"203.0.113.%d"}]}]`, i/5+1)
		}
		call(http.MethodPost, "zones/"+zone+"/instances", fmt.Sprintf(`{"name":"vm-%d","labels":{%q:"true"}%s}`, i, managed, nat))
		check("insert", 0)
		fake.Settle()
		// The insert's operation, and the booting instance.
		check("settle the insert", 2)
		call(http.MethodDelete, "zones/"+zone+"/instances/"+fmt.Sprintf("vm-%d", i), "")
		check("delete", 0)
		fake.Settle()
		// The delete's operation, and the instance going.
		check("settle the delete", 2)
	}
	call(http.MethodGet, "aggregated/instances?filter="+"labels."+managed+"%3Dtrue", "")
	check("list the fleet", fleet)
}

// TestEveryWalkIsCounted holds Visits honest: every loop over the stored
// instances, addresses and operations, and over what is in progress,
// counts what it looks at.
func TestEveryWalkIsCounted(t *testing.T) {
	worktest.WalksCounted(t, ".", "visits", "instances", "addresses", "operations", "deleting", "booting", "running", "deletingAddresses")
}
