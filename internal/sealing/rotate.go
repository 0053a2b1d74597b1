package sealing

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/tink-crypto/tink-go/v2/aead"
	"github.com/tink-crypto/tink-go/v2/keyset"
)

// Key rotation. The keyset gains a new primary key on a schedule
// (RotationPeriod): new values are sealed with it, and the older keys stay
// in the keyset to open what they sealed. Each rotation wraps the keyset
// again with the KEK, which for Cloud KMS encrypts with the key's primary
// version of the day: so once a rotation has run after a KMS rotation,
// the keyset needs only the new KMS version, and the older ones may be
// disabled (docs/operations/key-rotation.md). A value sealed with an older
// key is sealed again with the primary on its document's next write
// (package store: Stale).
//
// Who rotates: every process that holds the key (the ProxyAPI and
// Reconcile) checks, when it loads the keyset, whether the last rotation
// is older than the period, and rotates if so; it loads the keyset again
// each ReloadAfter, so a long-lived instance checks too, and takes the
// keys another instance added. Two processes that rotate at once agree:
// the store replaces the keyset only if it is still the one the rotation
// read (ErrKeysetChanged), and the loser reads the winner's.

// RotationPeriod is how old the keyset's primary key may get.
const RotationPeriod = 30 * 24 * time.Hour

// ReloadAfter is how long a process uses the keyset it loaded before
// reading it again (one KMS decrypt each time).
const ReloadAfter = time.Hour

// ErrKeysetChanged is what a KeysetRotator's ReplaceKeyset returns when
// the stored keyset is no longer the one the rotation read.
var ErrKeysetChanged = errors.New("the stored keyset changed")

// KeysetRotator is a KeysetStore that can replace its keyset, for
// rotation. KeysetTime is when the keyset was made or last rotated.
// ReplaceKeyset stores wrapped in place of prev only if prev is still
// what is stored, and returns ErrKeysetChanged otherwise.
type KeysetRotator interface {
	KeysetStore
	KeysetTime(ctx context.Context, name string) (time.Time, error)
	ReplaceKeyset(ctx context.Context, name string, prev, wrapped []byte, kek string, at time.Time) error
}

// Rotate adds a new primary key to the stored keyset, keeps the older ones
// to open what they sealed, wraps it again with the KEK and stores it in
// place of the one it read. It returns the new primary key's id.
func (k *Keyring) Rotate(ctx context.Context, now time.Time) (uint32, error) {
	rot, ok := k.store.(KeysetRotator)
	if !ok {
		return 0, fmt.Errorf("keysets/%s: this keyset store cannot replace a keyset", KeysetName)
	}
	prev, _, err := k.store.Keyset(ctx, KeysetName)
	if err != nil {
		return 0, err
	}
	h, err := k.unwrap(prev)
	if err != nil {
		return 0, err
	}
	m := keyset.NewManagerFromHandle(h)
	id, err := m.Add(aead.AES256GCMKeyTemplate())
	if err != nil {
		return 0, fmt.Errorf("keysets/%s: a new key: %w", KeysetName, err)
	}
	if err := m.SetPrimary(id); err != nil {
		return 0, fmt.Errorf("keysets/%s: key %d as primary: %w", KeysetName, id, err)
	}
	if h, err = m.Handle(); err != nil {
		return 0, err
	}
	wrapped, err := k.wrap(h)
	if err != nil {
		return 0, err
	}
	if err := rot.ReplaceKeyset(ctx, KeysetName, prev, wrapped, k.kek.Name, now); err != nil {
		return 0, err
	}
	if err := k.use(h, now); err != nil {
		return 0, err
	}
	return id, nil
}

// RotateIfDue rotates the keyset when its last rotation is older than
// every. It reports whether it rotated; a rotation another process made
// first (ErrKeysetChanged) is no error, and its keyset is loaded.
func (k *Keyring) RotateIfDue(ctx context.Context, now time.Time, every time.Duration) (bool, error) {
	rot, ok := k.store.(KeysetRotator)
	if !ok || every <= 0 {
		return false, nil
	}
	at, err := rot.KeysetTime(ctx, KeysetName)
	if err != nil || now.Sub(at) < every {
		return false, err
	}
	_, err = k.Rotate(ctx, now)
	if errors.Is(err, ErrKeysetChanged) {
		// Another process rotated first: use its keyset.
		h, err := k.read(ctx)
		if err == nil {
			err = k.use(h, now)
		}
		return false, err
	}
	return err == nil, err
}

// Stale reports whether sealed was sealed with a key that is not the
// keyset's primary (as this process last loaded it): its document should
// be sealed again. A value this process cannot tell is not stale.
func (k *Keyring) Stale(sealed string) bool {
	k.mu.Lock()
	primary, loaded := k.primary, k.aead != nil
	k.mu.Unlock()
	ct, err := base64.StdEncoding.DecodeString(sealed)
	// Tink's prefix: a version byte (1), then the key's id, big-endian.
	if !loaded || err != nil || len(ct) < 5 || ct[0] != 1 {
		return false
	}
	return binary.BigEndian.Uint32(ct[1:5]) != primary
}

// unwrap opens a wrapped keyset with the KEK.
func (k *Keyring) unwrap(wrapped []byte) (*keyset.Handle, error) {
	h, err := keyset.ReadWithAssociatedData(keyset.NewBinaryReader(bytes.NewReader(wrapped)), k.kek.AEAD, keysetAssociatedData)
	if err != nil {
		return nil, fmt.Errorf("unwrapping keysets/%s with key %s: %w", KeysetName, k.kek.Name, err)
	}
	return h, nil
}

// wrap encrypts a keyset with the KEK.
func (k *Keyring) wrap(h *keyset.Handle) ([]byte, error) {
	var buf bytes.Buffer
	if err := h.WriteWithAssociatedData(keyset.NewBinaryWriter(&buf), k.kek.AEAD, keysetAssociatedData); err != nil {
		return nil, fmt.Errorf("wrapping keysets/%s with key %s: %w", KeysetName, k.kek.Name, err)
	}
	return buf.Bytes(), nil
}

// use makes h the keyset this process seals and opens with.
func (k *Keyring) use(h *keyset.Handle, now time.Time) error {
	a, err := aead.New(h)
	if err != nil {
		return fmt.Errorf("keysets/%s: %w", KeysetName, err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.aead, k.primary, k.loadedAt = a, h.KeysetInfo().GetPrimaryKeyId(), now
	return nil
}
