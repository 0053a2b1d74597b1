package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/iap"
	"github.com/egress-proxies/egress/internal/iap/iaptest"
	"github.com/egress-proxies/egress/internal/proxy"
)

// TestCrossSiteRequests: what a page of another site can make a signed-in
// browser send to the API is refused on every route, not only the
// console's: a form POST (no preflight), a no-cors fetch with a body and
// no Content-Type, and the browser's IAP session outside the console. A
// CLI through IAP (no browser's fetch metadata) and a CLI with an ID
// token still work. Nothing a refused request asked for is done.
func TestCrossSiteRequests(t *testing.T) {
	const audience = "/projects/123456789/locations/us-central1/services/proxy-api"
	google := iaptest.NewSigner(t, "iap-1")
	verifier, err := iap.New(context.Background(), audience, iap.Options{Client: iaptest.Client(nil, google)})
	if err != nil {
		t.Fatal(err)
	}
	session := func() string { return google.Sign(t, iaptest.Valid(audience, editor, time.Now())) }
	const evil = "https://evil.example"
	const rotateCreds = "/v1/namespaces/team-a/proxies/p:rotateCredentials"
	const create = "/v1/namespaces/team-a/proxies"
	form := "application/x-www-form-urlencoded"
	cases := map[string]struct {
		reason     string
		method     string
		path       string
		headers    map[string]string
		body       string
		want       int
		wantReason string
		// changed: the proxy's password or the proxies' count changes.
		changed bool
	}{
		"FormPostRotateCredentials": {reason: "another site's auto-submitted form, riding the IAP session",
			method: "POST", path: rotateCreds, body: "x=1",
			headers: map[string]string{iap.Header: session(), "Content-Type": form, "Origin": evil, "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"},
			want:    403, wantReason: httpapi.ReasonCrossOrigin},
		"FormPostOldBrowser": {reason: "a browser without fetch metadata: its Origin is not the API's host",
			method: "POST", path: rotateCreds, body: "x=1",
			headers: map[string]string{iap.Header: session(), "Content-Type": form, "Origin": evil},
			want:    403, wantReason: httpapi.ReasonCrossOrigin},
		"NoCorsCreate": {reason: "a no-cors fetch with a byte-array body carries no Content-Type",
			method: "POST", path: create, body: body("planted", goodSpec),
			headers: map[string]string{iap.Header: session(), "Origin": evil, "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"},
			want:    403, wantReason: httpapi.ReasonCrossOrigin},
		"BodyWithoutContentType": {reason: "every body says it is JSON, whoever sends it",
			method: "POST", path: create, body: body("planted", goodSpec),
			headers: map[string]string{"Authorization": "Bearer " + token(editor)},
			want:    415, wantReason: httpapi.ReasonContentType},
		"FormTypeWithoutBody": {reason: "a form's Content-Type on a call without a body is still not JSON",
			method: "POST", path: rotateCreds,
			headers: map[string]string{"Authorization": "Bearer " + token(editor), "Content-Type": form},
			want:    415, wantReason: httpapi.ReasonContentType},
		"JSONLookalike": {reason: "application/jsonx is not JSON",
			method: "POST", path: create, body: body("planted", goodSpec),
			headers: map[string]string{"Authorization": "Bearer " + token(editor), "Content-Type": "application/jsonx"},
			want:    415, wantReason: httpapi.ReasonContentType},
		"BrowserSessionOutsideConsole": {reason: "a same-origin browser request to /v1 with the IAP session: the session is the console's",
			method: "GET", path: "/v1/namespaces/team-a",
			headers: map[string]string{iap.Header: session(), "Sec-Fetch-Site": "none", "Sec-Fetch-Mode": "navigate"},
			want:    403, wantReason: httpapi.ReasonBrowserOutsideConsole},
		"CLIThroughIAP": {reason: "the CLI through IAP: an assertion and no browser's marks",
			method: "POST", path: rotateCreds,
			headers: map[string]string{iap.Header: session()},
			want:    200, changed: true},
		"CLIWithJSON": {reason: "the CLI's create, JSON said",
			method: "POST", path: create, body: body("made", goodSpec),
			headers: map[string]string{"Authorization": "Bearer " + token(editor), "Content-Type": "application/json; charset=utf-8"},
			want:    201, changed: true},
		"CLIRotateEmptyChunked": {reason: "an empty body of unknown length is no body",
			method: "POST", path: rotateCreds, body: chunkedEmpty,
			headers: map[string]string{"Authorization": "Bearer " + token(editor)},
			want:    200, changed: true},
		"ChunkedWithoutContentType": {reason: "a body of unknown length says what it is too",
			method: "POST", path: create, body: chunked + body("planted", goodSpec),
			headers: map[string]string{"Authorization": "Bearer " + token(editor)},
			want:    415, wantReason: httpapi.ReasonContentType},
		"CLIRotateNoBody": {reason: "a custom method without a body needs no Content-Type",
			method: "POST", path: rotateCreds,
			headers: map[string]string{"Authorization": "Bearer " + token(editor)},
			want:    200, changed: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := memEnv(t, func(o *httpapi.Options) { o.IAP = verifier })
			p := e.seed()
			e.makeReady(p.Key())
			before := e.siteState()
			resp, b := e.raw(tc.method, tc.path, tc.headers, tc.body)
			if resp.StatusCode != tc.want {
				t.Fatalf("%s\nstatus %d, want %d\n%s", tc.reason, resp.StatusCode, tc.want, b)
			}
			if tc.wantReason != "" {
				if got := decodeErr(t, b).reason(); got != tc.wantReason {
					t.Errorf("%s\nreason %s, want %s\n%s", tc.reason, got, tc.wantReason, b)
				}
			}
			if after := e.siteState(); (after != before) != tc.changed {
				t.Errorf("%s\nthe store %v -> %v; want changed: %v", tc.reason, before, after, tc.changed)
			}
		})
	}
}

// siteState is what a refused request must not change: the proxy's
// password and the names of the namespace's proxies.
type siteState struct {
	password string
	proxies  string
}

func (e *env) siteState() siteState {
	e.t.Helper()
	ctx := context.Background()
	var s siteState
	if p, err := e.store.Get(ctx, proxy.Key{Namespace: "team-a", Name: "p"}); err == nil {
		s.password = p.Reconciler.Credentials.Password + p.Reconciler.Credentials.Sealed
	}
	list, _, err := e.store.List(ctx, "team-a", 100, "")
	if err != nil {
		e.t.Fatal(err)
	}
	var names []string
	for _, p := range list {
		names = append(names, p.Name)
	}
	s.proxies = strings.Join(names, ",")
	return s
}
