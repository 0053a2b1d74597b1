package sealing

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// KeysetsCollection holds the wrapped keysets, one document each
// (keysets/credentials). No trigger watches it.
const KeysetsCollection = "keysets"

// Firestore is the KeysetStore of a Firestore database.
type Firestore struct{ Client *firestore.Client }

type keysetDoc struct {
	// Wrapped is the Tink keyset, encrypted with the KEK.
	Wrapped []byte `firestore:"wrapped"`
	// KEK names the key that wraps it.
	KEK        string    `firestore:"kek"`
	CreateTime time.Time `firestore:"createTime"`
	// RotateTime is when a new primary key was last added (rotate.go);
	// zero before the first rotation.
	RotateTime time.Time `firestore:"rotateTime,omitempty"`
}

// Keyset reads keysets/{name}.
func (f Firestore) Keyset(ctx context.Context, name string) ([]byte, string, error) {
	ref := f.Client.Collection(KeysetsCollection).Doc(name)
	snap, err := ref.Get(ctx)
	switch {
	case status.Code(err) == codes.NotFound:
		return nil, "", fmt.Errorf("%s: %w", ref.Path, ErrNoKeyset)
	case err != nil:
		return nil, "", fmt.Errorf("reading %s: %w", ref.Path, err)
	}
	var d keysetDoc
	if err := snap.DataTo(&d); err != nil {
		return nil, "", fmt.Errorf("decoding %s: %w", ref.Path, err)
	}
	return d.Wrapped, d.KEK, nil
}

// CreateKeyset creates keysets/{name}, unless it exists.
func (f Firestore) CreateKeyset(ctx context.Context, name string, wrapped []byte, kek string) error {
	ref := f.Client.Collection(KeysetsCollection).Doc(name)
	_, err := ref.Create(ctx, keysetDoc{Wrapped: wrapped, KEK: kek, CreateTime: time.Now().UTC()})
	switch {
	case status.Code(err) == codes.AlreadyExists:
		return fmt.Errorf("%s: %w", ref.Path, ErrKeysetExists)
	case err != nil:
		return fmt.Errorf("creating %s: %w", ref.Path, err)
	}
	return nil
}

// KeysetTime is when keysets/{name} was last rotated, or made.
func (f Firestore) KeysetTime(ctx context.Context, name string) (time.Time, error) {
	ref := f.Client.Collection(KeysetsCollection).Doc(name)
	snap, err := ref.Get(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("reading %s: %w", ref.Path, err)
	}
	var d keysetDoc
	if err := snap.DataTo(&d); err != nil {
		return time.Time{}, fmt.Errorf("decoding %s: %w", ref.Path, err)
	}
	if d.RotateTime.After(d.CreateTime) {
		return d.RotateTime, nil
	}
	return d.CreateTime, nil
}

// ReplaceKeyset stores wrapped in keysets/{name} in a transaction that
// finds prev still there, and returns ErrKeysetChanged otherwise.
func (f Firestore) ReplaceKeyset(ctx context.Context, name string, prev, wrapped []byte, kek string, at time.Time) error {
	ref := f.Client.Collection(KeysetsCollection).Doc(name)
	err := f.Client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		snap, err := tx.Get(ref)
		if err != nil {
			return err
		}
		var d keysetDoc
		if err := snap.DataTo(&d); err != nil {
			return err
		}
		if !bytes.Equal(d.Wrapped, prev) {
			return ErrKeysetChanged
		}
		return tx.Update(ref, []firestore.Update{{Path: "wrapped", Value: wrapped}, {Path: "kek", Value: kek}, {Path: "rotateTime", Value: at.UTC()}})
	})
	if err != nil {
		return fmt.Errorf("replacing %s: %w", ref.Path, err)
	}
	return nil
}
