package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/egress-proxies/egress/emulators/emulatortest"
	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/httpapi/openapitest"
	"github.com/egress-proxies/egress/internal/logging"
	"github.com/egress-proxies/egress/internal/provider"
	awsprovider "github.com/egress-proxies/egress/internal/provider/aws"
	"github.com/egress-proxies/egress/internal/provider/gcp"
	"github.com/egress-proxies/egress/internal/provider/hetzner"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/sealing"
	"github.com/egress-proxies/egress/internal/store"
	"github.com/egress-proxies/egress/internal/store/rules"
	"github.com/egress-proxies/egress/internal/store/storefake"
	"github.com/egress-proxies/egress/internal/tenancy"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

// The callers of the tests: an admin, the three roles of namespace
// team-a, someone in no namespace, and no one.
const (
	admin    = "admin@platform.example"
	owner    = "owner@example.com"
	editor   = "editor@example.com"
	viewer   = "viewer@example.com"
	stranger = "stranger@example.com"
)

// store is what the tests need of a store: the API's part and the writes
// the tests make behind its back.
type testStore interface {
	httpapi.Store
	UpdateStatus(ctx context.Context, p *proxy.Proxy) (time.Time, error)
}

// env is an API under test, over a store of its own. Its client holds
// every answer to the OpenAPI document the API serves; the requests are
// not, as many tests send bad ones on purpose.
type env struct {
	t      *testing.T
	url    string
	store  testStore
	logs   *syncBuffer
	client *http.Client
}

// validator is the OpenAPI document's, shared by the tests.
var validator = sync.OnceValues(func() (*openapitest.Validator, error) { return openapitest.New(httpapi.OpenAPI()) })

// options are the API's options of the tests: admins, both providers
// with their rules (the gcp provider under the default policy), a secret
// prefix, the default neutral policy.
func options() httpapi.Options {
	admins, _ := tenancy.ParseAdmins(admin)
	reg := provider.NewRegistry()
	nop := func(context.Context) (provider.Provider, error) {
		return nil, fmt.Errorf("the API never makes a provider")
	}
	// Both take live changes in place, as their registrations in
	// internal/app say.
	_ = reg.Register(mock.Type, nop, provider.WithValidator(mock.Validate), provider.InPlace())
	// The clouds' prefixes as their plugins declare them; the mock's VMs
	// get none.
	_ = reg.Register(gcp.Type, nop, provider.WithValidator(gcp.Validator(gcp.Policy{
		MachineTypes: gcp.DefaultAllowedMachineTypes, Images: gcp.DefaultAllowedImages, StackType: gcp.StackDual,
	})), provider.InPlace(), provider.IPv6Prefix(gcp.Plugin.IPv6Prefix))
	_ = reg.Register(hetzner.Type, nop, provider.WithValidator(hetzner.Validator(hetzner.Policy{
		ServerTypes: hetzner.DefaultAllowedServerTypes, Images: hetzner.DefaultAllowedImages,
	})), provider.IPv6Prefix(hetzner.Plugin.IPv6Prefix))
	_ = reg.Register(awsprovider.Type, nop, provider.WithValidator(awsprovider.Validator(awsprovider.Policy{
		Regions: []string{"us-east-1", "eu-central-1"}, InstanceTypes: awsprovider.DefaultAllowedInstanceTypes, Images: awsprovider.DefaultAllowedImages,
	})), provider.IPv6Prefix(awsprovider.Plugin.IPv6Prefix))
	return httpapi.Options{
		Quota: 20, DefaultProvider: mock.Type, Providers: provider.NewSet(reg), Admins: admins, Project: "demo-test",
		Policy: proxy.Policy{MinPrefixIPv4: 8, MinPrefixIPv6: 32, CloudInitSecretPrefix: "projects/demo-test/secrets/egress-"},
	}
}

// memEnv is the API over the in-memory store, which passes the same
// contract as the Firestore store: for what needs no emulator.
func memEnv(t *testing.T, change ...func(*httpapi.Options)) *env {
	return newEnv(t, storefake.New(clock.Real{}), clock.Real{}, change...)
}

// firestoreEnv is the API over the Firestore emulator, a project of the
// test's own.
func firestoreEnv(t *testing.T, change ...func(*httpapi.Options)) *env {
	t.Helper()
	return firestoreEnvAt(t, clock.Real{}, change...)
}

// firestoreEnvAt is firestoreEnv whose API reads the time from clk.
func firestoreEnvAt(t *testing.T, clk clock.Clock, change ...func(*httpapi.Options)) *env {
	t.Helper()
	return newEnv(t, firestoreStore(t), clk, change...)
}

// firestoreStore is the Firestore store over the emulator, a project of
// the test's own.
func firestoreStore(t *testing.T) *store.Store {
	t.Helper()
	emulatortest.Firestore(t)
	client, err := firestore.NewClient(context.Background(), emulatortest.ProjectID(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return store.New(client, sealing.NewKeyring(sealing.LocalKEK(), sealing.Firestore{Client: client}))
}

func newEnv(t *testing.T, st testStore, clk clock.Clock, change ...func(*httpapi.Options)) *env {
	t.Helper()
	opts := options()
	for _, c := range change {
		c(&opts)
	}
	logs := &syncBuffer{}
	api := httpapi.New(st, clk, logging.New(logs, slog.LevelInfo), opts)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	v, err := validator()
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &openapitest.Transport{Validator: v, Report: func(err error) { t.Error(err) }}}
	return &env{t: t, url: srv.URL, store: st, logs: logs, client: client}
}

// seed makes namespace team-a (owner, editor, viewer) holding proxy p,
// and namespace empty, owned by owner and holding nothing.
func (e *env) seed() *proxy.Proxy {
	e.t.Helper()
	return seedStore(e.t, e.store)
}

// seedStore is seed on any store.
func seedStore(t testing.TB, st testStore) *proxy.Proxy {
	t.Helper()
	ctx := context.Background()
	members := map[string]tenancy.Role{owner: tenancy.Owner, editor: tenancy.Editor, viewer: tenancy.Viewer}
	for name, m := range map[string]map[string]tenancy.Role{"team-a": members, "empty": {owner: tenancy.Owner}} {
		if _, err := st.CreateNamespace(ctx, rules.NewNamespace(name, m, 0, 20, time.Now().UTC().Truncate(time.Microsecond))); err != nil {
			t.Fatal(err)
		}
	}
	p := &proxy.Proxy{Namespace: "team-a", Name: "p", UID: "uid-p", Generation: 1,
		Spec:   proxy.Spec{Provider: mock.Type, Port: 3128, IPPolicy: proxy.IPEphemeral, Placement: proxy.Placement{Region: "us-central1", Zone: "us-central1-a"}, AllowedSourceRanges: []string{"203.0.113.0/24"}},
		Status: proxy.Status{Phase: proxy.PhasePending}, CreateTime: time.Now().UTC().Truncate(time.Microsecond)}
	created, err := st.CreateInNamespace(ctx, p, func(ns *tenancy.Namespace) (tenancy.Limits, error) { return tenancy.Limits{Quota: ns.QuotaOr(20)}, nil })
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// token is an ID token for email as Cloud Run passes it on: already
// verified there, so its signature is never looked at.
func token(email string) string {
	claims := base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf(`{"email":%q,"email_verified":true,"aud":"x"}`, email)))
	return "eyJhbGciOiJSUzI1NiJ9." + claims + ".c2lnbmF0dXJl"
}

// do sends a request as who ("" for no identity) and returns the
// response, its body read.
func (e *env) do(who, method, path, body string) (*http.Response, []byte) {
	e.t.Helper()
	return e.doContent(who, method, path, "", body)
}

// doContent is do with a Content-Type: contentType, or JSON for a body.
func (e *env) doContent(who, method, path, contentType, body string) (*http.Response, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != "" || contentType != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if contentType == "" && body != "" {
		contentType = "application/json"
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if who != "" {
		req.Header.Set("Authorization", "Bearer "+token(who))
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// doHeaders sends a request with these headers and no other.
func (e *env) doHeaders(method, path string, headers map[string]string) (*http.Response, []byte) {
	e.t.Helper()
	return e.raw(method, path, headers, "")
}

// chunked, before a body given to raw, sends it as a reader of unknown
// length; chunkedEmpty is such a reader with nothing in it.
const (
	chunked      = "\x00chunked:"
	chunkedEmpty = chunked
)

// raw sends a request with exactly these headers (and the body, when
// not empty) and nothing the client adds.
func (e *env) raw(method, path string, headers map[string]string, body string) (*http.Response, []byte) {
	e.t.Helper()
	var rd io.Reader
	switch rest, ok := strings.CutPrefix(body, chunked); {
	case body == chunkedEmpty:
		rd = io.NopCloser(strings.NewReader(""))
	case ok:
		// A reader of unknown length: the client sends it chunked.
		rd = io.NopCloser(strings.NewReader(rest))
	case body != "":
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// lines are the JSON log lines of a message.
func (e *env) lines(message string) []map[string]any {
	e.t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(e.logs.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			e.t.Fatalf("log line is not JSON: %s", l)
		}
		if m["message"] == message {
			out = append(out, m)
		}
	}
	return out
}

// apiErr is the error body, as the tests read it.
type apiErr struct {
	Error struct {
		Code    int    `json:"code"`
		Status  string `json:"status"`
		Message string `json:"message"`
		Details []struct {
			Type            string `json:"@type"`
			Reason          string `json:"reason"`
			Domain          string `json:"domain"`
			RetryDelay      string `json:"retryDelay"`
			FieldViolations []struct {
				Field, Description, Reason string
			} `json:"fieldViolations"`
		} `json:"details"`
	} `json:"error"`
}

// reason is the ErrorInfo's reason; fields the BadRequest's fields.
func (a apiErr) reason() string {
	for _, d := range a.Error.Details {
		if d.Type == "type.googleapis.com/google.rpc.ErrorInfo" {
			return d.Reason
		}
	}
	return ""
}

// retryDelay is the RetryInfo's delay, "" without one.
func (a apiErr) retryDelay() string {
	for _, d := range a.Error.Details {
		if d.Type == "type.googleapis.com/google.rpc.RetryInfo" {
			return d.RetryDelay
		}
	}
	return ""
}

func (a apiErr) fields() []string {
	var out []string
	for _, d := range a.Error.Details {
		for _, v := range d.FieldViolations {
			out = append(out, v.Field)
		}
	}
	return out
}

func decodeErr(t *testing.T, b []byte) apiErr {
	t.Helper()
	var a apiErr
	if err := json.Unmarshal(b, &a); err != nil || a.Error.Code == 0 {
		t.Fatalf("not a JSON error (%v):\n%s", err, b)
	}
	return a
}

const goodSpec = `{"placement":{"region":"us-central1","zone":"us-central1-a"},"allowedSourceRanges":["203.0.113.0/24"]}`

func body(name, spec string) string { return fmt.Sprintf(`{"name":%q,"spec":%s}`, name, spec) }

// syncBuffer collects log lines from concurrent requests.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Reset forgets the lines so far: a test's setup's.
func (b *syncBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
