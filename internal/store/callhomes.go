package store

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/egress-proxies/egress/internal/metering"
)

// CallHomesCollection holds one token bucket per proxy VM, by the VM's
// name as its identity token proves it (internal/callhome). No trigger
// watches it: taking a token starts no reconcile.
const CallHomesCollection = "callhomes"

// CallHomeExpiryField is the bucket's field that Firestore's TTL policy
// on CallHomesCollection reads (deploy/terraform/main.tf): a bucket is
// deleted once CallHomeBucketTTL passed without a token taken, so the
// buckets of VMs gone do not stay, one document per VM ever made.
const CallHomeExpiryField = "expireAt"

// CallHomeBucketTTL is how long a bucket stays after its last take. Far
// longer than a bucket takes to refill (burst × interval, minutes), so
// one that expired was full, and the new bucket a later call-home makes
// is the same: the deletion never changes an answer.
const CallHomeBucketTTL = 24 * time.Hour

type bucket struct {
	Tokens float64   `firestore:"tokens"`
	At     time.Time `firestore:"at"`
	// ExpireAt is At plus CallHomeBucketTTL (CallHomeExpiryField).
	ExpireAt time.Time `firestore:"expireAt"`
}

// TakeCallHome takes one token from VM vm's bucket, refilled at one per
// interval up to burst: false, and no write, when the bucket is empty. A
// refused message costs the one read.
//
// It reads, then writes conditioned on what it read (a create where there
// was no bucket, an update on the update time read), and reads again when
// another take came between: two requests to Firestore where a
// transaction needs three (begin, read, commit), on the path of every
// VM's first call-home to Ready, where the Pub/Sub push that brings the
// call-homes waits for each run before the next.
func (s *Store) TakeCallHome(ctx context.Context, vm string, now time.Time, burst int, interval time.Duration) (bool, error) {
	ref := s.client.Collection(CallHomesCollection).Doc(vm)
	for range transactionAttempts {
		metering.Add(ctx, metering.FirestoreRead, 1)
		b := bucket{Tokens: float64(burst), At: now}
		snap, err := ref.Get(ctx)
		exists := err == nil
		switch {
		case exists:
			if err := snap.DataTo(&b); err != nil {
				return false, fmt.Errorf("decoding %s: %w", ref.Path, err)
			}
			if elapsed := now.Sub(b.At); elapsed > 0 {
				b.Tokens = min(float64(burst), b.Tokens+elapsed.Seconds()/interval.Seconds())
			}
		case status.Code(err) != codes.NotFound:
			return false, wrapPath(ref.Path, "reading the call-home bucket", err)
		}
		if b.Tokens < 1 {
			return false, nil
		}
		next := bucket{Tokens: b.Tokens - 1, At: now, ExpireAt: now.Add(CallHomeBucketTTL)}
		if exists {
			_, err = ref.Update(ctx, []firestore.Update{{Path: "tokens", Value: next.Tokens}, {Path: "at", Value: next.At},
				{Path: CallHomeExpiryField, Value: next.ExpireAt}},
				firestore.LastUpdateTime(snap.UpdateTime))
		} else {
			_, err = ref.Create(ctx, next)
		}
		switch status.Code(err) {
		case codes.OK:
			metering.Add(ctx, metering.FirestoreWrite, 1)
			return true, nil
		case codes.FailedPrecondition, codes.AlreadyExists, codes.NotFound:
			continue // another take came between, or the bucket went: read again
		default:
			return false, wrapPath(ref.Path, "taking a call-home token of", err)
		}
	}
	return false, fmt.Errorf("taking a call-home token of %s: still contended after %d attempts", ref.Path, transactionAttempts)
}
