package store

import (
	"context"
	"errors"
	"fmt"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store/rules"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// memberEmailsField is what ListNamespaces queries for a caller's
// namespaces: an array-contains filter ordered by document id, which
// Firestore serves from its automatic single-field index.
const memberEmailsField = "memberEmails"

// GetNamespace reads a namespace document: tenancy.ErrNamespaceNotFound
// when there is none.
func (s *Store) GetNamespace(ctx context.Context, name string) (*tenancy.Namespace, error) {
	snap, err := s.get(ctx, s.namespace(name))
	if err != nil {
		return nil, wrapNamespace(name, "reading", err)
	}
	return decodeNamespace(snap)
}

// ListNamespaces returns up to pageSize namespaces ordered by name, and
// the next page's token: every namespace when member is "", else those
// member (an email) has a role in.
func (s *Store) ListNamespaces(ctx context.Context, member string, pageSize int, pageToken string) ([]*tenancy.Namespace, string, error) {
	q := s.client.Collection(NamespacesCollection).Query
	if member != "" {
		q = q.Where(memberEmailsField, "array-contains", member)
	}
	q = q.OrderBy(firestore.DocumentID, firestore.Asc).Limit(pageSize + 1)
	after, err := rules.ParsePageToken(pageToken)
	if err != nil {
		return nil, "", err
	}
	if after != "" {
		q = q.StartAfter(after)
	}
	snaps, err := q.Documents(ctx).GetAll()
	if err != nil {
		return nil, "", fmt.Errorf("listing namespaces: %w", err)
	}
	queried(ctx, len(snaps))
	return page(snaps, pageSize, decodeNamespace, func(ns *tenancy.Namespace) string { return ns.Name })
}

// CreateNamespace writes a new namespace document (rules.NewNamespace
// made it) and returns it as written. When the name is taken it returns
// the existing namespace with tenancy.ErrNamespaceExists, so the API can
// tell a repeated request from a conflicting one.
func (s *Store) CreateNamespace(ctx context.Context, ns *tenancy.Namespace) (*tenancy.Namespace, error) {
	ref := s.namespace(ns.Name)
	doc := ns.Clone()
	doc.Index()
	wr, err := ref.Create(ctx, doc)
	if status.Code(err) == codes.AlreadyExists {
		existing, gerr := s.GetNamespace(ctx, ns.Name)
		if gerr != nil {
			return nil, gerr
		}
		return existing, fmt.Errorf("creating namespace %q: %w", ns.Name, tenancy.ErrNamespaceExists)
	}
	if err != nil {
		return nil, wrapNamespace(ns.Name, "creating", err)
	}
	metering.Add(ctx, metering.FirestoreWrite, 1)
	doc.UpdateTime = wr.UpdateTime
	return doc, nil
}

// UpdateNamespace reads the namespace and writes what update makes of it
// (its members and quota: rules.NamespaceUpdate), in one transaction.
// update is called with nil when there is no such namespace; its error
// aborts the update and is returned as it is, and a missing namespace it
// let through is tenancy.ErrNamespaceNotFound.
func (s *Store) UpdateNamespace(ctx context.Context, name string, update func(*tenancy.Namespace) error) (*tenancy.Namespace, error) {
	ref := s.namespace(name)
	release, err := s.counters.acquire(ctx, name)
	if err != nil {
		return nil, wrapNamespace(name, "updating", err)
	}
	defer release()
	var (
		out    *tenancy.Namespace
		commit firestore.CommitResponse
	)
	err = s.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		out = nil
		ns, err := s.readNamespace(ctx, tx, ref)
		if err != nil {
			return err
		}
		if err := rules.Decide(name, ns, update); err != nil {
			return err
		}
		out = ns
		return tx.Update(ref, updates(rules.NamespaceUpdate(ns)))
	}, firestore.MaxAttempts(transactionAttempts), firestore.WithCommitResponseTo(&commit))
	if err != nil {
		return nil, wrapNamespace(name, "updating", err)
	}
	metering.Add(ctx, metering.FirestoreWrite, 1)
	out.UpdateTime = commit.CommitTime()
	return out, nil
}

// DeleteNamespace deletes the namespace document if check lets it (check
// is called with nil when there is none, and its error is returned as it
// is) and it holds no proxies (rules.Deletable), in one transaction with
// the counter, so no create slips in between.
func (s *Store) DeleteNamespace(ctx context.Context, name string, check func(*tenancy.Namespace) error) error {
	ref := s.namespace(name)
	release, err := s.counters.acquire(ctx, name)
	if err != nil {
		return wrapNamespace(name, "deleting", err)
	}
	defer release()
	err = s.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		ns, err := s.readNamespace(ctx, tx, ref)
		if err != nil {
			return err
		}
		if err := rules.Decide(name, ns, check); err != nil {
			return err
		}
		if err := rules.Deletable(ns); err != nil {
			return err
		}
		return tx.Delete(ref, firestore.Exists)
	}, firestore.MaxAttempts(transactionAttempts))
	if err != nil {
		return wrapNamespace(name, "deleting", err)
	}
	metering.Add(ctx, metering.FirestoreWrite, 1)
	return nil
}

// readNamespace reads a namespace in a transaction: nil when there is
// none.
func (s *Store) readNamespace(ctx context.Context, tx *firestore.Transaction, ref *firestore.DocumentRef) (*tenancy.Namespace, error) {
	metering.Add(ctx, metering.FirestoreRead, 1)
	snap, err := tx.Get(ref)
	switch {
	case status.Code(err) == codes.NotFound:
		return nil, nil
	case err != nil:
		return nil, err
	}
	return decodeNamespace(snap)
}

func decodeNamespace(snap *firestore.DocumentSnapshot) (*tenancy.Namespace, error) {
	var ns tenancy.Namespace
	if err := snap.DataTo(&ns); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", snap.Ref.Path, err)
	}
	ns.Name = snap.Ref.ID
	ns.UpdateTime = snap.UpdateTime
	return &ns, nil
}

// wrapNamespace names the namespace and maps Firestore's codes to the
// domain errors.
func wrapNamespace(name, doing string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, tenancy.ErrNamespaceNotFound), errors.Is(err, tenancy.ErrNamespaceNotEmpty), errors.Is(err, proxy.ErrInvalidPageToken):
		return fmt.Errorf("%s namespace %q: %w", doing, name, err)
	}
	switch status.Code(err) {
	case codes.NotFound:
		return fmt.Errorf("%s namespace %q: %w (%w)", doing, name, tenancy.ErrNamespaceNotFound, err)
	case codes.FailedPrecondition, codes.Aborted:
		return fmt.Errorf("%s namespace %q: %w (%w)", doing, name, proxy.ErrConflict, err)
	}
	return fmt.Errorf("%s namespace %q: %w", doing, name, err)
}
