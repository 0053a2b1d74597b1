package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/egress-proxies/egress/internal/account"
	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/proxy"
)

// The cloud accounts' documents, accounts/{id} (package account), as the
// admins write them, and the count of the proxies placed in one, which
// placement holds against an account's own cap.

// Account paths of a proxy document that CountPlaced filters on.
var (
	accountPath = firestore.FieldPath{"status", "account"}
	regionPath  = firestore.FieldPath{"spec", "placement", "region"}
)

func (s *Store) account(id string) *firestore.DocumentRef {
	return s.client.Collection(account.Collection).Doc(id)
}

// PutAccount writes the account a (already validated: account.Validate),
// creating it or replacing every field of it, and returns it as written.
// Its create time is now for a new account and the first write's for an
// existing one.
func (s *Store) PutAccount(ctx context.Context, a account.Account, now time.Time) (*account.Account, error) {
	if !proxy.IsLabel(a.ID) {
		return nil, fmt.Errorf("putting account %q: the id is not a label", a.ID)
	}
	ref := s.account(a.ID)
	var commit firestore.CommitResponse
	err := s.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		metering.Add(ctx, metering.FirestoreRead, 1)
		a.CreateTime = now
		snap, err := tx.Get(ref)
		switch {
		case err == nil:
			old, err := decodeAccount(snap)
			if err != nil {
				return err
			}
			a.CreateTime = old.CreateTime
		case status.Code(err) != codes.NotFound:
			return err
		}
		return tx.Set(ref, a)
	}, firestore.MaxAttempts(transactionAttempts), firestore.WithCommitResponseTo(&commit))
	if err != nil {
		return nil, wrapAccount(a.ID, "putting", err)
	}
	metering.Add(ctx, metering.FirestoreWrite, 1)
	a.UpdateTime = commit.CommitTime()
	return &a, nil
}

// GetAccount reads an account: an error wrapping proxy.ErrNotFound when
// there is none.
func (s *Store) GetAccount(ctx context.Context, id string) (*account.Account, error) {
	if !proxy.IsLabel(id) {
		return nil, fmt.Errorf("reading account %q: %w (the id is not a label)", id, proxy.ErrNotFound)
	}
	snap, err := s.get(ctx, s.account(id))
	if err != nil {
		return nil, wrapAccount(id, "reading", err)
	}
	return decodeAccount(snap)
}

// ListAccounts reads every account, ordered by id. A deployment holds a
// few accounts per cloud, never a page's worth of them.
func (s *Store) ListAccounts(ctx context.Context) ([]account.Account, error) {
	snaps, err := s.client.Collection(account.Collection).OrderBy(firestore.DocumentID, firestore.Asc).Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("listing the accounts: %w", err)
	}
	queried(ctx, len(snaps))
	out := make([]account.Account, 0, len(snaps))
	for _, snap := range snaps {
		a, err := decodeAccount(snap)
		if err != nil {
			return nil, err
		}
		out = append(out, *a)
	}
	return out, nil
}

// DeleteAccount removes an account's document; an absent one is no
// error. What lives in the account is not looked at: an admin drains an
// account and waits for its proxies to go first
// (docs/operations/accounts.md).
func (s *Store) DeleteAccount(ctx context.Context, id string) error {
	if !proxy.IsLabel(id) {
		return nil
	}
	if _, err := s.account(id).Delete(ctx); err != nil {
		return wrapAccount(id, "deleting", err)
	}
	metering.Add(ctx, metering.FirestoreWrite, 1)
	return nil
}

// CountPlaced counts the proxy documents (warm pools' members too) of
// provider type typ placed in region of account id (status.account), in
// whatever phase: one count aggregation, which Firestore bills as one
// read per thousand documents counted. The default account ("") is never
// written in status.account, so it cannot be counted this way: asking
// for it is an error.
func (s *Store) CountPlaced(ctx context.Context, typ, id, region string) (int, error) {
	if id == account.Default {
		return 0, errors.New("counting the proxies of the default account: its proxies carry no status.account to count by")
	}
	q := s.client.CollectionGroup(ProxiesCollection).
		WherePath(providerPath, "==", typ).
		WherePath(accountPath, "==", id).
		WherePath(regionPath, "==", region)
	res, err := q.NewAggregationQuery().WithCount("n").Get(ctx)
	if err != nil {
		return 0, fmt.Errorf("counting the %s proxies of account %q in %s: %w", typ, id, region, err)
	}
	metering.Add(ctx, metering.FirestoreRead, 1)
	n, err := countOf(res["n"])
	if err != nil {
		return 0, fmt.Errorf("counting the %s proxies of account %q in %s: %w", typ, id, region, err)
	}
	return n, nil
}

// countOf reads a count aggregation's value, which the client returns as
// a protobuf Value.
func countOf(v any) (int, error) {
	switch n := v.(type) {
	case int64:
		return int(n), nil
	case interface{ GetIntegerValue() int64 }:
		return int(n.GetIntegerValue()), nil
	}
	return 0, fmt.Errorf("the count is a %T, not an integer", v)
}

func decodeAccount(snap *firestore.DocumentSnapshot) (*account.Account, error) {
	var a account.Account
	if err := snap.DataTo(&a); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", snap.Ref.Path, err)
	}
	a.ID = snap.Ref.ID
	a.UpdateTime = snap.UpdateTime
	return &a, nil
}

// wrapAccount names the account and maps Firestore's codes to the domain
// errors.
func wrapAccount(id, doing string, err error) error {
	return wrapCode(account.Collection+"/"+id, doing, err)
}
