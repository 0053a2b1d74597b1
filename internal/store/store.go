// Package store keeps proxy documents in Firestore at
// namespaces/{namespace}/proxies/{name}.
//
// Every write that must not be lost or applied over a newer document carries
// an update-time precondition or runs in a transaction, and Firestore's codes
// come back as the domain errors of package proxy (ErrNotFound,
// ErrAlreadyExists, ErrConflict, ErrQuotaExceeded), wrapped with the
// document's path.
//
// The namespace document namespaces/{namespace} holds the tenant
// (package tenancy: its members and quota) and the per-namespace counter,
// field proxyCount, changed in the same transaction as the create or
// delete it counts. A create's transaction reads that one document for the
// namespace's existence, the caller's admission, the quota and the count.
// Two concurrent creates both read the counter, so Firestore serialises
// them and the second sees the first; counting the collection in the
// transaction instead would read every document of the namespace on every
// create.
//
// What both stores decide alike (the fields of a deletion request, page
// tokens, the quota, a namespace's updates) is package rules'.
//
// Every method counts the documents it reads and writes, as Firestore bills
// them, in the invocation's usage (package metering).
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
	"github.com/egress-proxies/egress/internal/tenancy"
)

// Collection and field names, shared with deploy/terraform's indexes.
const (
	NamespacesCollection = "namespaces"
	ProxiesCollection    = "proxies"
	countField           = "proxyCount"
	createsField         = "proxyCreates"
	// ProgressTimeField is what Stalled filters and orders on; production
	// needs a collection-group index on it.
	ProgressTimeField = rules.ProgressTimeField
)

// Store is the Firestore store of proxy documents. It is safe for
// concurrent use.
type Store struct {
	client *firestore.Client
	// sealer seals and opens the proxies' passwords; nil in a process
	// that reads none (the collector).
	sealer Sealer
	// counters queues the transactions on one namespace's counter.
	counters keyedLock
}

// New returns a Store over client, which seals and opens the proxies'
// passwords with sealer (nil: it opens none, and refuses to write new
// ones).
func New(client *firestore.Client, sealer Sealer) *Store {
	return &Store{client: client, sealer: sealer}
}

func (s *Store) ref(key proxy.Key) *firestore.DocumentRef {
	if key.IsMember() {
		return s.pool(key.Pool).Collection(ProxiesCollection).Doc(key.Name)
	}
	return s.client.Collection(NamespacesCollection).Doc(key.Namespace).Collection(ProxiesCollection).Doc(key.Name)
}

// namespace is the namespace's document, which holds its counter.
func (s *Store) namespace(name string) *firestore.DocumentRef {
	return s.client.Collection(NamespacesCollection).Doc(name)
}

// transactionAttempts is how often a contended transaction is tried: the
// quota counter makes every create of a namespace contend.
const transactionAttempts = 30

// Create writes a new document and counts it against the namespace's
// quota, in one transaction, and returns it as written, with the commit's
// time as its update time. When the name is taken it returns the existing
// document with ErrAlreadyExists, so the API can tell a repeated request
// from a conflicting one. It needs no namespace document (the counter is
// made when missing): it is how tests and the simulation seed documents;
// the API creates with CreateInNamespace.
//
// Neither Create nor RequestDeletion reads the document back: the
// reconciler acts on the write's event at once, and a read-back could find
// the document already changed, or, with a provider that deletes at once,
// already gone.
func (s *Store) Create(ctx context.Context, p *proxy.Proxy, quota int) (*proxy.Proxy, error) {
	return s.create(ctx, p, false, func(*tenancy.Namespace) (tenancy.Limits, error) { return tenancy.Limits{Quota: quota}, nil })
}

// CreateInNamespace is Create in a namespace that must exist: admit is
// called inside the transaction with the namespace document as it read it
// (nil when there is none), decides whether the caller may create there,
// and gives the limits; its error aborts the create, and a namespace that
// does not exist and that admit let through is tenancy.ErrNamespaceNotFound.
// The create counts as a VM asked for at p.CreateTime
// (rules.CountCreation), in the namespace document it writes anyway.
func (s *Store) CreateInNamespace(ctx context.Context, p *proxy.Proxy, admit tenancy.Admission) (*proxy.Proxy, error) {
	return s.create(ctx, p, true, admit)
}

func (s *Store) create(ctx context.Context, p *proxy.Proxy, needNamespace bool, admit tenancy.Admission) (*proxy.Proxy, error) {
	key := p.Key()
	if key.IsMember() {
		return s.createMember(ctx, p)
	}
	if err := s.seal(ctx, p); err != nil {
		return nil, err
	}
	ref, counter := s.ref(key), s.namespace(key.Namespace)
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
		// The counter, on which every create of the namespace contends,
		// and whether the name is taken, in one round trip: one read that
		// takes both locks at once, in Firestore's own order, where two
		// reads cost a round trip more inside the lock.
		metering.Add(ctx, metering.FirestoreRead, 2)
		snaps, err := tx.GetAll([]*firestore.DocumentRef{counter, ref})
		if err != nil {
			return err
		}
		csnap, snap := snaps[0], snaps[1]
		var ns *tenancy.Namespace
		if csnap.Exists() {
			if ns, err = decodeNamespace(csnap); err != nil {
				return err
			}
		}
		limits, err := admit(ns)
		if err != nil {
			return err
		}
		if ns == nil && needNamespace {
			return fmt.Errorf("namespace %q: %w", key.Namespace, tenancy.ErrNamespaceNotFound)
		}
		count, creates := int64(0), int64(0)
		if ns != nil {
			count, creates = ns.ProxyCount, ns.ProxyCreates
		}
		if snap.Exists() {
			if existing, err = s.decode(ctx, snap); err != nil {
				return err
			}
			return proxy.ErrAlreadyExists
		}
		if err := rules.Admit(key.Namespace, count, limits.Quota); err != nil {
			return err
		}
		counted, err := rules.CountCreation(ns, p.CreateTime, limits.CreatesPerHour)
		if err != nil {
			return err
		}
		if err := tx.Create(ref, p); err != nil {
			return err
		}
		fields := map[string]any{countField: count + 1, createsField: creates + 1}
		for _, f := range counted {
			fields[f.Path] = f.Value
		}
		return tx.Set(counter, fields, firestore.MergeAll)
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
	snap, err := s.get(ctx, s.ref(key))
	if err != nil {
		return nil, wrap(key, "reading", err)
	}
	p, err := s.decode(ctx, snap)
	if err != nil {
		return nil, err
	}
	s.resealLegacy(ctx, p)
	return p, nil
}

// get reads a document, counted as Firestore bills it: one read whether
// or not the document exists.
func (s *Store) get(ctx context.Context, ref *firestore.DocumentRef) (*firestore.DocumentSnapshot, error) {
	snap, err := ref.Get(ctx)
	if err == nil || status.Code(err) == codes.NotFound {
		metering.Add(ctx, metering.FirestoreRead, 1)
	}
	return snap, err
}

// List returns up to pageSize documents of a namespace, ordered by name,
// and the token of the next page ("" after the last).
func (s *Store) List(ctx context.Context, namespace string, pageSize int, pageToken string) ([]*proxy.Proxy, string, error) {
	return s.list(ctx, namespace, pageSize, pageToken, s.decoder(ctx))
}

// ListSealed is List for readers that never need a proxy's secrets (the
// collector's look at a namespace's month): its proxies keep their
// password and console tail sealed, so the reader needs no right on the
// credentials' key (deploy's TestEachAccountHoldsWhatItsCallsNeed holds
// the collector to that).
func (s *Store) ListSealed(ctx context.Context, namespace string, pageSize int, pageToken string) ([]*proxy.Proxy, string, error) {
	return s.list(ctx, namespace, pageSize, pageToken, decode)
}

func (s *Store) list(ctx context.Context, namespace string, pageSize int, pageToken string, decode func(*firestore.DocumentSnapshot) (*proxy.Proxy, error)) ([]*proxy.Proxy, string, error) {
	q := s.client.Collection(NamespacesCollection).Doc(namespace).Collection(ProxiesCollection).
		OrderBy("name", firestore.Asc).Limit(pageSize + 1)
	after, err := rules.ParsePageToken(pageToken)
	if err != nil {
		return nil, "", err
	}
	if after != "" {
		q = q.StartAfter(after)
	}
	snaps, err := q.Documents(ctx).GetAll()
	if err != nil {
		return nil, "", fmt.Errorf("listing the proxies of namespace %q: %w", namespace, err)
	}
	queried(ctx, len(snaps))
	return page(snaps, pageSize, decode, func(p *proxy.Proxy) string { return p.Name })
}

// page decodes a page of a query's documents, asked for with one more than
// pageSize so as to know whether another page follows, and makes the next
// page's token from the last one's name ("" after the last page).
func page[T any](snaps []*firestore.DocumentSnapshot, pageSize int, decode func(*firestore.DocumentSnapshot) (*T, error), name func(*T) string) ([]*T, string, error) {
	out := make([]*T, 0, min(len(snaps), pageSize))
	for _, snap := range snaps[:min(len(snaps), pageSize)] {
		v, err := decode(snap)
		if err != nil {
			return nil, "", err
		}
		out = append(out, v)
	}
	next := ""
	if len(snaps) > pageSize {
		next = rules.PageToken(name(out[len(out)-1]))
	}
	return out, next, nil
}

// UpdateStatus replaces the status and the reconciler's bookkeeping if the
// document's update time is still p.UpdateTime, and returns the new update
// time. ErrConflict means the document changed since it was read.
func (s *Store) UpdateStatus(ctx context.Context, p *proxy.Proxy) (time.Time, error) {
	if err := s.seal(ctx, p); err != nil {
		return time.Time{}, err
	}
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

// UpdateStatusCounted is UpdateStatus that also counts a VM caused at at
// against the namespace's bound of perHour (rules.CountCreation), in one
// transaction over both documents (changeCounted): the reconciler's
// record that a rotation by maxAge starts, which costs the namespace a VM.
// Both are written or neither. Past the bound nothing is written and the
// error wraps a *proxy.RetryError (proxy.ErrCreatesPerHour) saying when
// one more fits; ErrConflict means the proxy changed since it was read.
func (s *Store) UpdateStatusCounted(ctx context.Context, p *proxy.Proxy, at time.Time, perHour int) (time.Time, error) {
	out, err := s.changeCounted(ctx, p.Key(), func(cur *proxy.Proxy, ns *tenancy.Namespace) ([]rules.Field, []rules.Field, error) {
		if !cur.UpdateTime.Equal(p.UpdateTime) {
			return nil, nil, proxy.ErrConflict
		}
		counted, err := rules.CountCreation(ns, at, perHour)
		return rules.StatusUpdate(p), counted, err
	})
	if err != nil {
		return time.Time{}, wrap(p.Key(), "updating the status of", err)
	}
	return out.UpdateTime, nil
}

// Delete removes the document if its update time is still updateTime, and
// uncounts it from the namespace's quota in the same transaction.
func (s *Store) Delete(ctx context.Context, key proxy.Key, updateTime time.Time, spent ...proxy.Spent) error {
	ref := s.ref(key)
	if key.IsMember() {
		// A member counts against no namespace: only the document goes.
		_, err := ref.Delete(ctx, firestore.LastUpdateTime(updateTime))
		if err == nil {
			metering.Add(ctx, metering.FirestoreWrite, 1)
		}
		return wrap(key, "deleting", err)
	}
	release, err := s.counters.acquire(ctx, key.Namespace)
	if err != nil {
		return wrap(key, "deleting", err)
	}
	defer release()
	// The transaction reads nothing: the delete's precondition is the
	// check that the document is still the one the caller read, and the
	// counter goes down by an increment. A read here would cost a read and
	// a round trip more, and hold a lock on the document until the commit.
	err = s.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		if err := tx.Delete(ref, firestore.LastUpdateTime(updateTime)); err != nil {
			return err
		}
		updates := []firestore.Update{{Path: countField, Value: firestore.Increment(-1)}}
		for _, sp := range spent {
			if sp.Nanos != 0 {
				// A month's key holds '-': a field path, not a dotted one.
				updates = append(updates, firestore.Update{FieldPath: firestore.FieldPath{"deletedSpend", sp.Month}, Value: firestore.Increment(sp.Nanos)})
			}
		}
		return tx.Update(s.namespace(key.Namespace), updates)
	}, firestore.MaxAttempts(transactionAttempts))
	if err == nil {
		metering.Add(ctx, metering.FirestoreWrite, 2)
		return nil
	}
	if status.Code(err) == codes.FailedPrecondition {
		// A document changed since, or gone: which, only a read says (the
		// reconciler reads again after a conflict, and stops when gone).
		if _, gerr := s.get(ctx, ref); status.Code(gerr) == codes.NotFound {
			err = gerr
		}
	}
	return wrap(key, "deleting", err)
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
	return wrapPath(key.Path(), doing, err)
}

// wrapPath is wrap for a document named by its path.
func wrapPath(key, doing string, err error) error {
	if err == nil {
		return nil
	}
	var domain error
	switch {
	case errors.Is(err, proxy.ErrNoWarmVM), errors.Is(err, proxy.ErrAlreadyExists), errors.Is(err, proxy.ErrConflict),
		errors.Is(err, proxy.ErrQuotaExceeded), errors.Is(err, proxy.ErrNotFound),
		errors.Is(err, proxy.ErrBeingDeleted), errors.Is(err, tenancy.ErrNamespaceNotFound),
		errors.Is(err, proxy.ErrNotReady), errors.Is(err, proxy.ErrFailed), errors.Is(err, proxy.ErrRotatedRecently), errors.Is(err, proxy.ErrCreatesPerHour):
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
