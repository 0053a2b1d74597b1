package store

import (
	"context"
	"encoding/json"
	"fmt"

	"cloud.google.com/go/firestore"

	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/sealing"
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

// A Failed proxy's console tail is sealed the same way, for the API
// shows it to editors only while a project Viewer reads every document:
// status.sealedConsoleTail holds it, bound to the uid and to its purpose
// (sealing.PurposeConsoleTail), so it opens neither in another document
// nor as a password. A store with the key seals the tail afresh on each
// write that carries the status (with the keyset's primary key of the
// day) and drops the field when the tail is cleared; a store without it
// writes the sealed value it read untouched.

// Sealer seals and opens a proxy's password, bound to the proxy's uid
// (package sealing's Keyring), and SealAs and OpenAs the same for another
// purpose (sealing.PurposeConsoleTail).
type Sealer interface {
	Seal(ctx context.Context, password, uid string) (string, error)
	Open(ctx context.Context, sealed, uid string) (string, error)
	SealAs(ctx context.Context, purpose, plaintext, uid string) (string, error)
	OpenAs(ctx context.Context, purpose, sealed, uid string) (string, error)
}

// staler tells a value sealed with a key that is no longer the keyset's
// primary (sealing.Keyring, after a rotation).
type staler interface {
	Stale(sealed string) bool
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
	if err := s.openTail(ctx, p); err != nil {
		// A tail sealed with a keyset that is gone (the KMS key lost,
		// docs/operations/key-rotation.md) is shown no more, and is
		// dropped by the document's next status write.
		p.Status.ConsoleTail = nil
	}
	c := &p.Reconciler.Credentials
	switch {
	case c.Sealed != "":
		if s.sealer == nil {
			return p, nil
		}
		if c.Password, err = s.sealer.Open(ctx, c.Sealed, p.UID); err != nil {
			if replacingCredentials(ctx) {
				// :rotateCredentials needs no old password: it is how
				// a proxy whose password no key opens any more gets a
				// new one.
				c.Password = ""
				return p, nil
			}
			return nil, fmt.Errorf("opening the credentials of %s: %w", snap.Ref.Path, err)
		}
		if st, ok := s.sealer.(staler); ok && st.Stale(c.Sealed) {
			// Sealed with a key older than the keyset's primary: sealed
			// again by this document's next write of its credentials
			// (Get writes it at once, as resealLegacy does).
			c.Sealed = ""
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
	if err := s.sealTail(ctx, p); err != nil {
		return err
	}
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
		case proxy.Status:
			// The field's own status, which may be the caller's and not
			// p's: its tail is what is written.
			st := f.Value.(proxy.Status)
			if err := s.sealStatusTail(ctx, &st, p.Key(), p.UID); err != nil {
				return nil, err
			}
			fields[i].Value = st
		}
	}
	return fields, nil
}

// resealLegacy writes back sealed the password of a document read in
// clear, or sealed with a key older than the primary, if the document has
// not changed since: the one write it costs is
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

// sealTail seals p's console tail into status.sealedConsoleTail, or
// clears that field when p has no tail. Without a key it leaves what it
// read, and refuses a new tail it could only lose.
func (s *Store) sealTail(ctx context.Context, p *proxy.Proxy) error {
	return s.sealStatusTail(ctx, &p.Status, p.Key(), p.UID)
}

// sealStatusTail is sealTail of a status of the proxy key, of uid.
func (s *Store) sealStatusTail(ctx context.Context, st *proxy.Status, key proxy.Key, uid string) error {
	if s.sealer == nil {
		if len(st.ConsoleTail) > 0 && st.SealedConsoleTail == "" {
			return fmt.Errorf("%s has a console tail and this process has no key to seal it with (CREDENTIALS_KEY): nothing is written", key)
		}
		return nil
	}
	if len(st.ConsoleTail) == 0 {
		st.SealedConsoleTail = ""
		return nil
	}
	lines, err := json.Marshal(st.ConsoleTail)
	if err != nil {
		return fmt.Errorf("the console tail of %s: %w", key, err)
	}
	sealed, err := s.sealer.SealAs(ctx, sealing.PurposeConsoleTail, string(lines), uid)
	if err != nil {
		return fmt.Errorf("sealing the console tail of %s: %w", key, err)
	}
	st.SealedConsoleTail = sealed
	return nil
}

// openTail opens p's sealed console tail, where this store has the key.
func (s *Store) openTail(ctx context.Context, p *proxy.Proxy) error {
	if p.Status.SealedConsoleTail == "" || s.sealer == nil {
		return nil
	}
	lines, err := s.sealer.OpenAs(ctx, sealing.PurposeConsoleTail, p.Status.SealedConsoleTail, p.UID)
	if err != nil {
		return err
	}
	return json.Unmarshal([]byte(lines), &p.Status.ConsoleTail)
}

type replacingKey struct{}

// replacing marks ctx as a write that replaces the credentials, which
// reads a document whose password does not open.
func replacing(ctx context.Context) context.Context {
	return context.WithValue(ctx, replacingKey{}, true)
}

func replacingCredentials(ctx context.Context) bool {
	v, _ := ctx.Value(replacingKey{}).(bool)
	return v
}
