// Package storefake is the test double of package store: an in-memory
// document store with the Firestore semantics the reconciler and the garbage collector rely on: create fails
// when the document exists, every write gets a new, strictly later update
// time, writes carrying a stale update time are refused, and each change is
// reported to a watcher as Firestore reports it to Eventarc. Namespace
// documents are kept too, with the per-namespace counter a create and a
// delete change, as internal/store keeps them; their changes are no proxy
// events and reach no watcher.
//
// What the two stores decide alike is package rules', which both call.
//
// It exists for the pure logic's tests and for the fault simulation, which
// need thousands of schedules per second; the emulator tests of
// internal/store check that the real store behaves the same way on the same
// operations.
package storefake

import (
	"context"
	"fmt"
	"github.com/egress-proxies/egress/internal/account"
	"slices"
	"sync"
	"time"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store/rules"
	"github.com/egress-proxies/egress/internal/tenancy"
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

	mu   sync.Mutex
	docs map[proxy.Key]*proxy.Proxy
	// byParent holds the documents of each namespace and pool (parentOf),
	// by name, and progressing those with a progress time: what List,
	// Members and Stalled read, as Firestore's indexes let a query read
	// only what it returns. index and unindex keep them.
	byParent    map[string]map[string]*proxy.Proxy
	progressing map[proxy.Key]*proxy.Proxy
	// visits counts the stored documents and namespaces calls looked at
	// (Visits).
	visits     int
	namespaces map[string]*tenancy.Namespace
	pools      map[string]*proxy.Pool
	accounts   map[string]account.Account
	last       time.Time
	watch      func(Change)
	writes     int
	reads      int
}

// New returns an empty store whose update times come from clk.
func New(clk clock.Clock) *Store {
	return &Store{clock: clk, docs: map[proxy.Key]*proxy.Proxy{}, byParent: map[string]map[string]*proxy.Proxy{},
		progressing: map[proxy.Key]*proxy.Proxy{}, namespaces: map[string]*tenancy.Namespace{}, pools: map[string]*proxy.Pool{}}
}

// parentOf names the namespace or pool a document is in.
func parentOf(k proxy.Key) string {
	if k.IsMember() {
		return proxy.PoolPath(k.Pool)
	}
	return "namespaces/" + k.Namespace
}

// index stores doc as its key's document, or stores it again after a
// change in place, in every index. Called with s.mu held.
func (s *Store) index(doc *proxy.Proxy) {
	k := doc.Key()
	s.docs[k] = doc
	siblings := s.byParent[parentOf(k)]
	if siblings == nil {
		siblings = map[string]*proxy.Proxy{}
		s.byParent[parentOf(k)] = siblings
	}
	siblings[k.Name] = doc
	if doc.Reconciler.ProgressTime.IsZero() {
		delete(s.progressing, k)
	} else {
		s.progressing[k] = doc
	}
}

// unindex removes the document of k from every index. Called with s.mu
// held.
func (s *Store) unindex(k proxy.Key) {
	delete(s.docs, k)
	if siblings := s.byParent[parentOf(k)]; siblings != nil {
		delete(siblings, k.Name)
		if len(siblings) == 0 {
			delete(s.byParent, parentOf(k))
		}
	}
	delete(s.progressing, k)
}

// Visits returns how many stored documents and namespaces the store's
// calls have looked at: a query looks at the documents its index holds
// (a namespace's, a pool's, the progressing ones), LiveUIDs at every
// document. A test bounds it to hold the store's calls to the work
// Firestore's would do, whatever the fleet (work_test.go).
func (s *Store) Visits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.visits
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
// Like the Firestore store's, it makes the namespace's counter when there
// is none.
func (s *Store) Create(ctx context.Context, p *proxy.Proxy, quota int) (*proxy.Proxy, error) {
	return s.create(ctx, p, false, func(*tenancy.Namespace) (tenancy.Limits, error) { return tenancy.Limits{Quota: quota}, nil })
}

// CreateInNamespace is Create in a namespace that must exist, admitted by
// admit, as the Firestore store's.
func (s *Store) CreateInNamespace(ctx context.Context, p *proxy.Proxy, admit tenancy.Admission) (*proxy.Proxy, error) {
	return s.create(ctx, p, true, admit)
}

func (s *Store) create(_ context.Context, p *proxy.Proxy, needNamespace bool, admit tenancy.Admission) (*proxy.Proxy, error) {
	s.mu.Lock()
	key := p.Key()
	if key.IsMember() {
		return s.createMember(p)
	}
	ns := s.namespaces[key.Namespace]
	var view *tenancy.Namespace
	if ns != nil {
		view = ns.Clone()
	}
	limits, err := admit(view)
	if err == nil && ns == nil && needNamespace {
		err = fmt.Errorf("namespace %q: %w", key.Namespace, tenancy.ErrNamespaceNotFound)
	}
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	if old, ok := s.docs[key]; ok {
		defer s.mu.Unlock()
		return clone(old), fmt.Errorf("%s: %w", key, proxy.ErrAlreadyExists)
	}
	count := int64(0)
	if ns != nil {
		count = ns.ProxyCount
	}
	if err := rules.Admit(key.Namespace, count, limits.Quota); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	if ns != nil {
		counted := ns.Clone()
		if _, err := rules.CountCreation(counted, p.CreateTime, limits.CreatesPerHour); err != nil {
			s.mu.Unlock()
			return nil, err
		}
		ns.Creations = counted.Creations
	}
	if ns == nil {
		ns = &tenancy.Namespace{Name: key.Namespace}
		s.namespaces[key.Namespace] = ns
	}
	ns.ProxyCount++
	ns.ProxyCreates++
	doc := clone(p)
	// The create time is the caller's, as the Firestore store stores it:
	// neither store makes one up.
	doc.UpdateTime = s.tick()
	ns.UpdateTime = doc.UpdateTime
	s.index(doc)
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

// ListSealed is List without the proxies' passwords and console tails,
// as the real store's ListSealed leaves them sealed.
func (s *Store) ListSealed(ctx context.Context, namespace string, pageSize int, pageToken string) ([]*proxy.Proxy, string, error) {
	out, next, err := s.List(ctx, namespace, pageSize, pageToken)
	for _, p := range out {
		p.Reconciler.Credentials.Password = ""
		p.Status.ConsoleTail = nil
	}
	return out, next, err
}

// List returns up to pageSize documents of a namespace ordered by name, and
// the next page's token (rules.PageToken).
func (s *Store) List(_ context.Context, namespace string, pageSize int, pageToken string) ([]*proxy.Proxy, string, error) {
	after, err := rules.ParsePageToken(pageToken)
	if err != nil {
		return nil, "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	parent := parentOf(proxy.Key{Namespace: namespace})
	for name := range s.byParent[parent] {
		s.visits++
		if name > after {
			names = append(names, name)
		}
	}
	names, next := page(names, pageSize)
	var out []*proxy.Proxy
	for _, n := range names {
		s.reads++
		out = append(out, clone(s.byParent[parent][n]))
	}
	return out, next, nil
}

// page sorts the names past a page token and keeps a page of them, with
// the next page's token ("" after the last), as the Firestore store pages
// by name.
func page(names []string, pageSize int) ([]string, string) {
	slices.Sort(names)
	if len(names) > pageSize {
		return names[:pageSize], rules.PageToken(names[pageSize-1])
	}
	return names, ""
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
	s.index(doc)
	t := doc.UpdateTime
	return t, s.changed(Change{Key: key, Old: old, New: clone(doc)})
}

// UpdateStatusCounted is UpdateStatus that also counts a VM caused at at
// against the namespace's bound of perHour (rules.CountCreation), both or
// neither, as the Firestore store's.
func (s *Store) UpdateStatusCounted(_ context.Context, p *proxy.Proxy, at time.Time, perHour int) (time.Time, error) {
	out, err := s.changeCounted(p.Key(), func(cur *proxy.Proxy, ns *tenancy.Namespace) ([]rules.Field, []rules.Field, error) {
		if !cur.UpdateTime.Equal(p.UpdateTime) {
			return nil, nil, fmt.Errorf("%s changed since %s: %w", p.Key(), p.UpdateTime.Format(time.RFC3339Nano), proxy.ErrConflict)
		}
		counted, err := rules.CountCreation(ns, at, perHour)
		next := clone(p)
		cur.Status, cur.Reconciler = next.Status, next.Reconciler
		return rules.StatusUpdate(cur), counted, err
	})
	if err != nil {
		return time.Time{}, err
	}
	return out.UpdateTime, nil
}

// Delete removes the document when updateTime is still its update time.
func (s *Store) Delete(_ context.Context, key proxy.Key, updateTime time.Time, spent ...proxy.Spent) error {
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
	s.unindex(key)
	if ns := s.namespaces[key.Namespace]; ns != nil && !key.IsMember() {
		ns.ProxyCount--
		for _, sp := range spent {
			if sp.Nanos != 0 {
				if ns.DeletedSpend == nil {
					ns.DeletedSpend = map[string]int64{}
				}
				ns.DeletedSpend[sp.Month] += sp.Nanos
			}
		}
	}
	s.writes++
	s.tick()
	return s.changed(Change{Key: key, Old: doc})
}

// compare orders two strings, for sorting keys and members.
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
	c.RotateRequestTime = copyTime(p.RotateRequestTime)
	c.ReplaceRequestTime = copyTime(p.ReplaceRequestTime)
	c.Status.RotationWaitUntil = copyTime(p.Status.RotationWaitUntil)
	c.Spec.ConnectPorts = slices.Clone(p.Spec.ConnectPorts)
	c.Reconciler.FullZones = slices.Clone(p.Reconciler.FullZones)
	if p.ClaimedBy != nil {
		cb := *p.ClaimedBy
		c.ClaimedBy = &cb
	}
	return &c
}

// copyTime is a copy of *t, nil for nil.
func copyTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}
