package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/clouds/cloudsdev"
	"github.com/egress-proxies/egress/internal/provider/providerstack"
)

// cloudFake is a cloud's fake started for the stack: its type, its
// flow's name, and the flow over it.
type cloudFake struct {
	typ, name string
	flow      providerstack.Flow
}

// startClouds starts the fake of each cloud internal/clouds/cloudsdev
// lists, in its order, and returns them and the stack's variables that
// point each cloud's provider at its fake.
func startClouds(t *testing.T) ([]cloudFake, []string) {
	t.Helper()
	var fakes []cloudFake
	var env []string
	for _, c := range cloudsdev.Stacks() {
		e, flow := c.Start(t)
		fakes = append(fakes, cloudFake{typ: c.Type(), name: c.Name(), flow: flow})
		env = append(env, e...)
	}
	return fakes, env
}

// flowStack is the stack as a cloud's flow uses it (providerstack.Stack):
// the built CLI acting as alice, an editor of demo.
type flowStack struct {
	s   *liveStack
	cli *egressCLI
}

var _ providerstack.Stack = flowStack{}

// forFlow is the stack for a cloud's flow, with a CLI of its own.
func (s *liveStack) forFlow(t *testing.T) flowStack {
	t.Helper()
	return flowStack{s: s, cli: buildCLI(t, s.front.URL, unsignedToken("alice@example.com"))}
}

func (f flowStack) Namespace() string { return "demo" }

func (f flowStack) CLI(t *testing.T, args ...string) string {
	t.Helper()
	stdout, _ := f.cli.must(t, args...)
	return stdout
}

func (f flowStack) Accesses(t *testing.T) []providerstack.Access {
	t.Helper()
	return f.s.accessEntries(t)
}

// Create creates, with the CLI in namespace demo, the proxy name on a
// cloud's fake (providerType in region, and the create's further flags,
// such as --ip-policy Static), allowing this machine, waits until it is
// Ready at its VM's loopback address, and checks that a request through
// its proxyURL reaches a local target.
func (f flowStack) Create(t *testing.T, name, providerType, region string, flags ...string) (providerstack.Proxy, int) {
	t.Helper()
	want := "reached through " + providerType
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, want) }))
	defer target.Close()
	targetURL, _ := url.Parse(target.URL)
	stdout := f.CLI(t, append([]string{"proxies", "create", name, "--provider", providerType, "--region", region, "--allowed-source-range", "127.0.0.1/32",
		"--connect-port", targetURL.Port(), "--wait", "--timeout", "90s", "-o", "json", "--namespace", f.Namespace()}, flags...)...)
	var ready providerstack.Proxy
	if err := json.Unmarshal([]byte(stdout), &ready); err != nil {
		t.Fatalf("-o json printed no proxy: %v\n%s", err, stdout)
	}
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

// accessEntries are the stack's "proxy access" lines so far (in the
// stack's text format: labels.uid=… line.host=…), the VM's label left out
// (its providerID).
func (s *liveStack) accessEntries(t *testing.T) []providerstack.Access {
	t.Helper()
	var out []providerstack.Access
	for _, l := range strings.Split(s.out.String(), "\n") {
		if !strings.Contains(l, `msg="proxy access"`) {
			continue
		}
		e := providerstack.Access{Labels: map[string]string{}}
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
