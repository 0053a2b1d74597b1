package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store/rules"
)

// The warm pools' documents, pools/{pool}, as the admins' API writes them:
// their spec and deletion request. Their status is the pool reconcile's.

func (s *Store) pool(name string) *firestore.DocumentRef {
	return s.client.Collection(proxy.PoolsCollection).Doc(name)
}

// PutPool creates the pool name of spec, or changes an existing pool's
// size (rules.PutPool: its provider and placement stay, and one being
// deleted takes no PUT), in one transaction, and returns the pool as it
// now is and whether the PUT created it. The same PUT again writes
// nothing.
func (s *Store) PutPool(ctx context.Context, name string, spec proxy.PoolSpec, now time.Time) (*proxy.Pool, bool, error) {
	ref := s.pool(name)
	var (
		out     *proxy.Pool
		created bool
		wrote   bool
		commit  firestore.CommitResponse
	)
	err := s.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		metering.Add(ctx, metering.FirestoreRead, 1)
		var existing *proxy.Pool
		snap, err := tx.Get(ref)
		switch {
		case err == nil:
			if existing, err = decodePool(snap); err != nil {
				return err
			}
		case status.Code(err) != codes.NotFound:
			return err
		}
		var fields []rules.Field
		out, fields, created, err = rules.PutPool(name, existing, spec, now)
		switch {
		case err != nil:
			return err
		case created:
			wrote = true
			return tx.Create(ref, out)
		}
		if wrote = len(fields) > 0; wrote {
			return tx.Update(ref, updates(fields))
		}
		return nil
	}, firestore.MaxAttempts(transactionAttempts), firestore.WithCommitResponseTo(&commit))
	if err != nil {
		return nil, false, wrapPool(name, "putting", err)
	}
	if wrote {
		metering.Add(ctx, metering.FirestoreWrite, 1)
		out.UpdateTime = commit.CommitTime()
	}
	return out, created, nil
}

// GetPool reads a pool: an error wrapping proxy.ErrNotFound when there is
// none.
func (s *Store) GetPool(ctx context.Context, name string) (*proxy.Pool, error) {
	snap, err := s.get(ctx, s.pool(name))
	if err != nil {
		return nil, wrapPool(name, "reading", err)
	}
	return decodePool(snap)
}

// ListPools returns up to pageSize pools ordered by name, and the next
// page's token ("" after the last).
func (s *Store) ListPools(ctx context.Context, pageSize int, pageToken string) ([]*proxy.Pool, string, error) {
	after, err := rules.ParsePageToken(pageToken)
	if err != nil {
		return nil, "", err
	}
	q := s.client.Collection(proxy.PoolsCollection).OrderBy(firestore.DocumentID, firestore.Asc).Limit(pageSize + 1)
	if after != "" {
		q = q.StartAfter(after)
	}
	snaps, err := q.Documents(ctx).GetAll()
	if err != nil {
		return nil, "", fmt.Errorf("listing pools: %w", err)
	}
	queried(ctx, len(snaps))
	return page(snaps, pageSize, decodePool, func(p *proxy.Pool) string { return p.Name })
}

// RequestPoolDeletion marks the pool for deletion
// (rules.RequestPoolDeletion), idempotently, on the document as read
// (changeDoc), and returns it as it now is.
func (s *Store) RequestPoolDeletion(ctx context.Context, name string, now time.Time) (*proxy.Pool, error) {
	out, at, err := changeDoc(ctx, s.client, s.pool(name), decodePool, func(p *proxy.Pool) ([]rules.Field, error) {
		return rules.RequestPoolDeletion(p, now), nil
	})
	if err != nil {
		return nil, wrapPool(name, "requesting the deletion of", err)
	}
	if at != nil {
		out.UpdateTime = *at
	}
	return out, nil
}

func decodePool(snap *firestore.DocumentSnapshot) (*proxy.Pool, error) {
	var p proxy.Pool
	if err := snap.DataTo(&p); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", snap.Ref.Path, err)
	}
	p.Name = snap.Ref.ID
	p.UpdateTime = snap.UpdateTime
	return &p, nil
}

// wrapPool names the pool and maps Firestore's codes to the domain errors.
func wrapPool(name, doing string, err error) error {
	var fe proxy.FieldErrors
	switch {
	case errors.As(err, &fe), errors.Is(err, proxy.ErrBeingDeleted), errors.Is(err, proxy.ErrInvalidPageToken):
		return fmt.Errorf("%s %s: %w", doing, proxy.PoolPath(name), err)
	}
	return wrapCode(proxy.PoolPath(name), doing, err)
}

// wrapCode names the document at path and maps Firestore's codes to the
// domain errors: NotFound to proxy.ErrNotFound, a lost precondition or
// race to proxy.ErrConflict.
func wrapCode(path, doing string, err error) error {
	switch status.Code(err) {
	case codes.NotFound:
		return fmt.Errorf("%s %s: %w (%w)", doing, path, proxy.ErrNotFound, err)
	case codes.AlreadyExists, codes.FailedPrecondition, codes.Aborted:
		return fmt.Errorf("%s %s: %w (%w)", doing, path, proxy.ErrConflict, err)
	}
	return fmt.Errorf("%s %s: %w", doing, path, err)
}
