package storefake_test

import (
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/store/storefake"
	"github.com/egress-proxies/egress/internal/store/storetest"
)

// TestMemStore runs the same contract as the Firestore store's emulator
// test, so the simulation's store behaves as the real one does.
func TestMemStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Store {
		return storefake.New(clock.NewFake(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)))
	})
}
