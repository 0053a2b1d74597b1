package main

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/egress-proxies/egress/internal/provider"
)

// fleet is the cloud of the garbage-collection run: n VMs of this
// deployment, Running since created, the i-th of uid gcUID(i) and named
// from it as the mock names its VMs. It lists as a provider does, a slice
// of its own for each call, whose strings the fleet holds; Delete removes
// a VM from the listings. It holds nothing else.
//
// It is not a mock.Provider, so that what the run adds to the worker's
// memory is the collector's own: a mock holding 100,000 VMs (and their
// requests, faults and engines) is 83 MB of live heap, which Go's
// collector doubles into headroom (GOGC=100) that the run's garbage then
// fills, and the run's memory per instance measured the mock. A real
// provider holds no fleet either: it decodes its listing off the wire
// for each run.
type fleet struct {
	// The collector calls only ListByTag and Delete; the rest of the
	// contract panics.
	provider.Provider

	mu        sync.Mutex
	instances []provider.Instance
	deleted   map[string]bool
}

func newFleet(n int, created time.Time) *fleet {
	f := &fleet{instances: make([]provider.Instance, n), deleted: map[string]bool{}}
	for i := range f.instances {
		uid := gcUID(i)
		f.instances[i] = provider.Instance{
			ID: "mock://" + provider.NameFromUID(uid), UID: uid, State: provider.StateRunning, CreatedAt: created,
			Zone: "us-central1-a", Deployment: provider.DefaultDeployment,
		}
	}
	return f
}

func (f *fleet) ListByTag(context.Context) ([]provider.Instance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(f.instances), func(in provider.Instance) bool { return f.deleted[in.ID] }), nil
}

// Delete removes the VM from the listings; deleting one that is not there
// succeeds, as the contract says.
func (f *fleet) Delete(_ context.Context, providerID string) error {
	if providerID == "" {
		return errors.New("fleet: delete of an empty providerID")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted[providerID] = true
	return nil
}
