package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/emulators/emulatortest"
	"github.com/egress-proxies/egress/internal/metering"
)

// TestCallHomeBucket: a VM's bucket gives burst tokens, then one per
// interval; a refused take costs one read and writes nothing.
func TestCallHomeBucket(t *testing.T) {
	emulatortest.Firestore(t)
	s, _ := sealedStore(t)
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	take := func(vm string, at time.Time) (bool, metering.Usage) {
		t.Helper()
		ctx, inv := metering.Start(context.Background(), "Test")
		ok, err := s.TakeCallHome(ctx, vm, at, 3, 20*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return ok, inv.Usage()
	}
	for i := range 3 {
		if ok, u := take("proxy-a", now); !ok || u != (metering.Usage{FirestoreReads: 1, FirestoreWrites: 1}) {
			t.Errorf("take %d: %v, usage %+v; want a token for one read and one write", i+1, ok, u)
		}
	}
	ok, u := take("proxy-a", now)
	if diff := cmp.Diff(metering.Usage{FirestoreReads: 1}, u); ok || diff != "" {
		t.Errorf("the fourth take: %v; usage (-want +got):\n%s", ok, diff)
	}
	if ok, _ := take("proxy-b", now); !ok {
		t.Error("another VM's bucket is empty")
	}
	if ok, _ := take("proxy-a", now.Add(20*time.Second)); !ok {
		t.Error("no token an interval later")
	}
	if ok, _ := take("proxy-a", now.Add(20*time.Second)); ok {
		t.Error("two tokens an interval later")
	}
}
