package storefake

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/egress-proxies/egress/internal/account"
	"github.com/egress-proxies/egress/internal/proxy"
)

// PutAccount creates or replaces the account, as the Firestore store's:
// the create time of its first write stays.
func (s *Store) PutAccount(_ context.Context, a account.Account, now time.Time) (*account.Account, error) {
	if !proxy.IsLabel(a.ID) {
		return nil, fmt.Errorf("putting account %q: the id is not a label", a.ID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.accounts == nil {
		s.accounts = map[string]account.Account{}
	}
	a.CreateTime = now
	if old, ok := s.accounts[a.ID]; ok {
		a.CreateTime = old.CreateTime
	}
	a.UpdateTime = s.tick()
	s.accounts[a.ID] = cloneAccount(a)
	s.writes++
	return new(cloneAccount(a)), nil
}

// GetAccount returns a copy of the account: an error wrapping
// proxy.ErrNotFound when there is none.
func (s *Store) GetAccount(_ context.Context, id string) (*account.Account, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	a, ok := s.accounts[id]
	if !ok {
		return nil, fmt.Errorf("reading %s/%s: %w", account.Collection, id, proxy.ErrNotFound)
	}
	return new(cloneAccount(a)), nil
}

// ListAccounts returns every account, ordered by id.
func (s *Store) ListAccounts(context.Context) ([]account.Account, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := slices.Sorted(maps.Keys(s.accounts))
	out := make([]account.Account, 0, len(ids))
	for _, id := range ids {
		s.reads++
		out = append(out, cloneAccount(s.accounts[id]))
	}
	return out, nil
}

// DeleteAccount removes the account; an absent one is no error.
func (s *Store) DeleteAccount(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.accounts[id]; ok {
		delete(s.accounts, id)
		s.writes++
	}
	return nil
}

// CountPlaced counts the documents of provider type typ placed in region
// of account id, as the Firestore store's count aggregation does.
func (s *Store) CountPlaced(_ context.Context, typ, id, region string) (int, error) {
	if id == account.Default {
		return 0, errors.New("counting the proxies of the default account: its proxies carry no status.account to count by")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	n := 0
	for _, d := range s.docs {
		s.visits++
		if d.Spec.Provider == typ && d.Status.Account == id && d.Spec.Placement.Region == region {
			n++
		}
	}
	return n, nil
}

func cloneAccount(a account.Account) account.Account {
	a.Settings = maps.Clone(a.Settings)
	a.Regions = slices.Clone(a.Regions)
	return a
}
