package store_test

import (
	"context"
	"testing"

	"cloud.google.com/go/firestore"

	"github.com/egress-proxies/egress/internal/emulatortest"
	"github.com/egress-proxies/egress/internal/store"
	"github.com/egress-proxies/egress/internal/store/storetest"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

// TestFirestoreStore runs the store contract against the Firestore
// emulator, one project per subtest.
func TestFirestoreStore(t *testing.T) {
	emulatortest.Firestore(t)
	storetest.Run(t, func(t *testing.T) storetest.Store {
		client, err := firestore.NewClient(context.Background(), emulatortest.ProjectID(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.Close() })
		return store.New(client)
	})
}
