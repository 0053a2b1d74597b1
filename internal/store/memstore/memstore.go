// Package memstore is an in-memory document store with the Firestore
// semantics the reconciler and the garbage collector rely on: create fails
// when the document exists, every write gets a new, strictly later update
// time, writes carrying a stale update time are refused, and each change is
// reported to a watcher as Firestore reports it to Eventarc.
//
// It exists for the pure logic's tests and for the fault simulation, which
// need thousands of schedules per second; the emulator tests of
// internal/store check that the real store behaves the same way on the same
// operations.
package memstore

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/proxy"
)

// Change is one write to a document: Old is nil for a create, New is nil for
// a delete. Both are copies the watcher may keep.
type Change struct {
	Key      proxy.Key
	Old, New *proxy.Proxy
}

// Store is the in-memory store. The zero value is not usable; call New.
type Store struct {
	clock clock.Clock

	mu     sync.Mutex
	docs   map[proxy.Key]*proxy.Proxy
	last   time.Time
	watch  func(Change)
	writes int
	reads  int
}

// New returns an empty store whose update times come from clk.
func New(clk clock.Clock) *Store {
	return &Store{clock: clk, docs: map[proxy.Key]*proxy.Proxy{}}
}

// Watch sets the function told of every change, after it is applied and
// outside the store's lock (so the watcher may call the store).
func (s *Store) Watch(fn func(Change)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watch = fn
}

// Counts returns how many document reads and writes the store has served.
func (s *Store) Counts() (reads, writes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads, s.writes
}

// Create writes a new document, failing with proxy.ErrAlreadyExists (and
// the existing document) when the name is taken and with
// proxy.ErrQuotaExceeded when the namespace already holds quota documents.
func (s *Store) Create(_ context.Context, p *proxy.Proxy, quota int) (*proxy.Proxy, error) {
	s.mu.Lock()
	key := p.Key()
	if old, ok := s.docs[key]; ok {
		defer s.mu.Unlock()
		return clone(old), fmt.Errorf("%s: %w", key, proxy.ErrAlreadyExists)
	}
	n := 0
	for k := range s.docs {
		if k.Namespace == key.Namespace {
			n++
		}
	}
	if n >= quota {
		s.mu.Unlock()
		return nil, fmt.Errorf("namespace %q holds %d proxies, its quota: %w", key.Namespace, n, proxy.ErrQuotaExceeded)
	}
	doc := clone(p)
	doc.UpdateTime = s.tick()
	if doc.CreateTime.IsZero() {
		doc.CreateTime = doc.UpdateTime
	}
	s.docs[key] = doc
	return clone(doc), s.changed(Change{Key: key, New: clone(doc)})
}

// Get returns a copy of the document.
func (s *Store) Get(_ context.Context, key proxy.Key) (*proxy.Proxy, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	doc, ok := s.docs[key]
	if !ok {
		return nil, fmt.Errorf("%s: %w", key, proxy.ErrNotFound)
	}
	return clone(doc), nil
}

// List returns up to pageSize documents of a namespace ordered by name, and
// the next page's token: the last name returned.
func (s *Store) List(_ context.Context, namespace string, pageSize int, pageToken string) ([]*proxy.Proxy, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for k := range s.docs {
		if k.Namespace == namespace && k.Name > pageToken {
			names = append(names, k.Name)
		}
	}
	slices.Sort(names)
	var out []*proxy.Proxy
	for _, n := range names[:min(pageSize, len(names))] {
		s.reads++
		out = append(out, clone(s.docs[proxy.Key{Namespace: namespace, Name: n}]))
	}
	next := ""
	if len(names) > pageSize {
		next = out[len(out)-1].Name
	}
	return out, next, nil
}

// RequestDeletion marks the document for deletion as the API does.
func (s *Store) RequestDeletion(_ context.Context, key proxy.Key, now time.Time) (*proxy.Proxy, error) {
	s.mu.Lock()
	doc, ok := s.docs[key]
	if !ok {
		s.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", key, proxy.ErrNotFound)
	}
	if doc.DeleteRequestTime != nil {
		defer s.mu.Unlock()
		return clone(doc), nil
	}
	old := clone(doc)
	t := now
	doc.DeleteRequestTime = &t
	doc.Status.Phase = proxy.PhaseDeleting
	doc.Reconciler.ProgressTime = now
	doc.UpdateTime = s.tick()
	return clone(doc), s.changed(Change{Key: key, Old: old, New: clone(doc)})
}

// UpdateStatus replaces status and bookkeeping when p.UpdateTime is still
// the document's update time.
func (s *Store) UpdateStatus(_ context.Context, p *proxy.Proxy) (time.Time, error) {
	s.mu.Lock()
	key := p.Key()
	doc, ok := s.docs[key]
	switch {
	case !ok:
		s.mu.Unlock()
		return time.Time{}, fmt.Errorf("%s: %w", key, proxy.ErrNotFound)
	case !doc.UpdateTime.Equal(p.UpdateTime):
		s.mu.Unlock()
		return time.Time{}, fmt.Errorf("%s changed since %s: %w", key, p.UpdateTime.Format(time.RFC3339Nano), proxy.ErrConflict)
	}
	old := clone(doc)
	next := clone(p)
	doc.Status, doc.Reconciler = next.Status, next.Reconciler
	doc.UpdateTime = s.tick()
	t := doc.UpdateTime
	return t, s.changed(Change{Key: key, Old: old, New: clone(doc)})
}

// Delete removes the document when updateTime is still its update time.
func (s *Store) Delete(_ context.Context, key proxy.Key, updateTime time.Time) error {
	s.mu.Lock()
	doc, ok := s.docs[key]
	switch {
	case !ok:
		s.mu.Unlock()
		return fmt.Errorf("%s: %w", key, proxy.ErrNotFound)
	case !doc.UpdateTime.Equal(updateTime):
		s.mu.Unlock()
		return fmt.Errorf("%s changed since %s: %w", key, updateTime.Format(time.RFC3339Nano), proxy.ErrConflict)
	}
	delete(s.docs, key)
	s.writes++
	s.tick()
	return s.changed(Change{Key: key, Old: doc})
}

// LiveUIDs returns, by uid, the key, phase, maxAge and boot start of every
// document.
func (s *Store) LiveUIDs(context.Context) (map[string]proxy.Claim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	uids := make(map[string]proxy.Claim, len(s.docs))
	for k, d := range s.docs {
		s.reads++
		uids[d.UID] = proxy.Claim{Key: k, Phase: d.Status.Phase, MaxAge: d.Spec.MaxAge, BootStart: d.Reconciler.BootStart}
	}
	return uids, nil
}

// Stalled returns up to limit documents whose progress time is set and
// before `before`, oldest first.
func (s *Store) Stalled(_ context.Context, before time.Time, limit int) ([]proxy.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var docs []*proxy.Proxy
	for _, d := range s.docs {
		if t := d.Reconciler.ProgressTime; !t.IsZero() && t.Before(before) {
			docs = append(docs, d)
		}
	}
	sort.Slice(docs, func(i, j int) bool {
		return docs[i].Reconciler.ProgressTime.Before(docs[j].Reconciler.ProgressTime)
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
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b proxy.Key) int {
		if a.Namespace != b.Namespace {
			return compare(a.Namespace, b.Namespace)
		}
		return compare(a.Name, b.Name)
	})
	return keys
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// tick returns the next update time: the clock's time, moved on when
// needed so update times strictly increase (Firestore's have microsecond
// precision, so do these). Called with s.mu held.
func (s *Store) tick() time.Time {
	t := s.clock.Now().UTC().Truncate(time.Microsecond)
	if !t.After(s.last) {
		t = s.last.Add(time.Microsecond)
	}
	s.last = t
	return t
}

// changed counts a write, releases the lock and tells the watcher.
func (s *Store) changed(c Change) error {
	if c.New != nil {
		s.writes++
	}
	watch := s.watch
	s.mu.Unlock()
	if watch != nil {
		watch(c)
	}
	return nil
}

// clone deep-copies a document, so callers never share memory with the
// store, as with a real database.
func clone(p *proxy.Proxy) *proxy.Proxy {
	c := *p
	c.Spec.AllowedSourceRanges = slices.Clone(p.Spec.AllowedSourceRanges)
	c.Status.Conditions = slices.Clone(p.Status.Conditions)
	if p.DeleteRequestTime != nil {
		t := *p.DeleteRequestTime
		c.DeleteRequestTime = &t
	}
	return &c
}
