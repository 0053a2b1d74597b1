package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"

	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/proxy"
)

// LiveUIDs reads, by uid, the key, phase, provider and rotation fields of every
// proxy document of every namespace, with a collection-group query that
// selects only those fields: memory grows with the number of documents,
// never with their size.
func (s *Store) LiveUIDs(ctx context.Context) (map[string]proxy.Claim, error) {
	it := s.client.CollectionGroup(ProxiesCollection).Select("uid", "status.phase", "spec.provider", "status.providerID", "spec.maxAge", "rotateRequestTime", "reconciler.bootStart", "status.rotationWaitUntil", "claimedBy.uid").Documents(ctx)
	defer it.Stop()
	uids := map[string]proxy.Claim{}
	for n := 0; ; n++ {
		snap, err := it.Next()
		if errors.Is(err, iterator.Done) {
			queried(ctx, n)
			return uids, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the uids of every proxy: %w", err)
		}
		v, err := snap.DataAt("uid")
		if err != nil {
			return nil, fmt.Errorf("%s has no uid: %w", snap.Ref.Path, err)
		}
		uid, _ := v.(string)
		claim := proxy.Claim{Key: keyOf(snap.Ref)}
		if ph, err := snap.DataAt("status.phase"); err == nil {
			p, _ := ph.(string)
			claim.Phase = proxy.Phase(p)
		}
		if v, err := snap.DataAt("spec.provider"); err == nil {
			claim.Provider, _ = v.(string)
		}
		if v, err := snap.DataAt("status.providerID"); err == nil {
			claim.ProviderID, _ = v.(string)
		}
		if v, err := snap.DataAt("spec.maxAge"); err == nil {
			claim.MaxAge, _ = v.(string)
		}
		if v, err := snap.DataAt("rotateRequestTime"); err == nil {
			if t, ok := v.(time.Time); ok {
				claim.RotateRequestTime = &t
			}
		}
		if v, err := snap.DataAt("reconciler.bootStart"); err == nil {
			claim.BootStart, _ = v.(time.Time)
		}
		if v, err := snap.DataAt("status.rotationWaitUntil"); err == nil {
			if t, ok := v.(time.Time); ok {
				claim.RotationWaitUntil = &t
			}
		}
		if _, err := snap.DataAt("claimedBy.uid"); err == nil {
			claim.Claimed = true
		}
		uids[uid] = claim
	}
}

// keyOf is the key of a proxy document reference: a namespace's proxy, or
// a pool's member (pools/{pool}/proxies/{name}).
func keyOf(ref *firestore.DocumentRef) proxy.Key {
	k := proxy.Key{Name: ref.ID}
	if parent := ref.Parent.Parent; parent != nil {
		if parent.Parent != nil && parent.Parent.ID == proxy.PoolsCollection {
			k.Pool = parent.ID
		} else {
			k.Namespace = parent.ID
		}
	}
	return k
}

// Stalled returns up to limit documents whose progress time is before
// `before`, oldest first. Settled documents carry no progress time, so only
// documents on their way somewhere are read, and only their names.
func (s *Store) Stalled(ctx context.Context, before time.Time, limit int) ([]proxy.Key, error) {
	snaps, err := s.client.CollectionGroup(ProxiesCollection).
		Where(ProgressTimeField, "<", before).
		OrderBy(ProgressTimeField, firestore.Asc).
		Limit(limit).Select().Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("reading the stalled proxies: %w", err)
	}
	queried(ctx, len(snaps))
	keys := make([]proxy.Key, 0, len(snaps))
	for _, snap := range snaps {
		keys = append(keys, keyOf(snap.Ref))
	}
	return keys, nil
}

// queried counts the reads of a query that returned n documents: one each,
// and one for a query that returned none.
func queried(ctx context.Context, n int) {
	metering.Add(ctx, metering.FirestoreRead, int64(max(n, 1)))
}
