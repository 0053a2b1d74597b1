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

// reporting is the mock provider whose running VMs report traffic, as a
// gcp VM does in its guest attribute egress/traffic.
type reporting struct {
	*mock.Provider
	traffic *provider.Traffic
}

func (p reporting) Get(ctx context.Context, id string) (*provider.Instance, error) {
	inst, err := p.Provider.Get(ctx, id)
	if err != nil || inst.State != provider.StateRunning {
		return inst, err
	}
	withTraffic := *inst
	withTraffic.Traffic = p.traffic
	return &withTraffic, nil
}

// TestStatusShowsTraffic: what the VM reported of its traffic is the
// proxy's status.traffic once the reconciler has looked, and a later look
// shows the later report.
func TestStatusShowsTraffic(t *testing.T) {
	w := newWorld(t, reconcile.Options{})
	report := &provider.Traffic{BytesIn: 1200, BytesOut: 1 << 20, Connections: 7, ReportTime: start.Add(time.Minute)}
	w.r = reconcile.New(w.store, providers{reporting{Provider: w.mock, traffic: report}}, w.queue, secrets{}, w.clock,
		slog.New(slog.DiscardHandler), reconcile.Options{Rand: rand.New(rand.NewPCG(1, 2))})
	p := w.ready()
	want := &proxy.Traffic{BytesIn: 1200, BytesOut: 1 << 20, Connections: 7, ReportTime: start.Add(time.Minute)}
	if diff := cmp.Diff(want, p.Status.Traffic); diff != "" {
		t.Errorf("status.traffic once Ready (-want +got):\n%s", diff)
	}
	*report = provider.Traffic{BytesIn: 2400, BytesOut: 2 << 20, Connections: 9, ReportTime: start.Add(2 * time.Minute)}
	w.reconcile(reconcile.Trigger{Reason: proxy.ReasonSweep})
	want = &proxy.Traffic{BytesIn: 2400, BytesOut: 2 << 20, Connections: 9, ReportTime: start.Add(2 * time.Minute)}
	if diff := cmp.Diff(want, w.doc().Status.Traffic); diff != "" {
		t.Errorf("status.traffic after a later look (-want +got):\n%s", diff)
	}
}
