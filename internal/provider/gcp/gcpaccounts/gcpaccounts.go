// Package gcpaccounts is Compute Engine's part of the local stack's test
// of several accounts of one cloud (dev/localstack's
// TestEndToEnd/TwoProjects, issue 48): two Compute fakes, one per
// project. The deployment's default project is the stack's own on the
// first; an accounts document, second, sets GCP_PROJECT and
// GCP_COMPUTE_ENDPOINT (the per-account variables the gcp plugin marks)
// to a second project on the second fake. Its flow makes gcp proxies
// until each project holds one, checks each VM is in its own project,
// and has the collector take an orphan from each project (and a twin of
// a proxy's VM left in the wrong one) while it leaves another
// deployment's in each.
package gcpaccounts

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/gcp"
	"github.com/egress-proxies/egress/internal/provider/gcp/billingfake"
	"github.com/egress-proxies/egress/internal/provider/gcp/computefake"
	"github.com/egress-proxies/egress/internal/provider/providerstack"
)

// Stack is Compute Engine's part of the stack's test of several
// accounts.
var Stack providerstack.Accounts = twoProjects{}

// The projects, the second account's id and the zone the flow's
// proxies are placed in.
const (
	// firstProject is the stack's own project, which GCP_PROJECT takes
	// by default (GOOGLE_CLOUD_PROJECT); the fake answers any.
	firstProject  = "demo-first"
	secondProject = "demo-second"
	secondAccount = "second"
	region        = "us-central1"
	zone          = "us-central1-a"
)

type twoProjects struct{}

func (twoProjects) Type() string { return gcp.Type }

func (twoProjects) Name() string { return "TwoProjects" }

// projects are the two Compute fakes, by account.
type projects map[string]*computefake.Server

// projectOf is each account's project.
var projectOf = map[string]string{"": firstProject, secondAccount: secondProject}

// Start starts the two Compute fakes (and a billing fake, which the daily
// price refresh of an enabled gcp reads), each settling its operations
// every 100 ms as Compute finishes them, until t ends.
func (twoProjects) Start(t *testing.T) ([]string, providerstack.Account, providerstack.AccountsFlow) {
	t.Helper()
	p := projects{"": computefake.New(), secondAccount: computefake.New()}
	billing := billingfake.New()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				for _, f := range p {
					f.Settle()
				}
			}
		}
	})
	t.Cleanup(func() {
		close(stop)
		wg.Wait()
		for _, f := range p {
			f.Close()
		}
		billing.Close()
	})
	env := []string{"GCP_PROJECT=" + firstProject, "GCP_COMPUTE_ENDPOINT=" + p[""].URL, "GCP_BILLING_ENDPOINT=" + billing.URL + "/",
		"PROXY_ENGINE_URL=https://storage.googleapis.com/" + firstProject + "/egress-proxy"}
	second := providerstack.Account{ID: secondAccount, Settings: map[string]string{"GCP_PROJECT": secondProject, "GCP_COMPUTE_ENDPOINT": p[secondAccount].URL}}
	return env, second, p.flow
}

// code is what the account's fake answers a GET of instance name: 200
// while it holds it, 404 once it is gone.
func (p projects) code(t *testing.T, account, name string) int {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("%s/compute/v1/projects/%s/zones/%s/instances/%s", p[account].URL, projectOf[account], zone, name))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// plant puts in the account's fake a managed instance of uid, of
// deployment, made an hour ago: an orphan when no document claims it
// there.
func (p projects) plant(account, uid, deployment string) string {
	name := provider.NameFromUID(uid)
	p[account].Put(zone, &computepb.Instance{
		Name: proto.String(name), Status: proto.String("RUNNING"),
		CreationTimestamp: proto.String(time.Now().Add(-time.Hour).Format(time.RFC3339)),
		Labels:            map[string]string{provider.LabelManaged: provider.LabelManagedYes, provider.LabelUID: uid, provider.LabelDeployment: deployment},
	})
	return name
}

// other is the account that is not a.
func other(a string) string {
	if a == secondAccount {
		return ""
	}
	return secondAccount
}

// flow: gcp proxies are placed in both projects (placement's hash spreads
// them), each VM made in its own project's fake and named by its proxy's
// status.account; the collector takes an orphan from each project and a
// twin of a proxy's VM in the other project, and leaves another
// deployment's in each, and the proxies' own; deleted, each proxy's VM
// goes from its own project.
func (p projects) flow(t *testing.T, s providerstack.AccountsStack) {
	var placed []providerstack.Placed
	in := map[string]int{}
	// Each proxy lands in one project or the other by its uid: make them
	// until each project holds one (two or three on average).
	for i := 0; i < 12 && (in[""] == 0 || in[secondAccount] == 0); i++ {
		pl := s.CreateVM(t, fmt.Sprintf("projects-%d", i), gcp.Type, region, zone)
		placed = append(placed, pl)
		in[pl.Account]++
		if pl.Phase != "Provisioning" {
			t.Errorf("%s: %s, want Provisioning: the fakes' VMs never call home", pl.Name, pl.Phase)
		}
		vm := provider.NameFromUID(pl.UID)
		if want := "gce://" + projectOf[pl.Account] + "/" + zone + "/" + vm; pl.ProviderID != want {
			t.Errorf("%s in account %q: providerID %s, want %s", pl.Name, pl.Account, pl.ProviderID, want)
		}
		if c := p.code(t, pl.Account, vm); c != http.StatusOK {
			t.Errorf("%s's VM in its account %q's fake: %d, want 200", pl.Name, pl.Account, c)
		}
		if c := p.code(t, other(pl.Account), vm); c != http.StatusNotFound {
			t.Errorf("%s's VM in the other account %q's fake: %d, want 404", pl.Name, other(pl.Account), c)
		}
	}
	if in[""] == 0 || in[secondAccount] == 0 {
		t.Fatalf("proxies by account %v after %d creates: want some in each project", in, len(placed))
	}
	t.Logf("proxies by account: %v", in)

	orphans := map[string]string{"": p.plant("", "c0ffee00-0000-4000-8000-000000000001", provider.DefaultDeployment),
		secondAccount: p.plant(secondAccount, "c0ffee00-0000-4000-8000-000000000002", provider.DefaultDeployment)}
	staging := map[string]string{"": p.plant("", "c0ffee00-0000-4000-8000-000000000003", "staging"),
		secondAccount: p.plant(secondAccount, "c0ffee00-0000-4000-8000-000000000004", "staging")}
	// A twin: the uid of a proxy of one project, in the other: its uid
	// is claimed, but not there.
	twin := placed[0]
	twinAccount := other(twin.Account)
	p.plant(twinAccount, twin.UID, provider.DefaultDeployment)
	providerstack.WaitFor(t, 60*time.Second, "the collector takes the orphan of each project and the twin", func() bool {
		return p.code(t, "", orphans[""]) == http.StatusNotFound && p.code(t, secondAccount, orphans[secondAccount]) == http.StatusNotFound &&
			p.code(t, twinAccount, provider.NameFromUID(twin.UID)) == http.StatusNotFound
	})
	// The runs that took them listed these too, and left them.
	for account, name := range staging {
		if c := p.code(t, account, name); c != http.StatusOK {
			t.Errorf("another deployment's instance in account %q: %d, want 200 (never collected)", account, c)
		}
	}
	for _, pl := range placed {
		if c := p.code(t, pl.Account, provider.NameFromUID(pl.UID)); c != http.StatusOK {
			t.Errorf("%s's own VM in account %q after the collector's runs: %d, want 200", pl.Name, pl.Account, c)
		}
	}

	for _, pl := range placed {
		s.Delete(t, pl.Name)
		if c := p.code(t, pl.Account, provider.NameFromUID(pl.UID)); c != http.StatusNotFound {
			t.Errorf("%s deleted, its VM in account %q: %d, want 404", pl.Name, pl.Account, c)
		}
	}
	if n := p[""].Instances() + p[secondAccount].Instances(); n != len(staging) {
		t.Errorf("instances left in the two projects: %d, want %d (another deployment's)", n, len(staging))
	}
}
