package hetzner

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/gc"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store/storefake"
	"github.com/egress-proxies/egress/internal/testenv"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

// TestHcloudAgainstTheFake holds the Hetzner fake to a client the project
// did not write: Hetzner's own CLI (Debian's hcloud-cli), pointed at the
// fake with HCLOUD_ENDPOINT, lists by label selector, describes and
// deletes what the provider made there. Each command's exit status is
// checked, and what it prints compared with what the provider reads;
// after hcloud deletes a server, the provider finds it gone, and its
// ephemeral addresses with it.
func TestHcloudAgainstTheFake(t *testing.T) {
	h := newHcloud(t)
	e := newEnv(t)
	h.endpoint = e.fake.Endpoint()
	ctx := context.Background()

	ephemeral := request()
	static := request()
	static.UID, static.Name, static.ProxyName = "5c4b3a29-1807-4f6e-8d5c-4b3a29180706", provider.NameFromUID("5c4b3a29-1807-4f6e-8d5c-4b3a29180706"), "egress-2"
	static.StaticIP, static.Placement.Zone = true, "hel1"
	ids := map[string]string{}
	for _, req := range []provider.CreateRequest{ephemeral, static} {
		id, err := e.p.Create(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		ids[req.Name] = id
	}
	e.fake.Settle()
	e.fake.Put("someone-elses", "fsn1", map[string]string{"team": "other"})

	// The list by label selector: the provider's two servers, with their
	// labels, and not the other.
	var listed []struct {
		ID     int64             `json:"id"`
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
		Status string            `json:"status"`
	}
	h.json(t, &listed, "server", "list", "-l", "proxy-operator-managed=true", "-o", "json")
	got := map[string]map[string]string{}
	for _, s := range listed {
		got[s.Name] = s.Labels
		if want := ids[s.Name]; serverID(s.ID) != want || s.Status != "running" {
			t.Errorf("hcloud lists %s as id %d, %s; want %s, running", s.Name, s.ID, s.Status, want)
		}
	}
	want := map[string]map[string]string{
		ephemeral.Name: {"proxy-operator-managed": "true", "proxy-operator-uid": ephemeral.UID, "egress-deployment": "egress", "egress-proxy-port": "3128",
			"egress-status-id": vmstatus.StatusID(ephemeral)},
		static.Name: {"proxy-operator-managed": "true", "proxy-operator-uid": static.UID, "egress-deployment": "egress", "egress-proxy-port": "3128", "egress-static-ip": "true",
			"egress-status-id": vmstatus.StatusID(static)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("hcloud server list -l proxy-operator-managed=true (-want +got):\n%s", diff)
	}

	// describe: the address and location the provider reads.
	in, err := e.p.Get(ctx, ids[static.Name])
	if err != nil {
		t.Fatal(err)
	}
	var described struct {
		ID        int64 `json:"id"`
		PublicNet struct {
			IPv4 struct {
				IP string `json:"ip"`
			} `json:"ipv4"`
		} `json:"public_net"`
		Datacenter struct {
			Location struct {
				Name string `json:"name"`
			} `json:"location"`
		} `json:"datacenter"`
	}
	h.json(t, &described, "server", "describe", static.Name, "-o", "json")
	if serverID(described.ID) != in.ID || described.PublicNet.IPv4.IP != in.IP || described.Datacenter.Location.Name != in.Zone {
		t.Errorf("hcloud server describe: id %d, %s in %s; the provider reads %s, %s in %s", described.ID, described.PublicNet.IPv4.IP, described.Datacenter.Location.Name, in.ID, in.IP, in.Zone)
	}
	text := h.run(t, "server", "describe", static.Name)
	for _, line := range []string{"Name:\t\t" + static.Name, "IP:\t\t" + in.IP, "proxy-operator-uid: " + static.UID} {
		if !strings.Contains(text, line) {
			t.Errorf("hcloud server describe says:\n%s\nwant a line with %q", text, line)
		}
	}
	var ips []struct {
		IP     string            `json:"ip"`
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	}
	h.json(t, &ips, "primary-ip", "list", "-l", "proxy-operator-managed=true", "-o", "json")
	if len(ips) != 1 || ips[0].IP != in.IP || ips[0].Name != static.Name || ips[0].Labels[provider.LabelUID] != static.UID {
		t.Errorf("hcloud primary-ip list -l proxy-operator-managed=true: %+v, want the Static proxy's %s alone", ips, in.IP)
	}

	// delete: hcloud (1.30) asks and does not wait; the server is
	// "deleting", which the provider takes as gone, until Hetzner
	// finishes its action.
	for _, name := range []string{ephemeral.Name, static.Name} {
		out := h.run(t, "server", "delete", name)
		if want := "Server " + name + " deleted"; !strings.Contains(out, want) {
			t.Errorf("hcloud server delete %s said %q, want %q", name, out, want)
		}
		if _, err := e.p.Get(ctx, ids[name]); provider.KindOf(err) != provider.KindNotFound {
			t.Errorf("the provider's Get after hcloud deleted %s: %v, want not found", name, err)
		}
	}
	e.fake.Settle()
	if left := h.run(t, "server", "list", "-l", "proxy-operator-managed=true", "-o", "noheader"); strings.TrimSpace(left) != "" {
		t.Errorf("hcloud server list after the deletes:\n%s\nwant nothing", left)
	}
	// The Static proxy's Primary IP stays for the collector; the
	// ephemeral one's went with its server.
	list, err := e.p.ListByTag(ctx)
	if err != nil || len(list) != 1 || list[0].ID != in.AddressID {
		t.Errorf("ListByTag after the deletes: %+v, %v; want the Static proxy's Primary IP alone", list, err)
	}
	if n := len(e.fake.PrimaryIPs()); n != 2 {
		t.Errorf("%d Primary IPs left, want 2: the Static proxy's and the other server's", n)
	}
}

// TestTheCollectorTakesAnHcloudOrphan: a server hcloud made with this
// deployment's labels and a uid no document claims is an orphan; the
// collector keeps it through the grace period and then deletes it, and
// never a server of another deployment made the same way, nor the one a
// live document claims.
func TestTheCollectorTakesAnHcloudOrphan(t *testing.T) {
	h := newHcloud(t)
	clk := clock.NewFake(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	e := newEnv(t, func(c *Config) { c.Now = clk.Now })
	e.fake.SetClock(clk.Now)
	h.endpoint = e.fake.Endpoint()
	ctx := context.Background()

	// A live proxy, whose document claims its server.
	live := request()
	liveID, err := e.p.Create(ctx, live)
	if err != nil {
		t.Fatal(err)
	}
	store := storefake.New(clk)
	doc := &proxy.Proxy{Namespace: "team-a", Name: "egress-1", UID: live.UID, Spec: proxy.Spec{Provider: Type}}
	doc.Status.ProviderID = liveID
	if _, err := store.Create(ctx, doc, 10); err != nil {
		t.Fatal(err)
	}
	orphanUID, otherUID := "0f0f0f0f-1111-4222-8333-444455556666", "0e0e0e0e-1111-4222-8333-444455556666"
	create := func(name, uid, deployment string) int64 {
		out := h.run(t, "server", "create", "--name", name, "--type", "cx23", "--image", "debian-13", "--location", "fsn1",
			"--label", "proxy-operator-managed=true", "--label", "proxy-operator-uid="+uid, "--label", "egress-deployment="+deployment)
		for _, sv := range e.fake.Servers() {
			if sv.Name == name {
				if !strings.Contains(out, "Server "+strconv.FormatInt(sv.ID, 10)+" created") {
					t.Errorf("hcloud server create %s said:\n%s", name, out)
				}
				return sv.ID
			}
		}
		t.Fatalf("hcloud server create %s made no server:\n%s", name, out)
		return 0
	}
	e.fake.SettleOnActionPoll(true)
	orphan := create("orphan-by-hand", orphanUID, "egress")
	other := create("staging-by-hand", otherUID, "staging")

	reg := provider.NewRegistry()
	if err := reg.Register(Type, func(context.Context) (provider.Provider, error) { return e.p, nil }); err != nil {
		t.Fatal(err)
	}
	c := gc.New(provider.NewSet(reg), store, nopRequeuer{}, clk, slog.New(slog.DiscardHandler), gc.Options{})
	run := func() gc.Summary {
		t.Helper()
		rep, err := c.Run(ctx)
		if err != nil || len(rep.Providers) != 1 {
			t.Fatalf("gc run: %+v, %v", rep, err)
		}
		e.fake.Settle()
		return rep.Providers[0]
	}
	names := func() []string {
		var out []string
		for _, sv := range e.fake.Servers() {
			out = append(out, sv.Name)
		}
		slices.Sort(out)
		return out
	}
	young := run()
	if young.Deleted != 0 || young.TooYoung != 1 || young.Unowned != 0 {
		t.Errorf("a run within the grace period: %+v, want the orphan kept as too young (and the other deployment's not even listed)", young)
	}
	clk.Advance(gc.DefaultGracePeriod + time.Minute)
	old := run()
	if old.Deleted != 1 || old.Claimed != 1 {
		t.Errorf("a run past the grace period: %+v, want one deleted, one claimed", old)
	}
	if diff := cmp.Diff([]string{live.Name, "staging-by-hand"}, names()); diff != "" {
		t.Errorf("servers after the collector (-want +got):\n%s", diff)
	}
	if out := h.run(t, "server", "list", "-o", "noheader", "-o", "columns=id,name"); strings.Contains(out, strconv.FormatInt(orphan, 10)) || !strings.Contains(out, strconv.FormatInt(other, 10)) {
		t.Errorf("hcloud server list after the collector:\n%s\nwant %d gone and %d there", out, orphan, other)
	}
}

type nopRequeuer struct{}

func (nopRequeuer) Publish(context.Context, proxy.ReconcileMessage) error { return nil }

// hcloudCLI runs Hetzner's CLI with a configuration of its own (no context,
// the fake's token and endpoint).
type hcloudCLI struct {
	path, config, endpoint string
}

func newHcloud(t *testing.T) *hcloudCLI {
	t.Helper()
	path := testenv.Require(t, testenv.Hcloud)
	return &hcloudCLI{path: path, config: filepath.Join(t.TempDir(), "cli.toml")}
}

// run runs hcloud and fails the test unless it exits 0; it returns what
// it printed. A generous bound keeps a hung command from holding the
// test; it is no measure.
func (h *hcloudCLI) run(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.path, append([]string{"--poll-interval", "10ms"}, args...)...)
	cmd.Env = append(os.Environ(), "HCLOUD_TOKEN="+testToken, "HCLOUD_ENDPOINT="+h.endpoint, "HCLOUD_CONFIG="+h.config,
		"NO_PROXY=127.0.0.1", "no_proxy=127.0.0.1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("hcloud %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func (h *hcloudCLI) json(t *testing.T, v any, args ...string) {
	t.Helper()
	out := h.run(t, args...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("hcloud %s printed no JSON: %v\n%s", strings.Join(args, " "), err, out)
	}
}
