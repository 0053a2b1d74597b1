package gc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/gc"
	"github.com/egress-proxies/egress/internal/logging"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fakeStore is the document store as the collector sees it.
type fakeStore struct {
	mu         sync.Mutex
	uids       map[string]proxy.Claim
	uidsErr    error
	stalled    []proxy.Key
	stalledErr error
	// what Stalled was asked
	before time.Time
	limit  int
}

func (s *fakeStore) LiveUIDs(context.Context) (map[string]proxy.Claim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.uidsErr != nil {
		return nil, s.uidsErr
	}
	out := make(map[string]proxy.Claim, len(s.uids))
	for u, c := range s.uids {
		out[u] = c
	}
	return out, nil
}

func (s *fakeStore) Stalled(_ context.Context, before time.Time, limit int) ([]proxy.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.before, s.limit = before, limit
	if s.stalledErr != nil {
		return nil, s.stalledErr
	}
	return s.stalled, nil
}

// uidSet claims the uids for documents still on their way (Creating), so
// the drift check leaves them alone.
//
// A test that expects deletions needs at least one document: with none at
// all the guard refuses every deletion (TestGuard). elsewhere is the uid
// of a proxy whose VM is not in the test's provider.
const elsewhere = "uid-of-a-proxy-elsewhere"

func uidSet(uids ...string) map[string]proxy.Claim {
	m := map[string]proxy.Claim{}
	for i, u := range uids {
		m[u] = proxy.Claim{Key: proxy.Key{Namespace: "ns", Name: fmt.Sprintf("doc-%d", i)}, Phase: proxy.PhaseCreating}
	}
	return m
}

// fakeRequeuer records the reconcile requests and fails those for failFor.
type fakeRequeuer struct {
	mu      sync.Mutex
	got     []string
	failFor string
}

func (r *fakeRequeuer) Publish(_ context.Context, m proxy.ReconcileMessage) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m.Document == r.failFor {
		return errors.New("publish failed")
	}
	r.got = append(r.got, m.Document+" "+string(m.Reason))
	return nil
}

func (r *fakeRequeuer) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.got)
	slices.Sort(out)
	return out
}

// providersOf builds a *provider.Set (the production type) over the given
// providers by type.
func providersOf(t testing.TB, ps map[string]provider.Provider) *provider.Set {
	t.Helper()
	reg := provider.NewRegistry()
	for typ, p := range ps {
		if err := reg.Register(typ, func(context.Context) (provider.Provider, error) { return p, nil }); err != nil {
			t.Fatal(err)
		}
	}
	return provider.NewSet(reg)
}

// create makes a managed instance of uid at the clock's current time, as the
// reconciler does.
func create(t *testing.T, p *mock.Provider, uid string) string {
	t.Helper()
	id, err := p.Create(context.Background(), provider.CreateRequest{Name: provider.NameFromUID(uid), UID: uid})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func ids(p *mock.Provider) []string {
	var out []string
	for _, in := range p.Instances() {
		out = append(out, in.ID)
	}
	slices.Sort(out)
	return out
}

// failingDelete fails the Delete of one providerID.
type failingDelete struct {
	*mock.Provider
	id  string
	err error
}

func (f failingDelete) Delete(ctx context.Context, id string) error {
	if id == f.id {
		return f.err
	}
	return f.Provider.Delete(ctx, id)
}

// wideList lists every instance of the mock's project, whatever its
// deployment: a provider that lists wider than the contract allows.
type wideList struct {
	provider.Provider
	m *mock.Provider
}

func (w wideList) ListByTag(context.Context) ([]provider.Instance, error) {
	return w.m.Instances(), nil
}

type logLine map[string]any

func logLines(t *testing.T, buf *bytes.Buffer) []logLine {
	t.Helper()
	var out []logLine
	for _, b := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		if len(b) == 0 {
			continue
		}
		var l logLine
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatalf("log line %q is not JSON: %v", b, err)
		}
		out = append(out, l)
	}
	return out
}

func TestCollectOrphans(t *testing.T) {
	errBoom := errors.New("boom")
	type world struct {
		p     *mock.Provider
		clock *clock.Fake
		store *fakeStore
		// failDelete is a providerID whose Delete fails with failErr
		// (errBoom if unset).
		failDelete string
		failErr    error
		// wide makes ListByTag list every managed instance of the
		// project, of every deployment: a provider that breaks the
		// contract, which the collector must survive.
		wide bool
	}
	cases := map[string]struct {
		reason string
		opts   gc.Options
		// setup plants instances and documents and returns the IDs that
		// must be left.
		setup   func(t *testing.T, w *world) (keep []string)
		want    gc.Summary
		wantErr bool
		// wantWarning is a providerID a WARNING line must name.
		wantWarning string
	}{
		"OldOrphanDeleted": {
			reason: "an unclaimed managed instance older than the grace period is deleted",
			setup: func(t *testing.T, w *world) []string {
				create(t, w.p, "uid-gone")
				w.clock.Advance(gc.DefaultGracePeriod + time.Second)
				return nil
			},
			want: gc.Summary{Provider: "mock", Scanned: 1, Orphaned: 1, Deleted: 1},
		},
		"YoungOrphanKept": {
			reason: "an unclaimed instance younger than the grace period is kept",
			setup: func(t *testing.T, w *world) []string {
				id := create(t, w.p, "uid-gone")
				w.clock.Advance(gc.DefaultGracePeriod - time.Second)
				return []string{id}
			},
			want: gc.Summary{Provider: "mock", Scanned: 1, TooYoung: 1},
		},
		"ClaimedKept": {
			reason: "an old instance whose uid a document claims is kept",
			setup: func(t *testing.T, w *world) []string {
				id := create(t, w.p, "uid-live")
				w.store.uids = uidSet("uid-live")
				w.clock.Advance(time.Hour)
				return []string{id}
			},
			want: gc.Summary{Provider: "mock", Scanned: 1, Claimed: 1},
		},
		"NoUIDKeptAndReported": {
			reason: "a managed instance without a uid is never deleted, and a warning names it",
			setup: func(t *testing.T, w *world) []string {
				id := w.p.AddForeign("no-uid", map[string]string{provider.LabelManaged: provider.LabelManagedYes, provider.LabelDeployment: provider.DefaultDeployment})
				w.clock.Advance(time.Hour)
				return []string{id}
			},
			want:        gc.Summary{Provider: "mock", Scanned: 1, NoUID: 1},
			wantWarning: "mock://no-uid",
		},
		"UnmanagedKept": {
			reason: "an instance labelled proxy-operator-managed=false is not listed, so never deleted",
			setup: func(t *testing.T, w *world) []string {
				id := w.p.AddForeign("other-tool", map[string]string{provider.LabelManaged: "false", provider.LabelUID: "uid-foreign"})
				w.clock.Advance(time.Hour)
				return []string{id}
			},
			want: gc.Summary{Provider: "mock"},
		},
		"OneDeleteFails": {
			reason: "a failed delete is counted and returned; the other orphans are still deleted",
			setup: func(t *testing.T, w *world) []string {
				create(t, w.p, "uid-a")
				w.failDelete = create(t, w.p, "uid-b")
				create(t, w.p, "uid-c")
				w.clock.Advance(time.Hour)
				return []string{w.failDelete}
			},
			want:    gc.Summary{Provider: "mock", Scanned: 3, Orphaned: 3, Deleted: 2, Failed: 1},
			wantErr: true,
		},
		"DeleteSaysNotFound": {
			reason: "a provider answering NotFound to a Delete has no such VM: counted as deleted, no error",
			setup: func(t *testing.T, w *world) []string {
				w.failDelete = create(t, w.p, "uid-a")
				w.failErr = provider.NewError(provider.KindNotFound, "delete", w.failDelete, provider.ErrNotFound)
				w.clock.Advance(time.Hour)
				return []string{w.failDelete} // the fake did not really delete it
			},
			want: gc.Summary{Provider: "mock", Scanned: 1, Orphaned: 1, Deleted: 1},
		},
		"DryRun": {
			reason: "a dry run counts the orphans and deletes nothing",
			opts:   gc.Options{DryRun: true},
			setup: func(t *testing.T, w *world) []string {
				a := create(t, w.p, "uid-a")
				b := create(t, w.p, "uid-b")
				w.clock.Advance(time.Hour)
				return []string{a, b}
			},
			want: gc.Summary{Provider: "mock", Scanned: 2, Orphaned: 2, DryRun: true},
		},
		"UnlabelledKeptAndReported": {
			reason: "a managed instance without a deployment label (made before it) is listed, never deleted, and a warning names it",
			setup: func(t *testing.T, w *world) []string {
				id := w.p.AddForeign("before-the-label", map[string]string{provider.LabelManaged: provider.LabelManagedYes, provider.LabelUID: "uid-gone"})
				w.clock.Advance(time.Hour)
				return []string{id}
			},
			want:        gc.Summary{Provider: "mock", Scanned: 1, Unowned: 1},
			wantWarning: "mock://before-the-label",
		},
		"OtherDeploymentNotListed": {
			reason: "another deployment's orphan in the same project is not even listed",
			setup: func(t *testing.T, w *world) []string {
				id := create(t, w.p.InDeployment("staging"), "uid-gone")
				w.clock.Advance(time.Hour)
				return []string{id}
			},
			want: gc.Summary{Provider: "mock"},
		},
		"OtherDeploymentListedByAWiderProviderKept": {
			reason: "a provider that lists another deployment's resources anyway gets none of them deleted, and each is warned of",
			setup: func(t *testing.T, w *world) []string {
				w.wide = true
				id := create(t, w.p.InDeployment("staging"), "uid-gone")
				w.clock.Advance(time.Hour)
				return []string{id}
			},
			want:        gc.Summary{Provider: "mock", Scanned: 1, Unowned: 1},
			wantWarning: "mock://" + provider.NameFromUID("uid-gone"),
		},
		"OwnDeploymentOnly": {
			reason: "only the collector's own deployment's orphans go; a wider listing's others stay",
			opts:   gc.Options{Deployment: "staging"},
			setup: func(t *testing.T, w *world) []string {
				w.wide = true
				create(t, w.p.InDeployment("staging"), "uid-staging-gone")
				theirs := create(t, w.p, "uid-production-gone")
				w.clock.Advance(time.Hour)
				return []string{theirs}
			},
			want:        gc.Summary{Provider: "mock", Scanned: 2, Unowned: 1, Orphaned: 1, Deleted: 1},
			wantWarning: "mock://" + provider.NameFromUID("uid-production-gone"),
		},
		"Mixed": {
			reason: "each instance is judged on its own",
			setup: func(t *testing.T, w *world) []string {
				create(t, w.p, "uid-old-orphan")
				live := create(t, w.p, "uid-live")
				w.store.uids = uidSet("uid-live", "uid-doc-without-vm")
				w.clock.Advance(gc.DefaultGracePeriod)
				young := create(t, w.p, "uid-young-orphan")
				return []string{live, young}
			},
			want: gc.Summary{Provider: "mock", Scanned: 3, Claimed: 1, TooYoung: 1, Orphaned: 1, Deleted: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clock.NewFake(epoch)
			w := &world{p: mock.New(mock.Options{Clock: clk}), clock: clk, store: &fakeStore{uids: uidSet(elsewhere)}}
			keep := tc.setup(t, w)
			if w.failErr == nil {
				w.failErr = errBoom
			}
			var logs bytes.Buffer
			var p provider.Provider = failingDelete{w.p, w.failDelete, w.failErr}
			if w.wide {
				p = wideList{p, w.p}
			}
			c := gc.New(providersOf(t, map[string]provider.Provider{"mock": p}), w.store, &fakeRequeuer{}, clk,
				logging.New(&logs, slog.LevelDebug), tc.opts)

			report, err := c.Run(context.Background())

			if (err != nil) != tc.wantErr {
				t.Fatalf("%s\nRun() error = %v, wantErr %v", tc.reason, err, tc.wantErr)
			}
			if errors.Is(err, gc.ErrIncomplete) {
				t.Errorf("%s\nRun() error = %v: a delete failure must not be ErrIncomplete", tc.reason, err)
			}
			if tc.wantErr && !errors.Is(err, errBoom) {
				t.Errorf("%s\nRun() error = %v, want it to wrap the provider's error", tc.reason, err)
			}
			if diff := cmp.Diff([]gc.Summary{tc.want}, report.Providers); diff != "" {
				t.Errorf("%s\nsummary (-want +got):\n%s", tc.reason, diff)
			}
			slices.Sort(keep)
			if diff := cmp.Diff(keep, ids(w.p)); diff != "" {
				t.Errorf("%s\ninstances left (-want +got):\n%s", tc.reason, diff)
			}
			if tc.wantWarning != "" {
				found := false
				for _, l := range logLines(t, &logs) {
					if l["severity"] == "WARNING" && l["providerID"] == tc.wantWarning {
						found = true
					}
				}
				if !found {
					t.Errorf("%s\nno WARNING line names %s in:\n%s", tc.reason, tc.wantWarning, logs.String())
				}
			}
		})
	}
}

// TestDocumentDeletedDuringCreate follows one VM whose document was deleted
// while its Create was in flight: the VM is young when the first run sees
// it, so it is kept; a run after the grace period deletes it.
func TestDocumentDeletedDuringCreate(t *testing.T) {
	clk := clock.NewFake(epoch)
	p := mock.New(mock.Options{Clock: clk})
	store := &fakeStore{uids: uidSet("uid-x")}
	c := gc.New(providersOf(t, map[string]provider.Provider{"mock": p}), store, &fakeRequeuer{}, clk,
		slog.New(slog.DiscardHandler), gc.Options{})

	// The reconciler decided on a Create for uid-x; the user deleted the
	// document; then the Create landed.
	store.uids = uidSet(elsewhere)
	id := create(t, p, "uid-x")
	clk.Advance(time.Minute)

	report, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]gc.Summary{{Provider: "mock", Scanned: 1, TooYoung: 1}}, report.Providers); diff != "" {
		t.Errorf("first run, a minute after the Create (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{id}, ids(p)); diff != "" {
		t.Errorf("first run must keep the young VM (-want +got):\n%s", diff)
	}

	clk.Advance(gc.DefaultGracePeriod)
	report, err = c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]gc.Summary{{Provider: "mock", Scanned: 1, Orphaned: 1, Deleted: 1}}, report.Providers); diff != "" {
		t.Errorf("second run, after the grace period (-want +got):\n%s", diff)
	}
	if got := ids(p); len(got) != 0 {
		t.Errorf("second run left %v, want the orphan deleted", got)
	}
}

// orderCheckingStore fails the test if the uids are read before every
// provider has been listed.
type orderCheckingStore struct {
	fakeStore
	t     *testing.T
	lists []*mock.Provider
}

func (s *orderCheckingStore) LiveUIDs(ctx context.Context) (map[string]proxy.Claim, error) {
	for i, p := range s.lists {
		if p.Calls(mock.MethodListByTag) == 0 {
			s.t.Errorf("LiveUIDs was read before provider %d was listed", i)
		}
	}
	return s.fakeStore.LiveUIDs(ctx)
}

func TestListsBeforeReadingUIDs(t *testing.T) {
	clk := clock.NewFake(epoch)
	a, b := mock.New(mock.Options{Clock: clk}), mock.New(mock.Options{Clock: clk})
	store := &orderCheckingStore{t: t, lists: []*mock.Provider{a, b}}
	c := gc.New(providersOf(t, map[string]provider.Provider{"a": a, "b": b}), store, &fakeRequeuer{}, clk,
		slog.New(slog.DiscardHandler), gc.Options{})
	if _, err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestIncompleteRuns(t *testing.T) {
	errBoom := errors.New("boom")
	cases := map[string]struct {
		reason string
		// break one thing
		setup func(a, b *mock.Provider, s *fakeStore)
		want  []gc.Summary
		// left are the instances left per provider
		leftA, leftB int
	}{
		"ListingFails": {
			reason: "a provider that cannot be listed is reported; the other is still collected",
			setup:  func(a, _ *mock.Provider, _ *fakeStore) { a.FailNext(mock.MethodListByTag, 1, errBoom) },
			want: []gc.Summary{
				{Provider: "a"},
				{Provider: "b", Scanned: 1, Orphaned: 1, Deleted: 1},
			},
			leftA: 1,
		},
		"UIDsUnreadable": {
			reason: "without the uid set nothing is deleted at all",
			setup:  func(_, _ *mock.Provider, s *fakeStore) { s.uidsErr = errBoom },
			want: []gc.Summary{
				{Provider: "a", Scanned: 1},
				{Provider: "b", Scanned: 1},
			},
			leftA: 1, leftB: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clock.NewFake(epoch)
			a, b := mock.New(mock.Options{Clock: clk}), mock.New(mock.Options{Clock: clk})
			create(t, a, "uid-a")
			create(t, b, "uid-b")
			clk.Advance(time.Hour)
			store := &fakeStore{uids: uidSet(elsewhere)}
			tc.setup(a, b, store)
			c := gc.New(providersOf(t, map[string]provider.Provider{"a": a, "b": b}), store, &fakeRequeuer{}, clk,
				slog.New(slog.DiscardHandler), gc.Options{})

			report, err := c.Run(context.Background())

			if !errors.Is(err, gc.ErrIncomplete) || !errors.Is(err, errBoom) {
				t.Errorf("%s\nRun() error = %v, want ErrIncomplete wrapping the cause", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, report.Providers); diff != "" {
				t.Errorf("%s\nsummaries (-want +got):\n%s", tc.reason, diff)
			}
			if got := []int{len(a.Instances()), len(b.Instances())}; !slices.Equal(got, []int{tc.leftA, tc.leftB}) {
				t.Errorf("%s\ninstances left in a, b = %v, want %v", tc.reason, got, []int{tc.leftA, tc.leftB})
			}
		})
	}
}

// gatedProvider records how many deletes run at once.
type gatedProvider struct {
	*mock.Provider
	mu            sync.Mutex
	inFlight, max int
}

func (g *gatedProvider) Delete(ctx context.Context, id string) error {
	g.mu.Lock()
	g.inFlight++
	g.max = max(g.max, g.inFlight)
	g.mu.Unlock()
	err := g.Provider.Delete(ctx, id)
	// Give the other goroutines every chance to pile in.
	for range 100 {
		runtime.Gosched()
	}
	g.mu.Lock()
	g.inFlight--
	g.mu.Unlock()
	return err
}

func TestDeletesAreBounded(t *testing.T) {
	clk := clock.NewFake(epoch)
	g := &gatedProvider{Provider: mock.New(mock.Options{Clock: clk})}
	for i := range 50 {
		create(t, g.Provider, fmt.Sprintf("uid-%d", i))
	}
	clk.Advance(time.Hour)
	const limit = 3
	c := gc.New(providersOf(t, map[string]provider.Provider{"mock": g}), &fakeStore{uids: uidSet(elsewhere)}, &fakeRequeuer{}, clk,
		slog.New(slog.DiscardHandler), gc.Options{Parallelism: limit})
	report, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if report.Providers[0].Deleted != 50 {
		t.Errorf("deleted %d, want 50", report.Providers[0].Deleted)
	}
	if g.max > limit {
		t.Errorf("%d deletes ran at once, want at most %d", g.max, limit)
	}
}

func TestSweep(t *testing.T) {
	stuck := []proxy.Key{{Namespace: "a", Name: "p1"}, {Namespace: "a", Name: "p2"}, {Namespace: "b", Name: "p3"}}
	cases := map[string]struct {
		reason     string
		opts       gc.Options
		stalledErr error
		failFor    string
		want       gc.SweepSummary
		wantReqs   []string
		wantBefore time.Time
		wantErr    bool
		incomplete bool
	}{
		"Requeued": {
			reason:     "every stalled document gets a sweep request; the cut-off is now minus the threshold",
			want:       gc.SweepSummary{Stalled: 3, Requeued: 3},
			wantReqs:   []string{"namespaces/a/proxies/p1 sweep", "namespaces/a/proxies/p2 sweep", "namespaces/b/proxies/p3 sweep"},
			wantBefore: epoch.Add(-gc.DefaultSweepThreshold),
		},
		"Threshold": {
			reason:     "the threshold is configurable, and a dry run still sweeps",
			opts:       gc.Options{SweepThreshold: 7 * time.Minute, DryRun: true},
			want:       gc.SweepSummary{Stalled: 3, Requeued: 3},
			wantReqs:   []string{"namespaces/a/proxies/p1 sweep", "namespaces/a/proxies/p2 sweep", "namespaces/b/proxies/p3 sweep"},
			wantBefore: epoch.Add(-7 * time.Minute),
		},
		"OneRequeueFails": {
			reason:     "a failed requeue is counted and returned; the others still go",
			failFor:    "namespaces/a/proxies/p2",
			want:       gc.SweepSummary{Stalled: 3, Requeued: 2, Failed: 1},
			wantReqs:   []string{"namespaces/a/proxies/p1 sweep", "namespaces/b/proxies/p3 sweep"},
			wantBefore: epoch.Add(-gc.DefaultSweepThreshold),
			wantErr:    true,
		},
		"Unreadable": {
			reason:     "a failed stalled query makes the run incomplete",
			stalledErr: errors.New("deadline exceeded"),
			wantBefore: epoch.Add(-gc.DefaultSweepThreshold),
			wantErr:    true,
			incomplete: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clock.NewFake(epoch)
			store := &fakeStore{stalled: stuck, stalledErr: tc.stalledErr}
			req := &fakeRequeuer{failFor: tc.failFor}
			c := gc.New(providersOf(t, nil), store, req, clk, slog.New(slog.DiscardHandler), tc.opts)

			report, err := c.Run(context.Background())

			if (err != nil) != tc.wantErr || errors.Is(err, gc.ErrIncomplete) != tc.incomplete {
				t.Fatalf("%s\nRun() error = %v, wantErr %v, incomplete %v", tc.reason, err, tc.wantErr, tc.incomplete)
			}
			if diff := cmp.Diff(tc.want, report.Sweep); diff != "" {
				t.Errorf("%s\nsweep summary (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantReqs, req.requests()); diff != "" {
				t.Errorf("%s\nrequests (-want +got):\n%s", tc.reason, diff)
			}
			if !store.before.Equal(tc.wantBefore) || store.limit != gc.DefaultSweepLimit {
				t.Errorf("%s\nStalled(before=%v, limit=%d), want (%v, %d)", tc.reason, store.before, store.limit, tc.wantBefore, gc.DefaultSweepLimit)
			}
		})
	}
}

func TestSummaryLogLines(t *testing.T) {
	clk := clock.NewFake(epoch)
	p := mock.New(mock.Options{Clock: clk})
	create(t, p, "uid-gone")
	clk.Advance(time.Hour)
	var logs bytes.Buffer
	c := gc.New(providersOf(t, map[string]provider.Provider{"mock": p}), &fakeStore{uids: uidSet(elsewhere)}, &fakeRequeuer{}, clk,
		logging.New(&logs, slog.LevelInfo), gc.Options{})
	if _, err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []logLine
	for _, l := range logLines(t, &logs) {
		if l["message"] == "gc summary" || l["message"] == "sweep summary" {
			delete(l, "time")
			got = append(got, l)
		}
	}
	want := []logLine{
		{"severity": "INFO", "message": "gc summary", "provider": "mock", "account": "", "scanned": 1.0, "unowned": 0.0, "claimed": 0.0, "tooYoung": 0.0,
			"noUID": 0.0, "orphaned": 1.0, "deleted": 1.0, "failed": 0.0, "dryRun": false, "refused": false,
			"deployment": "egress", "gracePeriod": "10m0s"},
		{"severity": "INFO", "message": "sweep summary", "stalled": 0.0, "drifted": 0.0, "requeued": 0.0, "failed": 0.0, "accessPull": 0.0, "costs": 0.0, "threshold": "2m0s"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("summary lines (-want +got):\n%s", diff)
	}
}

// TestDrift checks that a Ready document whose VM is gone or stopped is
// re-driven, since nothing else would look at a settled document again.
func TestDrift(t *testing.T) {
	ready := func(name string) proxy.Claim {
		return proxy.Claim{Key: proxy.Key{Namespace: "ns", Name: name}, Phase: proxy.PhaseReady}
	}
	cases := map[string]struct {
		reason string
		setup  func(p *mock.Provider, s *fakeStore)
		want   []string
	}{
		"ReadyWithoutVM": {
			reason: "A Ready document whose VM is not listed is re-driven.",
			setup:  func(_ *mock.Provider, s *fakeStore) { s.uids = map[string]proxy.Claim{"uid-lost": ready("lost")} },
			want:   []string{"namespaces/ns/proxies/lost drift"},
		},
		"ReadyWithStoppedVM": {
			reason: "A Ready document whose VM stopped is re-driven.",
			setup: func(p *mock.Provider, s *fakeStore) {
				p.Stop(create(t, p, "uid-stopped"), provider.StateStopped)
				s.uids = map[string]proxy.Claim{"uid-stopped": ready("stopped")}
			},
			want: []string{"namespaces/ns/proxies/stopped drift"},
		},
		"ReadyWithRunningVM": {
			reason: "A Ready document whose VM runs is left alone.",
			setup: func(p *mock.Provider, s *fakeStore) {
				create(t, p, "uid-fine")
				s.uids = map[string]proxy.Claim{"uid-fine": ready("fine")}
			},
		},
		"ClaimedMemberWithoutVM": {
			reason: "A warm pool's member whose VM a proxy claimed (and relabelled) lists no VM of its uid: its VM is the proxy's, not drift.",
			setup: func(_ *mock.Provider, s *fakeStore) {
				s.uids = map[string]proxy.Claim{"uid-member": {Key: proxy.Key{Pool: "ci", Name: "w-1"}, Phase: proxy.PhaseReady, Claimed: true}}
			},
		},
		"CreatingWithoutVM": {
			reason: "A document still on its way has no VM yet: not drift.",
			setup: func(_ *mock.Provider, s *fakeStore) {
				s.uids = map[string]proxy.Claim{"uid-new": {Key: proxy.Key{Namespace: "ns", Name: "new"}, Phase: proxy.PhaseCreating}}
			},
		},
		"ListingFailed": {
			reason: "Without every listing every VM would look lost: no drift requests.",
			setup: func(p *mock.Provider, s *fakeStore) {
				p.FailNext(mock.MethodListByTag, 1, errors.New("backend unavailable"))
				s.uids = map[string]proxy.Claim{"uid-lost": ready("lost")}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clock.NewFake(epoch)
			p := mock.New(mock.Options{Clock: clk})
			s := &fakeStore{}
			tc.setup(p, s)
			r := &fakeRequeuer{}
			c := gc.New(providersOf(t, map[string]provider.Provider{"mock": p}), s, r, clk, slog.New(slog.DiscardHandler), gc.Options{})
			c.Run(context.Background())
			if diff := cmp.Diff(tc.want, r.requests()); diff != "" {
				t.Errorf("%s\nrequests (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestFleetLines checks the "fleet" lines a run logs, which the
// proxies-by-phase chart reads: one per phase, in the order of a proxy's
// life, with the number of documents in it.
func TestFleetLines(t *testing.T) {
	fleet := func(phase string, n float64) logLine {
		return logLine{"severity": "INFO", "message": "fleet", "phase": phase, "proxies": n}
	}
	claims := func(phases ...proxy.Phase) map[string]proxy.Claim {
		m := map[string]proxy.Claim{}
		for i, ph := range phases {
			m[fmt.Sprintf("uid-%d", i)] = proxy.Claim{Key: proxy.Key{Namespace: "ns", Name: fmt.Sprintf("p-%d", i)}, Phase: ph}
		}
		return m
	}
	cases := map[string]struct {
		reason string
		store  *fakeStore
		want   []logLine
	}{
		"CountsByPhase": {
			reason: "Each phase's line counts the documents in it.",
			store:  &fakeStore{uids: claims(proxy.PhaseReady, proxy.PhaseReady, proxy.PhaseCreating, proxy.PhaseFailed)},
			want: []logLine{fleet("Pending", 0), fleet("Creating", 1), fleet("Provisioning", 0), fleet("Ready", 2),
				fleet("Reconfiguring", 0), fleet("Replacing", 0), fleet("Deleting", 0), fleet("Failed", 1)},
		},
		"NoProxies": {
			reason: "With no documents every phase still has its line, with 0, so the chart drops to 0 instead of stopping.",
			store:  &fakeStore{},
			want: []logLine{fleet("Pending", 0), fleet("Creating", 0), fleet("Provisioning", 0), fleet("Ready", 0),
				fleet("Reconfiguring", 0), fleet("Replacing", 0), fleet("Deleting", 0), fleet("Failed", 0)},
		},
		"PhaseUnknownToTheCode": {
			reason: "A document in a phase proxy.Phases does not list (no phase yet, or a newer code's) is counted, after the known phases.",
			store:  &fakeStore{uids: claims("Hibernating", "", proxy.PhaseReady)},
			want: []logLine{fleet("Pending", 0), fleet("Creating", 0), fleet("Provisioning", 0), fleet("Ready", 1),
				fleet("Reconfiguring", 0), fleet("Replacing", 0), fleet("Deleting", 0), fleet("Failed", 0), fleet("", 1), fleet("Hibernating", 1)},
		},
		"UIDsUnreadable": {
			reason: "When the documents could not be read the run does not know the fleet: no line, rather than a fleet of zeros.",
			store:  &fakeStore{uidsErr: errors.New("firestore unavailable")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, runLines(t, tc.store, gc.Options{}, "fleet")); diff != "" {
				t.Errorf("%s\nfleet lines (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// runLines are the lines of message one run over store logs, without
// their time.
func runLines(t *testing.T, store *fakeStore, opts gc.Options, message string) []logLine {
	t.Helper()
	clk := clock.NewFake(epoch)
	var logs bytes.Buffer
	c := gc.New(providersOf(t, map[string]provider.Provider{"mock": mock.New(mock.Options{Clock: clk})}), store, &fakeRequeuer{}, clk,
		logging.New(&logs, slog.LevelInfo), opts)
	c.Run(context.Background())
	var got []logLine
	for _, l := range logLines(t, &logs) {
		if l["message"] == message {
			delete(l, "time")
			got = append(got, l)
		}
	}
	return got
}

// TestNamespaceCostLines checks the "namespace cost" lines a run logs,
// which the dashboard's charts of each namespace's month read
// (deploy/terraform/metrics.tf): one per namespace, its figures in whole
// units of the deployment's currency.
func TestNamespaceCostLines(t *testing.T) {
	month := epoch.Format("2006-01")
	costed := func(ns, name string, toDate, forecast int64) proxy.Claim {
		return proxy.Claim{Key: proxy.Key{Namespace: ns, Name: name}, Phase: proxy.PhaseReady,
			Cost: &proxy.ClaimCost{Month: month, Currency: "EUR", AsOf: epoch, MonthToDate: toDate, Forecast: forecast}}
	}
	line := func(ns string, toDate, forecast float64, proxies, unknown float64) logLine {
		return logLine{"severity": "INFO", "message": "namespace cost", "namespace": ns, "month": month, "currency": "EUR",
			"monthToDate": toDate, "forecast": forecast, "proxies": proxies, "unknown": unknown}
	}
	claims := map[string]proxy.Claim{
		"uid-1": costed("team-b", "a", 1_500_000_000, 7_000_000_000),
		"uid-2": costed("team-b", "b", 250_000_000, 1_000_000_000),
		"uid-3": {Key: proxy.Key{Namespace: "team-a", Name: "new"}, Phase: proxy.PhasePending},
	}
	cases := map[string]struct {
		reason   string
		store    *fakeStore
		currency string
		want     []logLine
	}{
		"OnePerNamespace": {
			reason:   "Each namespace's line sums its proxies' costs of the month; a proxy with no cost yet is counted unknown.",
			store:    &fakeStore{uids: claims},
			currency: "EUR",
			want:     []logLine{line("team-a", 0, 0, 0, 1), line("team-b", 1.75, 8, 2, 0)},
		},
		"NoCurrency": {
			reason: "A deployment that costs nothing (no catalog, so no currency) logs no month.",
			store:  &fakeStore{uids: claims},
		},
		"UIDsUnreadable": {
			reason:   "When the documents could not be read the run does not know the costs: no line, rather than months of zero.",
			store:    &fakeStore{uidsErr: errors.New("firestore unavailable")},
			currency: "EUR",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, runLines(t, tc.store, gc.Options{CostCurrency: tc.currency}, "namespace cost")); diff != "" {
				t.Errorf("%s\nnamespace cost lines (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
