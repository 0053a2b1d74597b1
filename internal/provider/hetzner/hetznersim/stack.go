package hetznersim

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/hetzner"
	"github.com/egress-proxies/egress/internal/provider/hetzner/hetznerfake"
	"github.com/egress-proxies/egress/internal/provider/providerstack"
	"github.com/egress-proxies/egress/internal/testenv"
)

// Stack is Hetzner's part of the local stack's end-to-end test: the
// Hetzner fake (startFake), which the stack's hetzner provider is pointed
// at (HETZNER_ENDPOINT), and issue 34's flow over it
// (TestEndToEnd/Flows/Hetzner), checked with Hetzner's CLI.
var Stack = providerstack.New(hetzner.Type, "Hetzner", startFake, flow)

// startFake starts the stack's Hetzner fake, its servers booting their
// engines on loopback addresses from the user-data the stack renders,
// and returns it with the stack's variable for it.
func startFake(t *testing.T) (*hetznerfake.Server, []string) {
	t.Helper()
	f := hetznerfake.New(hetzner.LocalToken)
	f.StartServing(hetznerfake.Serve{AllowDestinations: []string{"127.0.0.1/32"}, Tick: 500 * time.Millisecond})
	t.Cleanup(f.Close)
	return f, []string{hetzner.Plugin.FakeEndpoint + "=" + f.Endpoint()}
}

// hcloudCLI is Hetzner's own CLI (Debian's hcloud-cli) against the
// stack's Hetzner fake.
type hcloudCLI struct{ path, endpoint, config string }

// run runs hcloud and fails the test unless it exits 0.
func (h hcloudCLI) run(t *testing.T, args ...string) string {
	t.Helper()
	return providerstack.RunTool(t, h.path, append([]string{"--poll-interval", "50ms"}, args...),
		"HCLOUD_TOKEN="+hetzner.LocalToken, "HCLOUD_ENDPOINT="+h.endpoint, "HCLOUD_CONFIG="+h.config)
}

type hcloudServer struct {
	Name   string            `json:"name"`
	Status string            `json:"status"`
	Labels map[string]string `json:"labels"`
}

// servers is `hcloud server list [-l SELECTOR] -o json`, by name.
func (h hcloudCLI) servers(t *testing.T, selector ...string) map[string]hcloudServer {
	t.Helper()
	args := []string{"server", "list", "-o", "json"}
	if len(selector) > 0 {
		args = append(args, "-l", selector[0])
	}
	var list []hcloudServer
	if err := json.Unmarshal([]byte(h.run(t, args...)), &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]hcloudServer{}
	for _, s := range list {
		out[s.Name] = s
	}
	return out
}

// flow is issue 34's local-stack flow on the Hetzner fake: the CLI
// makes a hetzner proxy that becomes Ready (its server's engine answers
// the stack's status request through the proxy port) and serves a
// request; hcloud lists its server with the labels; deleted, it leaves no
// server and no Primary IP; a server hcloud makes with the labels and no
// proxy is collected after the grace period, and one of another
// deployment is not.
func flow(t *testing.T, s providerstack.Stack, fake *hetznerfake.Server) {
	h := hcloudCLI{path: testenv.Require(t, testenv.Hcloud), endpoint: fake.Endpoint(), config: filepath.Join(t.TempDir(), "cli.toml")}
	ns := []string{"--namespace", s.Namespace()}
	_, targetPort := s.Create(t, "hz", hetzner.Type, "eu-central")

	listed := h.servers(t, "proxy-operator-managed=true")
	if len(listed) != 1 {
		t.Fatalf("hcloud server list -l proxy-operator-managed=true: %v, want the proxy's server alone", listed)
	}
	var uid string
	for _, sv := range listed {
		uid = sv.Labels["proxy-operator-uid"]
		// The status id is the server's own (a hash of its create
		// attempt): its shape is what can be known here.
		statusID := sv.Labels["egress-status-id"]
		want := map[string]string{"proxy-operator-managed": "true", "proxy-operator-uid": uid, "egress-deployment": provider.DefaultDeployment, "egress-proxy-port": "3128",
			"egress-status-id": statusID}
		if diff := cmp.Diff(want, sv.Labels); diff != "" || sv.Status != "running" || !regexp.MustCompile(`^[0-9a-f-]{36}$`).MatchString(uid) ||
			!regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(statusID) {
			t.Errorf("the proxy's server %s is %s with labels (-want +got):\n%s", sv.Name, sv.Status, diff)
		}
	}
	// Issue 32: the request's access line, read from the server through
	// its proxy port when a collector tick asks (GC_INTERVAL=1s), is
	// written as a GCE VM's call-home's is: locally, one "proxy access"
	// line of the stack's, under the proxy's labels.
	want := providerstack.Access{Labels: map[string]string{"uid": uid, "namespace": s.Namespace(), "name": "hz"},
		Line: providerstack.AccessLine{Method: "GET", Host: "127.0.0.1", Port: targetPort, Status: 200}}
	providerstack.WaitFor(t, 30*time.Second, "the request's access line in the stack's log", func() bool {
		return slices.ContainsFunc(s.Accesses(t), func(e providerstack.Access) bool { return cmp.Equal(want, e) })
	})

	s.CLI(t, append([]string{"proxies", "delete", "hz", "--wait", "--timeout", "90s"}, ns...)...)
	providerstack.WaitFor(t, time.Minute, "hcloud server list to be empty", func() bool { return len(h.servers(t)) == 0 })
	var ips []json.RawMessage
	if err := json.Unmarshal([]byte(h.run(t, "primary-ip", "list", "-o", "json")), &ips); err != nil || len(ips) != 0 {
		t.Errorf("hcloud primary-ip list after an Ephemeral proxy's deletion: %d left (%v), want none", len(ips), err)
	}

	// An orphan of this deployment, and a server of another.
	create := func(name, deployment string) {
		h.run(t, "server", "create", "--name", name, "--type", "cx23", "--image", "debian-13", "--location", "fsn1",
			"--label", "proxy-operator-managed=true", "--label", "proxy-operator-uid="+uuid.NewString(), "--label", "egress-deployment="+deployment)
	}
	create("orphan-of-egress", provider.DefaultDeployment)
	create("server-of-staging", "staging")
	providerstack.WaitFor(t, time.Minute, "the orphan to be collected", func() bool { _, ok := h.servers(t)["orphan-of-egress"]; return !ok })
	// Several collector runs later (GC_INTERVAL=1s), the other
	// deployment's server is there still.
	time.Sleep(3 * time.Second)
	if _, ok := h.servers(t)["server-of-staging"]; !ok {
		t.Errorf("the collector deleted a server of another deployment")
	}
	h.run(t, "server", "delete", "server-of-staging")
}
