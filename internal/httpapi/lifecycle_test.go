package httpapi_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/proxy"
)

type resource struct {
	Name              string       `json:"name"`
	Namespace         string       `json:"namespace"`
	UID               string       `json:"uid"`
	Generation        int64        `json:"generation"`
	Spec              proxy.Spec   `json:"spec"`
	Status            proxy.Status `json:"status"`
	RequestedBy       string       `json:"requestedBy"`
	DeleteTime        *string      `json:"deleteRequestTime"`
	RotateRequestTime *string      `json:"rotateRequestTime"`
}

func decodeResource(t *testing.T, b []byte) resource {
	t.Helper()
	var r resource
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("not a resource: %v\n%s", err, b)
	}
	return r
}

// TestLifecycle drives a proxy from create to rotation to deletion as an
// editor, against the emulator, and checks what the logs hold.
func TestLifecycle(t *testing.T) {
	// Custom cloud-init enabled: its body must not reach the logs.
	e := firestoreEnv(t, func(o *httpapi.Options) { o.Policy.AllowCloudInit = true })
	e.seed()
	base := "/v1/namespaces/team-a/proxies"
	secretInit := "#cloud-config\nwrite_files: [{path: /etc/token, content: s3cr3t-token}]\n"
	spec := `{"placement":{"region":"us-central1","zone":"us-central1-a"},"allowedSourceRanges":["203.0.113.0/24"],"cloudInit":` + mustJSON(secretInit) + `}`

	resp, b := e.do(editor, "POST", base, body("first", spec))
	if resp.StatusCode != 201 || resp.Header.Get("Location") != "/v1/namespaces/team-a/proxies/first" {
		t.Fatalf("create: %d Location %q\n%s", resp.StatusCode, resp.Header.Get("Location"), b)
	}
	created := decodeResource(t, b)
	if created.Status.Phase != proxy.PhasePending || created.UID == "" || created.Generation != 1 || created.Spec.Port != 3128 ||
		created.Spec.Provider != "mock" || created.RequestedBy != editor {
		t.Errorf("created resource %+v: want Pending, a uid, generation 1, defaults filled, requestedBy the editor", created)
	}

	// The same POST again: 200 and the same uid. Another spec: 409.
	resp, b = e.do(editor, "POST", base, body("first", spec))
	if again := decodeResource(t, b); resp.StatusCode != 200 || again.UID != created.UID {
		t.Errorf("repeated create: %d uid %s, want 200 and uid %s", resp.StatusCode, again.UID, created.UID)
	}
	resp, b = e.do(editor, "POST", base, body("first", strings.Replace(spec, "203.0.113.0/24", "198.51.100.0/24", 1)))
	if got := decodeErr(t, b); resp.StatusCode != 409 || got.Error.Status != "ALREADY_EXISTS" || got.reason() != "PROXY_EXISTS_WITH_ANOTHER_SPEC" {
		t.Errorf("create with another spec: %d %s, want 409 ALREADY_EXISTS", resp.StatusCode, b)
	}

	// An admin raises the quota; 44 more, then list in pages of 20: three pages, every name once, p
	// (the seed's) among them.
	if resp, b := e.do(admin, "PATCH", "/v1/namespaces/team-a", `{"quota":100}`); resp.StatusCode != 200 || !strings.Contains(string(b), `"quota": 100`) {
		t.Fatalf("raising the quota: %d %s", resp.StatusCode, b)
	}
	want := []string{"first", "p"}
	for i := range 44 {
		name := fmt.Sprintf("q-%02d", i)
		if resp, b := e.do(editor, "POST", base, body(name, goodSpec)); resp.StatusCode != 201 {
			t.Fatalf("create %s: %d %s", name, resp.StatusCode, b)
		}
		want = append(want, name)
	}
	var got []string
	pages := 0
	for token := ""; ; {
		resp, b := e.do(viewer, "GET", base+"?pageSize=20&pageToken="+token, "")
		if resp.StatusCode != 200 {
			t.Fatalf("list: %d %s", resp.StatusCode, b)
		}
		pages++
		var page struct {
			Proxies       []resource `json:"proxies"`
			NextPageToken string     `json:"nextPageToken"`
		}
		json.Unmarshal(b, &page)
		for _, p := range page.Proxies {
			got = append(got, p.Name)
		}
		if token = page.NextPageToken; token == "" {
			break
		}
	}
	if diff := cmp.Diff(want, got); diff != "" || pages != 3 {
		t.Errorf("46 proxies in pages of 20: %d pages, want 3; names (-want +got):\n%s", pages, diff)
	}

	// Rotate, once Ready: 202, rotateRequestTime set.
	e.makeReady(proxy.Key{Namespace: created.Namespace, Name: "first"})
	resp, b = e.do(editor, "POST", base+"/first:rotate", "")
	rotated := decodeResource(t, b)
	if resp.StatusCode != 202 || rotated.RotateRequestTime == nil || rotated.UID != created.UID {
		t.Errorf("rotate: %d %s, want 202 with rotateRequestTime", resp.StatusCode, b)
	}

	// Delete: 202 Deleting, idempotent; the document stays for the
	// reconciler, and takes no rotation.
	for range 2 {
		resp, b := e.do(editor, "DELETE", base+"/first", "")
		del := decodeResource(t, b)
		if resp.StatusCode != 202 || del.Status.Phase != proxy.PhaseDeleting || del.DeleteTime == nil {
			t.Errorf("delete: %d phase %s, want 202 Deleting with deleteRequestTime", resp.StatusCode, del.Status.Phase)
		}
	}
	resp, b = e.do(editor, "POST", base+"/first:rotate", "")
	if got := decodeErr(t, b); resp.StatusCode != 409 || got.Error.Status != "FAILED_PRECONDITION" || got.reason() != "PROXY_BEING_DELETED" {
		t.Errorf("rotate of a proxy being deleted: %d %s, want 409 FAILED_PRECONDITION", resp.StatusCode, b)
	}
	if resp, b := e.do(viewer, "GET", base+"/first", ""); resp.StatusCode != 200 || !strings.Contains(string(b), `"Deleting"`) {
		t.Errorf("get after delete: %d %s", resp.StatusCode, b)
	}
	if resp, _ := e.do("", "GET", "/healthz", ""); resp.StatusCode != 200 {
		t.Errorf("healthz without identity: %d", resp.StatusCode)
	}

	// The logs hold no cloud-init and no token.
	claims := strings.Split(token(editor), ".")[1]
	for _, secret := range []string{"s3cr3t-token", claims, "c2lnbmF0dXJl"} {
		if strings.Contains(e.logs.String(), secret) {
			t.Errorf("the logs contain %q", secret)
		}
	}
}

// TestRequestLine: each request logs one line, the invocation line the
// metrics read (its message, function, outcome, latencyMs and usage as
// package metering writes them) with the request in Cloud Logging's
// httpRequest shape; a change logs its audit line besides.
func TestRequestLine(t *testing.T) {
	e := firestoreEnv(t)
	e.seed()
	e.logs.buf.Reset()
	resp, _ := e.do(editor, "POST", "/v1/namespaces/team-a/proxies", body("new", goodSpec))
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	var all []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(e.logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %s", l)
		}
		all = append(all, m)
	}
	if len(all) != 2 || all[0]["message"] != "audit" || all[1]["message"] != metering.Message {
		t.Fatalf("a create logged %d lines, want the audit line and the request's one:\n%s", len(all), e.logs.String())
	}
	line := all[1]
	if _, ok := line["latencyMs"].(float64); !ok {
		t.Errorf("no numeric latencyMs: %v", line)
	}
	var usage metering.Usage
	raw, _ := json.Marshal(line["usage"])
	json.Unmarshal(raw, &usage)
	hr, _ := line["httpRequest"].(map[string]any)
	got := map[string]any{"function": line["function"], "outcome": line["outcome"], "severity": line["severity"],
		"usage": usage, "method": hr["requestMethod"], "url": hr["requestUrl"], "status": hr["status"], "sized": hr["responseSize"].(float64) > 0}
	want := map[string]any{"function": "ProxyAPI", "outcome": "ok", "severity": "INFO",
		// The transaction reads the namespace and the name and writes the
		// proxy and the counter.
		"usage":  metering.Usage{FirestoreReads: 2, FirestoreWrites: 2},
		"method": "POST", "url": "/v1/namespaces/team-a/proxies", "status": float64(201), "sized": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("request line (-want +got):\n%s", diff)
	}
}

// TestConcurrentCreates: the quota holds under concurrent creates, on the
// emulator's transactions.
func TestConcurrentCreates(t *testing.T) {
	e := firestoreEnv(t)
	e.seed()
	post := func(name string) int {
		resp, _ := e.do(editor, "POST", "/v1/namespaces/team-a/proxies", body(name, goodSpec))
		return resp.StatusCode
	}
	codes := make([]int, 25)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Go(func() { codes[i] = post(fmt.Sprintf("q-%02d", i)) })
	}
	wg.Wait()
	count := map[int]int{}
	for _, c := range codes {
		count[c]++
	}
	// The seed's proxy holds one slot of 20: 19 of the 25 fit.
	if diff := cmp.Diff(map[int]int{201: 19, 429: 6}, count); diff != "" {
		t.Errorf("25 concurrent creates with 19 slots left (-want +got):\n%s", diff)
	}
	page, _, err := e.store.List(context.Background(), "team-a", 100, "")
	if err != nil || len(page) != 20 {
		t.Errorf("namespace holds %d documents (%v), want its quota of 20", len(page), err)
	}
}

// TestProxyURL: the credentials are shown to the namespace's editors and
// owners, in a get and in a list, and to nobody else — a viewer, and an
// admin who is not a member, see the proxy without them; the logs never
// hold them.
func TestProxyURL(t *testing.T) {
	e := firestoreEnv(t)
	p := e.seed()
	p.Reconciler.Credentials = proxy.Credentials{Username: "u7Qk2pLm9xZa", Password: "Zq8Rk3Vw1Ls5Nt7Bx2Cy4Dm6"}
	p.Status.Phase, p.Status.IP, p.Status.Endpoint = proxy.PhaseReady, "192.0.2.7", "192.0.2.7:3128"
	if _, err := e.store.UpdateStatus(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	const url = "http://u7Qk2pLm9xZa:Zq8Rk3Vw1Ls5Nt7Bx2Cy4Dm6@192.0.2.7:3128"
	cases := map[string]struct {
		reason, who, want string
	}{
		"Owner":  {reason: "a member", who: owner, want: url},
		"Editor": {reason: "a member", who: editor, want: url},
		"Viewer": {reason: "a viewer reads the proxy, not its credentials: using it is an editor's right", who: viewer, want: ""},
		"Admin":  {reason: "an admin who is not a member sees no credentials", who: admin, want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, b := e.do(tc.who, "GET", "/v1/namespaces/team-a/proxies/p", "")
			_, lb := e.do(tc.who, "GET", "/v1/namespaces/team-a/proxies", "")
			var page struct{ Proxies []resource }
			json.Unmarshal(lb, &page)
			got := []string{decodeResource(t, b).Status.ProxyURL}
			for _, p := range page.Proxies {
				got = append(got, p.Status.ProxyURL)
			}
			if diff := cmp.Diff([]string{tc.want, tc.want}, got); diff != "" {
				t.Errorf("%s\nproxyURL in a get and a list (-want +got):\n%s", tc.reason, diff)
			}
			if strings.Contains(string(lb), "reconciler") || strings.Contains(string(lb), `"password"`) {
				t.Errorf("the list shows the document's private part: %s", lb)
			}
		})
	}
	if strings.Contains(e.logs.String(), p.Reconciler.Credentials.Password) {
		t.Error("the logs hold the proxy's password")
	}
}

// TestIdentity: who a request is, from its headers.
func TestIdentity(t *testing.T) {
	claims := func(json string) string {
		return "Bearer e30." + base64.RawURLEncoding.EncodeToString([]byte(json)) + "."
	}
	cases := map[string]struct {
		reason  string
		local   string
		headers map[string]string
		want    int // GET of team-a's namespace
	}{
		"Authorization":     {reason: "the token Cloud Run verified", headers: map[string]string{"Authorization": "Bearer " + token(viewer)}, want: 200},
		"ServerlessFirst":   {reason: "X-Serverless-Authorization is the verified one when both come", headers: map[string]string{"X-Serverless-Authorization": "Bearer " + token(stranger), "Authorization": "Bearer " + token(viewer)}, want: 403},
		"ServerlessAlone":   {reason: "X-Serverless-Authorization alone", headers: map[string]string{"X-Serverless-Authorization": "Bearer " + token(viewer)}, want: 200},
		"UnsignedToken":     {reason: "the signature is never read: Cloud Run may strip it", headers: map[string]string{"Authorization": claims(`{"email":"viewer@example.com"}`)}, want: 200},
		"EmailCase":         {reason: "emails compare in lowercase", headers: map[string]string{"Authorization": claims(`{"email":"Viewer@Example.com"}`)}, want: 200},
		"NoEmailClaim":      {reason: "a token without an email says no one", headers: map[string]string{"Authorization": claims(`{"sub":"1234"}`)}, want: 401},
		"EmailNotVerified":  {reason: "an email the token says is unverified is no one", headers: map[string]string{"Authorization": claims(`{"email":"viewer@example.com","email_verified":false}`)}, want: 401},
		"NotBearer":         {reason: "only Bearer tokens", headers: map[string]string{"Authorization": "Basic dXNlcjpwYXNz"}, want: 401},
		"Garbage":           {reason: "a token that is no JWT", headers: map[string]string{"Authorization": "Bearer nonsense"}, want: 401},
		"None":              {reason: "no identity in production", want: 401},
		"LocalIdentity":     {reason: "the local stack's identity for a request without one", local: admin, want: 200},
		"LocalNotForTokens": {reason: "a request that brings a token is that token's, locally too", local: admin, headers: map[string]string{"Authorization": "Bearer " + token(stranger)}, want: 403},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := memEnv(t, func(o *httpapi.Options) { o.LocalIdentity = tc.local })
			e.seed()
			resp, b := e.doHeaders("GET", "/v1/namespaces/team-a", tc.headers)
			if resp.StatusCode != tc.want {
				t.Errorf("%s\nstatus %d, want %d\n%s", tc.reason, resp.StatusCode, tc.want, b)
			}
			if tc.want == 401 {
				if got := decodeErr(t, b); got.Error.Status != "UNAUTHENTICATED" || got.reason() != "IDENTITY_MISSING" {
					t.Errorf("%s\n401 body %s", tc.reason, b)
				}
			}
		})
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
