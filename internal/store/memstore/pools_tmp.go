package memstore

import (
	"context"
	"fmt"
	"time"

	"github.com/egress-proxies/egress/internal/proxy"
)

// GetPool and PutPool, until the API's (memstore/pools.go) replace them.

// GetPool returns a copy of the pool document.
func (s *Store) GetPool(_ context.Context, name string) (*proxy.Pool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	p, ok := s.pools[name]
	if !ok {
		return nil, fmt.Errorf("%s: %w", proxy.PoolPath(name), proxy.ErrNotFound)
	}
	return clonePool(p), nil
}

// PutPool creates the pool, or changes the spec of an existing one
// (generation + 1 when it changed), and returns it as written.
func (s *Store) PutPool(_ context.Context, p *proxy.Pool) (*proxy.Pool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	old, ok := s.pools[p.Name]
	next := clonePool(p)
	switch {
	case !ok:
		next.Generation = 1
	default:
		next = clonePool(old)
		if next.Spec != p.Spec {
			next.Spec = p.Spec
			next.Generation++
		}
	}
	next.UpdateTime = s.tick()
	s.pools[p.Name] = next
	s.writes++
	return clonePool(next), nil
}

// RequestPoolDeletion marks the pool for deletion at now (kept from the
// first request).
func (s *Store) RequestPoolDeletion(_ context.Context, name string, now time.Time) (*proxy.Pool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pools[name]
	if !ok {
		return nil, fmt.Errorf("%s: %w", proxy.PoolPath(name), proxy.ErrNotFound)
	}
	if p.DeleteRequestTime == nil {
		p.DeleteRequestTime = &now
		p.UpdateTime = s.tick()
		s.writes++
	}
	return clonePool(p), nil
}
