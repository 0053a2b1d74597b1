// Package store keeps proxy documents in Firestore at
// namespaces/{namespace}/proxies/{name}.
//
// Every write that must not be lost or applied over a newer document carries
// an update-time precondition or runs in a transaction, and Firestore's codes
// come back as the domain errors of package proxy (ErrNotFound,
// ErrAlreadyExists, ErrConflict, ErrQuotaExceeded), wrapped with the
// document's path.
//
// The per-namespace quota is a counter, field proxyCount of the document
// namespaces/{namespace}, changed in the same transaction as the create or
// delete it counts. Two concurrent creates both read the counter, so
// Firestore serialises them and the second sees the first; counting the
// collection in the transaction instead would read every document of the
// namespace on every create.
//
// Every method counts the documents it reads and writes, as Firestore bills
// them, in the invocation's usage (package metering).
package store

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/proxy"
)

// Collection and field names, shared with deploy/terraform's indexes.
const (
	NamespacesCollection = "namespaces"
	ProxiesCollection    = "proxies"
	countField           = "proxyCount"
	// ProgressTimeField is what Stalled filters and orders on; production
	// needs a collection-group index on it.
	ProgressTimeField = "reconciler.progressTime"
)

// Store is the Firestore store of proxy documents. It is safe for
// concurrent use.
type Store struct {
	client *firestore.Client
	// counters queues the transactions on one namespace's counter.
	counters keyedLock
}

// New returns a Store over client.
func New(client *firestore.Client) *Store { return &Store{client: client} }

func (s *Store) ref(key proxy.Key) *firestore.DocumentRef {
	return s.client.Collection(NamespacesCollection).Doc(key.Namespace).Collection(ProxiesCollection).Doc(key.Name)
}

func (s *Store) counter(namespace string) *firestore.DocumentRef {
	return s.client.Collection(NamespacesCollection).Doc(namespace)
}

// transactionAttempts is how often a contended transaction is tried: the
// quota counter makes every create of a namespace contend.
const transactionAttempts = 30

// Create writes a new document and counts it against the namespace's
// quota, in one transaction, and returns it as written, with the commit's
// time as its update time. When the name is taken it returns the existing
// document with ErrAlreadyExists, so the API can tell a repeated request
// from a conflicting one.
//
// Neither Create nor RequestDeletion reads the document back: the
// reconciler acts on the write's event at once, and a read-back could find
// the document already changed, or, with a provider that deletes at once,
// already gone.
func (s *Store) Create(ctx context.Context, p *proxy.Proxy, quota int) (*proxy.Proxy, error) {
	key := p.Key()
	ref, counter := s.ref(key), s.counter(key.Namespace)
	release, err := s.counters.acquire(ctx, key.Namespace)
	if err != nil {
		return nil, wrap(key, "creating", err)
	}
	defer release()
	var (
		existing *proxy.Proxy
		commit   firestore.CommitResponse
	)
	err = s.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		existing = nil
		// The counter first: every create of the namespace contends on it,
		// and taking it before anything else keeps the lock order the same
		// in every transaction.
		count := int64(0)
		metering.Add(ctx, metering.FirestoreRead, 2)
		csnap, err := tx.Get(counter)
		switch {
		case err == nil:
			if v, err := csnap.DataAt(countField); err == nil {
				count, _ = v.(int64)
			}
		case status.Code(err) != codes.NotFound:
			return err
		}
		snap, err := tx.Get(ref)
		switch {
		case err == nil:
			existing, err = decode(snap)
			if err != nil {
				return err
			}
			return proxy.ErrAlreadyExists
		case status.Code(err) != codes.NotFound:
			return err
		}
		if count >= int64(quota) {
			return fmt.Errorf("namespace %q holds %d proxies, its quota is %d: %w", key.Namespace, count, quota, proxy.ErrQuotaExceeded)
		}
		if err := tx.Create(ref, p); err != nil {
			return err
		}
		return tx.Set(counter, map[string]any{countField: count + 1}, firestore.MergeAll)
	}, firestore.MaxAttempts(transactionAttempts), firestore.WithCommitResponseTo(&commit))
	if err != nil {
		return existing, wrap(key, "creating", err)
	}
	metering.Add(ctx, metering.FirestoreWrite, 2)
	created := *p
	created.UpdateTime = commit.CommitTime()
	return &created, nil
}

// Get reads one document.
func (s *Store) Get(ctx context.Context, key proxy.Key) (*proxy.Proxy, error) {
	snap, err := s.ref(key).Get(ctx)
	if err == nil || status.Code(err) == codes.NotFound {
		metering.Add(ctx, metering.FirestoreRead, 1)
	}
	if err != nil {
		return nil, wrap(key, "reading", err)
	}
	return decode(snap)
}

// List returns up to pageSize documents of a namespace, ordered by name,
// and the token of the next page ("" after the last).
func (s *Store) List(ctx context.Context, namespace string, pageSize int, pageToken string) ([]*proxy.Proxy, string, error) {
	q := s.client.Collection(NamespacesCollection).Doc(namespace).Collection(ProxiesCollection).
		OrderBy("name", firestore.Asc).Limit(pageSize + 1)
	if pageToken != "" {
		after, err := base64.RawURLEncoding.DecodeString(pageToken)
		if err != nil || !proxy.IsLabel(string(after)) {
			return nil, "", fmt.Errorf("page token %q was not returned by a list: %w", pageToken, proxy.ErrInvalidPageToken)
		}
		q = q.StartAfter(string(after))
	}
	snaps, err := q.Documents(ctx).GetAll()
	if err != nil {
		return nil, "", fmt.Errorf("listing the proxies of namespace %q: %w", namespace, err)
	}
	queried(ctx, len(snaps))
	out := make([]*proxy.Proxy, 0, min(len(snaps), pageSize))
	for _, snap := range snaps[:min(len(snaps), pageSize)] {
		p, err := decode(snap)
		if err != nil {
			return nil, "", err
		}
		out = append(out, p)
	}
	next := ""
	if len(snaps) > pageSize {
		next = base64.RawURLEncoding.EncodeToString([]byte(out[len(out)-1].Name))
	}
	return out, next, nil
}

// RequestDeletion marks the document for deletion: deleteRequestTime (kept
// from the first request), phase Deleting, and a progress time for the
// sweep. It is idempotent and returns the document as it now is.
func (s *Store) RequestDeletion(ctx context.Context, key proxy.Key, now time.Time) (*proxy.Proxy, error) {
	ref := s.ref(key)
	var (
		out    *proxy.Proxy
		wrote  bool
		commit firestore.CommitResponse
	)
	err := s.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		metering.Add(ctx, metering.FirestoreRead, 1)
		snap, err := tx.Get(ref)
		if err != nil {
			return err
		}
		if out, err = decode(snap); err != nil {
			return err
		}
		if wrote = out.DeleteRequestTime == nil; !wrote {
			return nil
		}
		return tx.Update(ref, requestDeletion(out, now))
	}, firestore.MaxAttempts(transactionAttempts), firestore.WithCommitResponseTo(&commit))
	if err != nil {
		return nil, wrap(key, "requesting the deletion of", err)
	}
	if wrote {
		metering.Add(ctx, metering.FirestoreWrite, 1)
		out.UpdateTime = commit.CommitTime()
	}
	return out, nil
}

// requestDeletion marks p for deletion at now and returns the updates that
// make the stored document say the same, so the two cannot drift apart.
func requestDeletion(p *proxy.Proxy, now time.Time) []firestore.Update {
	p.DeleteRequestTime = &now
	p.Status.Phase = proxy.PhaseDeleting
	p.Reconciler.ProgressTime = now
	return []firestore.Update{
		{Path: "deleteRequestTime", Value: now},
		{Path: "status.phase", Value: string(proxy.PhaseDeleting)},
		{Path: ProgressTimeField, Value: now},
	}
}

// UpdateStatus replaces the status and the reconciler's bookkeeping if the
// document's update time is still p.UpdateTime, and returns the new update
// time. ErrConflict means the document changed since it was read.
func (s *Store) UpdateStatus(ctx context.Context, p *proxy.Proxy) (time.Time, error) {
	wr, err := s.ref(p.Key()).Update(ctx, []firestore.Update{
		{Path: "status", Value: p.Status},
		{Path: "reconciler", Value: p.Reconciler},
	}, firestore.LastUpdateTime(p.UpdateTime))
	if err != nil {
		return time.Time{}, wrap(p.Key(), "updating the status of", err)
	}
	metering.Add(ctx, metering.FirestoreWrite, 1)
	return wr.UpdateTime, nil
}

// Delete removes the document if its update time is still updateTime, and
// uncounts it from the namespace's quota in the same transaction.
func (s *Store) Delete(ctx context.Context, key proxy.Key, updateTime time.Time) error {
	ref := s.ref(key)
	release, err := s.counters.acquire(ctx, key.Namespace)
	if err != nil {
		return wrap(key, "deleting", err)
	}
	defer release()
	err = s.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		metering.Add(ctx, metering.FirestoreRead, 1)
		snap, err := tx.Get(ref)
		if err != nil {
			return err
		}
		if !snap.UpdateTime.Equal(updateTime) {
			return proxy.ErrConflict
		}
		if err := tx.Delete(ref, firestore.LastUpdateTime(updateTime)); err != nil {
			return err
		}
		return tx.Update(s.counter(key.Namespace), []firestore.Update{{Path: countField, Value: firestore.Increment(-1)}})
	}, firestore.MaxAttempts(transactionAttempts))
	if err == nil {
		metering.Add(ctx, metering.FirestoreWrite, 2)
	}
	return wrap(key, "deleting", err)
}

// LiveUIDs reads, by uid, the key, phase, maxAge and boot start of every
// proxy document of every namespace, with a collection-group query that
// selects only those fields: memory grows with the number of documents,
// never with their size.
func (s *Store) LiveUIDs(ctx context.Context) (map[string]proxy.Claim, error) {
	it := s.client.CollectionGroup(ProxiesCollection).Select("uid", "status.phase", "spec.maxAge", "reconciler.bootStart").Documents(ctx)
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
		if v, err := snap.DataAt("spec.maxAge"); err == nil {
			claim.MaxAge, _ = v.(string)
		}
		if v, err := snap.DataAt("reconciler.bootStart"); err == nil {
			claim.BootStart, _ = v.(time.Time)
		}
		uids[uid] = claim
	}
}

// keyOf is the key of a proxy document reference.
func keyOf(ref *firestore.DocumentRef) proxy.Key {
	k := proxy.Key{Name: ref.ID}
	if ns := ref.Parent.Parent; ns != nil {
		k.Namespace = ns.ID
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

func decode(snap *firestore.DocumentSnapshot) (*proxy.Proxy, error) {
	var p proxy.Proxy
	if err := snap.DataTo(&p); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", snap.Ref.Path, err)
	}
	p.UpdateTime = snap.UpdateTime
	return &p, nil
}

// wrap names the document and maps Firestore's codes to the domain errors.
func wrap(key proxy.Key, doing string, err error) error {
	if err == nil {
		return nil
	}
	var domain error
	switch {
	case errors.Is(err, proxy.ErrAlreadyExists), errors.Is(err, proxy.ErrConflict),
		errors.Is(err, proxy.ErrQuotaExceeded), errors.Is(err, proxy.ErrNotFound):
		return fmt.Errorf("%s %s: %w", doing, key, err)
	}
	switch status.Code(err) {
	case codes.NotFound:
		domain = proxy.ErrNotFound
	case codes.AlreadyExists:
		domain = proxy.ErrAlreadyExists
	case codes.FailedPrecondition, codes.Aborted:
		domain = proxy.ErrConflict
	default:
		return fmt.Errorf("%s %s: %w", doing, key, err)
	}
	return fmt.Errorf("%s %s: %w (%w)", doing, key, domain, err)
}
