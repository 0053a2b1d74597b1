package storefake

import (
	"context"
	"fmt"
	"time"

	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store/rules"
)

// PutPool creates the pool or changes its size (rules.PutPool), as the
// Firestore store's.
func (s *Store) PutPool(_ context.Context, name string, spec proxy.PoolSpec, now time.Time) (*proxy.Pool, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	var existing *proxy.Pool
	if p, ok := s.pools[name]; ok {
		existing = rules.ClonePool(p)
	}
	next, fields, created, err := rules.PutPool(name, existing, spec, now)
	if err != nil {
		return nil, false, fmt.Errorf("putting %s: %w", proxy.PoolPath(name), err)
	}
	if created || len(fields) > 0 {
		next.UpdateTime = s.tick()
		s.pools[name] = rules.ClonePool(next)
		s.writes++
	}
	return next, created, nil
}

// GetPool returns a copy of the pool: an error wrapping proxy.ErrNotFound
// when there is none.
func (s *Store) GetPool(_ context.Context, name string) (*proxy.Pool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	p, ok := s.pools[name]
	if !ok {
		return nil, fmt.Errorf("%s: %w", proxy.PoolPath(name), proxy.ErrNotFound)
	}
	return rules.ClonePool(p), nil
}

// ListPools returns up to pageSize pools ordered by name, and the next
// page's token, as the Firestore store's.
func (s *Store) ListPools(_ context.Context, pageSize int, pageToken string) ([]*proxy.Pool, string, error) {
	after, err := rules.ParsePageToken(pageToken)
	if err != nil {
		return nil, "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for name := range s.pools {
		s.visits++
		if name > after {
			names = append(names, name)
		}
	}
	names, next := page(names, pageSize)
	var out []*proxy.Pool
	for _, n := range names {
		s.reads++
		out = append(out, rules.ClonePool(s.pools[n]))
	}
	return out, next, nil
}

// RequestPoolDeletion marks the pool for deletion
// (rules.RequestPoolDeletion), as the Firestore store's.
func (s *Store) RequestPoolDeletion(_ context.Context, name string, now time.Time) (*proxy.Pool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	p, ok := s.pools[name]
	if !ok {
		return nil, fmt.Errorf("%s: %w", proxy.PoolPath(name), proxy.ErrNotFound)
	}
	if len(rules.RequestPoolDeletion(p, now)) > 0 {
		p.UpdateTime = s.tick()
		s.writes++
	}
	return rules.ClonePool(p), nil
}
