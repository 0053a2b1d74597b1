package sealing

import (
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
