package storefake

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store/rules"
)

// Warm pools and their members, as the Firestore store keeps them
// (internal/store/members.go): members are proxy documents of no
// namespace, whose changes the watcher is told of like any proxy's; pool
// documents are not proxies and reach no watcher, as namespaces do not.

// createMember creates a member document, counted against no namespace.
// Called with s.mu held; releases it.
func (s *Store) createMember(p *proxy.Proxy) (*proxy.Proxy, error) {
	key := p.Key()
	if old, ok := s.docs[key]; ok {
		defer s.mu.Unlock()
		return clone(old), fmt.Errorf("%s: %w", key, proxy.ErrAlreadyExists)
	}
	doc := clone(p)
	doc.UpdateTime = s.tick()
	s.index(doc)
	return clone(doc), s.changed(Change{Key: key, New: clone(doc)})
}

// Members returns every member of the pool, tombstones included, ordered
// by name.
func (s *Store) Members(_ context.Context, pool string) ([]*proxy.Proxy, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.members(pool), nil
}

// members are copies of the pool's members by name, counted as a query's
// reads. Called with s.mu held.
func (s *Store) members(pool string) []*proxy.Proxy {
	out := s.memberDocs(pool)
	s.reads += max(len(out), 1)
	return out
}

// memberDocs is members without the reads counted, for a query that
// returns only some of them. Called with s.mu held.
func (s *Store) memberDocs(pool string) []*proxy.Proxy {
	var out []*proxy.Proxy
	for _, d := range s.byParent[proxy.PoolPath(pool)] {
		s.visits++
		out = append(out, clone(d))
	}
	slices.SortFunc(out, func(a, b *proxy.Proxy) int { return compare(a.Name, b.Name) })
	return out
}

// EnsureMembers creates the pool's missing members (rules.MissingMembers)
// at once, as the Firestore store's transaction does, and returns them.
func (s *Store) EnsureMembers(_ context.Context, pool string, now time.Time) ([]*proxy.Proxy, error) {
	s.mu.Lock()
	s.reads++
	pl, ok := s.pools[pool]
	if !ok {
		s.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", proxy.PoolPath(pool), proxy.ErrNotFound)
	}
	created := rules.MissingMembers(clonePool(pl), s.members(pool), now)
	var changes []Change
	for _, m := range created {
		m.UpdateTime = s.tick()
		s.index(clone(m))
		s.writes++
		changes = append(changes, Change{Key: m.Key(), New: clone(m)})
	}
	s.notify(changes)
	return created, nil
}

// ClaimWarm passes a warm VM of the pool to p at once, as the Firestore
// store's draw and commit do (rules.PickWarm, rules.Warm, rules.Claim),
// p's update time its precondition, counting the reads the draw's queries
// cost, and logs (and with a positive perHour counts) the claim in p's
// namespace (rules.CountClaim, rules.CountCreation) in the same commit;
// proxy.ErrNoWarmVM when the pool has none.
func (s *Store) ClaimWarm(_ context.Context, p *proxy.Proxy, pool *proxy.Pool, now time.Time, perHour int) (member, claimed *proxy.Proxy, err error) {
	s.mu.Lock()
	key := p.Key()
	doc, ok := s.docs[key]
	if !ok {
		s.mu.Unlock()
		return nil, nil, fmt.Errorf("%s: %w", key, proxy.ErrNotFound)
	}
	members := s.memberDocs(pool.Name)
	for attempt := range rules.ClaimAttempts {
		after := rules.DrawAfter(p.UID, attempt)
		// The draw's queries: the first at or after, else the first.
		s.reads++
		member = rules.PickWarm(members, after)
		if member != nil && member.UID < after {
			s.reads++
		}
		if member == nil {
			s.reads++
			break
		}
		if rules.Warm(member) {
			break
		}
		// Not warm (on its way out, or no VM named): drawn again, as a
		// claim that lost it to another would be.
		members = slices.DeleteFunc(members, func(m *proxy.Proxy) bool { return m.Key() == member.Key() })
		member = nil
	}
	switch {
	case member == nil:
		s.mu.Unlock()
		return nil, nil, fmt.Errorf("claiming a warm VM of %s for %s: %w", pool.Path(), key, proxy.ErrNoWarmVM)
	case !doc.UpdateTime.Equal(p.UpdateTime):
		s.mu.Unlock()
		return nil, nil, fmt.Errorf("%s changed since %s: %w", key, p.UpdateTime.Format(time.RFC3339Nano), proxy.ErrConflict)
	}
	claimed = clone(p)
	if err := rules.Claim(claimed, member, now); err != nil {
		s.mu.Unlock()
		return nil, nil, err
	}
	ns, counted := s.copyOf(key.Namespace)
	logged, err := rules.CountClaim(counted, pool, now)
	if err == nil {
		_, err = rules.CountCreation(counted, now, perHour)
	}
	if err != nil {
		s.mu.Unlock()
		return nil, nil, fmt.Errorf("claiming a warm VM of %s for %s: %w", pool.Path(), key, err)
	}
	t := s.tick()
	if len(logged) > 0 {
		s.countIn(ns, counted, t)
	}
	oldMember, oldDoc := clone(s.docs[member.Key()]), clone(doc)
	member.UpdateTime, claimed.UpdateTime = t, t
	m := s.docs[member.Key()]
	m.ClaimedBy, m.Status.Message, m.UpdateTime = member.ClaimedBy, member.Status.Message, t
	doc.Status, doc.Reconciler, doc.UpdateTime = claimed.Status, claimed.Reconciler, t
	s.index(m)
	s.index(doc)
	s.writes += 2
	s.notify([]Change{{Key: member.Key(), Old: oldMember, New: clone(m)}, {Key: key, Old: oldDoc, New: clone(doc)}})
	return clone(m), clone(doc), nil
}

// PoolServing returns a pool that serves spec (rules.PoolServing), or
// nil, counting a read for the query as the Firestore store's.
func (s *Store) PoolServing(_ context.Context, spec proxy.Spec) (*proxy.Pool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var pools []*proxy.Pool
	for _, p := range s.sortedPools() {
		if p.Spec.Provider == spec.Provider {
			pools = append(pools, p)
		}
	}
	s.reads += max(len(pools), 1)
	return rules.PoolServing(pools, spec), nil
}

// sortedPools are the pools by name. Called with s.mu held.
func (s *Store) sortedPools() []*proxy.Pool {
	out := make([]*proxy.Pool, 0, len(s.pools))
	for _, p := range s.pools {
		s.visits++
		out = append(out, clonePool(p))
	}
	slices.SortFunc(out, func(a, b *proxy.Pool) int { return compare(a.Name, b.Name) })
	return out
}

// UpdatePoolStatus writes the pool's status if its update time is still
// p.UpdateTime.
func (s *Store) UpdatePoolStatus(_ context.Context, p *proxy.Pool) (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pl, err := s.poolAt(p.Name, p.UpdateTime)
	if err != nil {
		return time.Time{}, err
	}
	pl.Status = p.Status
	pl.UpdateTime = s.tick()
	s.writes++
	return pl.UpdateTime, nil
}

// DeletePool removes the pool's document if its update time is still
// updateTime.
func (s *Store) DeletePool(_ context.Context, name string, updateTime time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.poolAt(name, updateTime); err != nil {
		return err
	}
	delete(s.pools, name)
	s.tick()
	s.writes++
	return nil
}

// poolAt is the pool's document if its update time is still updateTime.
// Called with s.mu held.
func (s *Store) poolAt(name string, updateTime time.Time) (*proxy.Pool, error) {
	pl, ok := s.pools[name]
	switch {
	case !ok:
		return nil, fmt.Errorf("%s: %w", proxy.PoolPath(name), proxy.ErrNotFound)
	case !pl.UpdateTime.Equal(updateTime):
		return nil, fmt.Errorf("%s changed since %s: %w", proxy.PoolPath(name), updateTime.Format(time.RFC3339Nano), proxy.ErrConflict)
	}
	return pl, nil
}

// notify releases the lock and tells the watcher of each change, in order.
func (s *Store) notify(changes []Change) {
	watch := s.watch
	s.mu.Unlock()
	if watch != nil {
		for _, c := range changes {
			watch(c)
		}
	}
}

func clonePool(p *proxy.Pool) *proxy.Pool {
	c := *p
	if p.DeleteRequestTime != nil {
		t := *p.DeleteRequestTime
		c.DeleteRequestTime = &t
	}
	return &c
}

// PoolNames returns the name of every pool, sorted.
func (s *Store) PoolNames(context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for _, p := range s.sortedPools() {
		names = append(names, p.Name)
	}
	s.reads += max(len(names), 1)
	return names, nil
}
