package awssim

import (
	"context"
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/sim"
)

// TestARetriedLaunchMeetsNoRefusal: a launch whose answer was lost (a
// crash after RunInstances) is retried with its ClientToken, and EC2
// answers it with the instance it made, not with an account limit armed
// since, which waits for a launch of its own. Before, the armed
// InstanceLimitExceeded answered the retry, the reconciler ended the
// attempt on the quota, and the next attempt's new token made a second
// instance while the first, of a live uid, was never collected (make
// sim's seeds 233, 1867, 5888, 7148, 7872, 8920 and 9469 once
// DigitalOcean joined the clouds).
func TestARetriedLaunchMeetsNoRefusal(t *testing.T) {
	at := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	a := New(sim.Env{Seed: 1, Now: func() time.Time { return at }}).(*Cloud)
	ctx := context.Background()
	uid := "0badcafe-0000-4000-b000-000000000001"
	req := provider.CreateRequest{Name: provider.NameFromUID(uid), UID: uid, Namespace: "sim", ProxyName: "p",
		Placement: provider.Placement{Region: region}, StartupScript: "#!/bin/sh\n", Port: 3128, RequestID: "attempt-1"}
	first, err := a.prov.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []string{"InstanceLimitExceeded", "VcpuLimitExceeded"} {
		a.fake.Fail("RunInstances", code, 1)
		if again, err := a.prov.Create(ctx, req); err != nil || again != first {
			t.Errorf("the retry of a launch made, with %s armed: %q, %v; want %s", code, again, err, first)
		}
		other := req
		other.RequestID = "attempt-2-" + code
		if _, err := a.prov.Create(ctx, other); provider.KindOf(err) != provider.KindQuota {
			t.Errorf("a new launch with %s armed: %v, want quota", code, err)
		}
	}
}
