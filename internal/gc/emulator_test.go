package gc_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/emulators/emulatortest"
	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/gc"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

// TestCollectAgainstFirestore runs one collection over 200 documents in the
// Firestore emulator, each with its VM in the mock provider, and 50 orphaned
// VMs of mixed ages: exactly the orphans past the grace period must go.
func TestCollectAgainstFirestore(t *testing.T) {
	emulatortest.Firestore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a bound against a hang, generous for a busy machine
	defer cancel()
	fs, err := firestore.NewClient(ctx, emulatortest.ProjectID(t))
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	st := store.New(fs, nil) // the collector opens no credentials

	start := time.Now().UTC().Truncate(time.Millisecond)
	clk := clock.NewFake(start)
	p := mock.New(mock.Options{Clock: clk})

	// 200 live documents, 3 of them stuck in Creating since the start.
	var want []string
	var stuck []proxy.Key
	for i := range 200 {
		doc := &proxy.Proxy{
			Namespace: fmt.Sprintf("team-%d", i%4), Name: fmt.Sprintf("p%03d", i),
			UID:    fmt.Sprintf("00000000-0000-4000-8000-%012d", i),
			Spec:   proxy.Spec{Provider: mock.Type, Port: proxy.DefaultPort},
			Status: proxy.Status{Phase: proxy.PhaseReady},
		}
		if i < 3 {
			doc.Status.Phase = proxy.PhaseCreating
			doc.Reconciler.ProgressTime = start
			stuck = append(stuck, doc.Key())
		}
		if _, err := st.Create(ctx, doc, 1000); err != nil {
			t.Fatalf("creating %s: %v", doc.Key(), err)
		}
		want = append(want, create(t, p, doc.UID))
	}
	// 25 orphans from the start, 25 made just under a grace period later.
	for i := range 50 {
		if i == 25 {
			clk.Advance(gc.DefaultGracePeriod - time.Minute)
		}
		id := create(t, p, fmt.Sprintf("00000000-0000-4000-9000-%012d", i))
		if i >= 25 {
			want = append(want, id)
		}
	}
	clk.Advance(2 * time.Minute)

	req := &fakeRequeuer{}
	c := gc.New(providersOf(t, map[string]provider.Provider{mock.Type: p}), st, req, clk, slog.New(slog.DiscardHandler), gc.Options{})
	report, err := c.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}

	wantSummary := []gc.Summary{{Provider: mock.Type, Scanned: 250, Claimed: 200, TooYoung: 25, Orphaned: 25, Deleted: 25}}
	if diff := cmp.Diff(wantSummary, report.Providers); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, ids(p)); diff != "" {
		t.Errorf("instances left (-want +got):\n%s", diff)
	}
	var wantReqs []string
	for _, k := range stuck {
		wantReqs = append(wantReqs, k.Path()+" "+string(proxy.ReasonSweep))
	}
	if diff := cmp.Diff(wantReqs, req.requests()); diff != "" {
		t.Errorf("sweep requests (-want +got):\n%s", diff)
	}
}
