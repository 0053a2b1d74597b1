package provider

import (
	"context"
	"errors"
	"fmt"
)

// Several accounts of one cloud: the registry builds one provider per
// (type, account), each from the cloud's plugin with the account's
// settings over the deployment's (package account holds the documents
// that say them). The account "" is the deployment's default, the
// provider Set.Get hands out: a deployment without accounts makes no
// other.

// AccountSpec is what an account's provider is made with: the account
// ("" the default), the settings it sets over the deployment's, by the
// cloud's variable names, and its budget of calls when not the cloud's.
type AccountSpec struct {
	ID       string
	Settings map[string]string
	// CallsPerWindow is the account's budget of API calls in each window
	// of its cloud's rate (a raised limit); 0 is the cloud's default.
	CallsPerWindow int
}

// AccountConstructor makes the constructor of the provider of one
// account of a type. Its error says which setting cannot be (a value the
// variable's check refuses). The composition root decorates what it
// makes (metering, pacing) with the account in hand.
type AccountConstructor func(acct AccountSpec) (Constructor, error)

// PerAccount registers how the type's providers of accounts other than
// the default are made. A type registered without it serves the default
// account only.
func PerAccount(c AccountConstructor) Option {
	return func(r *registration) { r.perAccount = c }
}

// AccountLookup reads an account other than the default: the provider
// type whose VMs it holds and what its provider is made with. An account
// that does not exist is an error wrapping ErrNoAccount.
type AccountLookup func(ctx context.Context, id string) (typ string, acct AccountSpec, err error)

// ErrNoAccount is what an AccountLookup and Set.Account answer for an
// account they do not know.
var ErrNoAccount = errors.New("no such account")

// accountKey names one account's provider in a Set.
type accountKey struct{ typ, id string }

// WithAccounts lets the set hand out the providers of accounts other than
// the default, whose settings lookup reads when one is first asked for.
// It returns s.
func (s *Set) WithAccounts(lookup AccountLookup) *Set {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.accounts = lookup
	return s
}

// Account returns the provider of type typ in account id, constructing it
// the first time; id "" is the default account's (Get). The account's
// settings are read once, when its provider is first made: a changed
// account document takes effect in the function instances started after
// the change (docs/operations/accounts.md). A failed construction is not
// remembered.
func (s *Set) Account(ctx context.Context, typ, id string) (Provider, error) {
	if id == "" {
		return s.Get(ctx, typ)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := accountKey{typ, id}
	if p, ok := s.byAccount[key]; ok {
		return p, nil
	}
	if s.accounts == nil {
		return nil, fmt.Errorf("provider registry: account %q of %q: %w (this process reads no accounts)", id, typ, ErrNoAccount)
	}
	s.reg.mu.RLock()
	reg, ok := s.reg.regs[typ]
	s.reg.mu.RUnlock()
	if !ok {
		return nil, notConfigured(typ, s.reg.Types())
	}
	if reg.perAccount == nil {
		return nil, fmt.Errorf("provider registry: account %q: type %q serves its default account only (it was registered without PerAccount)", id, typ)
	}
	holds, acct, err := s.accounts(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("provider registry: reading account %q: %w", id, err)
	}
	if holds != typ {
		return nil, fmt.Errorf("provider registry: account %q holds the VMs of %q, not of %q", id, holds, typ)
	}
	acct.ID = id
	ctor, err := reg.perAccount(acct)
	if err != nil {
		return nil, fmt.Errorf("provider registry: account %q of %q: %w", id, typ, err)
	}
	p, err := ctor(ctx)
	if err != nil {
		return nil, fmt.Errorf("provider registry: constructing %q for account %q: %w", typ, id, err)
	}
	if _, ok := AsReconfigurer(p); reg.inPlace && !ok {
		return nil, fmt.Errorf("provider registry: type %q is registered as taking live changes in place (InPlace), but its provider %T of account %q cannot reconfigure a VM", typ, p, id)
	}
	s.byAccount[key] = p
	return p, nil
}
