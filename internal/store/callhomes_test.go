package store_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/emulators/emulatortest"
	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/store"
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

// TestCallHomeBucketExpires: a take sets the bucket's expiry, which
// Firestore's TTL policy reads, a day after it, whether it made the
// bucket or found it; a refused take leaves it.
func TestCallHomeBucketExpires(t *testing.T) {
	emulatortest.Firestore(t)
	s, client := sealedStore(t)
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	expiry := func() time.Time {
		t.Helper()
		snap, err := client.Collection(store.CallHomesCollection).Doc("proxy-expiring").Get(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		v, err := snap.DataAt(store.CallHomeExpiryField)
		if err != nil {
			t.Fatal(err)
		}
		at, _ := v.(time.Time)
		return at.UTC()
	}
	for i, at := range []time.Time{now, now.Add(time.Hour)} { // makes it, then finds it
		if ok, err := s.TakeCallHome(context.Background(), "proxy-expiring", at, 1, time.Minute); err != nil || !ok {
			t.Fatalf("take %d: %v, %v; want a token", i+1, ok, err)
		}
		if got, want := expiry(), at.Add(store.CallHomeBucketTTL); !got.Equal(want) {
			t.Errorf("after take %d the bucket expires at %v, want %v", i+1, got, want)
		}
	}
	if ok, err := s.TakeCallHome(context.Background(), "proxy-expiring", now.Add(time.Hour), 1, time.Minute); err != nil || ok {
		t.Fatalf("a take from the empty bucket: %v, %v; want none", ok, err)
	}
	if got, want := expiry(), now.Add(time.Hour+store.CallHomeBucketTTL); !got.Equal(want) {
		t.Errorf("after a refused take the bucket expires at %v, want %v as before", got, want)
	}
}

// TestCallHomeBucketContended: takes at once from one bucket give out
// exactly its tokens, whether they make the bucket or find it.
func TestCallHomeBucketContended(t *testing.T) {
	emulatortest.Firestore(t)
	s, _ := sealedStore(t)
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		reason string
		before int // takes before the contended ones
		want   int
	}{
		"NoBucketYet": {"the first takes race to make the bucket: one creates it, the others read it again", 0, 3},
		"BucketFound": {"the takes race on the update time of a bucket with two tokens left", 1, 2},
	} {
		t.Run(name, func(t *testing.T) {
			vm := "proxy-contended-" + strings.ToLower(name)
			for range tc.before {
				if ok, err := s.TakeCallHome(context.Background(), vm, now, 3, time.Hour); !ok || err != nil {
					t.Fatalf("a take before: %v, %v", ok, err)
				}
			}
			var mu sync.Mutex
			var wg sync.WaitGroup
			took := 0
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ok, err := s.TakeCallHome(context.Background(), vm, now, 3, time.Hour)
					if err != nil {
						t.Error(err)
					}
					if ok {
						mu.Lock()
						took++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if took != tc.want {
				t.Errorf("%s: 8 takes at once got %d tokens, want %d", tc.reason, took, tc.want)
			}
		})
	}
}
