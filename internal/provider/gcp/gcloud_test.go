package gcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/gcp"
	"github.com/egress-proxies/egress/internal/provider/gcp/computefake"
	"github.com/egress-proxies/egress/internal/testenv"
)

const gcloudProject = "demo-gcloud"

// TestGcloudAgainstTheFake holds the Compute fake to a client the project
// did not write: Google's Cloud CLI, pointed at the fake with its endpoint
// override and credentials off, reads and deletes what the gcp provider
// created there. Each command's exit status is checked, and its JSON
// compared with what the real Go client reads from the fake; after gcloud
// deletes them, the provider finds the VM and the address gone.
//
// gcloud starts slowly (seconds per command, more on a busy machine), so
// the commands run in this one test, the three reads at once.
func TestGcloudAgainstTheFake(t *testing.T) {
	g := newGcloud(t)
	ctx := context.Background()
	fake := computefake.New()
	t.Cleanup(fake.Close)
	opts := []option.ClientOption{option.WithEndpoint(fake.URL), option.WithoutAuthentication()}
	clients, err := gcp.NewClients(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { clients.Close() })
	p, err := gcp.New(clients, gcp.Config{Project: gcloudProject})
	if err != nil {
		t.Fatal(err)
	}
	g.env = append(g.env, "CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE="+fake.URL+"/compute/v1/")

	// One proxy with an ephemeral IP, one with a static address.
	ephemeral := createProxy(t, p, "0b6d7a52-2f1e-4c3a-9d8b-7e6f5a4b3c21", "us-central1-a", false)
	static := createProxy(t, p, "5c4b3a29-1807-4f6e-8d5c-4b3a29180706", "us-central1-b", true)
	fake.Settle()
	staticVM, err := p.Get(ctx, static)
	if err != nil {
		t.Fatal(err)
	}
	addressID := staticVM.AddressID
	name := func(id string) string { return id[strings.LastIndex(id, "/")+1:] }

	// What the real Go client reads, as JSON objects.
	goInstance := func(zone, n string) map[string]any {
		inst, err := clients.Instances.Get(ctx, &computepb.GetInstanceRequest{Project: gcloudProject, Zone: zone, Instance: n})
		if err != nil {
			t.Fatal(err)
		}
		return object(t, inst)
	}
	address, err := clients.Addresses.Get(ctx, &computepb.GetAddressRequest{Project: gcloudProject, Region: "us-central1", Address: name(addressID)})
	if err != nil {
		t.Fatal(err)
	}
	wantInstances := []map[string]any{goInstance("us-central1-a", name(ephemeral)), goInstance("us-central1-b", name(static))}

	// The region's quotas, as regions.get reports them to the Go client.
	fake.SetQuotas("us-central1", computefake.Quotas{CPUs: 24, Instances: 100, InUseAddresses: 8, StaticAddresses: 8})
	goRegion, err := clients.Regions.Get(ctx, &computepb.GetRegionRequest{Project: gcloudProject, Region: "us-central1"})
	if err != nil {
		t.Fatal(err)
	}

	// The reads, at once.
	var list, describe, addresses, region result
	var wg sync.WaitGroup
	for r, args := range map[*result][]string{
		&list:      {"compute", "instances", "list", "--format=json"},
		&describe:  {"compute", "instances", "describe", name(static), "--zone=us-central1-b", "--format=json"},
		&addresses: {"compute", "addresses", "list", "--format=json"},
		&region:    {"compute", "regions", "describe", "us-central1", "--format=json"},
	} {
		wg.Go(func() { *r = g.run(ctx, args...) })
	}
	wg.Wait()
	if diff := cmp.Diff(wantInstances, byName(list.jsonList(t))); diff != "" {
		t.Errorf("gcloud compute instances list against the Go client's instances.get (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantInstances[1], describe.jsonObject(t)); diff != "" {
		t.Errorf("gcloud compute instances describe against the Go client's instances.get (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]map[string]any{object(t, address)}, addresses.jsonList(t)); diff != "" {
		t.Errorf("gcloud compute addresses list against the Go client's addresses.get (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(object(t, goRegion)["quotas"], region.jsonObject(t)["quotas"]); diff != "" {
		t.Errorf("gcloud compute regions describe's quotas against the Go client's regions.get (-want +got):\n%s", diff)
	}

	// gcloud waits for each delete's operation (zoneOperations.wait,
	// regionOperations.wait); Compute finishes it meanwhile.
	fake.OnWait(func(string) { fake.Settle() })

	// gcloud's add-metadata and add-labels read the VM for its
	// fingerprints and write it whole with them (setMetadata, setLabels),
	// as Reconfigure does; what they add is there, with what was, and
	// Reconfigure then writes over a VM someone else changed.
	var addMetadata, addLabels result
	for r, args := range map[*result][]string{
		&addMetadata: {"compute", "instances", "add-metadata", name(ephemeral), "--zone=us-central1-a", "--metadata=egress-note=by-gcloud"},
		&addLabels:   {"compute", "instances", "add-labels", name(ephemeral), "--zone=us-central1-a", "--labels=team=g"},
	} {
		wg.Go(func() { *r = g.run(ctx, args...) })
	}
	wg.Wait()
	addMetadata.ok(t)
	addLabels.ok(t)
	changed := goInstance("us-central1-a", name(ephemeral))
	wantLabels := map[string]any{"egress-deployment": "egress", "proxy-operator-managed": "true", "proxy-operator-uid": "0b6d7a52-2f1e-4c3a-9d8b-7e6f5a4b3c21", "team": "g"}
	if diff := cmp.Diff(wantLabels, changed["labels"]); diff != "" {
		t.Errorf("labels after gcloud compute instances add-labels (-want +got):\n%s", diff)
	}
	if md := fmt.Sprint(changed["metadata"]); !strings.Contains(md, "egress-note") {
		t.Errorf("metadata after gcloud compute instances add-metadata: %s, want an item egress-note", md)
	}
	newUID := "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
	if err := p.Reconfigure(ctx, ephemeral, provider.ReconfigureRequest{UID: newUID, Namespace: "team-g", ProxyName: "claimed"}); err != nil {
		t.Fatalf("Reconfigure after gcloud's changes: %v", err)
	}
	if in, err := p.Get(ctx, ephemeral); err != nil || in.UID != newUID {
		t.Errorf("Get after Reconfigure: %+v, %v; want uid %s", in, err, newUID)
	}
	if got := fake.Calls("setLabels"); got != 2 {
		t.Errorf("%d setLabels calls, want 2: gcloud's and Reconfigure's, none refused", got)
	}

	del := g.run(ctx, "compute", "instances", "delete", name(static), "--zone=us-central1-b", "--quiet")
	del.ok(t)
	if want := "Deleted [" + link("zones/us-central1-b/instances/"+name(static)) + "]."; !strings.Contains(del.stderr, want) {
		t.Errorf("gcloud compute instances delete said:\n%s\nwant a line %q", del.stderr, want)
	}
	if _, err := p.Get(ctx, static); provider.KindOf(err) != provider.KindNotFound {
		t.Errorf("the provider's Get after gcloud deleted the VM: %v, want not found", err)
	}
	// Its address is free now, and gcloud releases it.
	delAddr := g.run(ctx, "compute", "addresses", "delete", name(addressID), "--region=us-central1", "--quiet")
	delAddr.ok(t)
	if want := "Deleted [" + link("regions/us-central1/addresses/"+name(addressID)) + "]."; !strings.Contains(delAddr.stderr, want) {
		t.Errorf("gcloud compute addresses delete said:\n%s\nwant a line %q", delAddr.stderr, want)
	}
	if _, err := p.Get(ctx, addressID); provider.KindOf(err) != provider.KindNotFound {
		t.Errorf("the provider's Get after gcloud released the address: %v, want not found", err)
	}
	if n := fake.Calls("operations.wait"); n < 2 {
		t.Errorf("gcloud waited for %d operations, want both deletes' (zoneOperations.wait, regionOperations.wait)", n)
	}

	// Every operation, all DONE: the provider's three inserts and gcloud's
	// two deletes.
	ops := g.run(ctx, "compute", "operations", "list", "--format=json")
	global, err := compute.NewGlobalOperationsRESTClient(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer global.Close()
	var wantOps []map[string]any
	it := global.AggregatedList(ctx, &computepb.AggregatedListGlobalOperationsRequest{Project: gcloudProject})
	for {
		pair, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range pair.Value.GetOperations() {
			if op.GetStatus() != computepb.Operation_DONE {
				t.Errorf("operation %s of %s is %v, want DONE", op.GetName(), op.GetTargetLink(), op.GetStatus())
			}
			wantOps = append(wantOps, object(t, op))
		}
	}
	if len(wantOps) != 8 {
		t.Errorf("%d operations, want 8: three inserts (two VMs, an address), gcloud's setMetadata and setLabels, Reconfigure's setLabels (without a call-home topic no item names the owner) and two deletes", len(wantOps))
	}
	if diff := cmp.Diff(byName(wantOps), byName(ops.jsonList(t))); diff != "" {
		t.Errorf("gcloud compute operations list against the Go client's aggregatedList (-want +got):\n%s", diff)
	}
	if g.proxied() != "" {
		t.Errorf("gcloud tried to reach beyond the fake: %s", g.proxied())
	}
}

func createProxy(t *testing.T, p *gcp.Provider, uid, zone string, static bool) string {
	t.Helper()
	id, err := p.Create(context.Background(), provider.CreateRequest{
		Name: provider.NameFromUID(uid), UID: uid, Namespace: "team-g", ProxyName: "proxy-" + uid[:4],
		Placement: provider.Placement{Region: "us-central1", Zone: zone, MachineType: "e2-small", Image: gcp.DefaultImage},
		Port:      3128, StaticIP: static,
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func link(rest string) string {
	return "https://www.googleapis.com/compute/v1/projects/" + gcloudProject + "/" + rest
}

// object is a message as the JSON object Compute sends.
func object(t *testing.T, m proto.Message) map[string]any {
	t.Helper()
	b, err := protojson.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func byName(objs []map[string]any) []map[string]any {
	sort.Slice(objs, func(i, j int) bool { return fmt.Sprint(objs[i]["name"]) < fmt.Sprint(objs[j]["name"]) })
	return objs
}

// gcloud runs the Cloud CLI with a configuration of its own: no
// credentials, this project, no prompts, no update check, no usage
// reporting, no metadata-server probe, and every connection that would
// leave the machine sent to a proxy that refuses it and says so.
type gcloud struct {
	t    *testing.T
	path string
	env  []string

	mu   sync.Mutex
	trap []string // what was asked of the proxy
}

func newGcloud(t *testing.T) *gcloud {
	t.Helper()
	path := testenv.Require(t, testenv.Gcloud)
	g := &gcloud{t: t, path: path}
	// The properties `gcloud config set` would write, as the environment
	// variables gcloud reads them from (CLOUDSDK_SECTION_PROPERTY): each
	// `config set` costs a gcloud start.
	g.env = append(os.Environ(),
		"CLOUDSDK_CONFIG="+t.TempDir(),
		"CLOUDSDK_AUTH_DISABLE_CREDENTIALS=true",
		"CLOUDSDK_CORE_PROJECT="+gcloudProject,
		"CLOUDSDK_CORE_DISABLE_PROMPTS=1",
		"CLOUDSDK_CORE_DISABLE_USAGE_REPORTING=true",
		"CLOUDSDK_CORE_CHECK_GCE_METADATA=false",
		"CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK=true",
	)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 256)
			n, _ := c.Read(buf)
			g.mu.Lock()
			g.trap = append(g.trap, strings.SplitN(string(buf[:n]), "\r\n", 2)[0])
			g.mu.Unlock()
			c.Close()
		}
	}()
	proxy := "http://" + l.Addr().String()
	g.env = append(g.env, "HTTPS_PROXY="+proxy, "HTTP_PROXY="+proxy, "https_proxy="+proxy, "http_proxy="+proxy,
		"NO_PROXY=127.0.0.1", "no_proxy=127.0.0.1")
	return g
}

// proxied is what gcloud asked of the trap proxy, if anything.
func (g *gcloud) proxied() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return strings.Join(g.trap, "; ")
}

// result is one command's outcome.
type result struct {
	args           []string
	err            error
	stdout, stderr string
}

// run runs gcloud with args. A generous bound keeps a hung command from
// holding the test until go test's own timeout; it is no measure.
func (g *gcloud) run(ctx context.Context, args ...string) result {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, g.path, args...)
	cmd.Env = g.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return result{args: args, err: err, stdout: stdout.String(), stderr: stderr.String()}
}

// ok fails the test unless the command exited 0 without a warning.
func (r result) ok(t *testing.T) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("gcloud %s: %v\n%s", strings.Join(r.args, " "), r.err, r.stderr)
	}
	if strings.Contains(r.stderr, "WARNING") || strings.Contains(r.stderr, "ERROR") {
		t.Errorf("gcloud %s warned:\n%s", strings.Join(r.args, " "), r.stderr)
	}
}

func (r result) jsonList(t *testing.T) []map[string]any {
	t.Helper()
	r.ok(t)
	var out []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("gcloud %s printed no JSON list: %v\n%s", strings.Join(r.args, " "), err, r.stdout)
	}
	return out
}

func (r result) jsonObject(t *testing.T) map[string]any {
	t.Helper()
	r.ok(t)
	var out map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("gcloud %s printed no JSON object: %v\n%s", strings.Join(r.args, " "), err, r.stdout)
	}
	return out
}
