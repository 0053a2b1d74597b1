package store

import (
	"context"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store/rules"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// The user's requests on a proxy that are not a create: its deletion, its
// rotation, a PATCH and new credentials, each one change with its rule
// (internal/store/rules): a deletion request a read and a conditional
// write (changeDoc), the others one transaction over the proxy and its
// namespace (changeCounted), which they may count a VM in.

// RequestDeletion marks the document for deletion (rules.RequestDeletion:
// deleteRequestTime, kept from the first request, phase Deleting, and a
// progress time for the sweep). It is idempotent and returns the document
// as it now is.
func (s *Store) RequestDeletion(ctx context.Context, key proxy.Key, now time.Time) (*proxy.Proxy, error) {
	p, err := s.change(ctx, key, func(p *proxy.Proxy) ([]rules.Field, error) { return rules.RequestDeletion(p, now), nil })
	return p, wrap(key, "requesting the deletion of", err)
}

// RequestRotation asks for the proxy's VM to be rotated
// (rules.RequestRotation: rotateRequestTime is now, once Ready and not
// within limits.RotateMinInterval of the last VM asked for) and counts the
// VM against the namespace's limits.CreatesPerHour (rules.CountCreation),
// in one transaction over both documents, and returns the proxy as it now
// is. A refused rotation writes nothing: proxy.ErrBeingDeleted,
// proxy.ErrNotReady, or a *proxy.RetryError saying when.
func (s *Store) RequestRotation(ctx context.Context, key proxy.Key, now time.Time, limits tenancy.Limits) (*proxy.Proxy, error) {
	p, err := s.changeCounted(ctx, key, func(p *proxy.Proxy, ns *tenancy.Namespace) ([]rules.Field, []rules.Field, error) {
		fields, err := rules.RequestRotation(p, now, limits.RotateMinInterval)
		if err != nil {
			return nil, nil, err
		}
		counted, err := rules.CountCreation(ns, now, limits.CreatesPerHour)
		return fields, counted, err
	})
	return p, wrap(key, "requesting the rotation of", err)
}

// changeCounted reads the namespace's document and the proxy's and writes
// what rule changes of each, in one transaction; a rule that changes
// neither writes nothing. The proxy's changes and the VM they count in
// its namespace (rules.CountCreation) are both written or neither: a
// crash cannot leave a VM asked for and not counted, nor counted and not
// asked for.
func (s *Store) changeCounted(ctx context.Context, key proxy.Key, rule func(*proxy.Proxy, *tenancy.Namespace) (proxyFields, nsFields []rules.Field, err error)) (*proxy.Proxy, error) {
	ref, nsRef := s.ref(key), s.namespace(key.Namespace)
	release, err := s.counters.acquire(ctx, key.Namespace)
	if err != nil {
		return nil, err
	}
	defer release()
	var (
		out    *proxy.Proxy
		writes int64
		commit firestore.CommitResponse
	)
	err = s.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		out, writes = nil, 0
		// The namespace first, in the order every create takes it.
		ns, err := s.readNamespace(ctx, tx, nsRef)
		if err != nil {
			return err
		}
		metering.Add(ctx, metering.FirestoreRead, 1)
		snap, err := tx.Get(ref)
		if err != nil {
			return err
		}
		if out, err = s.decode(ctx, snap); err != nil {
			return err
		}
		fields, counted, err := rule(out, ns)
		if err != nil {
			return err
		}
		if fields, err = s.sealFields(ctx, out, fields); err != nil {
			return err
		}
		if len(fields) > 0 {
			writes++
			if err := tx.Update(ref, updates(fields)); err != nil {
				return err
			}
		}
		if len(counted) > 0 {
			writes++
			return tx.Update(nsRef, updates(counted))
		}
		return nil
	}, firestore.MaxAttempts(transactionAttempts), firestore.WithCommitResponseTo(&commit))
	if err != nil {
		return nil, err
	}
	metering.Add(ctx, metering.FirestoreWrite, writes)
	if writes > 0 {
		out.UpdateTime = commit.CommitTime()
	}
	return out, nil
}

// change reads the document and writes what rule changes of it on the
// read's update time (changeDoc); a rule that changes nothing writes
// nothing.
func (s *Store) change(ctx context.Context, key proxy.Key, rule func(*proxy.Proxy) ([]rules.Field, error)) (*proxy.Proxy, error) {
	sealed := func(p *proxy.Proxy) ([]rules.Field, error) {
		fields, err := rule(p)
		if err != nil {
			return nil, err
		}
		return s.sealFields(ctx, p, fields)
	}
	out, at, err := changeDoc(ctx, s.client, s.ref(key), s.decoder(ctx), sealed)
	if err != nil {
		return nil, err
	}
	if at != nil {
		out.UpdateTime = *at
	}
	return out, nil
}

// changeDoc reads the document ref names (decoded by decode) and writes
// what rule changes of it, conditioned on the update time it read; a
// document written in between fails the condition, and the change is read
// and decided again, at most transactionAttempts times. It is a
// transaction's guarantee for one document without the transaction: a
// read and a write, where a transaction costs a round trip more to begin
// and holds a lock on the document from its read to its commit. A rule
// that changes nothing writes nothing. It returns the document as rule
// left it, and the write's time when it wrote (nil when it did not).
func changeDoc[T any](ctx context.Context, client *firestore.Client, ref *firestore.DocumentRef,
	decode func(*firestore.DocumentSnapshot) (*T, error), rule func(*T) ([]rules.Field, error)) (*T, *time.Time, error) {
	for attempt := 1; ; attempt++ {
		snap, err := ref.Get(ctx)
		if err == nil || status.Code(err) == codes.NotFound {
			metering.Add(ctx, metering.FirestoreRead, 1)
		}
		if err != nil {
			return nil, nil, err
		}
		out, err := decode(snap)
		if err != nil {
			return nil, nil, err
		}
		fields, err := rule(out)
		if err != nil || len(fields) == 0 {
			return out, nil, err
		}
		wr, err := ref.Update(ctx, updates(fields), firestore.LastUpdateTime(snap.UpdateTime))
		if status.Code(err) == codes.FailedPrecondition && attempt < transactionAttempts {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		metering.Add(ctx, metering.FirestoreWrite, 1)
		return out, &wr.UpdateTime, nil
	}
}

// updates are a rule's fields as Firestore updates.
func updates(fields []rules.Field) []firestore.Update {
	out := make([]firestore.Update, len(fields))
	for i, f := range fields {
		out[i] = firestore.Update{Path: f.Path, Value: f.Value}
	}
	return out
}

// UpdateSpec applies a change of the proxy's reconfigurable fields (a
// PATCH) in one transaction: update is called with the spec as the
// transaction read it and returns the spec it wants (its error aborts the
// change and is returned as it is: the API's validation), and
// rules.UpdateSpec writes what changed, generation + 1. No change writes
// nothing and keeps the generation. A change that gives the proxy a new VM
// is held to limits and counted in its namespace in the same transaction
// (rules.LiveReplacement). It returns the proxy as it now is.
func (s *Store) UpdateSpec(ctx context.Context, key proxy.Key, now time.Time, limits tenancy.Limits, update func(proxy.Spec) (proxy.Spec, error)) (*proxy.Proxy, error) {
	p, err := s.changeCounted(ctx, key, func(p *proxy.Proxy, ns *tenancy.Namespace) ([]rules.Field, []rules.Field, error) {
		return rules.LiveChange(p, ns, now, limits, func() ([]rules.Field, error) { return rules.UpdateSpec(p, now, update) })
	})
	return p, wrap(key, "updating the spec of", err)
}

// RotateCredentials draws new credentials (proxy.NewCredentials) into the
// proxy's bookkeeping and counts a generation (rules.RotateCredentials),
// in one transaction, and returns the proxy as it now is, with them. A
// rotation that gives the proxy a new VM is held to limits and counted in
// its namespace in the same transaction (rules.LiveReplacement).
func (s *Store) RotateCredentials(ctx context.Context, key proxy.Key, now time.Time, limits tenancy.Limits) (*proxy.Proxy, error) {
	p, err := s.changeCounted(replacing(ctx), key, func(p *proxy.Proxy, ns *tenancy.Namespace) ([]rules.Field, []rules.Field, error) {
		return rules.LiveChange(p, ns, now, limits, func() ([]rules.Field, error) { return rules.RotateCredentials(p, now) })
	})
	return p, wrap(key, "rotating the credentials of", err)
}
