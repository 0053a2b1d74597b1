package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/googleapi"

	"github.com/egress-proxies/egress/internal/httpapi"
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
		// A change writes the access log as it is: on, as the seeded
		// document (from before the field) had it.
		on := true
		want.AccessLog = &on
		if diff := cmp.Diff(want, got.Spec); diff != "" || got.Generation != st.wantGen {
			t.Errorf("step %d (%s): generation %d, want %d; spec (-want +got):\n%s", i, st.reason, got.Generation, st.wantGen, diff)
		}
	}
	if resp, b := e.doContent(owner, "PATCH", "/v1/namespaces/team-a", "application/merge-patch+json", `{"members":{"new@example.com":"viewer"}}`); resp.StatusCode != 200 {
		t.Errorf("a namespace's PATCH as application/merge-patch+json: %d, want 200\n%s", resp.StatusCode, b)
	}
}

// TestPatchBandwidthAndAccessLog: a PATCH sets and removes the bandwidth
// limit and turns the access log off and back on (null is the default,
// on), each change a generation; a limit the create's rules refuse is
// refused by a PATCH too, naming the field, and changes nothing.
func TestPatchBandwidthAndAccessLog(t *testing.T) {
	e := memEnv(t)
	seeded := e.seed()
	path := "/v1/" + seeded.Key().Path()
	type state struct {
		Generation int64
		Bandwidth  string
		AccessLog  bool
	}
	for i, st := range []struct {
		reason, body string
		want         state
	}{
		{reason: "a limit", body: `{"spec":{"bandwidthLimit":"100Mbit"}}`, want: state{2, "100Mbit", true}},
		{reason: "the access log off, the limit left out stays", body: `{"spec":{"accessLog":false}}`, want: state{3, "100Mbit", false}},
		{reason: "the same again: no change", body: `{"spec":{"accessLog":false,"bandwidthLimit":"100Mbit"}}`, want: state{3, "100Mbit", false}},
		{reason: "null: the access log back on, the default", body: `{"spec":{"accessLog":null}}`, want: state{4, "100Mbit", true}},
		{reason: "null: no limit", body: `{"spec":{"bandwidthLimit":null}}`, want: state{5, "", true}},
	} {
		resp, b := e.doContent(editor, "PATCH", path, "application/merge-patch+json", st.body)
		if resp.StatusCode != 200 {
			t.Fatalf("step %d (%s): %d\n%s", i, st.reason, resp.StatusCode, b)
		}
		p := decodeProxy(t, b)
		got := state{p.Generation, p.Spec.BandwidthLimit, p.Spec.AccessLogOn()}
		if diff := cmp.Diff(st.want, got); diff != "" {
			t.Errorf("step %d (%s) (-want +got):\n%s", i, st.reason, diff)
		}
	}
	for body, reason := range map[string]string{
		`{"spec":{"bandwidthLimit":"100MB"}}`:  proxy.ReasonBandwidthInvalid,
		`{"spec":{"bandwidthLimit":"10Kbit"}}`: proxy.ReasonBandwidthOutOfRange,
	} {
		resp, b := e.doContent(editor, "PATCH", path, "application/merge-patch+json", body)
		if got := decodeErr(t, b); resp.StatusCode != 400 || got.reason() != reason || !slices.Equal(got.fields(), []string{"spec.bandwidthLimit"}) {
			t.Errorf("PATCH %s: %d %s %v, want 400 %s naming spec.bandwidthLimit", body, resp.StatusCode, got.reason(), got.fields(), reason)
		}
	}
	if p, _ := e.store.Get(context.Background(), seeded.Key()); p.Generation != 5 || p.Spec.BandwidthLimit != "" {
		t.Errorf("refused PATCHes changed the proxy: generation %d, bandwidthLimit %q", p.Generation, p.Spec.BandwidthLimit)
	}
}

// TestPatchTrafficQuota: a PATCH sets, changes and removes the monthly
// traffic quota, each change a generation that reaches the VM; a quota in
// bits, or of nothing, is refused naming the field and changes nothing.
func TestPatchTrafficQuota(t *testing.T) {
	e := memEnv(t)
	seeded := e.seed()
	path := "/v1/" + seeded.Key().Path()
	type state struct {
		Generation int64
		Quota      string
	}
	for i, st := range []struct {
		reason, body string
		want         state
	}{
		{reason: "a quota", body: `{"spec":{"trafficQuota":"500GB"}}`, want: state{2, "500GB"}},
		{reason: "raised", body: `{"spec":{"trafficQuota":"2TB"}}`, want: state{3, "2TB"}},
		{reason: "left out: it stays", body: `{"spec":{"accessLog":true}}`, want: state{3, "2TB"}},
		{reason: "null: no quota", body: `{"spec":{"trafficQuota":null}}`, want: state{4, ""}},
	} {
		resp, b := e.doContent(editor, "PATCH", path, "application/merge-patch+json", st.body)
		if resp.StatusCode != 200 {
			t.Fatalf("step %d (%s): %d\n%s", i, st.reason, resp.StatusCode, b)
		}
		p := decodeProxy(t, b)
		if diff := cmp.Diff(st.want, state{p.Generation, p.Spec.TrafficQuota}); diff != "" {
			t.Errorf("step %d (%s) (-want +got):\n%s", i, st.reason, diff)
		}
	}
	for body, reason := range map[string]string{
		`{"spec":{"trafficQuota":"500Gbit"}}`: proxy.ReasonTrafficQuotaInvalid,
		`{"spec":{"trafficQuota":"0GB"}}`:     proxy.ReasonTrafficQuotaOutOfRange,
	} {
		resp, b := e.doContent(editor, "PATCH", path, "application/merge-patch+json", body)
		if got := decodeErr(t, b); resp.StatusCode != 400 || got.reason() != reason || !slices.Equal(got.fields(), []string{"spec.trafficQuota"}) {
			t.Errorf("PATCH %s: %d %s %v, want 400 %s naming spec.trafficQuota", body, resp.StatusCode, got.reason(), got.fields(), reason)
		}
	}
	if p, _ := e.store.Get(context.Background(), seeded.Key()); p.Generation != 4 || p.Spec.TrafficQuota != "" {
		t.Errorf("refused PATCHes changed the proxy: generation %d, trafficQuota %q", p.Generation, p.Spec.TrafficQuota)
	}
}

// TestSocks5URLForEditors: a proxy with a socks5Port shows, to those who
// may read its credentials only (tenancy.ReadProxyURL: its namespace's
// editors and owners, not its viewers), socks5h://USER:PASSWORD@ip:socks5Port
// beside its proxyURL, once it has an endpoint; one without shows none.
func TestSocks5URLForEditors(t *testing.T) {
	e := memEnv(t, func(o *httpapi.Options) {
		o.Policy.ProxyPorts = []proxy.PortRange{{First: 3128, Last: 3128}, {First: 1080, Last: 1080}}
	})
	e.seed()
	resp, b := e.do(editor, "POST", "/v1/namespaces/team-a/proxies",
		`{"name":"s","spec":{"placement":{"region":"us-central1"},"allowedSourceRanges":["203.0.113.0/24"],"socks5Port":1080}}`)
	if resp.StatusCode != 201 {
		t.Fatalf("create with a socks5Port: %d\n%s", resp.StatusCode, b)
	}
	if p := decodeProxy(t, b); p.Spec.Socks5Port != 1080 || p.Status.Socks5URL != "" || !p.Spec.AccessLogOn() {
		t.Errorf("as created: socks5Port %d, socks5URL %q, accessLog %v; want 1080, none before an endpoint, on", p.Spec.Socks5Port, p.Status.Socks5URL, p.Spec.AccessLogOn())
	}
	ctx := context.Background()
	for _, name := range []string{"s", "p"} {
		p, err := e.store.Get(ctx, proxy.Key{Namespace: "team-a", Name: name})
		if err != nil {
			t.Fatal(err)
		}
		p.Status.Phase, p.Status.IP, p.Status.Endpoint = proxy.PhaseReady, "192.0.2.9", "192.0.2.9:3128"
		p.Reconciler.Credentials = proxy.Credentials{Username: "u" + name, Password: "Pw0123456789abcdef"}
		if _, err := e.store.UpdateStatus(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	for who, want := range map[string]string{editor: "socks5h://us:Pw0123456789abcdef@192.0.2.9:1080", viewer: "", admin: ""} {
		_, b := e.do(who, "GET", "/v1/namespaces/team-a/proxies/s", "")
		if got := decodeProxy(t, b).Status.Socks5URL; got != want {
			t.Errorf("socks5URL as %s: %q, want %q", who, got, want)
		}
	}
	if _, b := e.do(editor, "GET", "/v1/namespaces/team-a/proxies/p", ""); decodeProxy(t, b).Status.Socks5URL != "" {
		t.Errorf("a proxy without a socks5Port shows a socks5URL: %s", b)
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

// TestAPoolNeedsAProviderThatReconfigures: a warm pool's VMs are handed
// to proxies by Reconfigure, so a pool of a provider that cannot do it
// (hetzner) is refused at the PUT with a 400 naming the provider and why,
// and nothing is stored; a proxy of that provider is taken.
func TestAPoolNeedsAProviderThatReconfigures(t *testing.T) {
	e := memEnv(t)
	e.seed()
	resp, b := e.do(admin, "PUT", "/v1/pools/eu", `{"provider":"hetzner","placement":{"region":"eu-central"},"size":2}`)
	got := decodeErr(t, b)
	if resp.StatusCode != 400 || got.Error.Status != "INVALID_ARGUMENT" || got.reason() != "PROVIDER_CANNOT_RECONFIGURE" ||
		!regexp.MustCompile(`"field":\s*"provider"`).Match(b) || !strings.Contains(string(b), "new server for a change") {
		t.Errorf("PUT of a hetzner pool: %d %s", resp.StatusCode, b)
	}
	if resp, _ := e.do(admin, "GET", "/v1/pools/eu", ""); resp.StatusCode != 404 {
		t.Errorf("GET of the refused pool: %d, want 404 (nothing stored)", resp.StatusCode)
	}
	if resp, b := e.do(admin, "POST", "/v1/namespaces/team-a/proxies", `{"name":"eu","spec":{"provider":"hetzner","placement":{"region":"eu-central","zone":"fsn1"},"allowedSourceRanges":["198.51.100.0/24"]}}`); resp.StatusCode != 201 {
		t.Errorf("POST of a hetzner proxy: %d %s, want 201", resp.StatusCode, b)
	}
	// aws: the same, in EC2's words.
	resp, b = e.do(admin, "PUT", "/v1/pools/us", `{"provider":"aws","placement":{"region":"us-east-1"},"size":2}`)
	if got := decodeErr(t, b); resp.StatusCode != 400 || got.reason() != "PROVIDER_CANNOT_RECONFIGURE" || !strings.Contains(string(b), "new instance for a change") {
		t.Errorf("PUT of an aws pool: %d %s", resp.StatusCode, b)
	}
	if resp, b := e.do(admin, "POST", "/v1/namespaces/team-a/proxies", `{"name":"us","spec":{"provider":"aws","placement":{"region":"us-east-1","zone":"us-east-1b"},"allowedSourceRanges":["198.51.100.0/24"]}}`); resp.StatusCode != 201 {
		t.Errorf("POST of an aws proxy: %d %s, want 201", resp.StatusCode, b)
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
