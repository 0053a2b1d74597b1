package storefake

import (
	"context"
	"fmt"
	"time"

	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store/rules"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// RequestDeletion marks the document for deletion (rules.RequestDeletion).
func (s *Store) RequestDeletion(_ context.Context, key proxy.Key, now time.Time) (*proxy.Proxy, error) {
	return s.change(key, func(p *proxy.Proxy) ([]rules.Field, error) { return rules.RequestDeletion(p, now), nil })
}

// RequestRotation asks for the proxy's VM to be rotated
// (rules.RequestRotation) and counts it against the namespace's bound
// (rules.CountCreation), as the Firestore store's: both or nothing.
func (s *Store) RequestRotation(_ context.Context, key proxy.Key, now time.Time, limits tenancy.Limits) (*proxy.Proxy, error) {
	return s.changeCounted(key, func(p *proxy.Proxy, ns *tenancy.Namespace) ([]rules.Field, []rules.Field, error) {
		fields, err := rules.RequestRotation(p, now, limits.RotateMinInterval)
		if err != nil {
			return nil, nil, err
		}
		counted, err := rules.CountCreation(ns, now, limits.CreatesPerHour)
		return fields, counted, err
	})
}

// UpdateSpec applies a change of the proxy's reconfigurable fields, as
// the Firestore store's (rules.UpdateSpec; rules.LiveReplacement when it
// gives the proxy a new VM).
func (s *Store) UpdateSpec(_ context.Context, key proxy.Key, now time.Time, limits tenancy.Limits, update func(proxy.Spec) (proxy.Spec, error)) (*proxy.Proxy, error) {
	return s.changeCounted(key, func(p *proxy.Proxy, ns *tenancy.Namespace) ([]rules.Field, []rules.Field, error) {
		return rules.LiveChange(p, ns, now, limits, func() ([]rules.Field, error) { return rules.UpdateSpec(p, now, update) })
	})
}

// RotateCredentials draws new credentials and counts a generation, as
// the Firestore store's (rules.RotateCredentials; rules.LiveReplacement
// when it gives the proxy a new VM).
func (s *Store) RotateCredentials(_ context.Context, key proxy.Key, now time.Time, limits tenancy.Limits) (*proxy.Proxy, error) {
	return s.changeCounted(key, func(p *proxy.Proxy, ns *tenancy.Namespace) ([]rules.Field, []rules.Field, error) {
		return rules.LiveChange(p, ns, now, limits, func() ([]rules.Field, error) { return rules.RotateCredentials(p, now) })
	})
}

// changeCounted applies what rule changes of the document and of its
// namespace's, both or neither, as the Firestore store's one transaction
// over the two; a rule that changes neither writes nothing.
func (s *Store) changeCounted(key proxy.Key, rule func(*proxy.Proxy, *tenancy.Namespace) ([]rules.Field, []rules.Field, error)) (*proxy.Proxy, error) {
	s.mu.Lock()
	doc, ok := s.docs[key]
	if !ok {
		s.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", key, proxy.ErrNotFound)
	}
	ns, counted := s.copyOf(key.Namespace)
	next := clone(doc)
	fields, nsFields, err := rule(next, counted)
	if err != nil || len(fields)+len(nsFields) == 0 {
		defer s.mu.Unlock()
		if err != nil {
			return nil, err
		}
		return clone(doc), nil
	}
	t := s.tick()
	if len(nsFields) > 0 && ns != nil {
		s.countIn(ns, counted, t)
	}
	if len(fields) == 0 {
		defer s.mu.Unlock()
		return clone(doc), nil
	}
	old := clone(doc)
	next.UpdateTime = t
	s.index(next)
	return clone(next), s.changed(Change{Key: key, Old: old, New: clone(next)})
}

// countIn writes what a rule counted in counted, a copy of ns, to ns at
// t: its logs of VMs and of claims. s.mu must be held.
func (s *Store) countIn(ns, counted *tenancy.Namespace, t time.Time) {
	ns.Creations, ns.PoolClaims, ns.UpdateTime = counted.Creations, counted.PoolClaims, t
	s.writes++
}

// change applies what rule changes of the document; a rule that changes
// nothing writes nothing.
func (s *Store) change(key proxy.Key, rule func(*proxy.Proxy) ([]rules.Field, error)) (*proxy.Proxy, error) {
	s.mu.Lock()
	doc, ok := s.docs[key]
	if !ok {
		s.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", key, proxy.ErrNotFound)
	}
	next := clone(doc)
	fields, err := rule(next)
	if err != nil || len(fields) == 0 {
		defer s.mu.Unlock()
		if err != nil {
			return nil, err
		}
		return clone(doc), nil
	}
	old := clone(doc)
	next.UpdateTime = s.tick()
	s.index(next)
	return clone(next), s.changed(Change{Key: key, Old: old, New: clone(next)})
}
