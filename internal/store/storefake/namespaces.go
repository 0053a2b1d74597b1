package storefake

import (
	"context"
	"fmt"
	"slices"

	"github.com/egress-proxies/egress/internal/store/rules"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// GetNamespace returns a copy of the namespace document.
func (s *Store) GetNamespace(_ context.Context, name string) (*tenancy.Namespace, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	ns, ok := s.namespaces[name]
	if !ok {
		return nil, fmt.Errorf("namespace %q: %w", name, tenancy.ErrNamespaceNotFound)
	}
	return ns.Clone(), nil
}

// ListNamespaces returns up to pageSize namespaces ordered by name, all of
// them or member's, and the next page's token, as the Firestore store's.
func (s *Store) ListNamespaces(_ context.Context, member string, pageSize int, pageToken string) ([]*tenancy.Namespace, string, error) {
	after, err := rules.ParsePageToken(pageToken)
	if err != nil {
		return nil, "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for name, ns := range s.namespaces {
		s.visits++
		if name > after && (member == "" || slices.Contains(ns.MemberEmails, member)) {
			names = append(names, name)
		}
	}
	names, next := page(names, pageSize)
	var out []*tenancy.Namespace
	for _, n := range names {
		s.reads++
		out = append(out, s.namespaces[n].Clone())
	}
	return out, next, nil
}

// CreateNamespace writes a new namespace document, or returns the existing
// one with tenancy.ErrNamespaceExists.
func (s *Store) CreateNamespace(_ context.Context, ns *tenancy.Namespace) (*tenancy.Namespace, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.namespaces[ns.Name]; ok {
		return old.Clone(), fmt.Errorf("creating namespace %q: %w", ns.Name, tenancy.ErrNamespaceExists)
	}
	doc := ns.Clone()
	doc.Index()
	doc.UpdateTime = s.tick()
	s.namespaces[ns.Name] = doc
	s.writes++
	return doc.Clone(), nil
}

// UpdateNamespace applies update to the namespace, as the Firestore
// store's: called with nil when there is none, and only the fields of
// rules.NamespaceUpdate are kept from what it makes.
func (s *Store) UpdateNamespace(_ context.Context, name string, update func(*tenancy.Namespace) error) (*tenancy.Namespace, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns, next := s.copyOf(name)
	if err := rules.Decide(name, next, update); err != nil {
		return nil, err
	}
	rules.NamespaceUpdate(next)
	ns.Members, ns.MemberEmails, ns.Quota, ns.Budget = next.Members, next.MemberEmails, next.Quota, next.Budget
	ns.BudgetAlerts, ns.TrafficStopped = next.BudgetAlerts, next.TrafficStopped
	ns.UpdateTime = s.tick()
	s.writes++
	return ns.Clone(), nil
}

// DeleteNamespace deletes the namespace if check lets it and it holds no
// proxies (rules.Deletable).
func (s *Store) DeleteNamespace(_ context.Context, name string, check func(*tenancy.Namespace) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns, view := s.copyOf(name)
	if err := rules.Decide(name, view, check); err != nil {
		return err
	}
	if err := rules.Deletable(ns); err != nil {
		return err
	}
	delete(s.namespaces, name)
	s.writes++
	s.tick()
	return nil
}

// copyOf returns the stored namespace and a copy of it for a caller to
// decide on, both nil when there is none. s.mu must be held.
func (s *Store) copyOf(name string) (stored, copied *tenancy.Namespace) {
	ns, ok := s.namespaces[name]
	if !ok {
		return nil, nil
	}
	return ns, ns.Clone()
}
