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

// A warm pool's members are proxy documents beneath the pool's document,
// pools/{pool}/proxies/{name}: the collector's collection-group query sees
// them as it sees every proxy, so a warm VM is claimed by its member's uid
// as any VM is by its proxy's. They count against no namespace.

// members is the query of a pool's members.
func (s *Store) members(pool string) firestore.Query {
	return s.pool(pool).Collection(ProxiesCollection).Query
}

// createMember creates a member document (Create of a key with Pool set):
// no counter, the existing document with ErrAlreadyExists when the name
// is taken, as Create.
func (s *Store) createMember(ctx context.Context, p *proxy.Proxy) (*proxy.Proxy, error) {
	key := p.Key()
	if err := s.seal(ctx, p); err != nil {
		return nil, err
	}
	wr, err := s.ref(key).Create(ctx, p)
	if status.Code(err) == codes.AlreadyExists {
		existing, gerr := s.Get(ctx, key)
		if gerr != nil {
			return nil, gerr
		}
		return existing, wrap(key, "creating", proxy.ErrAlreadyExists)
	}
	if err != nil {
		return nil, wrap(key, "creating", err)
	}
	metering.Add(ctx, metering.FirestoreWrite, 1)
	created := *p
	created.UpdateTime = wr.UpdateTime
	return &created, nil
}

// Members returns every member document of the pool, claimed ones
// (tombstones) included, ordered by name.
func (s *Store) Members(ctx context.Context, pool string) ([]*proxy.Proxy, error) {
	snaps, err := s.members(pool).Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("reading the members of %s: %w", proxy.PoolPath(pool), err)
	}
	queried(ctx, len(snaps))
	return s.decodeAll(ctx, snaps)
}

func (s *Store) decodeAll(ctx context.Context, snaps []*firestore.DocumentSnapshot) ([]*proxy.Proxy, error) {
	out := make([]*proxy.Proxy, 0, len(snaps))
	for _, snap := range snaps {
		p, err := s.decode(ctx, snap)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// EnsureMembers creates the pool's missing members (rules.MissingMembers:
// up to its size of live, unclaimed members; none for a pool being
// deleted) and returns those it created. The pool's document and the query
// of its members are read in the same transaction as the creates: two runs
// at once both read, Firestore lets one commit and retries the other,
// which then sees the first's members, so a pool is never overfilled. A
// pool that does not exist is proxy.ErrNotFound.
func (s *Store) EnsureMembers(ctx context.Context, pool string, now time.Time) ([]*proxy.Proxy, error) {
	var created []*proxy.Proxy
	var commit firestore.CommitResponse
	err := s.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		created = nil
		metering.Add(ctx, metering.FirestoreRead, 1)
		snap, err := tx.Get(s.pool(pool))
		if err != nil {
			return err
		}
		pl, err := decodePool(snap)
		if err != nil {
			return err
		}
		snaps, err := tx.Documents(s.members(pool)).GetAll()
		if err != nil {
			return err
		}
		queried(ctx, len(snaps))
		members, err := s.decodeAll(ctx, snaps)
		if err != nil {
			return err
		}
		for _, m := range rules.MissingMembers(pl, members, now) {
			if err := tx.Create(s.ref(m.Key()), m); err != nil {
				return err
			}
			created = append(created, m)
		}
		return nil
	}, firestore.MaxAttempts(transactionAttempts), firestore.WithCommitResponseTo(&commit))
	if err != nil {
		return nil, wrapPool(pool, "adding the members of", err)
	}
	metering.Add(ctx, metering.FirestoreWrite, int64(len(created)))
	for _, m := range created {
		m.UpdateTime = commit.CommitTime()
	}
	return created, nil
}

// ClaimWarm passes a warm VM of the pool to p: it draws a claimable
// member (rules.PickWarm, one query), holds it to rules.Warm (Ready with a
// VM, unclaimed, not being deleted), and in one commit names p in the
// member's ClaimedBy, writes p's status and bookkeeping as rules.Claim
// makes them, and logs the claim in p's namespace (rules.CountClaim: the
// pool's ClaimsPerNamespacePerHour), counting it against the namespace's
// bound of perHour VMs too when perHour is positive (rules.CountCreation:
// a rotation by maxAge, which no request counted). The two proxy documents'
// writes carry the update time their document was read at (the member's
// by the draw, p's by the run), so the commit is a compare-and-swap of the
// two: it fails whole when either changed. A member another claim took in
// the meantime is drawn again elsewhere, up to rules.ClaimAttempts times,
// and then the run is told its document may have changed
// (proxy.ErrConflict), so that it reads it again and decides again. It
// returns the member and p as written; with no warm member it writes
// nothing and returns an error wrapping proxy.ErrNoWarmVM, and past the
// pool's bound for the namespace, or the namespace's bound of VMs, one
// wrapping proxy.ErrPoolClaimsPerHour or proxy.ErrCreatesPerHour.
//
// The crash window it guards: the VM passes from the member to p, and is
// counted in p's namespace, in one commit, so no instant has two documents
// that both own the VM, nor none, nor a claim the namespace's log misses.
// The commit reads the namespace's document only: claims of one namespace
// wait on each other (as its creates do), claims of different namespaces
// never, and two that drew the same member are decided by which commits
// first. The VM keeps the member's uid until p's run relabels it
// (Reconfigure); until then the member, a tombstone, still claims it for
// the collector.
func (s *Store) ClaimWarm(ctx context.Context, p *proxy.Proxy, pool *proxy.Pool, now time.Time, perHour int) (member, claimed *proxy.Proxy, err error) {
	key := p.Key()
	doing := "claiming a warm VM of " + pool.Path() + " for"
	release, err := s.counters.acquire(ctx, key.Namespace)
	if err != nil {
		return nil, nil, wrap(key, doing, err)
	}
	defer release()
	for attempt := range rules.ClaimAttempts {
		snap, err := s.drawWarm(ctx, pool.Name, rules.DrawAfter(p.UID, attempt))
		if err != nil {
			return nil, nil, wrap(key, doing, err)
		}
		member, claimed, err = s.claim(ctx, p, pool, snap, now, perHour)
		if !errors.Is(err, errTaken) {
			return member, claimed, wrap(key, doing, err)
		}
	}
	return nil, nil, wrap(key, doing, fmt.Errorf("%d draws lost their member, or the document changed: %w", rules.ClaimAttempts, proxy.ErrConflict))
}

// errTaken is a claim's commit refused: the member drawn, or the proxy,
// changed since they were read.
var errTaken = errors.New("the member drawn, or the proxy, changed since it was read")

// drawWarm is rules.PickWarm as queries: the claimable member whose uid is
// the first at or after after, or else the first; each query costs one
// read, whether or not it finds one.
func (s *Store) drawWarm(ctx context.Context, pool, after string) (*firestore.DocumentSnapshot, error) {
	q := s.members(pool).Where("status.phase", "==", string(proxy.PhaseReady)).Where(rules.ClaimedByField, "==", nil)
	for _, q := range []firestore.Query{
		q.Where(rules.UIDField, ">=", after).OrderBy(rules.UIDField, firestore.Asc).Limit(1),
		q.OrderBy(rules.UIDField, firestore.Asc).Limit(1),
	} {
		snaps, err := q.Documents(ctx).GetAll()
		if err != nil {
			return nil, fmt.Errorf("drawing a warm member of %s: %w", proxy.PoolPath(pool), err)
		}
		metering.Add(ctx, metering.FirestoreRead, int64(max(len(snaps), 1)))
		if len(snaps) == 1 {
			return snaps[0], nil
		}
	}
	return nil, fmt.Errorf("%s has no warm VM: %w", proxy.PoolPath(pool), proxy.ErrNoWarmVM)
}

// claim is ClaimWarm's commit of the member snap holds: a transaction
// that reads p's namespace document, and whose two proxy documents' writes
// carry their update times as preconditions.
func (s *Store) claim(ctx context.Context, p *proxy.Proxy, pool *proxy.Pool, snap *firestore.DocumentSnapshot, now time.Time, perHour int) (member, claimed *proxy.Proxy, err error) {
	m, err := s.decode(ctx, snap)
	if err != nil {
		return nil, nil, err
	}
	if !rules.Warm(m) {
		// Claimable but not warm (being deleted, or with no VM named).
		return nil, nil, errTaken
	}
	c := *p
	if err := rules.Claim(&c, m, now); err != nil {
		return nil, nil, err
	}
	if err := s.seal(ctx, &c); err != nil {
		return nil, nil, err
	}
	member, claimed = m, &c
	nsRef := s.namespace(p.Namespace)
	var (
		writes int64
		commit firestore.CommitResponse
	)
	err = s.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		writes = 2
		ns, err := s.readNamespace(ctx, tx, nsRef)
		if err != nil {
			return err
		}
		logged, err := rules.CountClaim(ns, pool, now)
		if err != nil {
			return err
		}
		counted, err := rules.CountCreation(ns, now, perHour)
		if err != nil {
			return err
		}
		if err := tx.Update(snap.Ref, []firestore.Update{
			{Path: rules.ClaimedByField, Value: member.ClaimedBy},
			{Path: "status.message", Value: member.Status.Message},
		}, firestore.LastUpdateTime(snap.UpdateTime)); err != nil {
			return err
		}
		if err := tx.Update(s.ref(p.Key()), updates(rules.StatusUpdate(claimed)), firestore.LastUpdateTime(p.UpdateTime)); err != nil {
			return err
		}
		if nsFields := append(logged, counted...); len(nsFields) > 0 {
			writes++
			return tx.Update(nsRef, updates(nsFields))
		}
		return nil
	}, firestore.MaxAttempts(transactionAttempts), firestore.WithCommitResponseTo(&commit))
	if status.Code(err) == codes.FailedPrecondition {
		return nil, nil, errTaken
	}
	if err != nil {
		return nil, nil, err
	}
	metering.Add(ctx, metering.FirestoreWrite, writes)
	member.UpdateTime, claimed.UpdateTime = commit.CommitTime(), commit.CommitTime()
	return member, claimed, nil
}

// PoolServing returns a pool that serves spec (rules.PoolServing), or nil
// when none does. It is one query of the pools of spec's provider, so it
// costs a read even when there is no pool: every create of a proxy that
// could be served by one pays it.
func (s *Store) PoolServing(ctx context.Context, spec proxy.Spec) (*proxy.Pool, error) {
	snaps, err := s.client.Collection(proxy.PoolsCollection).Where("spec.provider", "==", spec.Provider).Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("reading the pools of provider %q: %w", spec.Provider, err)
	}
	queried(ctx, len(snaps))
	pools := make([]*proxy.Pool, 0, len(snaps))
	for _, snap := range snaps {
		p, err := decodePool(snap)
		if err != nil {
			return nil, err
		}
		pools = append(pools, p)
	}
	return rules.PoolServing(pools, spec), nil
}

// UpdatePoolStatus writes the pool's status if its update time is still
// p.UpdateTime (else proxy.ErrConflict), and returns the new update time.
func (s *Store) UpdatePoolStatus(ctx context.Context, p *proxy.Pool) (time.Time, error) {
	wr, err := s.pool(p.Name).Update(ctx, []firestore.Update{{Path: rules.StatusField, Value: p.Status}}, firestore.LastUpdateTime(p.UpdateTime))
	if err != nil {
		return time.Time{}, wrapPool(p.Name, "updating the status of", err)
	}
	metering.Add(ctx, metering.FirestoreWrite, 1)
	return wr.UpdateTime, nil
}

// DeletePool removes the pool's document if its update time is still
// updateTime (else proxy.ErrConflict). The pool's reconcile calls it once
// no member is left.
func (s *Store) DeletePool(ctx context.Context, name string, updateTime time.Time) error {
	_, err := s.pool(name).Delete(ctx, firestore.LastUpdateTime(updateTime))
	if err != nil {
		return wrapPool(name, "deleting", err)
	}
	metering.Add(ctx, metering.FirestoreWrite, 1)
	return nil
}

// PoolNames returns the name of every pool, for the collector to re-drive
// them: a projection of no field, one read each.
func (s *Store) PoolNames(ctx context.Context) ([]string, error) {
	snaps, err := s.client.Collection(proxy.PoolsCollection).Select().Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("reading the names of the pools: %w", err)
	}
	queried(ctx, len(snaps))
	names := make([]string, 0, len(snaps))
	for _, snap := range snaps {
		names = append(names, snap.Ref.ID)
	}
	return names, nil
}
