package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/egress-proxies/egress/internal/provider/hetzner"
	"github.com/egress-proxies/egress/internal/testenv"
)

// hcloudCLI is Hetzner's own CLI (Debian's hcloud-cli) against the
// stack's Hetzner fake.
type hcloudCLI struct{ path, endpoint, config string }

// run runs hcloud and fails the test unless it exits 0.
func (h hcloudCLI) run(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.path, append([]string{"--poll-interval", "50ms"}, args...)...)
	cmd.Env = append(os.Environ(), "HCLOUD_TOKEN="+hetzner.LocalToken, "HCLOUD_ENDPOINT="+h.endpoint, "HCLOUD_CONFIG="+h.config,
		"NO_PROXY=127.0.0.1", "no_proxy=127.0.0.1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("hcloud %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
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

// hetznerProxy is issue 34's local-stack flow on the Hetzner fake: the CLI
// makes a hetzner proxy that becomes Ready (its server's engine answers
// the stack's status request through the proxy port) and serves a
// request; hcloud lists its server with the labels; deleted, it leaves no
// server and no Primary IP; a server hcloud makes with the labels and no
// proxy is collected after the grace period, and one of another
// deployment is not.
func (s *liveStack) hetznerProxy(t *testing.T) {
	h := hcloudCLI{path: testenv.Require(t, testenv.Hcloud), endpoint: s.hetzner.Endpoint(), config: filepath.Join(t.TempDir(), "cli.toml")}
	cli := buildCLI(t, s.front.URL, unsignedToken("alice@example.com"))
	ns := []string{"--namespace", "demo"}
	_, targetPort := cloudProxy(t, cli, "hz", "hetzner", "eu-central")

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
		want := map[string]string{"proxy-operator-managed": "true", "proxy-operator-uid": uid, "egress-deployment": "egress", "egress-proxy-port": "3128",
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
	want := accessEntry{Labels: map[string]string{"uid": uid, "namespace": "demo", "name": "hz"},
		Line: accessLine{Method: "GET", Host: "127.0.0.1", Port: targetPort, Status: 200}}
	waitFor(t, 30*time.Second, "the request's access line in the stack's log", func() bool {
		return slices.ContainsFunc(s.accessEntries(t), func(e accessEntry) bool { return cmp.Equal(want, e) })
	})

	cli.must(t, append([]string{"proxies", "delete", "hz", "--wait", "--timeout", "90s"}, ns...)...)
	waitFor(t, time.Minute, "hcloud server list to be empty", func() bool { return len(h.servers(t)) == 0 })
	var ips []json.RawMessage
	if err := json.Unmarshal([]byte(h.run(t, "primary-ip", "list", "-o", "json")), &ips); err != nil || len(ips) != 0 {
		t.Errorf("hcloud primary-ip list after an Ephemeral proxy's deletion: %d left (%v), want none", len(ips), err)
	}

	// An orphan of this deployment, and a server of another.
	create := func(name, deployment string) {
		h.run(t, "server", "create", "--name", name, "--type", "cx23", "--image", "debian-13", "--location", "fsn1",
			"--label", "proxy-operator-managed=true", "--label", "proxy-operator-uid="+uuid.NewString(), "--label", "egress-deployment="+deployment)
	}
	create("orphan-of-egress", "egress")
	create("server-of-staging", "staging")
	waitFor(t, time.Minute, "the orphan to be collected", func() bool { _, ok := h.servers(t)["orphan-of-egress"]; return !ok })
	// Several collector runs later (GC_INTERVAL=1s), the other
	// deployment's server is there still.
	time.Sleep(3 * time.Second)
	if _, ok := h.servers(t)["server-of-staging"]; !ok {
		t.Errorf("the collector deleted a server of another deployment")
	}
	h.run(t, "server", "delete", "server-of-staging")
}

// cloudProxy creates, with the CLI in namespace demo, the proxy name on
// a cloud's fake (providerType in region, and the create's further
// flags, such as --ip-policy Static), allowing this machine, waits until
// it is Ready at its VM's loopback address, and checks that a request
// through its proxyURL reaches a local target.
func cloudProxy(t *testing.T, cli *egressCLI, name, providerType, region string, flags ...string) (cliProxy, int) {
	t.Helper()
	want := "reached through " + providerType
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, want) }))
	defer target.Close()
	targetURL, _ := url.Parse(target.URL)
	stdout, _ := cli.must(t, append([]string{"proxies", "create", name, "--provider", providerType, "--region", region, "--allowed-source-range", "127.0.0.1/32",
		"--connect-port", targetURL.Port(), "--wait", "--timeout", "90s", "-o", "json", "--namespace", "demo"}, flags...)...)
	ready := decodeProxy(t, stdout)
	if ready.Status.Phase != "Ready" || !strings.HasPrefix(ready.Status.Endpoint, "127.0.") {
		t.Fatalf("create --wait of a %s proxy ended %s at %q, want Ready at a VM's loopback address", providerType, ready.Status.Phase, ready.Status.Endpoint)
	}
	proxyURL, err := url.Parse(ready.Status.ProxyURL)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}, Timeout: 30 * time.Second}
	resp, err := client.Get(target.URL)
	if err != nil {
		t.Fatalf("a request through the %s proxy: %v", providerType, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != want {
		t.Errorf("through the %s proxy: %d %q, want 200 from the target", providerType, resp.StatusCode, body)
	}
	port, _ := strconv.Atoi(targetURL.Port())
	return ready, port
}

// accessEntry is what a test checks of a "proxy access" line of the
// stack (accesslog.Local): the proxy's labels, and the line's
// destination, method and status (never its times).
type accessEntry struct {
	Labels map[string]string
	Line   accessLine
}

type accessLine struct {
	Method, Host string
	Port, Status int
}

// accessEntries are the stack's "proxy access" lines so far (in the
// stack's text format: labels.uid=… line.host=…), the VM's label left out
// (its providerID).
func (s *liveStack) accessEntries(t *testing.T) []accessEntry {
	t.Helper()
	var out []accessEntry
	for _, l := range strings.Split(s.out.String(), "\n") {
		if !strings.Contains(l, `msg="proxy access"`) {
			continue
		}
		e := accessEntry{Labels: map[string]string{}}
		for _, kv := range textAttr.FindAllStringSubmatch(l, -1) {
			k, v := kv[1], kv[2]
			if uq, err := strconv.Unquote(v); err == nil {
				v = uq
			}
			switch k {
			case "labels.uid", "labels.namespace", "labels.name":
				e.Labels[strings.TrimPrefix(k, "labels.")] = v
			case "line.method":
				e.Line.Method = v
			case "line.host":
				e.Line.Host = v
			case "line.port":
				e.Line.Port, _ = strconv.Atoi(v)
			case "line.status":
				e.Line.Status, _ = strconv.Atoi(v)
			}
		}
		out = append(out, e)
	}
	return out
}

// textAttr is one key=value of slog's text format, the value quoted when
// it has a space or a quote.
var textAttr = regexp.MustCompile(`(\S+?)=("(?:[^"\\]|\\.)*"|\S*)`)
