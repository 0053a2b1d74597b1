package gcp_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/gc"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/gcp"
	"github.com/egress-proxies/egress/internal/provider/gcp/computefake"
	"github.com/egress-proxies/egress/internal/proxy"
)

// claims is a document store as the collector reads it: fixed claims, no
// stalled document.
type claims map[string]proxy.Claim

func (c claims) LiveUIDs(context.Context) (map[string]proxy.Claim, error) { return c, nil }
func (c claims) Stalled(context.Context, time.Time, int) ([]proxy.Key, error) {
	return nil, nil
}

// oneGCP is the gcp provider as the collector's only configured provider.
type oneGCP struct{ gcpProviders }

func (o oneGCP) Types() []string { return []string{gcp.Type} }

// TestTwoDeploymentsInOneProject: two deployments' providers and
// collectors over one Compute project (the fake), each with its own
// documents, VMs and static addresses, claimed and orphaned, beside a
// managed VM without the deployment label. Each collector deletes its own
// orphans, and no resource of the other deployment or without the label.
func TestTwoDeploymentsInOneProject(t *testing.T) {
	ctx := context.Background()
	fake := computefake.New()
	t.Cleanup(fake.Close)
	clk := clock.NewFake(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
	fake.SetClock(clk.Now)
	clients := fakeCompute(t, fake)
	type deployment struct {
		p       *gcp.Provider
		claims  claims
		keep    []string // its claimed VMs and addresses
		orphans []string // its VMs and addresses no document claims
	}
	deployments := map[string]*deployment{}
	for _, name := range []string{"production", "staging"} {
		p, err := gcp.New(clients, gcp.Config{Project: lifecycleProject, Deployment: name})
		if err != nil {
			t.Fatal(err)
		}
		d := &deployment{p: p, claims: claims{}}
		for i, live := range []bool{true, true, false, false} {
			uid := fmt.Sprintf("%08d-0000-4000-8000-%012d", i, len(deployments))
			static := i%2 == 0
			id, err := p.Create(ctx, provider.CreateRequest{Name: provider.NameFromUID(uid), UID: uid, StaticIP: static,
				Placement: provider.Placement{Region: "us-central1", Zone: "us-central1-a"}})
			if err != nil {
				t.Fatal(err)
			}
			address := "gce-address://" + lifecycleProject + "/us-central1/" + provider.NameFromUID(uid)
			switch {
			case live:
				d.claims[uid] = proxy.Claim{Key: proxy.Key{Namespace: name, Name: fmt.Sprint(i)}, Phase: proxy.PhaseProvisioning, Provider: gcp.Type, ProviderID: id}
				d.keep = append(d.keep, id)
				if static {
					d.keep = append(d.keep, address)
				}
			case static:
				// Its proxy was deleted and its VM went; the address was
				// left, unused, for the collector.
				if err := p.Delete(ctx, id); err != nil {
					t.Fatal(err)
				}
				d.orphans = append(d.orphans, address)
			default:
				d.orphans = append(d.orphans, id)
			}
		}
		deployments[name] = d
	}
	fake.Put("us-central1-b", &computepb.Instance{Name: proto.String("made-before-the-label"), Status: proto.String("RUNNING"),
		Labels: map[string]string{provider.LabelManaged: provider.LabelManagedYes, provider.LabelUID: "uid-of-no-document"}})
	unlabelled := "gce://" + lifecycleProject + "/us-central1-b/made-before-the-label"
	fake.Settle()
	clk.Advance(time.Hour)

	for _, name := range []string{"production", "staging"} {
		d := deployments[name]
		c := gc.New(oneGCP{gcpProviders{d.p}}, d.claims, noQueue{}, clk, slog.New(slog.DiscardHandler), gc.Options{Deployment: name})
		report, err := c.Run(ctx)
		if err != nil {
			t.Fatalf("deployment %s: %v", name, err)
		}
		// Its two claimed VMs, its unused address and its orphaned VM, and
		// the unlabelled VM; never the other's.
		want := []gc.Summary{{Provider: gcp.Type, Scanned: 5, Unowned: 1, Claimed: 2, Orphaned: 2, Deleted: 2}}
		if diff := cmp.Diff(want, report.Providers); diff != "" {
			t.Errorf("deployment %s's run (-want +got):\n%s", name, diff)
		}
	}
	if got := fake.Calls("delete") + fake.Calls("addresses.delete"); got != 2+4 {
		// The setup deleted two VMs; the collectors, one VM and one
		// address each.
		t.Errorf("Compute deletes = %d, want 6: the setup's two and each collector's two", got)
	}
	fake.Settle()

	got := map[string]bool{}
	want := map[string]bool{unlabelled: true}
	var all []string
	for _, d := range deployments {
		for _, id := range d.keep {
			want[id] = true
		}
		all = append(all, d.keep...)
		all = append(all, d.orphans...)
	}
	for _, id := range append(all, unlabelled) {
		_, err := deployments["production"].p.Get(ctx, id)
		switch {
		case err == nil:
			got[id] = true
		case !errors.Is(err, provider.ErrNotFound):
			t.Fatalf("Get(%s): %v", id, err)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resources left in the project (-want +got):\n%s", diff)
	}
}

// TestListsOnlyItsProject: a providerID names its project, so a VM made
// under an earlier GCP_PROJECT is still read and deleted through it, while
// ListByTag lists only the configured project; Lists tells the collector
// which are not listed, so it does not take them for lost.
func TestListsOnlyItsProject(t *testing.T) {
	fake := computefake.New()
	t.Cleanup(fake.Close)
	p, err := gcp.New(fakeCompute(t, fake), gcp.Config{Project: "new-project"})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		id   string
		want bool
	}{
		"ThisProject":        {id: "gce://new-project/us-central1-a/proxy-x", want: true},
		"ThisProjectAddress": {id: "gce-address://new-project/us-central1/proxy-x", want: true},
		"EarlierProject":     {id: "gce://old-project/us-central1-a/proxy-x"},
		"NotAnID":            {id: "mock://proxy-x"},
	}
	for name, tc := range cases {
		if got := p.Lists(tc.id); got != tc.want {
			t.Errorf("%s: Lists(%s) = %v, want %v", name, tc.id, got, tc.want)
		}
	}
}
