package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/proxy"
)

// TestAPIShowsNoBookkeeping: the reconciler's bookkeeping (its lease, the
// create in flight, the boot counters, the retiring VM, the sealed
// password) and the sealed console tail are the document's, never the
// API's: an owner's get and list hold none of their names or values.
func TestAPIShowsNoBookkeeping(t *testing.T) {
	e := memEnv(t)
	p := e.seed()
	now := time.Now().UTC()
	p.Reconciler = proxy.Bookkeeping{LeaseHolder: "lease-holder-x", LeaseExpireTime: now, CreatePending: "pending-x", CreateRequestID: "request-x",
		NotBefore: now, FullZones: []string{"zone-x"}, AddressID: "address-x", Replacements: 1, Attempts: 2, BootStart: now, BootFailures: 1,
		NotFoundSince: now, Credentials: proxy.Credentials{Username: "user-x", Sealed: "sealed-x"}, SentGeneration: 1, ReconfigureStart: now,
		Retiring: "retiring-x", RetiringGeneration: 1, ProgressTime: now, TrafficStop: &proxy.TrafficStop{Month: "2026-12", Reason: "stop-reason-x"}}
	p.Status.SealedConsoleTail = "sealed-tail-x"
	if _, err := e.store.UpdateStatus(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/namespaces/team-a/proxies/p", "/v1/namespaces/team-a/proxies"} {
		_, b := e.do(owner, "GET", path, "")
		for _, word := range []string{"reconciler", "lease", "pending-x", "request-x", "zone-x", "address-x", "bootFailures", "retiring", "sealed", "stop-reason-x"} {
			if strings.Contains(strings.ToLower(string(b)), strings.ToLower(word)) {
				t.Errorf("GET %s shows %q of the bookkeeping:\n%s", path, word, b)
			}
		}
	}
}
