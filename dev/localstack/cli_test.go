package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/httpapi/openapitest"
)

// checkTraffic holds everything the test and the CLI send the stack, and
// every answer, to the OpenAPI document the stack serves: the test's calls
// through s.client, the CLI's through s.front, a reverse proxy.
func (s *liveStack) checkTraffic(t *testing.T) {
	t.Helper()
	resp, err := http.Get(s.url + httpapi.OpenAPIPath)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", httpapi.OpenAPIPath, resp.StatusCode, err)
	}
	if s.spec, err = openapitest.New(doc); err != nil {
		t.Fatal(err)
	}
	tr := &openapitest.Transport{
		Validator: s.spec,
		Requests:  true,
		// The local stack's own view of the mock, not the API's.
		Skip:   func(path string) bool { return strings.HasPrefix(path, "/debug/") },
		Report: func(err error) { t.Error(err) },
	}
	s.client = &http.Client{Transport: tr}
	target, _ := url.Parse(s.url)
	s.front = httptest.NewServer(&httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: tr,
	})
	t.Cleanup(s.front.Close)
}

// coverage fails for each operation of the OpenAPI document the run's
// traffic did not check, but those it names as unchecked on purpose, and
// logs what it checked: a new operation must be driven end to end too.
func (s *liveStack) coverage(t *testing.T, except ...string) {
	t.Helper()
	checked := s.spec.Checked()
	seen := map[string]bool{}
	for key := range checked {
		op, _, _ := strings.Cut(key, " ")
		seen[op] = true
	}
	// A run narrowed to some subtests (-run 'TestEndToEnd/Flows/Azure')
	// skips the flows that call the other operations: what was checked is
	// logged, and the whole run holds the coverage.
	narrowed := false
	if f := flag.Lookup("test.run"); f != nil {
		narrowed = strings.Contains(f.Value.String(), "/")
	}
	for _, op := range s.spec.Operations() {
		if !seen[op] && !slices.Contains(except, op) && !narrowed {
			t.Errorf("no answer of %s was checked against the OpenAPI document", op)
		}
	}
	t.Logf("answers checked against the OpenAPI document: %v", checked)
}

// egressCLI is the built CLI, run as a user would, against the stack
// through the checking front.
type egressCLI struct {
	bin, api, token string
}

func buildCLI(t *testing.T, api, token string) *egressCLI {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "egress")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/egress-proxies/egress/cmd/egress").CombinedOutput()
	if err != nil {
		t.Fatalf("go build the CLI: %v\n%s", err, out)
	}
	return &egressCLI{bin: bin, api: api, token: token}
}

// run runs the CLI and returns what it wrote and its exit code.
func (c *egressCLI) run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "EGRESS_") })
	cmd.Env = append(env, "EGRESS_API="+c.api, "EGRESS_TOKEN="+c.token)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("egress %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), code
}

// must runs the CLI and fails the test unless it exits 0.
func (c *egressCLI) must(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	stdout, stderr, code := c.run(t, args...)
	if code != 0 {
		t.Fatalf("egress %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
	}
	return stdout, stderr
}

type cliProxy struct {
	Status struct {
		Phase, Endpoint, ProxyURL string
		Rotations                 int64
	}
}

func decodeProxy(t *testing.T, stdout string) cliProxy {
	t.Helper()
	var p cliProxy
	if err := json.Unmarshal([]byte(stdout), &p); err != nil {
		t.Fatalf("-o json printed no proxy: %v\n%s", err, stdout)
	}
	return p
}

// driveCLI is the proxy's whole life through the built CLI only, as
// alice, an editor of demo: create --wait, list, rotate --wait (a new
// endpoint, the same credentials), delete --wait; and a bad request,
// whose field violations are printed one per line with exit status 2.
func (s *liveStack) driveCLI(t *testing.T) {
	cli := buildCLI(t, s.front.URL, unsignedToken("alice@example.com"))
	ns := []string{"--namespace", "demo"}

	stdout, stderr := cli.must(t, append([]string{"proxies", "create", "cli", "--region", "us-central1", "--allowed-source-range", "203.0.113.0/24", "--wait", "--timeout", "90s"}, ns...)...)
	if !regexp.MustCompile(`(?m)^proxyURL:\s+http://[^:@\s]+:[^@\s]{22,}@\S+:3128$`).MatchString(stdout) || !regexp.MustCompile(`(?m)^phase:\s+Ready$`).MatchString(stdout) {
		t.Errorf("create --wait did not show a Ready proxy with its proxyURL:\n%s", stdout)
	}
	if lines := strings.Split(strings.TrimSpace(stderr), "\n"); len(lines) < 2 || !strings.Contains(lines[len(lines)-1], "Ready") {
		t.Errorf("create --wait showed no progress ending in Ready:\n%s", stderr)
	}

	stdout, _ = cli.must(t, append([]string{"proxies", "list"}, ns...)...)
	if !regexp.MustCompile(`(?m)^NAME\s+PHASE\s+ENDPOINT`).MatchString(stdout) || !regexp.MustCompile(`(?m)^cli\s+Ready\s+\S+:3128\s`).MatchString(stdout) {
		t.Errorf("list does not show cli as Ready:\n%s", stdout)
	}

	stdout, _ = cli.must(t, append([]string{"proxies", "get", "cli", "-o", "json"}, ns...)...)
	before := decodeProxy(t, stdout)
	stdout, _ = cli.must(t, append([]string{"proxies", "rotate", "cli", "--wait", "--timeout", "90s", "-o", "json"}, ns...)...)
	after := decodeProxy(t, stdout)
	switch {
	case after.Status.Phase != "Ready" || after.Status.Rotations != before.Status.Rotations+1:
		t.Errorf("rotate --wait ended %s with %d rotations, want Ready with %d", after.Status.Phase, after.Status.Rotations, before.Status.Rotations+1)
	case after.Status.Endpoint == before.Status.Endpoint:
		t.Errorf("rotated proxy kept its endpoint %s, want a new one", after.Status.Endpoint)
	}
	if userinfo(before.Status.ProxyURL) != userinfo(after.Status.ProxyURL) {
		t.Errorf("rotation changed the credentials: %q, then %q", before.Status.ProxyURL, after.Status.ProxyURL)
	}
	// Again at once: within ROTATE_MIN_INTERVAL, refused, saying when.
	if _, stderr, code := cli.run(t, append([]string{"proxies", "rotate", "cli"}, ns...)...); code != 1 || !strings.Contains(stderr, "429 RESOURCE_EXHAUSTED, ROTATED_RECENTLY") || !strings.Contains(stderr, "the same request is taken in ") {
		t.Errorf("a second rotation at once: exit %d, stderr %q; want 1, 429 RESOURCE_EXHAUSTED, ROTATED_RECENTLY and when", code, stderr)
	}

	// Live changes: the endpoint stays; new credentials replace the old.
	stdout, _ = cli.must(t, append([]string{"proxies", "update", "cli", "--connect-port", "443", "--connect-port", "8443", "--wait", "--timeout", "90s", "-o", "json"}, ns...)...)
	if updated := decodeProxy(t, stdout); updated.Status.Phase != "Ready" || updated.Status.Endpoint != after.Status.Endpoint {
		t.Errorf("update --wait ended %s at %s, want Ready at %s", updated.Status.Phase, updated.Status.Endpoint, after.Status.Endpoint)
	}
	stdout, _ = cli.must(t, append([]string{"proxies", "rotate-credentials", "cli", "--wait", "--timeout", "90s", "-o", "json"}, ns...)...)
	if fresh := decodeProxy(t, stdout); fresh.Status.Phase != "Ready" || userinfo(fresh.Status.ProxyURL) == userinfo(after.Status.ProxyURL) || userinfo(fresh.Status.ProxyURL) == "" {
		t.Errorf("rotate-credentials --wait ended %s with %q, want Ready with credentials other than %q", fresh.Status.Phase, fresh.Status.ProxyURL, after.Status.ProxyURL)
	}

	_, stderr = cli.must(t, append([]string{"proxies", "delete", "cli", "--wait", "--timeout", "90s"}, ns...)...)
	if !strings.HasSuffix(strings.TrimSpace(stderr), "gone") {
		t.Errorf("delete --wait did not end with the proxy gone:\n%s", stderr)
	}
	if _, stderr, code := cli.run(t, append([]string{"proxies", "get", "cli"}, ns...)...); code != 1 || !strings.Contains(stderr, "404 NOT_FOUND") {
		t.Errorf("get of the deleted proxy: exit %d, stderr %q; want 1 and 404 NOT_FOUND", code, stderr)
	}

	// A bad request: each broken rule on a line of its own, exit 2.
	_, stderr, code := cli.run(t, append([]string{"proxies", "create", "bad", "--region", "us-central1", "--zone", "europe-west1-b", "--allowed-source-range", "10.0.0.0/33", "--max-age", "1m"}, ns...)...)
	if code != 2 {
		t.Errorf("a bad create: exit %d, want 2\n%s", code, stderr)
	}
	for _, field := range []string{"spec.placement.zone", "spec.allowedSourceRanges[0]", "spec.maxAge"} {
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(field) + `: \S`).MatchString(stderr) {
			t.Errorf("a bad create: no line for %s:\n%s", field, stderr)
		}
	}

	// Namespaces: alice sees hers and its members.
	stdout, _ = cli.must(t, "namespaces", "get", "demo")
	if !regexp.MustCompile(`(?m)^\s+alice@example.com\s+editor$`).MatchString(stdout) {
		t.Errorf("namespaces get demo does not show alice as an editor:\n%s", stdout)
	}
	stdout, _ = cli.must(t, "namespaces", "list")
	if !regexp.MustCompile(`(?m)^demo\s`).MatchString(stdout) {
		t.Errorf("namespaces list does not show demo:\n%s", stdout)
	}

	// A namespace's life, as the local admin (no token on loopback).
	admin := &egressCLI{bin: cli.bin, api: cli.api}
	admin.must(t, "namespaces", "create", "cli-team", "--member", "bob@example.com=owner", "--quota", "3")
	admin.must(t, "namespaces", "add-member", "cli-team", "carol@example.com", "--role", "owner")
	admin.must(t, "namespaces", "remove-member", "cli-team", "bob@example.com")
	// The last owner stays.
	if _, stderr, code := admin.run(t, "namespaces", "remove-member", "cli-team", "carol@example.com"); code != 1 || !strings.Contains(stderr, "409 FAILED_PRECONDITION") || !strings.Contains(stderr, "NAMESPACE_NEEDS_OWNER") {
		t.Errorf("removing the last owner: exit %d, stderr %q; want 1, 409 FAILED_PRECONDITION and NAMESPACE_NEEDS_OWNER", code, stderr)
	}
	stdout, _ = admin.must(t, "namespaces", "set-quota", "cli-team", "5", "-o", "json")
	var team struct {
		Members map[string]string
		Quota   int
	}
	if err := json.Unmarshal([]byte(stdout), &team); err != nil || team.Quota != 5 || len(team.Members) != 1 || team.Members["carol@example.com"] != "owner" {
		t.Errorf("cli-team after its changes: %s (%v), want quota 5 and carol alone, its owner", stdout, err)
	}
	admin.must(t, "namespaces", "delete", "cli-team")

	// A warm pool's life, as the local admin: of size 0, so it boots
	// nothing this test would have to account for.
	admin.must(t, "pools", "put", "cli-pool", "--region", "us-central1", "--zone", "us-central1-a", "--size", "0")
	if stdout, _ = admin.must(t, "pools", "list"); !regexp.MustCompile(`(?m)^cli-pool\s+mock\s+us-central1\s+us-central1-a\s+0\s`).MatchString(stdout) {
		t.Errorf("pools list does not show cli-pool:\n%s", stdout)
	}
	admin.must(t, "pools", "get", "cli-pool")
	if stdout, _ = admin.must(t, "pools", "delete", "cli-pool"); !strings.Contains(stdout, "deleting since:") {
		t.Errorf("pools delete does not show the deletion asked for:\n%s", stdout)
	}
	if _, stderr, code := admin.run(t, "namespaces", "get", "cli-team"); code != 1 || !strings.Contains(stderr, "404 NOT_FOUND") {
		t.Errorf("get of the deleted namespace: exit %d, stderr %q; want 1 and 404 NOT_FOUND", code, stderr)
	}
}

func userinfo(proxyURL string) string {
	u, err := url.Parse(proxyURL)
	if err != nil || u.User == nil {
		return ""
	}
	return u.User.String()
}
