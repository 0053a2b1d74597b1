package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/logging"
	"github.com/egress-proxies/egress/internal/store/storefake"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// The fuzz tests drive the real handler, in process, over the in-memory
// store (which passes the same contract as the Firestore store), seeded as
// the other tests seed it, afresh for every input. A panic fails the
// input; so do a 5xx, an answer the OpenAPI document does not allow, and a
// refusal that wrote anything.

// fuzzAPI is a seeded store and the API over it.
type fuzzAPI struct {
	t     *testing.T
	store *storefake.Store
	api   http.Handler
}

func newFuzzAPI(t *testing.T) *fuzzAPI {
	st := storefake.New(clock.Real{})
	seedStore(t, st)
	return &fuzzAPI{t: t, store: st, api: httpapi.New(st, clock.Real{}, logging.New(io.Discard, slog.LevelError), options())}
}

// serve sends one request and holds its answer to the rules above.
func (f *fuzzAPI) serve(req *http.Request, body []byte) (int, []byte) {
	f.t.Helper()
	_, before := f.store.Counts()
	w := httptest.NewRecorder()
	f.api.ServeHTTP(w, req)
	_, after := f.store.Counts()
	res := w.Result()
	out, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 500 {
		f.t.Fatalf("%s %s answered %d to body %q:\n%s", req.Method, req.URL, res.StatusCode, body, out)
	}
	if res.StatusCode >= 300 && after != before {
		f.t.Fatalf("%s %s answered %d to body %q and wrote %d times", req.Method, req.URL, res.StatusCode, body, after-before)
	}
	v, err := validator()
	if err != nil {
		f.t.Fatal(err)
	}
	if err := v.Response(req, res.StatusCode, res.Header, out); err != nil {
		f.t.Fatal(err)
	}
	return res.StatusCode, out
}

// who are the callers a fuzz input picks from: the seed's, and no one.
var who = []string{admin, owner, editor, viewer, stranger, ""}

// contentTypes a fuzz input picks from.
var contentTypes = []string{"application/json", "", "application/json; charset=utf-8", "text/plain", "application/merge-patch+json"}

// FuzzRequests: every route, with any namespace, name, query, body and
// content type, from every caller. Hostile seeds (planted cloud-init,
// another namespace's secret, trailing garbage, bytes that are not UTF-8,
// a deep JSON array) are in testdata/fuzz/FuzzRequests.
func FuzzRequests(f *testing.F) {
	routes := httpapi.Routes()
	for i := range routes {
		for _, body := range []string{
			"",
			`{"name":"p2","spec":{"placement":{"region":"us-central1","zone":"us-central1-a"},"allowedSourceRanges":["203.0.113.0/24"]}}`,
			`{"name":"p2","spec":{"cloudInit":"#cloud-config\n$(reboot)","allowedSourceRanges":["0.0.0.0/0"],"port":-1}}`,
			`{"members":{"editor@example.com":null,"new@example.com":"owner"},"quota":3}`,
		} {
			f.Add(uint8(i), uint8(i%len(who)), uint8(0), "team-a", "p", "", body)
		}
	}
	f.Fuzz(func(t *testing.T, route, caller, contentType uint8, ns, name, query, body string) {
		r := routes[int(route)%len(routes)]
		path := strings.NewReplacer("{namespace}", url.PathEscape(ns), "{name}", url.PathEscape(name)).Replace(r.Path)
		req, err := http.NewRequest(r.Method, "http://api.test"+path+"?"+query, strings.NewReader(body))
		if err != nil {
			return
		}
		if ct := contentTypes[int(contentType)%len(contentTypes)]; ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		if c := who[int(caller)%len(who)]; c != "" {
			req.Header.Set("Authorization", "Bearer "+token(c))
		}
		newFuzzAPI(t).serve(req, []byte(body))
	})
}

// FuzzNamespacePatch: a JSON merge patch of a namespace (RFC 7396) either
// is refused and changes nothing, or gives exactly what it answers: every
// member with a valid role, and each member the patch does not name with
// the role it had.
func FuzzNamespacePatch(f *testing.F) {
	for _, body := range []string{
		`{"members":{"new@example.com":"editor"}}`,
		`{"members":{"viewer@example.com":null}}`,
		`{"members":{"VIEWER@Example.com":"owner","editor@example.com":null}}`,
		`{"members":{"x@y":"root"}}`, `{"quota":-1}`, `{}`, `null`, `{"extra":1}`,
	} {
		for c := range 3 {
			f.Add(uint8(c), body)
		}
	}
	f.Fuzz(func(t *testing.T, caller uint8, body string) {
		api := newFuzzAPI(t)
		ctx := context.Background()
		before, err := api.store.GetNamespace(ctx, "team-a")
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPatch, "http://api.test/v1/namespaces/team-a", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/merge-patch+json")
		req.Header.Set("Authorization", "Bearer "+token([]string{owner, admin, editor}[int(caller)%3]))
		code, out := api.serve(req, []byte(body))
		after, err := api.store.GetNamespace(ctx, "team-a")
		if err != nil {
			t.Fatal(err)
		}
		if code >= 300 {
			if diff := cmp.Diff(before.Members, after.Members); diff != "" || before.Quota != after.Quota {
				t.Fatalf("refused with %d, yet the namespace changed (-before +after):\n%s", code, diff)
			}
			return
		}
		var answered struct {
			Members map[string]tenancy.Role `json:"members"`
		}
		if err := json.Unmarshal(out, &answered); err != nil {
			t.Fatalf("answer %q: %v", out, err)
		}
		if diff := cmp.Diff(after.Members, answered.Members); diff != "" {
			t.Errorf("the answer is not what was stored (-stored +answered):\n%s", diff)
		}
		for m, r := range after.Members {
			if !r.Valid() {
				t.Errorf("member %q stored with role %q", m, r)
			}
		}
		var patch struct {
			Members map[string]json.RawMessage `json:"members"`
		}
		_ = json.Unmarshal([]byte(body), &patch)
		named := map[string]bool{}
		for k := range maps.Keys(patch.Members) {
			if e, ok := tenancy.NormalizeEmail(k); ok {
				named[e] = true
			}
		}
		for m, r := range before.Members {
			if !named[m] && after.Members[m] != r {
				t.Errorf("member %q, not named by patch %q, went from %q to %q", m, body, r, after.Members[m])
			}
		}
	})
}

// FuzzIdentity: a request is the email its ID token names, and no one
// else. A token built with any email, any email_verified and any
// signature reaches namespace team-a exactly when that email, normalised,
// is a member or an admin; a malformed header is no one (401), never a
// 5xx; and X-Serverless-Authorization, which Cloud Run verified, always
// wins over Authorization.
func FuzzIdentity(f *testing.F) {
	f.Add(owner, uint8(1), "c2lnbmF0dXJl", "Bearer x.y.z")
	f.Add("OWNER@example.com", uint8(0), "", "Bearer "+token(admin))
	f.Fuzz(func(t *testing.T, email string, verified uint8, sig, raw string) {
		claims := map[string]any{"email": email, "aud": "x"}
		switch verified % 3 {
		case 1:
			claims["email_verified"] = true
		case 2:
			claims["email_verified"] = false
		}
		payload, err := json.Marshal(claims)
		if err != nil {
			return
		}
		sig = strings.Map(func(r rune) rune {
			if r < 128 && (r == '-' || r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
				return r
			}
			return -1
		}, sig)
		tok := "eyJhbGciOiJSUzI1NiJ9." + base64.RawURLEncoding.EncodeToString(payload) + "." + sig
		get := func(headers map[string]string) int {
			req, _ := http.NewRequest(http.MethodGet, "http://api.test/v1/namespaces/team-a", nil)
			for k, v := range headers {
				req.Header.Set(k, v)
			}
			code, _ := newFuzzAPI(t).serve(req, nil)
			return code
		}

		want := http.StatusUnauthorized
		if e, ok := tenancy.NormalizeEmail(email); ok && verified%3 != 2 {
			want = http.StatusForbidden
			if e == admin || e == owner || e == editor || e == viewer {
				want = http.StatusOK
			}
		}
		if got := get(map[string]string{"Authorization": "Bearer " + tok}); got != want {
			t.Errorf("a token for %q (email_verified %d) answered %d, want %d", email, verified%3, got, want)
		}
		if got := get(map[string]string{"X-Serverless-Authorization": "Bearer " + token(stranger), "Authorization": "Bearer " + tok}); got != http.StatusForbidden {
			t.Errorf("with Cloud Run's verified header a stranger's, a second token for %q answered %d, want 403", email, got)
		}
		got := get(map[string]string{"Authorization": raw})
		if got == http.StatusOK && !bytes.HasPrefix([]byte(raw), []byte("Bearer ")) {
			t.Errorf("header %q, no Bearer token, was let in", raw)
		}
	})
}
