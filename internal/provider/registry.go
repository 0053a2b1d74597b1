package provider

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Constructor builds a provider. Configuration (a project, credentials, a
// fake's clock) is captured by the closure at the composition root, so the
// registry knows nothing of any provider's settings.
type Constructor func(ctx context.Context) (Provider, error)

// ErrNotConfigured is what the registry and a Set answer for a provider
// type they do not hold: one that is not in PROVIDERS, such as a provider
// removed while documents still name it. Test for it with errors.Is.
var ErrNotConfigured = errors.New("provider type not configured")

// notConfigured says which type is missing and which are there.
func notConfigured(typ string, known []string) error {
	return fmt.Errorf("%w: %q is not among the configured types (PROVIDERS: %s)", ErrNotConfigured, typ, strings.Join(known, ", "))
}

// typePattern is what a provider type looks like: a short lowercase word, as
// it appears in a proxy's spec.provider.
var typePattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)

// Registry maps a provider type ("mock", "gcp", …) to its constructor and
// its validator (the rules of a spec it can serve). It is a
// value built at the composition root, never a package-level global filled by
// init functions: which providers exist is a decision of the binary that wires
// them, and tests build registries of their own.
//
// A Registry is safe for concurrent use.
type Registry struct {
	mu   sync.RWMutex
	regs map[string]registration
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{regs: map[string]registration{}}
}

// Register adds a provider type, with its validator when given
// (WithValidator); a type registered without one has no rules of its own.
// It fails for an invalid type name, a nil constructor, and a type that
// is already registered, since two constructors for one type would make
// the choice depend on wiring order.
func (r *Registry) Register(typ string, c Constructor, opts ...Option) error {
	if !typePattern.MatchString(typ) {
		return fmt.Errorf("provider registry: type %q is not valid: want a lowercase word matching %s", typ, typePattern)
	}
	if c == nil {
		return fmt.Errorf("provider registry: type %q has a nil constructor", typ)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.regs[typ]; ok {
		return fmt.Errorf("provider registry: type %q is already registered", typ)
	}
	reg := registration{ctor: c}
	for _, o := range opts {
		o(&reg)
	}
	r.regs[typ] = reg
	return nil
}

// Validate checks a request against the rules of provider type typ. An
// unknown type is an error that lists the known ones.
func (r *Registry) Validate(typ string, req ValidateRequest) ([]Violation, error) {
	r.mu.RLock()
	reg, ok := r.regs[typ]
	r.mu.RUnlock()
	if !ok {
		return nil, notConfigured(typ, r.Types())
	}
	if reg.validate == nil {
		return nil, nil
	}
	return reg.validate(req), nil
}

// New constructs a provider of the given type. An unknown type is an error
// that lists the known ones.
func (r *Registry) New(ctx context.Context, typ string) (Provider, error) {
	r.mu.RLock()
	reg, ok := r.regs[typ]
	r.mu.RUnlock()
	if !ok {
		return nil, notConfigured(typ, r.Types())
	}
	p, err := reg.ctor(ctx)
	if err != nil {
		return nil, fmt.Errorf("provider registry: constructing %q: %w", typ, err)
	}
	return p, nil
}

// InPlace reports whether typ was registered as taking live changes in
// place (InPlace); false for an unknown type.
func (r *Registry) InPlace(typ string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.regs[typ].inPlace
}

// IPv6Prefix is the length of the routed IPv6 prefix typ's VMs get, as
// registered (IPv6Prefix); 0 for none and for an unknown type.
func (r *Registry) IPv6Prefix(typ string) int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.regs[typ].ipv6Prefix
}

// Has reports whether typ is registered.
func (r *Registry) Has(typ string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.regs[typ]
	return ok
}

// Types returns the registered types, sorted.
func (r *Registry) Types() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	types := make([]string, 0, len(r.regs))
	for t := range r.regs {
		types = append(types, t)
	}
	slices.Sort(types)
	return types
}

// Set hands out one instance of each provider type, constructed on first
// use: a provider holds clients and connections (and the mock holds its
// instances), so every reconcile and GC run of a process must share it.
// A Set is safe for concurrent use.
type Set struct {
	reg  *Registry
	mu   sync.Mutex
	made map[string]Provider
	// accounts reads the settings of an account other than the default;
	// nil: the set hands out the default account's providers only.
	accounts AccountLookup
	// byAccount are the providers of the accounts other than the
	// default, made as made's are.
	byAccount map[accountKey]Provider
}

// NewSet returns a Set over the registry's types.
func NewSet(reg *Registry) *Set {
	return &Set{reg: reg, made: map[string]Provider{}, byAccount: map[accountKey]Provider{}}
}

// Get returns the provider of type typ, constructing it the first time. A
// failed construction is not remembered, so a later call tries again.
func (s *Set) Get(ctx context.Context, typ string) (Provider, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.made[typ]; ok {
		return p, nil
	}
	p, err := s.reg.New(ctx, typ)
	if err != nil {
		return nil, err
	}
	if _, ok := AsReconfigurer(p); s.reg.InPlace(typ) && !ok {
		return nil, fmt.Errorf("provider registry: type %q is registered as taking live changes in place (InPlace), but its provider %T cannot reconfigure a VM", typ, p)
	}
	s.made[typ] = p
	return p, nil
}

// Types returns the types the set can hand out, sorted.
func (s *Set) Types() []string { return s.reg.Types() }

// Has reports whether the set can hand out a provider of type typ.
func (s *Set) Has(typ string) bool { return s.reg.Has(typ) }

// InPlace reports whether the VMs of provider type typ take live changes
// in place (the registration's InPlace).
func (s *Set) InPlace(typ string) bool { return s.reg.InPlace(typ) }

// IPv6Prefix is the length of the routed IPv6 prefix the VMs of provider
// type typ get (the registration's IPv6Prefix); 0 for none.
func (s *Set) IPv6Prefix(typ string) int { return s.reg.IPv6Prefix(typ) }

// Validate checks a request against the rules of provider type typ, as
// its registration gave them.
func (s *Set) Validate(typ string, req ValidateRequest) ([]Violation, error) {
	return s.reg.Validate(typ, req)
}
