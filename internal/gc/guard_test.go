package gc_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/gc"
	"github.com/egress-proxies/egress/internal/logging"
	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
)

// linesOf returns the log lines with this message, without their time.
func linesOf(t *testing.T, logs *bytes.Buffer, message string) []logLine {
	t.Helper()
	var out []logLine
	for _, l := range logLines(t, logs) {
		if l["message"] == message {
			delete(l, "time")
			out = append(out, l)
		}
	}
	return out
}

// TestGuard: a run that would delete more than MaxDeletes resources, or
// any while no document exists at all, deletes nothing and says why and
// how many in one "gc refused" line; raising the limit, or allowing the
// empty database, lets the same run through.
func TestGuard(t *testing.T) {
	type refusal struct {
		Why                                string
		WouldDelete, MaxDeletes, Documents float64
	}
	cases := map[string]struct {
		reason string
		opts   gc.Options
		// orphans per provider, old enough to go; young, per provider
		// too; docs, the documents (none of which claims a VM here).
		orphans, young map[string]int
		docs           int
		wantDeletes    int
		wantRefusal    *refusal
	}{
		"TooMany": {
			reason:      "51 orphans are more than the default 50: none goes",
			orphans:     map[string]int{"a": 51},
			docs:        1,
			wantRefusal: &refusal{Why: "more than the most one run may delete (GC_MAX_DELETES)", WouldDelete: 51, MaxDeletes: 50, Documents: 1},
		},
		"AtTheLimit": {
			reason:      "50 orphans are not more than 50: all go",
			orphans:     map[string]int{"a": 50},
			docs:        1,
			wantDeletes: 50,
		},
		"LimitRaised": {
			reason:      "the operator who finds them garbage raises the limit for a run",
			opts:        gc.Options{MaxDeletes: 60},
			orphans:     map[string]int{"a": 51},
			docs:        1,
			wantDeletes: 51,
		},
		"TooManyAcrossProviders": {
			reason:      "the limit is the run's, across providers: 30 and 30 are 60",
			orphans:     map[string]int{"a": 30, "b": 30},
			docs:        1,
			wantRefusal: &refusal{Why: "more than the most one run may delete (GC_MAX_DELETES)", WouldDelete: 60, MaxDeletes: 50, Documents: 1},
		},
		"EmptyDatabase": {
			reason:      "with no document at all, even three orphans are not deleted: it looks like a wrong or empty database",
			orphans:     map[string]int{"a": 3},
			young:       map[string]int{"a": 1},
			wantRefusal: &refusal{Why: "no proxy document exists at all (GC_ALLOW_EMPTY_DATABASE is off)", WouldDelete: 3, MaxDeletes: 50},
		},
		"EmptyDatabaseAndTooMany": {
			reason:      "both reasons are said",
			orphans:     map[string]int{"a": 70},
			wantRefusal: &refusal{Why: "no proxy document exists at all (GC_ALLOW_EMPTY_DATABASE is off); and more than the most one run may delete (GC_MAX_DELETES)", WouldDelete: 70, MaxDeletes: 50},
		},
		"EmptyDatabaseAllowed": {
			reason:      "the operator who knows the database is empty on purpose allows it for a run",
			opts:        gc.Options{AllowEmptyDatabase: true},
			orphans:     map[string]int{"a": 3},
			wantDeletes: 3,
		},
		"EmptyDatabaseNothingToDelete": {
			reason: "no document and only young VMs: nothing would be deleted, so nothing is refused",
			young:  map[string]int{"a": 2},
		},
		"DryRunSaysItToo": {
			reason:      "a dry run says what a real run would refuse",
			opts:        gc.Options{DryRun: true},
			orphans:     map[string]int{"a": 51},
			docs:        1,
			wantRefusal: &refusal{Why: "more than the most one run may delete (GC_MAX_DELETES)", WouldDelete: 51, MaxDeletes: 50, Documents: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clock.NewFake(epoch)
			ps := map[string]*mock.Provider{"a": mock.New(mock.Options{Clock: clk}), "b": mock.New(mock.Options{Clock: clk})}
			for typ, n := range tc.orphans {
				for i := range n {
					create(t, ps[typ], fmt.Sprintf("uid-%s-old-%d", typ, i))
				}
			}
			clk.Advance(time.Hour)
			for typ, n := range tc.young {
				for i := range n {
					create(t, ps[typ], fmt.Sprintf("uid-%s-young-%d", typ, i))
				}
			}
			uids := map[string]proxy.Claim{}
			for i := range tc.docs {
				uids[fmt.Sprintf("uid-doc-%d", i)] = proxy.Claim{Key: proxy.Key{Namespace: "ns", Name: fmt.Sprintf("p-%d", i)}, Phase: proxy.PhaseCreating}
			}
			var logs bytes.Buffer
			c := gc.New(providersOf(t, map[string]provider.Provider{"a": ps["a"], "b": ps["b"]}), &fakeStore{uids: uids}, &fakeRequeuer{}, clk,
				logging.New(&logs, slog.LevelInfo), tc.opts)

			report, err := c.Run(context.Background())
			if err != nil {
				t.Fatalf("%s\nRun() error = %v", tc.reason, err)
			}

			deletes := ps["a"].Calls(mock.MethodDelete) + ps["b"].Calls(mock.MethodDelete)
			if deletes != tc.wantDeletes {
				t.Errorf("%s\nprovider Delete calls = %d, want %d", tc.reason, deletes, tc.wantDeletes)
			}
			var got *refusal
			for _, l := range linesOf(t, &logs, "gc refused") {
				if got != nil {
					t.Errorf("%s\nmore than one gc refused line", tc.reason)
				}
				if l["severity"] != "ERROR" {
					t.Errorf("%s\ngc refused logged at %v, want ERROR (an alert reads it)", tc.reason, l["severity"])
				}
				if todo, _ := l["todo"].(string); !strings.Contains(todo, "GC_MAX_DELETES") {
					t.Errorf("%s\nthe gc refused line does not say how to proceed: %q", tc.reason, todo)
				}
				got = &refusal{Why: l["why"].(string), WouldDelete: l["wouldDelete"].(float64), MaxDeletes: l["maxDeletes"].(float64), Documents: l["documents"].(float64)}
			}
			if diff := cmp.Diff(tc.wantRefusal, got); diff != "" {
				t.Errorf("%s\ngc refused line (-want +got):\n%s", tc.reason, diff)
			}
			wantWhy := ""
			if tc.wantRefusal != nil {
				wantWhy = tc.wantRefusal.Why
			}
			if report.Refused != wantWhy {
				t.Errorf("%s\nReport.Refused = %q, want %q", tc.reason, report.Refused, wantWhy)
			}
			for _, s := range report.Providers {
				if s.Refused != (tc.wantRefusal != nil) {
					t.Errorf("%s\nsummary of %s: Refused = %v, want %v", tc.reason, s.Provider, s.Refused, tc.wantRefusal != nil)
				}
			}
		})
	}
}

// TestTwoDeploymentsShareAProject runs the collectors of two deployments,
// each with its own documents, over one mock project holding both fleets:
// VMs and static addresses, claimed, orphaned and unlabelled. Each deletes
// its own orphans and nothing else.
func TestTwoDeploymentsShareAProject(t *testing.T) {
	clk := clock.NewFake(epoch)
	project := mock.New(mock.Options{Clock: clk})
	ctx := context.Background()
	type fleet struct {
		p    *mock.Provider
		uids map[string]proxy.Claim
		// orphans are this deployment's VMs and addresses no document
		// claims; claimed, those its documents do.
		orphans, claimed []string
	}
	fleets := map[string]*fleet{}
	for _, d := range []string{"production", "staging"} {
		f := &fleet{p: project.InDeployment(d), uids: map[string]proxy.Claim{}}
		for i := range 3 {
			uid := fmt.Sprintf("%s-live-%d", d, i)
			id, err := f.p.Create(ctx, provider.CreateRequest{Name: provider.NameFromUID(uid), UID: uid, StaticIP: i == 0})
			if err != nil {
				t.Fatal(err)
			}
			f.uids[uid] = proxy.Claim{Key: proxy.Key{Namespace: d, Name: fmt.Sprintf("p-%d", i)}, Phase: proxy.PhaseCreating, Provider: mock.Type, ProviderID: id}
			f.claimed = append(f.claimed, id)
		}
		for i := range 2 {
			uid := fmt.Sprintf("%s-gone-%d", d, i)
			id, err := f.p.Create(ctx, provider.CreateRequest{Name: provider.NameFromUID(uid), UID: uid, StaticIP: i == 0})
			if err != nil {
				t.Fatal(err)
			}
			f.orphans = append(f.orphans, id)
			if i == 0 {
				// Its VM went; its address stays, unused, for the collector.
				if err := f.p.Delete(ctx, id); err != nil {
					t.Fatal(err)
				}
				f.orphans = []string{"mock-address://" + provider.NameFromUID(uid)}
			}
		}
		fleets[d] = f
	}
	unlabelled := project.AddForeign("from-before-the-label", map[string]string{provider.LabelManaged: provider.LabelManagedYes, provider.LabelUID: "uid-of-no-document"})
	clk.Advance(time.Hour)

	before := project.Calls(mock.MethodDelete)
	for _, d := range []string{"production", "staging"} {
		f := fleets[d]
		c := gc.New(providersOf(t, map[string]provider.Provider{mock.Type: f.p}), &fakeStore{uids: f.uids}, &fakeRequeuer{}, clk,
			slog.New(slog.DiscardHandler), gc.Options{Deployment: d})
		report, err := c.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Listed: its three claimed VMs, its unused address and orphaned
		// VM, and the unlabelled VM; never the other deployment's.
		want := []gc.Summary{{Provider: mock.Type, Scanned: 6, Unowned: 1, Claimed: 3, Orphaned: 2, Deleted: 2}}
		if diff := cmp.Diff(want, report.Providers); diff != "" {
			t.Errorf("deployment %s's run (-want +got):\n%s", d, diff)
		}
	}
	if got := project.Calls(mock.MethodDelete) - before; got != 4 {
		t.Errorf("provider Delete calls = %d, want 4: the two orphans of each deployment", got)
	}

	var left []string
	for _, in := range slices.Concat(project.Instances(), project.Addresses()) {
		left = append(left, in.ID)
	}
	var want []string
	for _, f := range fleets {
		want = append(want, f.claimed...)
		// A claimed Static proxy's address stays with its VM.
		for _, id := range f.claimed {
			if in, err := project.Get(ctx, id); err == nil && in.AddressID != "" {
				want = append(want, in.AddressID)
			}
		}
	}
	want = append(want, unlabelled)
	slices.Sort(left)
	slices.Sort(want)
	if diff := cmp.Diff(want, left); diff != "" {
		t.Errorf("resources left in the project (-want +got):\n%s", diff)
	}
}

// scopedMock lists only the providerIDs of one prefix, as the gcp provider
// lists only GCP_PROJECT's.
type scopedMock struct {
	*mock.Provider
	prefix string
}

func (s scopedMock) Lists(id string) bool { return strings.HasPrefix(id, s.prefix) }

// TestProvidersThatLeave: documents that name a provider type no longer
// configured are counted and logged, never drifted; a Ready proxy whose VM
// its provider does not list (a gcp VM of the project before GCP_PROJECT
// changed) is not taken for lost.
func TestProvidersThatLeave(t *testing.T) {
	ready := func(name, typ, id string) proxy.Claim {
		return proxy.Claim{Key: proxy.Key{Namespace: "ns", Name: name}, Phase: proxy.PhaseReady, Provider: typ, ProviderID: id}
	}
	clk := clock.NewFake(epoch)
	p := mock.New(mock.Options{Clock: clk})
	live := create(t, p, "uid-live")
	orphan := create(t, p, "uid-gone")
	clk.Advance(time.Hour)
	store := &fakeStore{uids: map[string]proxy.Claim{
		"uid-live":      ready("live", mock.Type, live),
		"uid-lost":      ready("lost", mock.Type, "mock://proxy-lost"),
		"uid-elsewhere": ready("elsewhere", mock.Type, "mock-old-project://proxy-elsewhere"),
		"uid-gcp-1":     ready("gcp-1", "gcp", "gce://old/us-central1-a/proxy-1"),
		"uid-gcp-2":     {Key: proxy.Key{Namespace: "ns", Name: "gcp-2"}, Phase: proxy.PhaseCreating, Provider: "gcp"},
	}}
	var logs bytes.Buffer
	req := &fakeRequeuer{}
	// Behind the metering decorator, as the composition root hands it out.
	c := gc.New(providersOf(t, map[string]provider.Provider{mock.Type: metering.Provider(scopedMock{p, "mock://"})}), store, req, clk,
		logging.New(&logs, slog.LevelInfo), gc.Options{})

	report, err := c.Run(context.Background())
	if err != nil {
		t.Fatalf("Run() = %v: a provider that is not configured is no reason to fail the run, which a retry would not mend", err)
	}
	if diff := cmp.Diff([]string{"gcp"}, report.Unconfigured); diff != "" {
		t.Errorf("Report.Unconfigured (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"namespaces/ns/proxies/lost drift"}, req.requests()); diff != "" {
		t.Errorf("drift requests (-want +got): only the lost VM of a listed provider, not gcp's, not the one its provider does not list:\n%s", diff)
	}
	if diff := cmp.Diff([]gc.Summary{{Provider: mock.Type, Scanned: 2, Claimed: 1, Orphaned: 1, Deleted: 1}}, report.Providers); diff != "" {
		t.Errorf("the configured provider is collected as ever (-want +got):\n%s", diff)
	}
	if _, err := p.Get(context.Background(), orphan); err == nil {
		t.Errorf("the orphan %s is still there", orphan)
	}
	want := []logLine{
		{"severity": "ERROR", "message": "provider named by documents is not configured; its resources are neither listed nor collected",
			"provider": "gcp", "documents": 2.0, "configured": "mock"},
	}
	if diff := cmp.Diff(want, linesOf(t, &logs, want[0]["message"].(string))); diff != "" {
		t.Errorf("log lines (-want +got):\n%s", diff)
	}
	scoped := linesOf(t, &logs, "proxies' VMs are outside what their provider lists; neither checked nor collected")
	if len(scoped) != 1 || scoped[0]["example"] != "mock-old-project://proxy-elsewhere" || scoped[0]["proxies"] != 1.0 {
		t.Errorf("lines on VMs outside the listing = %v, want one naming mock-old-project://proxy-elsewhere", scoped)
	}
}
