package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/gcp/billingfake"
	"github.com/egress-proxies/egress/internal/provider/gcp/computefake"
)

// Issue 48's several accounts of one cloud, on Compute Engine: two
// Compute fakes, one per project. The deployment's default project is
// the stack's GCP_PROJECT on the first; an account document, second,
// sets GCP_PROJECT and GCP_COMPUTE_ENDPOINT (the per-account variables
// the gcp plugin marks) to the second project on the second fake.

// secondProject is the extra project's id, and secondAccount the
// account document that names it.
const (
	secondProject = "demo-second"
	secondAccount = "second"
	projectsZone  = "us-central1-a"
)

// projects are the two Compute fakes of the stack's gcp provider.
type projects struct {
	first, second *computefake.Server
	// firstProject is the stack's own project (GCP_PROJECT's default,
	// GOOGLE_CLOUD_PROJECT).
	firstProject string
}

// startProjects starts the two Compute fakes (and a billing fake, which
// the daily price refresh of an enabled gcp reads), each settling its
// operations every 100 ms as Compute finishes them, until t ends; and
// returns the stack's variables that enable gcp on the first.
func startProjects(t *testing.T, project string) (*projects, []string) {
	t.Helper()
	p := &projects{first: computefake.New(), second: computefake.New(), firstProject: project}
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
				p.first.Settle()
				p.second.Settle()
			}
		}
	})
	t.Cleanup(func() {
		close(stop)
		wg.Wait()
		p.first.Close()
		p.second.Close()
		billing.Close()
	})
	return p, []string{"GCP_COMPUTE_ENDPOINT=" + p.first.URL, "GCP_BILLING_ENDPOINT=" + billing.URL + "/",
		"PROXY_ENGINE_URL=https://storage.googleapis.com/" + project + "/egress-proxy"}
}

// addSecondAccount writes the account document of the second project,
// as an admin does (docs/operations/accounts.md), through the Firestore
// emulator's REST API: before any proxy is placed, so that no
// reconciler's cached list of accounts misses it.
func (s *liveStack) addSecondAccount(t *testing.T) {
	t.Helper()
	str := func(v string) map[string]any { return map[string]any{"stringValue": v} }
	doc := map[string]any{"fields": map[string]any{
		"provider": str("gcp"),
		"state":    str("active"),
		"settings": map[string]any{"mapValue": map[string]any{"fields": map[string]any{
			"GCP_PROJECT": str(secondProject), "GCP_COMPUTE_ENDPOINT": str(s.projects.second.URL)}}},
		"createTime": map[string]any{"timestampValue": time.Now().UTC().Format(time.RFC3339Nano)},
	}}
	body, _ := json.Marshal(doc)
	u := fmt.Sprintf("http://%s/v1/projects/%s/databases/(default)/documents/accounts?documentId=%s", s.firestore, s.project, secondAccount)
	req, _ := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer owner")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		t.Fatalf("writing accounts/%s: %d %s", secondAccount, resp.StatusCode, b.String())
	}
}

// instanceCode is what fake answers a GET of instance name in project:
// 200 while it holds it, 404 once it is gone.
func instanceCode(t *testing.T, fake *computefake.Server, project, name string) int {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("%s/compute/v1/projects/%s/zones/%s/instances/%s", fake.URL, project, projectsZone, name))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// plant puts in fake a managed instance of uid, of deployment, made an
// hour ago: an orphan when no document claims it.
func plant(fake *computefake.Server, uid, deployment string) string {
	name := provider.NameFromUID(uid)
	fake.Put(projectsZone, &computepb.Instance{
		Name: proto.String(name), Status: proto.String("RUNNING"),
		CreationTimestamp: proto.String(time.Now().Add(-time.Hour).Format(time.RFC3339)),
		Labels:            map[string]string{provider.LabelManaged: provider.LabelManagedYes, provider.LabelUID: uid, provider.LabelDeployment: deployment},
	})
	return name
}

// twoProjects: gcp proxies are placed in both projects (placement's hash
// spreads them), each VM made in its own project's fake and named by its
// proxy's status.account; the collector takes an orphan from each
// project and leaves another deployment's in each, and the proxies' own.
func (s *liveStack) twoProjects(t *testing.T) {
	type placed struct {
		name, uid, account, vm string
	}
	var proxies []placed
	inAccount := map[string]int{}
	// Each proxy lands in one project or the other by its uid: make them
	// until each project holds one (two on average, a handful at worst).
	for i := 0; i < 12 && (inAccount[""] == 0 || inAccount[secondAccount] == 0); i++ {
		name := fmt.Sprintf("projects-%d", i)
		code, r := s.postWith(t, "demo", name, `"provider":"gcp"`)
		if code != http.StatusCreated {
			t.Fatalf("create demo/%s on gcp: %d", name, code)
		}
		var got struct {
			Status struct{ Phase, ProviderID, Account, Message string }
		}
		waitFor(t, 60*time.Second, "demo/"+name+" has a VM", func() bool {
			resp := s.do(t, http.MethodGet, "/v1/namespaces/demo/proxies/"+name, nil)
			defer resp.Body.Close()
			json.NewDecoder(resp.Body).Decode(&got)
			return got.Status.ProviderID != ""
		})
		if got.Status.Phase != "Provisioning" {
			t.Errorf("demo/%s: %s (%s), want Provisioning: the fake's VMs never call home", name, got.Status.Phase, got.Status.Message)
		}
		vm := provider.NameFromUID(r.UID)
		proxies = append(proxies, placed{name: name, uid: r.UID, account: got.Status.Account, vm: vm})
		inAccount[got.Status.Account]++
		wantProject := map[string]string{"": s.projects.firstProject, secondAccount: secondProject}[got.Status.Account]
		if want := "gce://" + wantProject + "/" + projectsZone + "/" + vm; got.Status.ProviderID != want {
			t.Errorf("demo/%s in account %q: providerID %s, want %s", name, got.Status.Account, got.Status.ProviderID, want)
		}
	}
	if inAccount[""] == 0 || inAccount[secondAccount] == 0 {
		t.Fatalf("proxies by account %v after %d creates: want some in each project", inAccount, len(proxies))
	}
	t.Logf("proxies by account: %v", inAccount)
	fakes := map[string]*computefake.Server{"": s.projects.first, secondAccount: s.projects.second}
	projectOf := map[string]string{"": s.projects.firstProject, secondAccount: secondProject}
	for _, p := range proxies {
		other := secondAccount
		if p.account == secondAccount {
			other = ""
		}
		if c := instanceCode(t, fakes[p.account], projectOf[p.account], p.vm); c != http.StatusOK {
			t.Errorf("demo/%s's VM in its account %q's fake: %d, want 200", p.name, p.account, c)
		}
		if c := instanceCode(t, fakes[other], projectOf[other], p.vm); c != http.StatusNotFound {
			t.Errorf("demo/%s's VM in the other account %q's fake: %d, want 404", p.name, other, c)
		}
	}

	// An orphan in each project, another deployment's in each, and, in
	// the second, a twin of a proxy of the first (its uid, in the wrong
	// project): garbage too, though its uid is claimed.
	orphans := map[string]string{"": plant(s.projects.first, "c0ffee00-0000-4000-8000-000000000001", provider.DefaultDeployment),
		secondAccount: plant(s.projects.second, "c0ffee00-0000-4000-8000-000000000002", provider.DefaultDeployment)}
	staging := map[string]string{"": plant(s.projects.first, "c0ffee00-0000-4000-8000-000000000003", "staging"),
		secondAccount: plant(s.projects.second, "c0ffee00-0000-4000-8000-000000000004", "staging")}
	var twin placed
	for _, p := range proxies {
		if p.account == "" {
			twin = p
			plant(s.projects.second, p.uid, provider.DefaultDeployment)
			break
		}
	}
	waitFor(t, 60*time.Second, "the collector takes the orphan of each project and the twin", func() bool {
		return instanceCode(t, s.projects.first, s.projects.firstProject, orphans[""]) == http.StatusNotFound &&
			instanceCode(t, s.projects.second, secondProject, orphans[secondAccount]) == http.StatusNotFound &&
			instanceCode(t, s.projects.second, secondProject, twin.vm) == http.StatusNotFound
	})
	// The runs that took them listed these too, and left them.
	for acct, name := range staging {
		if c := instanceCode(t, fakes[acct], projectOf[acct], name); c != http.StatusOK {
			t.Errorf("another deployment's instance in account %q: %d, want 200 (never collected)", acct, c)
		}
	}
	for _, p := range proxies {
		if c := instanceCode(t, fakes[p.account], projectOf[p.account], p.vm); c != http.StatusOK {
			t.Errorf("demo/%s's own VM in account %q after the collector's runs: %d, want 200", p.name, p.account, c)
		}
	}

	// Deleted, each VM goes from its own project.
	for _, p := range proxies {
		resp := s.do(t, http.MethodDelete, "/v1/namespaces/demo/proxies/"+p.name, nil)
		resp.Body.Close()
	}
	for _, p := range proxies {
		waitFor(t, 60*time.Second, "demo/"+p.name+" and its VM gone", func() bool {
			code, _ := s.get(t, "demo", p.name)
			return code == http.StatusNotFound && instanceCode(t, fakes[p.account], projectOf[p.account], p.vm) == http.StatusNotFound
		})
	}
	if n := s.projects.first.Instances() + s.projects.second.Instances(); n != len(staging) {
		t.Errorf("instances left in the two projects: %d, want %d (another deployment's)", n, len(staging))
	}
}
