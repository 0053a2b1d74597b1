package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/emulators/emulator"
	"github.com/egress-proxies/egress/emulators/stack"
	"github.com/egress-proxies/egress/internal/httpapi/openapitest"
	"github.com/egress-proxies/egress/internal/provider/providerstack"
)

// TestEndToEnd starts the stack as `make run` does, as its own process with
// its own emulators, and drives it over HTTP only.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("the end-to-end test starts its own emulators")
	}
	if _, err := emulator.SDKRoot(); err != nil && os.Getenv("CI") != "true" {
		t.Skipf("%v\n%s", err, emulator.InstallHint)
	}
	s := startStack(t)
	if !strings.Contains(s.out.String(), "a request without an identity acts as local-admin@localhost") {
		t.Errorf("the ready line does not name the local identity:\n%s", s.out.String())
	}

	// The local admin (no identity sent) makes the namespaces; in demo,
	// alice is an editor and acts with a token of her own, as a team
	// member would; bulk's are the admin's.
	s.as = map[string]string{"demo": "alice@example.com"}
	s.createNamespace(t, "demo", `{"members":{"alice@example.com":"editor","local-admin@localhost":"owner"}}`)
	for ns := range 5 {
		s.createNamespace(t, fmt.Sprintf("bulk-%d", ns), `{}`)
	}
	if resp := s.doAs(t, "mallory@example.com", http.MethodGet, "/v1/namespaces/demo/proxies", nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("an outsider's list of demo: %d, want 403", resp.StatusCode)
	}

	// A port the firewall does not open (the stack's PROXY_PORTS is 3128
	// and 1080, the CLI's SOCKS5 example): 400 naming spec.port and the
	// rule, nothing made.
	s.refused(t, "demo", "closed-port", `"port":8080`, "spec.port", "PORT_NOT_OPEN")

	// Issue 25's warm pool, in a placement of its own, alone: it counts
	// the mock VMs that appear while it runs.
	t.Run("WarmPool", s.warmPool)
	// Issue 48's several accounts of a cloud (TwoProjects: Compute
	// Engine in two projects, a proxy in each, the collector in each).
	for _, c := range s.accountClouds {
		t.Run(c.name, func(t *testing.T) { c.flow(t, accountsStack{s}) })
	}
	s.removeAccounts(t)
	// Flows of proxies of their own names, each on its own cloud, side by
	// side: most of each is waiting (for a VM, for the collector's grace
	// period, for a CLI's start), and one after another they were two
	// thirds of this test's minutes.
	t.Run("Flows", func(t *testing.T) {
		type flow struct {
			name string
			run  func(*testing.T)
		}
		flows := []flow{
			// The built CLI, from creation to deletion.
			{"CLI", s.driveCLI},
			// The CLI's SOCKS5 example, on the ports make run opens.
			{"SOCKS5", s.socks5Proxy},
		}
		// Each cloud's own, from its folder (its <cloud>sim package's
		// Stack), on its fake and with its own client or tool.
		for _, c := range s.clouds {
			flows = append(flows, flow{c.name, func(t *testing.T) { c.flow(t, s.forFlow(t)) }})
		}
		for _, f := range flows {
			t.Run(f.name, func(t *testing.T) {
				t.Parallel()
				f.run(t)
			})
		}
	})
	// The web console in headless Chromium, with axe-core on each page.
	t.Run("Console", s.console)

	// Create and wait for Ready with an endpoint.
	first := s.create(t, "demo", "first")
	ready := s.waitPhase(t, "demo", "first", "Ready")
	if ready.Status.Endpoint == "" {
		t.Fatalf("Ready without an endpoint: %+v", ready.Status)
	}
	// What a client configures: the proxy's own credentials at its endpoint.
	u, err := url.Parse(ready.Status.ProxyURL)
	if err != nil || u.Scheme != "http" || u.Host != ready.Status.Endpoint || u.User.Username() == "" {
		t.Errorf("proxyURL %q: want http://USER:PASSWORD@%s", ready.Status.ProxyURL, ready.Status.Endpoint)
	} else if pass, _ := u.User.Password(); len(pass) < 22 {
		t.Errorf("proxyURL %q: a password of %d characters, want at least 22 (128 bits)", ready.Status.ProxyURL, len(pass))
	}
	t.Run("ServesThroughTheProxy", func(t *testing.T) { s.serveThroughTheProxy(t, ready) })
	t.Run("NoCredentialInClear", func(t *testing.T) { s.noCredentialInClear(t, ready) })
	// The same POST again: 200 and the same uid.
	code, again := s.post(t, "demo", "first")
	if code != http.StatusOK || again.UID != first.UID {
		t.Errorf("repeated create: %d uid %s, want 200 and %s", code, again.UID, first.UID)
	}
	if !s.hasInstance(t, first.UID) {
		t.Fatalf("no instance of uid %s in /debug/instances", first.UID)
	}
	// A rotation is asked for; what the reconciler makes of it is its own
	// test's.
	if resp := s.do(t, http.MethodPost, "/v1/namespaces/demo/proxies/first:rotate", nil); resp.StatusCode != http.StatusAccepted {
		t.Errorf("rotate: %d, want 202", resp.StatusCode)
	}
	// What one team may not do to the others or to the project.
	t.Run("TenantSafety", s.tenantSafety)

	// Delete, as the rotation runs: 404 once the VM is gone, and no VM
	// left. A delete that lands while the rotation's create is in flight
	// can miss that VM, which then carries the uid of no document: the
	// collector removes it once the grace period (3 s here) has passed.
	if resp := s.do(t, http.MethodDelete, "/v1/namespaces/demo/proxies/first", nil); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	s.waitGone(t, "demo", "first")
	waitFor(t, 2*time.Minute, "the deleted proxy's VM to be gone", func() bool { return !s.hasInstance(t, first.UID) })

	// A Static proxy whose VM is lost comes back with the same endpoint,
	// and deleting it releases its address.
	static := s.createWith(t, "demo", "static", `"ipPolicy":"Static"`)
	before := s.waitPhase(t, "demo", "static", "Ready")
	lost := s.instanceOf(t, static.UID)
	s.lose(t, lost.ID)
	var after resource
	waitFor(t, 3*time.Minute, "the lost VM to be replaced and Ready", func() bool {
		in, ok := s.findInstance(t, static.UID)
		_, after = s.get(t, "demo", "static")
		// The replacement may have the lost VM's name: it is a new VM.
		return ok && in.CreatedAt.After(lost.CreatedAt) && after.Status.Phase == "Ready"
	})
	if after.Status.Endpoint != before.Status.Endpoint {
		t.Errorf("Static proxy's endpoint after its VM was lost: %s, want %s as before", after.Status.Endpoint, before.Status.Endpoint)
	}
	if !s.hasAddress(t, static.UID) {
		t.Errorf("no static address of uid %s in /debug/instances", static.UID)
	}
	if resp := s.do(t, http.MethodDelete, "/v1/namespaces/demo/proxies/static", nil); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("delete static: %d", resp.StatusCode)
	}
	s.waitGone(t, "demo", "static")
	waitFor(t, 2*time.Minute, "the static address to be released", func() bool { return !s.hasAddress(t, static.UID) })

	// A Ready proxy's document deleted behind the API's back: its VM is
	// collected once the grace period has passed.
	orphan := s.create(t, "demo", "orphan")
	s.waitPhase(t, "demo", "orphan", "Ready")
	s.deleteDocumentDirectly(t, "demo", "orphan")
	waitFor(t, 3*time.Minute, "the orphaned VM to be collected", func() bool { return !s.hasInstance(t, orphan.UID) })

	// 100 proxies at once, over five namespaces (the quota is 20 each).
	start := time.Now()
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			if code, _ := s.post(t, fmt.Sprintf("bulk-%d", i%5), fmt.Sprintf("p-%02d", i)); code != http.StatusCreated {
				t.Errorf("bulk create %d: status %d", i, code)
			}
		})
	}
	wg.Wait()
	waitFor(t, 5*time.Minute, "100 proxies to be Ready", func() bool {
		n := 0
		for ns := range 5 {
			for _, p := range s.list(t, fmt.Sprintf("bulk-%d", ns)) {
				if p.Status.Phase == "Ready" {
					n++
				}
			}
		}
		return n == 100
	})
	t.Logf("100 proxies Ready %s after they were requested", time.Since(start).Round(time.Millisecond))

	// The health check and the document itself are read around the
	// checks: the document is what they check with.
	s.coverage(t, "healthz", "getOpenAPI")

	s.stop(t)
}

// serveThroughTheProxy: a Ready proxy of the local stack serves as a VM's
// does (the mock runs the engine on loopback, MOCK_SERVE): through its
// proxyURL a request reaches a local test server, allowed as a
// destination by MOCK_SERVE_ALLOW; without credentials it gets 407; and a
// proxy whose allowedSourceRanges leave out this machine does not serve
// it.
func (s *liveStack) serveThroughTheProxy(t *testing.T, elsewhere resource) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "answer of the local test server")
	}))
	defer target.Close()
	port := target.Listener.Addr().(*net.TCPAddr).Port
	body := fmt.Sprintf(`{"name":"served","spec":{"placement":{"region":"us-central1"},"allowedSourceRanges":["127.0.0.1/32"],"connectPorts":[%d]}}`, port)
	if resp := s.do(t, http.MethodPost, "/v1/namespaces/demo/proxies", []byte(body)); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create demo/served: status %d", resp.StatusCode)
	}
	served := s.waitPhase(t, "demo", "served", "Ready")
	through := func(proxyURL string) string {
		u, err := url.Parse(proxyURL)
		if err != nil {
			t.Fatalf("proxyURL %q: %v", proxyURL, err)
		}
		c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u)}, Timeout: 30 * time.Second}
		resp, err := c.Get(target.URL + "/")
		if err != nil {
			return "refused"
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, b)
	}
	type answers struct{ WithCredentials, WithoutCredentials, FromOutsideTheRanges string }
	got := answers{
		WithCredentials:      through(served.Status.ProxyURL),
		WithoutCredentials:   through("http://" + served.Status.Endpoint),
		FromOutsideTheRanges: through(elsewhere.Status.ProxyURL),
	}
	got.WithoutCredentials, _, _ = strings.Cut(got.WithoutCredentials, " ")
	want := answers{WithCredentials: "200 answer of the local test server", WithoutCredentials: "407", FromOutsideTheRanges: "refused"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests through demo/served (%s) and demo/first (allowing 203.0.113.0/24 only): -want +got:\n%s", served.Status.Endpoint, diff)
	}
	if resp := s.do(t, http.MethodDelete, "/v1/namespaces/demo/proxies/served", nil); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("delete demo/served: %d", resp.StatusCode)
	}
	s.waitGone(t, "demo", "served")
	if got := through(served.Status.ProxyURL); got != "refused" {
		t.Errorf("the deleted proxy still answers at %s: %s", served.Status.Endpoint, got)
	}
}

type resource struct {
	Name, Namespace, UID string
	Status               struct{ Phase, Endpoint, ProxyURL string }
}

type liveStack struct {
	*stack.Stack
	url, firestore, project string
	out                     *syncBuffer
	// as is who acts in a namespace: an email, sent as an unsigned ID
	// token (the local stack, as Cloud Run's function, only decodes it),
	// or none, the local admin.
	as map[string]string
	// client carries the test's calls, and front the CLI's, through the
	// OpenAPI document's checks.
	client *http.Client
	front  *httptest.Server
	spec   *openapitest.Validator
	// clouds are the clouds' fakes the stack's providers of those clouds
	// are pointed at, each VM booting its engine, with each cloud's flow.
	clouds []cloudFake
	// accountClouds are the clouds of the test of several accounts, each
	// with its second account and its flow.
	accountClouds []accountsCloud
}

func startStack(t *testing.T) *liveStack {
	t.Helper()
	ctx := context.Background()
	bin, err := stack.Build(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	begun := time.Now()
	// The clouds internal/clouds/cloudsdev lists beside the mock, the
	// mock the default: their fakes in this process, booting each VM's
	// engine on a loopback address of its own from the user-data the
	// stack renders.
	clouds, cloudEnv := startClouds(t)
	providers := []string{"mock"}
	for _, c := range clouds {
		providers = append(providers, c.typ)
	}
	// The clouds of the test of several accounts (TwoProjects: Compute
	// Engine in two projects), beside them.
	accountClouds, accountsEnv := startAccounts(t)
	providers = enable(providers, accountClouds)
	cloudEnv = append(cloudEnv, accountsEnv...)
	st, err := stack.Start(ctx, bin, stack.Options{
		Project: "demo-e2e",
		Env: append([]string{"CLOUD_INIT_SECRET_PREFIX=projects/demo-egress/secrets/egress-", "GC_INTERVAL=1s", "GC_GRACE_PERIOD=3s", "GC_SWEEP_THRESHOLD=30s", "MOCK_PROVISIONING_DELAY=1s", "LOG_LEVEL=warn",
			"PROVIDERS=" + strings.Join(providers, ","),
			// Never downloaded: the fake runs the engine itself.
			"PROXY_ENGINE_PUBLIC_URL=http://127.0.0.1/egress-proxy", "PROXY_ENGINE_SHA256=" + strings.Repeat("0", 64)},
			cloudEnv...),
		Stdout: out,
		Stderr: out,
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Logf("stack ready in %s", time.Since(begun).Round(time.Millisecond))
	s := &liveStack{Stack: st, url: st.URL, firestore: st.FirestoreHost, project: st.Project, out: out, clouds: clouds, accountClouds: accountClouds}
	// The API's traffic checked against its OpenAPI document first
	// (s.client), the admin's writes of the accounts among it.
	s.checkTraffic(t)
	s.writeAccounts(t)
	t.Cleanup(func() {
		if !st.Exited() {
			st.Stop(20 * time.Second)
		}
		if t.Failed() {
			t.Logf("stack output:\n%s", out.String())
		}
	})
	return s
}

// stop interrupts the stack as Ctrl-C does and checks that it exits and
// leaves no emulator behind.
func (s *liveStack) stop(t *testing.T) {
	t.Helper()
	if err := s.Stop(30 * time.Second); err != nil {
		t.Errorf("stack exited with %v after Ctrl-C, want 0", err)
	}
	for _, host := range []string{s.firestore, strings.TrimPrefix(s.url, "http://")} {
		if c, err := net.DialTimeout("tcp", host, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after the stack stopped", host)
		}
	}
}

// do sends a request as the caller of the namespace the path names.
func (s *liveStack) do(t *testing.T, method, path string, body []byte) *http.Response {
	t.Helper()
	who := ""
	if rest, ok := strings.CutPrefix(path, "/v1/namespaces/"); ok {
		ns, _, _ := strings.Cut(rest, "/")
		who = s.as[ns]
	}
	return s.doAs(t, who, method, path, body)
}

// doAs sends a request as who ("" for the local identity).
func (s *liveStack) doAs(t *testing.T, who, method, path string, body []byte) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if who != "" {
		req.Header.Set("Authorization", "Bearer "+unsignedToken(who))
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// unsignedToken is an ID token for email without a signature: the local
// stack, as the deployed function behind Cloud Run, only decodes it.
func unsignedToken(email string) string {
	return "e30." + base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf(`{"email":%q}`, email))) + "."
}

// createNamespace makes a namespace as the local admin.
func (s *liveStack) createNamespace(t *testing.T, ns, body string) {
	t.Helper()
	resp := s.doAs(t, "", http.MethodPut, "/v1/namespaces/"+ns, []byte(body))
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create namespace %s: %d", ns, resp.StatusCode)
	}
}

func (s *liveStack) post(t *testing.T, ns, name string) (int, resource) {
	t.Helper()
	return s.postWith(t, ns, name, "")
}

// postWith creates a proxy whose spec has the given further fields, a
// fragment of JSON such as `"ipPolicy":"Static"`.
func (s *liveStack) postWith(t *testing.T, ns, name, fields string) (int, resource) {
	t.Helper()
	if fields != "" {
		fields = "," + fields
	}
	body := fmt.Sprintf(`{"name":%q,"spec":{"placement":{"region":"us-central1","zone":"us-central1-a"},"allowedSourceRanges":["203.0.113.0/24"]%s}}`, name, fields)
	resp := s.do(t, http.MethodPost, "/v1/namespaces/"+ns+"/proxies", []byte(body))
	defer resp.Body.Close()
	var r resource
	json.NewDecoder(resp.Body).Decode(&r)
	return resp.StatusCode, r
}

// refused posts a proxy whose spec has the further fields and checks the
// answer is 400 with one field violation, field, and the ErrorInfo reason
// of the rule, and that the proxy does not exist.
func (s *liveStack) refused(t *testing.T, ns, name, fields, field, reason string) {
	t.Helper()
	body := fmt.Sprintf(`{"name":%q,"spec":{"placement":{"region":"us-central1","zone":"us-central1-a"},"allowedSourceRanges":["203.0.113.0/24"],%s}}`, name, fields)
	resp := s.do(t, http.MethodPost, "/v1/namespaces/"+ns+"/proxies", []byte(body))
	defer resp.Body.Close()
	var e struct {
		Error struct {
			Details []struct {
				Type            string `json:"@type"`
				Reason          string `json:"reason"`
				FieldViolations []struct {
					Field, Reason string
				} `json:"fieldViolations"`
			} `json:"details"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatalf("create %s/%s with %s: %d, body not JSON: %v", ns, name, fields, resp.StatusCode, err)
	}
	var fieldsGot []string
	reasonGot := ""
	for _, d := range e.Error.Details {
		for _, v := range d.FieldViolations {
			fieldsGot = append(fieldsGot, v.Field+" "+v.Reason)
		}
		if strings.HasSuffix(d.Type, "google.rpc.ErrorInfo") {
			reasonGot = d.Reason
		}
	}
	if want := []string{field + " " + reason}; resp.StatusCode != http.StatusBadRequest || reasonGot != reason || fmt.Sprint(fieldsGot) != fmt.Sprint(want) {
		t.Errorf("create %s/%s with %s: %d, reason %q, violations %q; want 400, %s, %q", ns, name, fields, resp.StatusCode, reasonGot, fieldsGot, reason, want)
	}
	if code, _ := s.get(t, ns, name); code != http.StatusNotFound {
		t.Errorf("the refused proxy %s/%s: GET %d, want 404", ns, name, code)
	}
}

func (s *liveStack) create(t *testing.T, ns, name string) resource {
	t.Helper()
	return s.createWith(t, ns, name, "")
}

func (s *liveStack) createWith(t *testing.T, ns, name, fields string) resource {
	t.Helper()
	code, r := s.postWith(t, ns, name, fields)
	if code != http.StatusCreated {
		t.Fatalf("create %s/%s: status %d", ns, name, code)
	}
	return r
}

func (s *liveStack) get(t *testing.T, ns, name string) (int, resource) {
	t.Helper()
	resp := s.do(t, http.MethodGet, "/v1/namespaces/"+ns+"/proxies/"+name, nil)
	defer resp.Body.Close()
	var r resource
	json.NewDecoder(resp.Body).Decode(&r)
	return resp.StatusCode, r
}

func (s *liveStack) list(t *testing.T, ns string) []resource {
	t.Helper()
	resp := s.do(t, http.MethodGet, "/v1/namespaces/"+ns+"/proxies?pageSize=100", nil)
	defer resp.Body.Close()
	var page struct{ Proxies []resource }
	json.NewDecoder(resp.Body).Decode(&page)
	return page.Proxies
}

func (s *liveStack) waitPhase(t *testing.T, ns, name, phase string) resource {
	t.Helper()
	var r resource
	waitFor(t, 2*time.Minute, ns+"/"+name+" to be "+phase, func() bool {
		_, r = s.get(t, ns, name)
		return r.Status.Phase == phase
	})
	return r
}

func (s *liveStack) waitGone(t *testing.T, ns, name string) {
	t.Helper()
	waitFor(t, 2*time.Minute, ns+"/"+name+" to be gone", func() bool {
		code, _ := s.get(t, ns, name)
		return code == http.StatusNotFound
	})
}

// instance is an entry of /debug/instances.
type instance struct {
	ID, IP, State, UID string
	CreatedAt          time.Time
}

func (s *liveStack) debugView(t *testing.T) (instances, addresses []instance) {
	t.Helper()
	resp := s.do(t, http.MethodGet, "/debug/instances", nil)
	defer resp.Body.Close()
	var v struct{ Instances, Addresses []instance }
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("/debug/instances: %v", err)
	}
	return v.Instances, v.Addresses
}

func (s *liveStack) findInstance(t *testing.T, uid string) (instance, bool) {
	t.Helper()
	instances, _ := s.debugView(t)
	for _, in := range instances {
		if in.UID == uid {
			return in, true
		}
	}
	return instance{}, false
}

func (s *liveStack) hasInstance(t *testing.T, uid string) bool {
	t.Helper()
	_, ok := s.findInstance(t, uid)
	return ok
}

func (s *liveStack) instanceOf(t *testing.T, uid string) instance {
	t.Helper()
	in, ok := s.findInstance(t, uid)
	if !ok {
		t.Fatalf("no instance of uid %s in /debug/instances", uid)
	}
	return in
}

func (s *liveStack) hasAddress(t *testing.T, uid string) bool {
	t.Helper()
	_, addresses := s.debugView(t)
	for _, a := range addresses {
		if a.UID == uid {
			return true
		}
	}
	return false
}

// lose makes a VM vanish behind the product's back, as a hand in the
// console would.
func (s *liveStack) lose(t *testing.T, id string) {
	t.Helper()
	resp := s.do(t, http.MethodDelete, "/debug/instances?id="+url.QueryEscape(id), nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("losing %s: %d", id, resp.StatusCode)
	}
}

// deleteDocumentDirectly deletes a document through the Firestore
// emulator's REST API, as a person with database access might.
func (s *liveStack) deleteDocumentDirectly(t *testing.T, ns, name string) {
	t.Helper()
	url := fmt.Sprintf("http://%s/v1/projects/%s/databases/(default)/documents/namespaces/%s/proxies/%s", s.firestore, s.project, ns, name)
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Authorization", "Bearer owner")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("deleting the document directly: %d %s", resp.StatusCode, b)
	}
}

// waitFor polls cond until it holds, and fails t after d.
var waitFor = providerstack.WaitFor

// syncBuffer collects the stack's output from two goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
