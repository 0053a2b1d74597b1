package reconcile_test

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
)

// interleaved is the mock with a hook run once, at the next Delete,
// before the Delete reaches the mock: another run's whole reconcile fits
// there, as it does between a run's read and its call in production.
type interleaved struct {
	*mock.Provider
	beforeDelete func()
}

func (p *interleaved) Delete(ctx context.Context, id string) error {
	if f := p.beforeDelete; f != nil {
		p.beforeDelete = nil
		f()
	}
	return p.Provider.Delete(ctx, id)
}

// TestAResumedReplacementTakesTheLeaseFirst checks that a run which finds
// a document Replacing, past the lease of the run cut short that wrote it,
// takes the lease before it deletes the VM: a second run that read the
// document at the same time then stops at the lease, rather than
// replacing the VM too. Before, the resuming run deleted first; the
// second one's replacement (a new VM under the proxy's name, so under the
// same providerID with the mock and Compute) was then deleted by the
// first run's Delete, sent late, and the proxy was left naming a VM that
// was gone. The simulation found it (seed 5979 of 10,000, two runs of
// one proxy acting on its VM at once).
func TestAResumedReplacementTakesTheLeaseFirst(t *testing.T) {
	w := newWorld(t, reconcile.Options{})
	prov := &interleaved{Provider: w.mock}
	w.r = reconcile.New(w.store, providers{prov}, w.queue, nil, w.clock, slog.New(slog.DiscardHandler), reconcile.Options{Rand: rand.New(rand.NewPCG(5, 6))})
	p := w.ready()
	old := p.Status.ProviderID
	// A run recorded Replacing with its lease and was cut short; its lease
	// has run out since.
	w.update(func(p *proxy.Proxy) {
		p.Status.Phase = proxy.PhaseReplacing
		p.Reconciler.LeaseHolder = "cut-short"
		p.Reconciler.LeaseExpireTime = w.clock.Now().Add(-time.Second)
	})
	w.forget()
	seen := ""
	prov.beforeDelete = func() {
		// The sweep's run reads the document while the first run is
		// about to delete its VM.
		if err := w.r.Reconcile(context.Background(), w.key, reconcile.Trigger{Reason: proxy.ReasonSweep}); err != nil {
			t.Fatal(err)
		}
		seen = w.doc().Reconciler.LeaseHolder
	}
	if err := w.r.Reconcile(context.Background(), w.key, reconcile.Trigger{Reason: proxy.ReasonWritten}); err != nil {
		t.Fatal(err)
	}
	if seen == "" || seen == "cut-short" {
		t.Errorf("the second run found lease holder %q: the first run acted before it took the lease", seen)
	}

	type outcome struct {
		Phase     proxy.Phase
		Names     bool // the document names a VM that is there
		Instances int
		Calls     map[mock.Method]int
	}
	got := outcome{Phase: w.doc().Status.Phase, Instances: len(w.mock.Instances()), Calls: w.calls()}
	for _, in := range w.mock.Instances() {
		got.Names = got.Names || in.ID == w.doc().Status.ProviderID && in.State != provider.StateStopped
	}
	// One Delete of the old VM, one Get that finds it gone, one Create of
	// the new one, all by the first run; the second read and stopped.
	want := outcome{Phase: proxy.PhaseProvisioning, Names: true, Instances: 1,
		Calls: map[mock.Method]int{mock.MethodDelete: 1, mock.MethodGet: 1, mock.MethodCreate: 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after the two runs (-want +got):\n%s\nthe old VM was %s", diff, old)
	}
}
