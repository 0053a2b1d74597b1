package console_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/console"
	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/iap"
	"github.com/egress-proxies/egress/internal/iap/iaptest"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store/rules"
	"github.com/egress-proxies/egress/internal/store/storefake"
	"github.com/egress-proxies/egress/internal/tenancy"
)

const (
	admin    = "admin@platform.example"
	owner    = "owner@example.com"
	editor   = "editor@example.com"
	viewer   = "viewer@example.com"
	stranger = "stranger@example.com"
	password = "Zq8Rk3Vw1Ls5Nt7Bx2Cy4Dm6"
)

type env struct {
	t     *testing.T
	srv   *httptest.Server
	store *storefake.Store
}

// newEnv is the API with the console mounted as internal/app mounts it,
// over the in-memory store, with namespace team-a (an owner, an editor, a
// viewer) holding proxy p, Ready with credentials.
func newEnv(t *testing.T, change ...func(*httpapi.Options)) *env {
	t.Helper()
	return newEnvAt(t, clock.Real{}, change...)
}

// newEnvAt is newEnv on clk.
func newEnvAt(t *testing.T, clk clock.Clock, change ...func(*httpapi.Options)) *env {
	t.Helper()
	st := storefake.New(clk)
	admins, _ := tenancy.ParseAdmins(admin)
	reg := provider.NewRegistry()
	_ = reg.Register(mock.Type, func(context.Context) (provider.Provider, error) { return nil, fmt.Errorf("none") }, provider.WithValidator(mock.Validate))
	opts := httpapi.Options{
		DefaultProvider: mock.Type, Providers: provider.NewSet(reg), Admins: admins,
		Policy: proxy.Policy{MinPrefixIPv4: 8, MinPrefixIPv6: 32},
	}
	for _, c := range change {
		c(&opts)
	}
	api := httpapi.New(st, clk, slog.New(slog.DiscardHandler), opts)
	con, err := console.New(console.Options{API: api.Routes(), Identity: api, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	api.Handle(console.Prefix, con)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	now := clk.Now().UTC().Truncate(time.Microsecond)
	if _, err := st.CreateNamespace(ctx, rules.NewNamespace("team-a", map[string]tenancy.Role{owner: tenancy.Owner, editor: tenancy.Editor, viewer: tenancy.Viewer}, 0, 20, now)); err != nil {
		t.Fatal(err)
	}
	p := &proxy.Proxy{Namespace: "team-a", Name: "p", UID: "uid-p", Generation: 1,
		Spec:   proxy.Spec{Provider: mock.Type, Port: 3128, Placement: proxy.Placement{Region: "us-central1", Zone: "us-central1-a"}, AllowedSourceRanges: []string{"203.0.113.0/24"}},
		Status: proxy.Status{Phase: proxy.PhasePending}, CreateTime: now}
	p, err = st.CreateInNamespace(ctx, p, func(ns *tenancy.Namespace) (tenancy.Limits, error) { return tenancy.Limits{Quota: 20}, nil })
	if err != nil {
		t.Fatal(err)
	}
	p.Reconciler.Credentials = proxy.Credentials{Username: "u7Qk2pLm9xZa", Password: password}
	p.Status.Phase, p.Status.IP, p.Status.Endpoint, p.Status.ObservedGeneration = proxy.PhaseReady, "192.0.2.7", "192.0.2.7:3128", 1
	if _, err := st.UpdateStatus(ctx, p); err != nil {
		t.Fatal(err)
	}
	return &env{t: t, srv: srv, store: st}
}

func token(email string) string {
	claims := base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf(`{"email":%q}`, email)))
	return "e30." + claims + ".c2ln"
}

// get fetches path as who, following no redirect.
func (e *env) send(who, method, path string, form url.Values) (*http.Response, string) {
	e.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, e.srv.URL+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Authorization", "Bearer "+token(who))
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestHeaders: every answer carries the strict headers; assets are named
// by their content and cached for a year; pages are never cached.
func TestHeaders(t *testing.T) {
	e := newEnv(t)
	resp, page := e.send(owner, "GET", "/console/", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("home: %d\n%s", resp.StatusCode, page)
	}
	want := map[string]string{
		"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
		"X-Content-Type-Options":  "nosniff",
		"Cache-Control":           "no-store",
	}
	got := map[string]string{}
	for k := range want {
		got[k] = resp.Header.Get(k)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("page headers (-want +got):\n%s", diff)
	}
	if strings.Contains(page, "<script>") || regexp.MustCompile(`\son[a-z]+=`).MatchString(page) || strings.Contains(page, "style=") {
		t.Error("the page has inline script, an event handler attribute or an inline style, which its CSP forbids")
	}
	assets := regexp.MustCompile(`/console/assets/console\.[0-9a-f]{12}\.(css|js)`).FindAllString(page, -1)
	if len(assets) != 2 {
		t.Fatalf("the page links %v, want console.HASH.css and console.HASH.js", assets)
	}
	for _, a := range assets {
		resp, _ := e.send(owner, "GET", a, nil)
		if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %d, Cache-Control %q", a, resp.StatusCode, resp.Header.Get("Cache-Control"))
		}
	}
	if resp, _ := e.send(owner, "GET", "/console/assets/console.000000000000.js", nil); resp.StatusCode != 404 {
		t.Errorf("an asset of another content: %d, want 404", resp.StatusCode)
	}
}

// TestWhatEachRoleSees: the actions a page offers follow the caller's role
// by the API's table; the proxy URL is in no page unless an editor or an
// owner asks for it; an outsider sees the API's refusal and nothing of
// the namespace.
func TestWhatEachRoleSees(t *testing.T) {
	e := newEnv(t)
	cases := map[string]struct {
		reason      string
		who         string
		wantStatus  int
		wantActions []string
		wantURL     bool
	}{
		"Owner":    {reason: "an owner does all an editor does, and manages members", who: owner, wantStatus: 200, wantActions: []string{"namespaces add-member", "namespaces remove-member", "proxies create", "proxies delete", "proxies rotate", "proxies rotate-credentials", "proxies update"}, wantURL: true},
		"Editor":   {reason: "an editor acts on proxies", who: editor, wantStatus: 200, wantActions: []string{"proxies create", "proxies delete", "proxies rotate", "proxies rotate-credentials", "proxies update"}, wantURL: true},
		"Viewer":   {reason: "a viewer reads, with no action and no URL", who: viewer, wantStatus: 200},
		"Admin":    {reason: "an admin who is not a member acts, sets the quota, and reads no credentials", who: admin, wantStatus: 200, wantActions: []string{"namespaces add-member", "namespaces remove-member", "namespaces set-quota", "proxies create", "proxies delete", "proxies rotate", "proxies rotate-credentials", "proxies update"}},
		"Stranger": {reason: "an outsider gets the API's 403 and nothing of the namespace", who: stranger, wantStatus: 403},
	}
	actions := regexp.MustCompile(`data-action="([^"]+)"`)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var all string
			seen := map[string]bool{}
			for _, path := range []string{"/console/namespaces/team-a", "/console/namespaces/team-a/proxies/p", "/console/namespaces/team-a/proxies/p?show=url", "/console/namespaces/team-a/rows", "/console/namespaces/team-a/proxies/p/status"} {
				resp, page := e.send(tc.who, "GET", path, nil)
				if resp.StatusCode != tc.wantStatus {
					t.Fatalf("%s: GET %s: %d, want %d\n%s", tc.reason, path, resp.StatusCode, tc.wantStatus, page)
				}
				all += page
				for _, m := range actions.FindAllStringSubmatch(page, -1) {
					seen[m[1]] = true
				}
			}
			var got []string
			for _, a := range console.Actions {
				if seen[a.Command] {
					got = append(got, a.Command)
				}
			}
			want := map[bool][]string{true: tc.wantActions}[len(tc.wantActions) > 0]
			if diff := cmp.Diff(sortedCopy(want), sortedCopy(got)); diff != "" {
				t.Errorf("%s: actions offered (-want +got):\n%s", tc.reason, diff)
			}
			if got := strings.Count(all, password); (got > 0) != tc.wantURL {
				t.Errorf("%s: the password appears %d times in the pages", tc.reason, got)
			}
			if tc.wantStatus == 403 && (strings.Contains(all, "192.0.2.7") || !strings.Contains(all, "has no role in namespace team-a")) {
				t.Errorf("%s: a refused page shows the namespace's proxies, or not the API's message", tc.reason)
			}
			resp, body := e.send(tc.who, "GET", "/console/namespaces/team-a/proxies/p/url", nil)
			if (resp.StatusCode == 200) != tc.wantURL || (tc.wantURL && body != "http://u7Qk2pLm9xZa:"+password+"@192.0.2.7:3128") || resp.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("%s: the URL on demand: %d %q", tc.reason, resp.StatusCode, body)
			}
		})
	}
	// Nobody's page carries the URL before it is asked for.
	if _, page := e.send(owner, "GET", "/console/namespaces/team-a/proxies/p", nil); strings.Contains(page, password) {
		t.Error("the proxy's page holds its credentials before they are asked for")
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestRefusalsBesideTheirFields: the API's field violations of a create
// and of a change land beside the inputs they name, as its messages, never
// as JSON; a refusal without a field is the page's alert.
func TestRefusalsBesideTheirFields(t *testing.T) {
	e := newEnv(t)
	cases := map[string]struct {
		reason    string
		who       string
		path      string
		form      url.Values
		wantCode  int
		wantField string
		wantText  string
	}{
		"ZoneOutsideRegion": {reason: "the API's rule of a zone, beside the zone", who: editor, path: "/console/namespaces/team-a/proxies",
			form:     url.Values{"name": {"web"}, "spec.placement.region": {"us-central1"}, "spec.placement.zone": {"europe-west1-b"}, "spec.allowedSourceRanges": {"203.0.113.0/24"}},
			wantCode: 400, wantField: "spec.placement.zone", wantText: "europe-west1-b"},
		"RangeTooWide": {reason: "a range wider than the policy, beside the ranges", who: editor, path: "/console/namespaces/team-a/proxies/p/update",
			form: url.Values{"spec.allowedSourceRanges": {"10.0.0.0/4"}}, wantCode: 400, wantField: "spec.allowedSourceRanges", wantText: "10.0.0.0/4"},
		"BadName": {reason: "a name that is not a label, beside the name", who: editor, path: "/console/namespaces/team-a/proxies",
			form:     url.Values{"name": {"Web_1"}, "spec.placement.region": {"us-central1"}, "spec.allowedSourceRanges": {"203.0.113.0/24"}},
			wantCode: 400, wantField: "name", wantText: "Web_1"},
		"NotAPort": {reason: "a port the console cannot read, before the API", who: editor, path: "/console/namespaces/team-a/proxies/p/update",
			form: url.Values{"spec.connectPorts": {"https"}}, wantCode: 400, wantField: "spec.connectPorts", wantText: "https"},
		"BadMember": {reason: "an email that is not one, beside the member input", who: owner, path: "/console/namespaces/team-a/add-member",
			form: url.Values{"member": {"not-an-email"}, "role": {"viewer"}}, wantCode: 400, wantField: "member", wantText: "not-an-email"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resp, page := e.send(tc.who, "POST", tc.path, tc.form)
			if resp.StatusCode != tc.wantCode {
				t.Fatalf("%s: %d, want %d\n%s", tc.reason, resp.StatusCode, tc.wantCode, page)
			}
			m := regexp.MustCompile(`(?s)<ul class="field-errors" id="e-` + regexp.QuoteMeta(tc.wantField) + `" data-field="[^"]+">(.*?)</ul>`).FindStringSubmatch(page)
			if m == nil || !strings.Contains(m[1], tc.wantText) {
				t.Errorf("%s: no violation naming %q beside %s", tc.reason, tc.wantText, tc.wantField)
			}
			if strings.Contains(page, `"fieldViolations"`) || strings.Contains(page, `"error":`) {
				t.Errorf("%s: the page shows the API's JSON", tc.reason)
			}
		})
	}
	// A refusal without a field: a viewer's forged action.
	resp, page := e.send(viewer, "POST", "/console/namespaces/team-a/proxies/p/rotate-credentials", url.Values{})
	if resp.StatusCode != 403 || !strings.Contains(page, `role="alert"`) || !strings.Contains(page, "viewer@example.com is viewer in namespace team-a") {
		t.Errorf("a viewer's forged rotate-credentials: %d, want 403 with the API's message as an alert", resp.StatusCode)
	}
}

// TestActionsRedirect: an action the API takes redirects to the page that
// follows it, saying what was done; a cross-site form post is refused.
func TestActionsRedirect(t *testing.T) {
	e := newEnv(t)
	resp, page := e.send(editor, "POST", "/console/namespaces/team-a/proxies/p/rotate-credentials", url.Values{})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/namespaces/team-a/proxies/p?done=proxies-rotate-credentials" {
		t.Fatalf("rotate-credentials: %d %s\n%s", resp.StatusCode, resp.Header.Get("Location"), page)
	}
	p, err := e.store.Get(context.Background(), proxy.Key{Namespace: "team-a", Name: "p"})
	if err != nil || p.Generation != 2 {
		t.Errorf("after rotate-credentials: generation %d (%v), want 2", p.Generation, err)
	}
	req, _ := http.NewRequest("POST", e.srv.URL+"/console/namespaces/team-a/proxies/p/rotate-credentials", nil)
	req.Header.Set("Authorization", "Bearer "+token(editor))
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site post: %d, want 403", r2.StatusCode)
	}
}

// TestDeletedBeforeTheRedirectIsRead: the page a deletion redirects to,
// read once the proxy is already gone (a quick VM, a slow browser), says it
// is gone; it is the outcome asked for, not a refusal. Without the redirect
// mark, a missing proxy is still the API's refusal.
func TestDeletedBeforeTheRedirectIsRead(t *testing.T) {
	e := newEnv(t)
	key := proxy.Key{Namespace: "team-a", Name: "p"}
	p, err := e.store.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.store.Delete(context.Background(), key, p.UpdateTime); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason, path  string
		want, notWant string
	}{
		"AfterDelete": {reason: "the deletion's redirect", path: "/console/namespaces/team-a/proxies/p?done=proxies-delete",
			want: "Proxy p is gone: its VM was deleted.", notWant: "Refused"},
		"Otherwise": {reason: "a plain visit", path: "/console/namespaces/team-a/proxies/p",
			want: "Refused", notWant: "is gone"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resp, page := e.send(editor, "GET", tc.path, nil)
			if resp.StatusCode != http.StatusNotFound || !strings.Contains(page, tc.want) || strings.Contains(page, tc.notWant) {
				t.Errorf("%s: %d, want 404 saying %q and not %q:\n%s", tc.reason, resp.StatusCode, tc.want, tc.notWant, page)
			}
		})
	}
}

// TestSignedInThroughIAP: a browser that came through IAP is its signed
// assertion's email, with that person's role; the banner of the local
// stack is not shown; an assertion with an ID token beside it is refused
// with the API's message.
func TestSignedInThroughIAP(t *testing.T) {
	const audience = "/projects/123/locations/us-central1/services/proxy-api"
	google := iaptest.NewSigner(t, "k1")
	v, err := iap.New(context.Background(), audience, iap.Options{Client: iaptest.Client(nil, google)})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(o *httpapi.Options) { o.IAP = v; o.LocalIdentity = "local-admin@localhost" })
	get := func(headers map[string]string) (int, string) {
		path := "/console/namespaces/team-a/proxies/p"
		if headers == nil {
			path = "/console/"
		}
		req, _ := http.NewRequest("GET", e.srv.URL+path, nil)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	assertion := google.Sign(t, iaptest.Valid(audience, editor, time.Now()))
	code, page := get(map[string]string{iap.Header: assertion})
	if code != 200 || !strings.Contains(page, "Signed in as <strong>editor@example.com</strong>") || strings.Contains(page, "LOCAL_IDENTITY") || !strings.Contains(page, `data-action="proxies rotate"`) {
		t.Errorf("through IAP as an editor: %d, want the editor's page with her actions and no local banner", code)
	}
	code, page = get(map[string]string{iap.Header: assertion, "Authorization": "Bearer " + token(owner)})
	if code != 400 || !strings.Contains(page, "send one identity") {
		t.Errorf("an assertion and an ID token: %d, want 400 with the API's message", code)
	}
	if code, page = get(nil); code != 200 || !strings.Contains(page, "LOCAL_IDENTITY") {
		t.Errorf("no identity on a local stack: %d, want the local identity's page with its banner", code)
	}
}
