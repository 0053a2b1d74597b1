package store

import (
	"context"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/proxy"
)

// GetPool and PutPool, until the API's (internal/store/pools.go) replace
// them: the pool reconcile's tests need pools now.

// GetPool reads one pool document; a missing one is proxy.ErrNotFound.
func (s *Store) GetPool(ctx context.Context, name string) (*proxy.Pool, error) {
	snap, err := s.get(ctx, s.pool(name))
	if err != nil {
		return nil, wrapPool(name, "reading", err)
	}
	return decodePool(snap)
}

// PutPool creates the pool, or changes the spec of an existing one
// (generation + 1 when it changed), and returns it as written.
func (s *Store) PutPool(ctx context.Context, p *proxy.Pool) (*proxy.Pool, error) {
	ref := s.pool(p.Name)
	var out *proxy.Pool
	var commit firestore.CommitResponse
	err := s.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		metering.Add(ctx, metering.FirestoreRead, 1)
		snap, err := tx.Get(ref)
		switch {
		case status.Code(err) == codes.NotFound:
			c := *p
			c.Generation = 1
			out = &c
			return tx.Create(ref, out)
		case err != nil:
			return err
		}
		if out, err = decodePool(snap); err != nil {
			return err
		}
		if out.Spec != p.Spec {
			out.Spec = p.Spec
			out.Generation++
		}
		return tx.Set(ref, out)
	}, firestore.MaxAttempts(transactionAttempts), firestore.WithCommitResponseTo(&commit))
	if err != nil {
		return nil, wrapPool(p.Name, "writing", err)
	}
	metering.Add(ctx, metering.FirestoreWrite, 1)
	out.UpdateTime = commit.CommitTime()
	return out, nil
}
