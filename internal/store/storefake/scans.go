package storefake

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/egress-proxies/egress/internal/proxy"
)

// LiveUIDs returns, by uid, the key, phase, provider, rotation and cost
// fields of every document.
func (s *Store) LiveUIDs(context.Context) (map[string]proxy.Claim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	uids := make(map[string]proxy.Claim, len(s.docs))
	for k, d := range s.docs {
		s.visits++
		s.reads++
		c := proxy.Claim{Key: k, Phase: d.Status.Phase, Provider: d.Spec.Provider, ProviderID: d.Status.ProviderID, Account: d.Status.Account,
			MaxAge: d.Spec.MaxAge, BootStart: d.Reconciler.BootStart, Claimed: d.ClaimedBy != nil,
			RotateRequestTime: copyTime(d.RotateRequestTime), RotationWaitUntil: copyTime(d.Status.RotationWaitUntil), Cost: proxy.ClaimCostOf(d.Status.Cost)}
		uids[d.UID] = c
	}
	return uids, nil
}

// Stalled returns up to limit documents whose progress time is set and
// before `before`, oldest first.
func (s *Store) Stalled(_ context.Context, before time.Time, limit int) ([]proxy.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var docs []*proxy.Proxy
	for _, d := range s.progressing {
		s.visits++
		if t := d.Reconciler.ProgressTime; t.Before(before) {
			docs = append(docs, d)
		}
	}
	// Firestore orders a query's ties by document name: so does the
	// fake, whose documents come out of a map in any order (a schedule of
	// package sim re-drove stalled documents in another order run after
	// run, and did not replay from its seed).
	slices.SortFunc(docs, func(a, b *proxy.Proxy) int {
		if c := a.Reconciler.ProgressTime.Compare(b.Reconciler.ProgressTime); c != 0 {
			return c
		}
		return strings.Compare(a.Key().Path(), b.Key().Path())
	})
	var keys []proxy.Key
	for _, d := range docs[:min(limit, len(docs))] {
		s.reads++
		keys = append(keys, d.Key())
	}
	return keys, nil
}

// Keys returns the keys of every document, sorted, for tests and
// invariant checks.
func (s *Store) Keys() []proxy.Key {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]proxy.Key, 0, len(s.docs))
	for k := range s.docs {
		s.visits++
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b proxy.Key) int {
		if a.Pool != b.Pool {
			return compare(a.Pool, b.Pool)
		}
		if a.Namespace != b.Namespace {
			return compare(a.Namespace, b.Namespace)
		}
		return compare(a.Name, b.Name)
	})
	return keys
}
