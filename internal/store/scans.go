package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"

	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/proxy"
)

// The fields LiveUIDs reads of each document, parsed once.
var (
	uidPath          = firestore.FieldPath{"uid"}
	phasePath        = firestore.FieldPath{"status", "phase"}
	providerPath     = firestore.FieldPath{"spec", "provider"}
	providerIDPath   = firestore.FieldPath{"status", "providerID"}
	claimAccountPath = firestore.FieldPath{"status", "account"}
	maxAgePath       = firestore.FieldPath{"spec", "maxAge"}
	rotatePath       = firestore.FieldPath{"rotateRequestTime"}
	bootStartPath    = firestore.FieldPath{"reconciler", "bootStart"}
	rotationWaitPath = firestore.FieldPath{"status", "rotationWaitUntil"}
	claimedByUIDPth  = firestore.FieldPath{"claimedBy", "uid"}
	costMonthPath    = firestore.FieldPath{"status", "cost", "month"}
	costCurrencyPath = firestore.FieldPath{"status", "cost", "currency"}
	costAsOfPath     = firestore.FieldPath{"status", "cost", "asOf"}
	costToDatePath   = firestore.FieldPath{"status", "cost", "monthToDate", "nanos"}
	costForecastPath = firestore.FieldPath{"status", "cost", "forecast", "nanos"}
	costUnknownPath  = firestore.FieldPath{"status", "cost", "unknown"}
	liveFields       = []firestore.FieldPath{uidPath, phasePath, providerPath, providerIDPath, claimAccountPath, maxAgePath, rotatePath, bootStartPath, rotationWaitPath, claimedByUIDPth,
		costMonthPath, costCurrencyPath, costAsOfPath, costToDatePath, costForecastPath, costUnknownPath}
)

// LiveUIDs reads, by uid, the key, phase, provider, rotation and cost fields of every
// proxy document of every namespace, with a collection-group query that
// selects only those fields: memory grows with the number of documents,
// never with their size. What it keeps of a document is its own: the
// names of its key copied out of the document's path, and the phase,
// provider and namespace shared with every other document that has the
// same, so that the snapshots it read are garbage at once (the collector
// holds the claims of a whole fleet).
func (s *Store) LiveUIDs(ctx context.Context) (map[string]proxy.Claim, error) {
	it := s.client.CollectionGroup(ProxiesCollection).SelectPaths(liveFields...).Documents(ctx)
	defer it.Stop()
	uids := map[string]proxy.Claim{}
	var shared interner
	for n := 0; ; n++ {
		snap, err := it.Next()
		if errors.Is(err, iterator.Done) {
			queried(ctx, n)
			return uids, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the uids of every proxy: %w", err)
		}
		v, err := snap.DataAtPath(uidPath)
		if err != nil {
			return nil, fmt.Errorf("%s has no uid: %w", snap.Ref.Path, err)
		}
		uid, _ := v.(string)
		k := keyOf(snap.Ref)
		claim := proxy.Claim{Key: proxy.Key{Namespace: shared.of(k.Namespace), Pool: shared.of(k.Pool), Name: strings.Clone(k.Name)}}
		claim.Phase = proxy.Phase(shared.of(stringAt(snap, phasePath)))
		claim.Provider = shared.of(stringAt(snap, providerPath))
		claim.ProviderID = stringAt(snap, providerIDPath)
		claim.Account = shared.of(stringAt(snap, claimAccountPath))
		claim.MaxAge = shared.of(stringAt(snap, maxAgePath))
		if v, err := snap.DataAtPath(rotatePath); err == nil {
			if t, ok := v.(time.Time); ok {
				claim.RotateRequestTime = &t
			}
		}
		if v, err := snap.DataAtPath(bootStartPath); err == nil {
			claim.BootStart, _ = v.(time.Time)
		}
		if v, err := snap.DataAtPath(rotationWaitPath); err == nil {
			if t, ok := v.(time.Time); ok {
				claim.RotationWaitUntil = &t
			}
		}
		if _, err := snap.DataAtPath(claimedByUIDPth); err == nil {
			claim.Claimed = true
		}
		claim.Cost = costAt(snap, &shared)
		uids[uid] = claim
	}
}

// costAt is the part of a snapshot's status.cost a claim holds, or nil
// where it has none.
func costAt(snap *firestore.DocumentSnapshot, shared *interner) *proxy.ClaimCost {
	month := stringAt(snap, costMonthPath)
	if month == "" {
		return nil
	}
	c := &proxy.ClaimCost{Month: shared.of(month), Currency: shared.of(stringAt(snap, costCurrencyPath)),
		MonthToDate: int64At(snap, costToDatePath), Forecast: int64At(snap, costForecastPath), Unknown: stringAt(snap, costUnknownPath) != ""}
	if v, err := snap.DataAtPath(costAsOfPath); err == nil {
		c.AsOf, _ = v.(time.Time)
	}
	return c
}

// int64At is the integer at path of the snapshot, or 0.
func int64At(snap *firestore.DocumentSnapshot, path firestore.FieldPath) int64 {
	v, err := snap.DataAtPath(path)
	if err != nil {
		return 0
	}
	n, _ := v.(int64)
	return n
}

// stringAt is the string at path of the snapshot, or "".
func stringAt(snap *firestore.DocumentSnapshot, path firestore.FieldPath) string {
	v, err := snap.DataAtPath(path)
	if err != nil {
		return ""
	}
	str, _ := v.(string)
	return str
}

// interner hands out one copy of each string it is given: the phases,
// providers and namespaces that many documents share.
type interner map[string]string

func (in *interner) of(s string) string {
	if s == "" {
		return ""
	}
	if *in == nil {
		*in = map[string]string{}
	}
	if v, ok := (*in)[s]; ok {
		return v
	}
	s = strings.Clone(s)
	(*in)[s] = s
	return s
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
