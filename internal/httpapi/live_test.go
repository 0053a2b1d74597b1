package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/googleapi"

	"github.com/egress-proxies/egress/internal/proxy"
)

func decodeProxy(t *testing.T, b []byte) *proxy.Proxy {
	t.Helper()
	var p proxy.Proxy
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("not a proxy: %v\n%s", err, b)
	}
	return &p
}

// TestPatchProxy: a merge patch changes the ranges and ports and counts a
// generation; the same patch again changes nothing; null goes back to the
// default; the rest of the spec stays.
func TestPatchProxy(t *testing.T) {
	e := memEnv(t)
	seeded := e.seed()
	path := "/v1/" + seeded.Key().Path()
	steps := []struct {
		reason, contentType, body string
		wantGen                   int64
		ranges                    []string
		ports                     []int32
	}{
		{reason: "both fields, as merge-patch+json", contentType: "application/merge-patch+json", body: `{"spec":{"allowedSourceRanges":["198.51.100.0/24"],"connectPorts":[443,8443]}}`,
			wantGen: 2, ranges: []string{"198.51.100.0/24"}, ports: []int32{443, 8443}},
		{reason: "the same again: no change, the same generation", contentType: "application/json", body: `{"spec":{"connectPorts":[443,8443]}}`,
			wantGen: 2, ranges: []string{"198.51.100.0/24"}, ports: []int32{443, 8443}},
		{reason: "null: the default ports; the ranges left out stay", contentType: "application/merge-patch+json", body: `{"spec":{"connectPorts":null}}`,
			wantGen: 3, ranges: []string{"198.51.100.0/24"}},
		{reason: "an empty patch changes nothing", body: `{}`, wantGen: 3, ranges: []string{"198.51.100.0/24"}},
	}
	for i, st := range steps {
		resp, b := e.doContent(editor, "PATCH", path, st.contentType, st.body)
		if resp.StatusCode != 200 {
			t.Fatalf("step %d (%s): %d\n%s", i, st.reason, resp.StatusCode, b)
		}
		got := decodeProxy(t, b)
		want := seeded.Spec
		want.AllowedSourceRanges, want.ConnectPorts = st.ranges, st.ports
		if diff := cmp.Diff(want, got.Spec); diff != "" || got.Generation != st.wantGen {
			t.Errorf("step %d (%s): generation %d, want %d; spec (-want +got):\n%s", i, st.reason, got.Generation, st.wantGen, diff)
		}
	}
	if resp, b := e.doContent(owner, "PATCH", "/v1/namespaces/team-a", "application/merge-patch+json", `{"members":{"new@example.com":"viewer"}}`); resp.StatusCode != 200 {
		t.Errorf("a namespace's PATCH as application/merge-patch+json: %d, want 200\n%s", resp.StatusCode, b)
	}
}

// TestRotateCredentials: new credentials at once in the answer's
// proxyURL, for its editors and owners only, a generation each, whatever the rotation
// limits; a proxy being deleted or Failed takes no live change.
func TestRotateCredentials(t *testing.T) {
	e := memEnv(t)
	p := e.seed()
	ctx := context.Background()
	p.Status.Phase, p.Status.Endpoint = proxy.PhaseReady, "192.0.2.1:3128"
	p.Reconciler.Credentials, _ = proxy.NewCredentials()
	if _, err := e.store.UpdateStatus(ctx, p); err != nil {
		t.Fatal(err)
	}
	path := "/v1/" + p.Key().Path()
	seen := map[string]bool{p.Reconciler.Credentials.Password: true}
	for i := range 3 {
		resp, b := e.do(editor, "POST", path+":rotateCredentials", "")
		if resp.StatusCode != 200 {
			t.Fatalf("rotation %d: %d\n%s", i+1, resp.StatusCode, b)
		}
		got := decodeProxy(t, b)
		u, err := url.Parse(got.Status.ProxyURL)
		if err != nil || u.User == nil {
			t.Fatalf("rotation %d: proxyURL %q", i+1, got.Status.ProxyURL)
		}
		pass, _ := u.User.Password()
		if seen[pass] || got.Generation != int64(i+2) || u.Host != "192.0.2.1:3128" {
			t.Errorf("rotation %d: generation %d, proxyURL %s; want generation %d, a new password and the same endpoint", i+1, got.Generation, got.Status.ProxyURL, i+2)
		}
		seen[pass] = true
	}
	if _, b := e.do(admin, "POST", path+":rotateCredentials", ""); decodeProxy(t, b).Status.ProxyURL != "" {
		t.Errorf("an admin outside the namespace sees the credentials: %s", b)
	}

	failed, _ := e.store.Get(ctx, p.Key())
	failed.Status.Phase = proxy.PhaseFailed
	if _, err := e.store.UpdateStatus(ctx, failed); err != nil {
		t.Fatal(err)
	}
	for _, req := range [][3]string{{"POST", path + ":rotateCredentials", ""}, {"PATCH", path, `{"spec":{"connectPorts":[443]}}`}} {
		resp, b := e.do(editor, req[0], req[1], req[2])
		if got := decodeErr(t, b); resp.StatusCode != 409 || got.Error.Status != "FAILED_PRECONDITION" || got.reason() != "PROXY_FAILED" {
			t.Errorf("%s of a Failed proxy: %d %s %s, want 409 FAILED_PRECONDITION PROXY_FAILED", req[0], resp.StatusCode, got.Error.Status, got.reason())
		}
	}
	if resp, b := e.do(editor, "DELETE", path, ""); resp.StatusCode != 202 {
		t.Fatalf("delete: %d %s", resp.StatusCode, b)
	}
	resp, b := e.do(editor, "POST", path+":rotateCredentials", "")
	if got := decodeErr(t, b); resp.StatusCode != 409 || got.reason() != "PROXY_BEING_DELETED" {
		t.Errorf("new credentials for a proxy being deleted: %d %s, want 409 PROXY_BEING_DELETED", resp.StatusCode, got.reason())
	}
}

// TestPools: an admin's pool, from PUT to DELETE.
func TestPools(t *testing.T) {
	e := memEnv(t)
	const spec = `"provider":"mock","placement":{"region":"us-central1","zone":"us-central1-a"}`
	type step struct {
		reason, method, path, body string
		code                       int
		wantSize                   int
		wantGen                    int64
	}
	steps := []step{
		{reason: "a new pool, the body flat", method: "PUT", path: "/v1/pools/warm", body: `{` + spec + `,"size":2}`, code: 201, wantSize: 2, wantGen: 1},
		{reason: "the same again, under spec: nothing changes", method: "PUT", path: "/v1/pools/warm", body: `{"spec":{` + spec + `,"size":2}}`, code: 200, wantSize: 2, wantGen: 1},
		{reason: "a new size", method: "PUT", path: "/v1/pools/warm", body: `{` + spec + `,"size":0}`, code: 200, wantSize: 0, wantGen: 2},
		{reason: "read", method: "GET", path: "/v1/pools/warm", code: 200, wantSize: 0, wantGen: 2},
		{reason: "another pool", method: "PUT", path: "/v1/pools/cold", body: `{"placement":{"region":"us-central1"},"size":1}`, code: 201, wantSize: 1, wantGen: 1},
		{reason: "deletion asked", method: "DELETE", path: "/v1/pools/warm", code: 202, wantSize: 0, wantGen: 2},
	}
	for i, st := range steps {
		resp, b := e.do(admin, st.method, st.path, st.body)
		if resp.StatusCode != st.code {
			t.Fatalf("step %d (%s): %d, want %d\n%s", i, st.reason, resp.StatusCode, st.code, b)
		}
		var p proxy.Pool
		if err := json.Unmarshal(b, &p); err != nil || p.Spec.Size != st.wantSize || p.Generation != st.wantGen {
			t.Errorf("step %d (%s): %s (%v); want size %d, generation %d", i, st.reason, b, err, st.wantSize, st.wantGen)
		}
		if st.code == 201 && resp.Header.Get("Location") != st.path {
			t.Errorf("step %d (%s): Location %q", i, st.reason, resp.Header.Get("Location"))
		}
		if st.method == "DELETE" && p.DeleteRequestTime == nil {
			t.Errorf("step %d (%s): no deleteRequestTime: %s", i, st.reason, b)
		}
	}
	// The resource carries the PUT's fields at the top, and the status.
	_, b := e.do(admin, "GET", "/v1/pools/cold", "")
	var shown map[string]any
	if err := json.Unmarshal(b, &shown); err != nil {
		t.Fatal(err)
	}
	status, _ := shown["status"].(map[string]any)
	type keys struct {
		Size, Provider, Placement     bool
		Warm, Booting, ClaimsLastHour bool
	}
	has := func(m map[string]any, k string) bool { _, ok := m[k]; return ok }
	if diff := cmp.Diff(keys{true, true, true, true, true, true}, keys{has(shown, "size"), has(shown, "provider"), has(shown, "placement"),
		has(status, "warm"), has(status, "booting"), has(status, "claimsLastHour")}); diff != "" {
		t.Errorf("GET of a pool: %s\nkeys (-want +got):\n%s", b, diff)
	}
	var page struct{ Pools []proxy.Pool }
	_, b = e.do(admin, "GET", "/v1/pools?pageSize=1", "")
	_ = json.Unmarshal(b, &page)
	if len(page.Pools) != 1 || page.Pools[0].Name != "cold" || !strings.Contains(string(b), "nextPageToken") {
		t.Errorf("first page of one: %s", b)
	}
	resp, b := e.do(admin, "PUT", "/v1/pools/warm", `{`+spec+`,"size":3}`)
	if got := decodeErr(t, b); resp.StatusCode != 409 || got.Error.Status != "FAILED_PRECONDITION" || got.reason() != "POOL_BEING_DELETED" {
		t.Errorf("PUT of a pool being deleted: %d %s %s, want 409 FAILED_PRECONDITION POOL_BEING_DELETED", resp.StatusCode, got.Error.Status, got.reason())
	}
}

// TestLiveErrorsParseAsGoogleErrors: the new refusals read as
// *googleapi.Error with their field violations and reasons.
func TestLiveErrorsParseAsGoogleErrors(t *testing.T) {
	e := memEnv(t)
	e.seed()
	if resp, b := e.do(admin, "PUT", "/v1/pools/warm", `{"placement":{"region":"us-central1","zone":"us-central1-a"},"size":1}`); resp.StatusCode != 201 {
		t.Fatalf("put pool: %d %s", resp.StatusCode, b)
	}
	cases := map[string]struct {
		method, path, contentType, body string
		want                            []any
	}{
		"NotPatchable": {method: "PATCH", path: "/v1/namespaces/team-a/proxies/p", contentType: "application/merge-patch+json", body: `{"spec":{"port":8080}}`,
			want: []any{
				map[string]any{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": []any{map[string]any{"field": "spec.port", "reason": "FIELD_NOT_PATCHABLE", "description": "is not a field a PATCH changes"}}},
				map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "FIELD_NOT_PATCHABLE", "domain": "egress-proxies"},
			}},
		"PoolMoved": {method: "PUT", path: "/v1/pools/warm", contentType: "application/json", body: `{"placement":{"region":"us-central1","zone":"us-central1-b"},"size":1}`,
			want: []any{
				map[string]any{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": []any{map[string]any{"field": "spec.placement", "reason": "POOL_FIELD_IMMUTABLE",
					"description": "pool warm has placement {Region:us-central1 Zone:us-central1-a MachineType: Image:}: a pool's placement is where its VMs are, so it does not change (delete the pool and make another)"}}},
				map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "POOL_FIELD_IMMUTABLE", "domain": "egress-proxies"},
			}},
	}
	for name, tc := range cases {
		who := editor
		if strings.HasPrefix(tc.path, "/v1/pools") {
			who = admin
		}
		req, _ := http.NewRequest(tc.method, e.url+tc.path, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", tc.contentType)
		req.Header.Set("Authorization", "Bearer "+token(who))
		resp, err := e.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var gerr *googleapi.Error
		if err := googleapi.CheckResponse(resp); !errors.As(err, &gerr) || gerr.Code != 400 {
			t.Fatalf("%s: CheckResponse: %v, want a 400 *googleapi.Error", name, err)
		}
		resp.Body.Close()
		if diff := cmp.Diff(tc.want, gerr.Details); diff != "" {
			t.Errorf("%s: details as googleapi reads them (-want +got):\n%s", name, diff)
		}
	}
}
