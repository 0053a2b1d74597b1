package providertest

import (
	"context"
	"sync"

	"github.com/egress-proxies/egress/internal/provider"
)

// Method names a provider method in call counts and injected errors.
type Method string

const (
	Create    Method = "Create"
	Get       Method = "Get"
	Delete    Method = "Delete"
	ListByTag Method = "ListByTag"
)

// Call is one recorded call. Arg is the CreateRequest's Name for Create, the
// providerID for Get and Delete, and empty for ListByTag.
type Call struct {
	Method Method
	Arg    string
	Err    error
}

// Recorder decorates a provider: it records every call and can make the next
// call of a method fail once with a given error, before the call reaches the
// inner provider. Tests of the reconciler and the GC use it to count provider
// calls and to drive error paths. It is safe for concurrent use.
type Recorder struct {
	inner provider.Provider

	mu     sync.Mutex
	calls  []Call
	inject map[Method][]error
}

var _ provider.Provider = (*Recorder)(nil)

// NewRecorder wraps inner.
func NewRecorder(inner provider.Provider) *Recorder {
	return &Recorder{inner: inner, inject: map[Method][]error{}}
}

// FailOnce makes the next call of m return err without reaching the inner
// provider. Several FailOnce calls queue up in order.
func (r *Recorder) FailOnce(m Method, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inject[m] = append(r.inject[m], err)
}

// Calls returns a copy of every call recorded so far, in order.
func (r *Recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Call(nil), r.calls...)
}

// Count returns how many times m was called, failed calls included.
func (r *Recorder) Count(m Method) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.calls {
		if c.Method == m {
			n++
		}
	}
	return n
}

// Reset forgets the recorded calls and any injected error not yet used.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = nil
	r.inject = map[Method][]error{}
}

// injected pops the next injected error for m, if any.
func (r *Recorder) injected(m Method) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.inject[m]
	if len(q) == 0 {
		return nil
	}
	r.inject[m] = q[1:]
	return q[0]
}

func (r *Recorder) record(m Method, arg string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, Call{Method: m, Arg: arg, Err: err})
}

func (r *Recorder) Create(ctx context.Context, req provider.CreateRequest) (string, error) {
	if err := r.injected(Create); err != nil {
		r.record(Create, req.Name, err)
		return "", err
	}
	id, err := r.inner.Create(ctx, req)
	r.record(Create, req.Name, err)
	return id, err
}

func (r *Recorder) Get(ctx context.Context, providerID string) (*provider.Instance, error) {
	if err := r.injected(Get); err != nil {
		r.record(Get, providerID, err)
		return nil, err
	}
	in, err := r.inner.Get(ctx, providerID)
	r.record(Get, providerID, err)
	return in, err
}

func (r *Recorder) Delete(ctx context.Context, providerID string) error {
	if err := r.injected(Delete); err != nil {
		r.record(Delete, providerID, err)
		return err
	}
	err := r.inner.Delete(ctx, providerID)
	r.record(Delete, providerID, err)
	return err
}

func (r *Recorder) ListByTag(ctx context.Context) ([]provider.Instance, error) {
	if err := r.injected(ListByTag); err != nil {
		r.record(ListByTag, "", err)
		return nil, err
	}
	list, err := r.inner.ListByTag(ctx)
	r.record(ListByTag, "", err)
	return list, err
}
