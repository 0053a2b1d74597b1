package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/client"
	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/proxy"
)

// TestRotationFloor: a proxy rotates only once Ready, and not again
// within ROTATE_MIN_INTERVAL of its last rotation: 429 with a RetryInfo
// saying when.
func TestRotationFloor(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	e := firestoreEnvAt(t, clk)
	p := e.seed()
	rotate := "/v1/namespaces/team-a/proxies/p:rotate"
	ready := func(e *env) { e.makeReady(p.Key()) }
	e.run(clk, []step{
		{reason: "a proxy still booting is not rotated", who: editor, method: "POST", path: rotate, code: 409, status: "FAILED_PRECONDITION", errReason: httpapi.ReasonProxyNotReady, field: "Ready"},
		{reason: "a Ready proxy is", before: ready, who: editor, method: "POST", path: rotate, code: 202},
		{reason: "a second rotation a minute later is within the floor (10m): 429 saying when", advance: time.Minute, who: editor, method: "POST", path: rotate,
			code: 429, status: "RESOURCE_EXHAUSTED", errReason: httpapi.ReasonRotatedRecently, retryDelay: "540s", wantRetryAfterSecs: "540", field: "ROTATE_MIN_INTERVAL"},
		{reason: "an admin too", advance: 8*time.Minute + 30*time.Second, who: admin, method: "POST", path: rotate,
			code: 429, status: "RESOURCE_EXHAUSTED", errReason: httpapi.ReasonRotatedRecently, retryDelay: "30s", wantRetryAfterSecs: "30"},
		{reason: "once the floor has passed, it rotates again", advance: 30 * time.Second, who: editor, method: "POST", path: rotate, code: 202},
	})
	// The Go client (and so the CLI) reads the RetryInfo.
	c, err := client.New(e.url, &http.Client{Transport: bearer{who: editor, next: e.client.Transport}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.RotateProxy(context.Background(), "team-a", "p")
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Code != 429 || apiErr.RetryDelay != 10*time.Minute {
		t.Errorf("the client's rotation at once: %v; want a 429 *client.Error with a RetryDelay of 10m", err)
	}
}

// bearer sends requests as who.
type bearer struct {
	who  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+token(b.who))
	return b.next.RoundTrip(r)
}

// TestNamespaceCreatesPerHour: a namespace's requests make at most
// NAMESPACE_CREATES_PER_HOUR VMs in any hour, creates and rotations
// together; past it, 429 with a RetryInfo saying when the oldest leaves
// the hour. A repeated create makes no VM and is not refused.
func TestNamespaceCreatesPerHour(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	e := firestoreEnvAt(t, clk, func(o *httpapi.Options) { o.CreatesPerHour = 3 })
	p := e.seed()
	proxies := "/v1/namespaces/team-a/proxies"
	e.run(clk, []step{
		{reason: "the first VM of the hour", who: editor, method: "POST", path: proxies, body: body("a1", goodSpec), code: 201},
		{reason: "the second, ten minutes on", advance: 10 * time.Minute, who: editor, method: "POST", path: proxies, body: body("a2", goodSpec), code: 201},
		{reason: "a rotation is a VM too: the third", advance: 10 * time.Minute, before: func(e *env) { e.makeReady(p.Key()) }, who: editor, method: "POST", path: proxies + "/p:rotate", code: 202},
		{reason: "the same create again makes no VM", who: editor, method: "POST", path: proxies, body: body("a1", goodSpec), code: 200},
		{reason: "a fourth create within the hour: 429 until the first leaves it", who: editor, method: "POST", path: proxies, body: body("a3", goodSpec),
			code: 429, status: "RESOURCE_EXHAUSTED", errReason: httpapi.ReasonCreatesPerHour, retryDelay: "2400s", wantRetryAfterSecs: "2400", field: "NAMESPACE_CREATES_PER_HOUR"},
		{reason: "a rotation likewise, by an admin too", advance: 20 * time.Minute, who: admin, method: "POST", path: proxies + "/a1:rotate", before: func(e *env) { e.makeReady(proxy.Key{Namespace: "team-a", Name: "a1"}) },
			code: 429, status: "RESOURCE_EXHAUSTED", errReason: httpapi.ReasonCreatesPerHour, retryDelay: "1200s", wantRetryAfterSecs: "1200"},
		{reason: "an hour after the first, one more fits", advance: 20 * time.Minute, who: editor, method: "POST", path: proxies, body: body("a3", goodSpec), code: 201},
		{reason: "and no other yet", who: editor, method: "POST", path: proxies, body: body("a4", goodSpec),
			code: 429, status: "RESOURCE_EXHAUSTED", errReason: httpapi.ReasonCreatesPerHour, retryDelay: "600s", wantRetryAfterSecs: "600"},
		{reason: "another namespace has its own hour", who: owner, method: "POST", path: "/v1/namespaces/empty/proxies", body: body("b1", goodSpec), code: 201},
	})
}
