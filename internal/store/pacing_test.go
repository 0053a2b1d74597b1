package store_test

import (
	"context"
	"testing"

	"cloud.google.com/go/firestore"

	"github.com/egress-proxies/egress/emulators/emulatortest"
	"github.com/egress-proxies/egress/internal/pacing"
	"github.com/egress-proxies/egress/internal/pacing/pacingtest"
	"github.com/egress-proxies/egress/internal/store"
)

// TestFirestorePacing runs the budgets' store contract against the
// Firestore emulator, one project per case.
func TestFirestorePacing(t *testing.T) {
	emulatortest.Firestore(t)
	pacingtest.Run(t, func(t *testing.T) pacing.Store {
		return store.NewPacing(client(t, emulatortest.ProjectID(t)))
	})
}

// TestFirestorePacingAcrossInstances: function instances each with a
// client of their own (so that no process's queue orders them, and
// only Firestore's transactions do) fill the windows of a scaled-down
// budget exactly, and no window holds more.
func TestFirestorePacingAcrossInstances(t *testing.T) {
	emulatortest.Firestore(t)
	project := emulatortest.ProjectID(t)
	stores := make([]pacing.Store, pacingtest.Instances)
	for i := range stores {
		stores[i] = store.NewPacing(client(t, project))
	}
	pacingtest.WindowsFillAndHold(t, stores)
}

func client(t *testing.T, project string) *firestore.Client {
	t.Helper()
	c, err := firestore.NewClient(context.Background(), project)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
