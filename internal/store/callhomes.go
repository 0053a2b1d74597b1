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

type bucket struct {
	Tokens float64   `firestore:"tokens"`
	At     time.Time `firestore:"at"`
}

// TakeCallHome takes one token from VM vm's bucket, refilled at one per
// interval up to burst, in a transaction: false, and no write, when the
// bucket is empty. A refused message costs the one read.
func (s *Store) TakeCallHome(ctx context.Context, vm string, now time.Time, burst int, interval time.Duration) (bool, error) {
	ref := s.client.Collection(CallHomesCollection).Doc(vm)
	took := false
	err := s.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		took = false
		metering.Add(ctx, metering.FirestoreRead, 1)
		b := bucket{Tokens: float64(burst), At: now}
		snap, err := tx.Get(ref)
		switch {
		case err == nil:
			if err := snap.DataTo(&b); err != nil {
				return fmt.Errorf("decoding %s: %w", ref.Path, err)
			}
			if elapsed := now.Sub(b.At); elapsed > 0 {
				b.Tokens = min(float64(burst), b.Tokens+elapsed.Seconds()/interval.Seconds())
			}
		case status.Code(err) != codes.NotFound:
			return err
		}
		if b.Tokens < 1 {
			return nil
		}
		took = true
		return tx.Set(ref, bucket{Tokens: b.Tokens - 1, At: now})
	}, firestore.MaxAttempts(transactionAttempts))
	if err != nil {
		return false, wrapPath(ref.Path, "taking a call-home token of", err)
	}
	if took {
		metering.Add(ctx, metering.FirestoreWrite, 1)
	}
	return took, nil
}
