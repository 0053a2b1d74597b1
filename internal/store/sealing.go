package store

import (
	"context"
	"fmt"

	"cloud.google.com/go/firestore"

	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store/rules"
)

// A proxy's password is never in a document in clear: proxy.Credentials
// has no Firestore field for it, and the store seals it (Sealer) into
// reconciler.credentials.sealedPassword before any write that carries new
// credentials, and opens it on every read, where it has a Sealer. The
// collector's store has none: it reads no password, and the documents it
// reads keep theirs sealed.
//
// A document written before sealing keeps its password in clear in
// reconciler.credentials.password: the store reads it (so the proxy goes
// on working), Get writes it back sealed at once, and any other write of
// the credentials seals it too.

// Sealer seals and opens a proxy's password, bound to the proxy's uid
// (package sealing's Keyring).
type Sealer interface {
	Seal(ctx context.Context, password, uid string) (string, error)
	Open(ctx context.Context, sealed, uid string) (string, error)
}

// legacyPasswordField is where documents written before sealing keep the
// password, in clear.
const legacyPasswordField = rules.CredentialsField + ".password"

// decode reads a proxy document and opens its password.
func (s *Store) decode(ctx context.Context, snap *firestore.DocumentSnapshot) (*proxy.Proxy, error) {
	p, err := decode(snap)
	if err != nil {
		return nil, err
	}
	c := &p.Reconciler.Credentials
	switch {
	case c.Sealed != "":
		if s.sealer == nil {
			return p, nil
		}
		if c.Password, err = s.sealer.Open(ctx, c.Sealed, p.UID); err != nil {
			return nil, fmt.Errorf("opening the credentials of %s: %w", snap.Ref.Path, err)
		}
	case c.Username != "":
		if v, err := snap.DataAt(legacyPasswordField); err == nil {
			c.Password, _ = v.(string)
		}
	}
	return p, nil
}

// decoder is decode for the functions that take a decoder.
func (s *Store) decoder(ctx context.Context) func(*firestore.DocumentSnapshot) (*proxy.Proxy, error) {
	return func(snap *firestore.DocumentSnapshot) (*proxy.Proxy, error) { return s.decode(ctx, snap) }
}

// seal seals p's password if it is not sealed yet (new credentials, or a
// document's from before sealing), in place, so that what the caller keeps
// of p is what the store wrote.
func (s *Store) seal(ctx context.Context, p *proxy.Proxy) error {
	c := &p.Reconciler.Credentials
	if !c.Unsealed() {
		return nil
	}
	if s.sealer == nil {
		// Writing them without the password would lose it.
		return fmt.Errorf("%s has new credentials and this process has no key to seal them with (CREDENTIALS_KEY): nothing is written", p.Key())
	}
	sealed, err := s.sealer.Seal(ctx, c.Password, p.UID)
	if err != nil {
		return fmt.Errorf("sealing the credentials of %s: %w", p.Key(), err)
	}
	c.Sealed = sealed
	return nil
}

// sealFields seals p's credentials and gives the fields that write them
// the sealed value.
func (s *Store) sealFields(ctx context.Context, p *proxy.Proxy, fields []rules.Field) ([]rules.Field, error) {
	for i, f := range fields {
		switch f.Value.(type) {
		case proxy.Credentials:
			if err := s.seal(ctx, p); err != nil {
				return nil, err
			}
			fields[i].Value = p.Reconciler.Credentials
		case proxy.Bookkeeping:
			if err := s.seal(ctx, p); err != nil {
				return nil, err
			}
			fields[i].Value = p.Reconciler
		}
	}
	return fields, nil
}

// resealLegacy writes back sealed the password of a document read in
// clear, if the document has not changed since: the one write it costs is
// made once per such document. A conflict leaves it to the next read or
// write.
func (s *Store) resealLegacy(ctx context.Context, p *proxy.Proxy) {
	c := p.Reconciler.Credentials
	if !c.Unsealed() || s.sealer == nil {
		return
	}
	if err := s.seal(ctx, p); err != nil {
		p.Reconciler.Credentials = c
		return
	}
	wr, err := s.ref(p.Key()).Update(ctx, []firestore.Update{{Path: rules.CredentialsField, Value: p.Reconciler.Credentials}},
		firestore.LastUpdateTime(p.UpdateTime))
	if err != nil {
		p.Reconciler.Credentials = c
		return
	}
	metering.Add(ctx, metering.FirestoreWrite, 1)
	p.UpdateTime = wr.UpdateTime
}
