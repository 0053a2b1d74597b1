package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
)

// withVM records the proxy Ready on a VM, as the reconciler would.
func (e *env) withVM(key proxy.Key) {
	e.t.Helper()
	ctx := context.Background()
	p, err := e.store.Get(ctx, key)
	if err != nil {
		e.t.Fatal(err)
	}
	p.Status.Phase, p.Status.ProviderID = proxy.PhaseReady, "mock://vm-"+key.Name
	if _, err := e.store.UpdateStatus(ctx, p); err != nil {
		e.t.Fatal(err)
	}
}

// TestLiveChangesThatReplaceAreBounded: on a provider whose VMs cannot
// take a live change in place, every PATCH and :rotateCredentials makes a
// new VM. Each counts against NAMESPACE_CREATES_PER_HOUR with the
// namespace's creates and rotations, and is held to ROTATE_MIN_INTERVAL
// with its proxy's rotations: 429 with a RetryInfo saying when, past
// either. A change before the proxy has a VM makes none, and counts
// nothing.
func TestLiveChangesThatReplaceAreBounded(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	e := firestoreEnvAt(t, clk, func(o *httpapi.Options) {
		o.CreatesPerHour = 3
		// The mock as a provider that cannot reconfigure a VM.
		reg := provider.NewRegistry()
		_ = reg.Register(mock.Type, func(context.Context) (provider.Provider, error) { return nil, fmt.Errorf("unused") }, provider.WithValidator(mock.Validate))
		o.Providers = provider.NewSet(reg)
	})
	p := e.seed()
	path := "/v1/namespaces/team-a/proxies/p"
	patch := func(port int) string { return fmt.Sprintf(`{"spec":{"connectPorts":[%d]}}`, port) }
	e.run(clk, []step{
		{reason: "before the proxy has a VM, a PATCH makes none", who: editor, method: "PATCH", path: path, body: patch(8080), code: 200},
		{reason: "on its VM, a PATCH makes a new one: the first VM of the hour", before: func(e *env) { e.withVM(p.Key()) }, advance: time.Minute,
			who: editor, method: "PATCH", path: path, body: patch(8443), code: 200},
		{reason: "new credentials a minute on are another VM, within ROTATE_MIN_INTERVAL: 429 saying when", advance: time.Minute,
			who: editor, method: "POST", path: path + ":rotateCredentials",
			code: 429, status: "RESOURCE_EXHAUSTED", errReason: httpapi.ReasonRotatedRecently, retryDelay: "540s", wantRetryAfterSecs: "540", field: "ROTATE_MIN_INTERVAL"},
		{reason: "so is a rotation: the interval is between the VMs a user asks for", advance: time.Minute,
			who: editor, method: "POST", path: path + ":rotate",
			code: 429, status: "RESOURCE_EXHAUSTED", errReason: httpapi.ReasonRotatedRecently, retryDelay: "480s", wantRetryAfterSecs: "480"},
		{reason: "after it, new credentials: the second VM", advance: 8 * time.Minute,
			who: editor, method: "POST", path: path + ":rotateCredentials", code: 200},
		{reason: "a create: the third", who: editor, method: "POST", path: "/v1/namespaces/team-a/proxies", body: body("q", goodSpec), code: 201},
		{reason: "past the interval, a PATCH is a fourth VM within the hour: 429 until the first leaves it", advance: 10 * time.Minute,
			who: editor, method: "PATCH", path: path, body: patch(443),
			code: 429, status: "RESOURCE_EXHAUSTED", errReason: httpapi.ReasonCreatesPerHour, retryDelay: "2400s", wantRetryAfterSecs: "2400", field: "NAMESPACE_CREATES_PER_HOUR"},
		{reason: "an hour after the first, it fits", advance: 40 * time.Minute, who: editor, method: "PATCH", path: path, body: patch(443), code: 200},
	})
	got, err := e.store.Get(context.Background(), p.Key())
	if err != nil {
		t.Fatal(err)
	}
	if got.ReplaceRequestTime == nil || !got.ReplaceRequestTime.Equal(clk.Now()) || got.Generation != 5 {
		t.Errorf("after the changes: replaceRequestTime %v, generation %d; want %s (the last change that made a VM), 5", got.ReplaceRequestTime, got.Generation, clk.Now())
	}
}

// TestMaxAgeFloor: maxAge is floored at ROTATE_MIN_INTERVAL as configured,
// not at a fixed ten minutes: a rotation by age is one the spec asks for.
func TestMaxAgeFloor(t *testing.T) {
	e := memEnv(t, func(o *httpapi.Options) { o.RotateMinInterval = 30 * time.Minute })
	e.seed()
	cases := map[string]struct {
		reason, maxAge string
		code           int
	}{
		"UnderTheInterval": {reason: "20m is under a ROTATE_MIN_INTERVAL of 30m", maxAge: "20m", code: 400},
		"TheInterval":      {reason: "30m is the interval itself", maxAge: "30m", code: 201},
		"NotPositive":      {reason: "a duration that is not positive", maxAge: "-1h", code: 400},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := strings.TrimSuffix(goodSpec, "}") + fmt.Sprintf(`,"maxAge":%q}`, tc.maxAge)
			resp, b := e.do(editor, "POST", "/v1/namespaces/team-a/proxies", body(strings.ToLower(name), spec))
			if resp.StatusCode != tc.code {
				t.Fatalf("%s: %d, want %d\n%s", tc.reason, resp.StatusCode, tc.code, b)
			}
			if tc.code == 400 && !strings.Contains(string(b), `"field": "spec.maxAge"`) {
				t.Errorf("%s: the refusal does not name spec.maxAge:\n%s", tc.reason, b)
			}
		})
	}
}

// TestPoolClaimsBound: an admin sets a pool's bound of claims per
// namespace per hour with its PUT, and reads it back with the claims of
// the last hour by namespace.
func TestPoolClaimsBound(t *testing.T) {
	e := memEnv(t)
	put := func(body string) (int, []byte) {
		resp, b := e.do(admin, "PUT", "/v1/pools/warm", body)
		return resp.StatusCode, b
	}
	spec := `"placement":{"region":"us-central1","zone":"us-central1-a"}`
	if code, b := put(`{` + spec + `,"size":2,"claimsPerNamespacePerHour":-1}`); code != 400 || !strings.Contains(string(b), "claimsPerNamespacePerHour") {
		t.Errorf("a negative bound: %d, want 400 naming claimsPerNamespacePerHour\n%s", code, b)
	}
	code, b := put(`{` + spec + `,"size":2,"claimsPerNamespacePerHour":3}`)
	var p proxy.Pool
	if err := json.Unmarshal(b, &p); code != 201 || err != nil || p.Spec.ClaimsPerNamespacePerHour != 3 {
		t.Fatalf("a pool with a bound of 3: %d %s (%v)", code, b, err)
	}
	p.Status = proxy.PoolStatus{Warm: 1, ClaimsLastHour: 3, ClaimsLastHourByNamespace: map[string]int{"team-a": 2, "team-b": 1}}
	if _, err := e.store.(interface {
		UpdatePoolStatus(context.Context, *proxy.Pool) (time.Time, error)
	}).UpdatePoolStatus(context.Background(), &p); err != nil {
		t.Fatal(err)
	}
	resp, b := e.do(admin, "GET", "/v1/pools/warm", "")
	var got struct {
		ClaimsPerNamespacePerHour int `json:"claimsPerNamespacePerHour"`
		Status                    struct {
			ClaimsLastHourByNamespace map[string]int `json:"claimsLastHourByNamespace"`
		} `json:"status"`
	}
	if err := json.Unmarshal(b, &got); resp.StatusCode != 200 || err != nil || got.ClaimsPerNamespacePerHour != 3 || got.Status.ClaimsLastHourByNamespace["team-a"] != 2 {
		t.Errorf("GET of the pool: %d %s (%v); want the bound 3 and team-a's 2 claims", resp.StatusCode, b, err)
	}
	if code, b := put(`{` + spec + `,"size":2}`); code != 200 || !strings.Contains(string(b), `"generation": 2`) || strings.Contains(string(b), "claimsPerNamespacePerHour") {
		t.Errorf("a PUT without the bound lifts it: %d\n%s", code, b)
	}
}
