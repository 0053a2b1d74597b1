package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store/rules"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// The tests of this file hold the API to what keeps one team from
// another's secrets, from the project's money and quotas, and from taking
// a namespace from its owners, through the real handler over the
// Firestore emulator.

// step is one request of a sequence and what it must answer: the status
// code, the ErrorInfo's reason and the RetryInfo's delay of a refusal. A
// refusal must change nothing.
type step struct {
	reason             string
	advance            time.Duration
	who, method, path  string
	body               string
	code               int
	status, errReason  string
	field, retryDelay  string
	before             func(e *env)
	wantRetryAfterSecs string
}

func (e *env) run(clk *clock.Fake, steps []step) {
	e.t.Helper()
	for i, s := range steps {
		clk.Advance(s.advance)
		if s.before != nil {
			s.before(e)
		}
		before := snapshot(e.t, e)
		resp, b := e.do(s.who, s.method, s.path, s.body)
		if resp.StatusCode != s.code {
			e.t.Fatalf("step %d: %s\n%s %s as %s: %d, want %d\n%s", i, s.reason, s.method, s.path, s.who, resp.StatusCode, s.code, b)
		}
		if s.code < 400 {
			continue
		}
		got := decodeErr(e.t, b)
		if got.Error.Status != s.status || got.reason() != s.errReason || got.retryDelay() != s.retryDelay {
			e.t.Errorf("step %d: %s\nstatus %s, reason %s, retryDelay %q; want %s, %s, %q\n%s", i, s.reason, got.Error.Status, got.reason(), got.retryDelay(), s.status, s.errReason, s.retryDelay, b)
		}
		if s.field != "" && !strings.Contains(got.Error.Message, s.field) {
			e.t.Errorf("step %d: %s\nthe message does not name %s: %s", i, s.reason, s.field, got.Error.Message)
		}
		if s.wantRetryAfterSecs != resp.Header.Get("Retry-After") {
			e.t.Errorf("step %d: %s\nRetry-After %q, want %q", i, s.reason, resp.Header.Get("Retry-After"), s.wantRetryAfterSecs)
		}
		if diff := cmp.Diff(before, snapshot(e.t, e)); diff != "" {
			e.t.Errorf("step %d: %s\nthe refused request changed the store (-before +after):\n%s", i, s.reason, diff)
		}
	}
}

// makeReady sets a proxy Ready, as its reconciler would once its VM
// serves.
func (e *env) makeReady(key proxy.Key) {
	e.t.Helper()
	ctx := context.Background()
	p, err := e.store.Get(ctx, key)
	if err != nil {
		e.t.Fatal(err)
	}
	if p.Status.Phase == proxy.PhaseReady {
		return
	}
	p.Status.Phase = proxy.PhaseReady
	if _, err := e.store.UpdateStatus(ctx, p); err != nil {
		e.t.Fatal(err)
	}
}

// TestSecretsByExactNamespace: a namespace names only its own secrets,
// PREFIX + namespace + "_" + NAME. Namespace team may not name team-prod's,
// in the form of today or in the old one (egress-team-prod-db, which
// started with egress-team-).
func TestSecretsByExactNamespace(t *testing.T) {
	e := firestoreEnv(t)
	ctx := context.Background()
	for _, ns := range []string{"team", "team-prod"} {
		if _, err := e.store.CreateNamespace(ctx, rules.NewNamespace(ns, map[string]tenancy.Role{editor: tenancy.Editor}, 0, 20, time.Now().UTC())); err != nil {
			t.Fatal(err)
		}
	}
	spec := func(secret string) string {
		return `{"placement":{"region":"us-central1"},"allowedSourceRanges":["203.0.113.0/24"],"cloudInitSecret":"projects/demo-test/secrets/` + secret + `/versions/latest"}`
	}
	cases := map[string]struct {
		reason, secret string
		code           int
	}{
		"TeamProdsOldForm": {reason: "egress-team-prod-db starts with egress-team-: the hole", secret: "egress-team-prod-db", code: 400},
		"TeamProdsOwnForm": {reason: "team-prod's secret in the form that names it exactly", secret: "egress-team-prod_db", code: 400},
		"NoSeparator":      {reason: "a secret with no namespace part", secret: "egress-teamdb", code: 400},
		"TeamsOwn":         {reason: "team's own secret", secret: "egress-team_db", code: 201},
		"TeamsOwnWithDash": {reason: "a name after the separator may hold anything a secret id may", secret: "egress-team_db-prod_2", code: 201},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := snapshot(t, e)
			resp, b := e.do(editor, "POST", "/v1/namespaces/team/proxies", body(strings.ToLower(name), spec(tc.secret)))
			if resp.StatusCode != tc.code {
				t.Fatalf("%s\nstatus %d, want %d\n%s", tc.reason, resp.StatusCode, tc.code, b)
			}
			if tc.code == 201 {
				return
			}
			got := decodeErr(t, b)
			if diff := cmp.Diff([]string{"spec.cloudInitSecret"}, got.fields()); diff != "" || got.reason() != proxy.ReasonSecretOutsidePrefix {
				t.Errorf("%s\nreason %s; fields (-want +got):\n%s\n%s", tc.reason, got.reason(), diff, b)
			}
			if !strings.Contains(got.Error.Message, "egress-team_") {
				t.Errorf("%s\nthe message does not say the form of team's secrets: %s", tc.reason, got.Error.Message)
			}
			if diff := cmp.Diff(before, snapshot(t, e)); diff != "" {
				t.Errorf("%s\nthe refused request changed the store (-before +after):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestOneIdentityPerRequest: a request that repeats an identity header
// is 400 naming the header, whichever token comes first.
func TestOneIdentityPerRequest(t *testing.T) {
	e := firestoreEnv(t)
	e.seed()
	cases := map[string]struct {
		headers [][2]string
		want    int
		header  string
	}{
		"TwoAuthorization":           {headers: [][2]string{{"Authorization", "Bearer " + token(viewer)}, {"Authorization", "Bearer " + token(admin)}}, want: 400, header: "Authorization"},
		"TwoServerlessAuthorization": {headers: [][2]string{{"X-Serverless-Authorization", "Bearer " + token(viewer)}, {"X-Serverless-Authorization", "Bearer " + token(admin)}}, want: 400, header: "X-Serverless-Authorization"},
		"AuthorizationTwiceEqual":    {headers: [][2]string{{"Authorization", "Bearer " + token(viewer)}, {"Authorization", "Bearer " + token(viewer)}}, want: 400, header: "Authorization"},
		"OneOfEach":                  {headers: [][2]string{{"X-Serverless-Authorization", "Bearer " + token(viewer)}, {"Authorization", "Bearer " + token(admin)}}, want: 200},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, path := range []string{"/v1/namespaces/team-a", "/v1/namespaces/team-a/proxies/p:rotate"} {
				method := "GET"
				if strings.HasSuffix(path, ":rotate") {
					method = "POST"
				}
				req, err := http.NewRequest(method, e.url+path, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, h := range tc.headers {
					req.Header.Add(h[0], h[1])
				}
				before := snapshot(t, e)
				resp, err := e.client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if method == "POST" {
					if diff := cmp.Diff(before, snapshot(t, e)); diff != "" && tc.want == 400 {
						t.Errorf("the refused request changed the store (-before +after):\n%s", diff)
					}
					continue
				}
				if resp.StatusCode != tc.want {
					t.Fatalf("%s %s: %d, want %d\n%s", method, path, resp.StatusCode, tc.want, b)
				}
				if tc.want != 400 {
					continue
				}
				got := decodeErr(t, b)
				if got.Error.Status != "INVALID_ARGUMENT" || got.reason() != httpapi.ReasonIdentityHeaderRepeated || !strings.Contains(got.Error.Message, tc.header) {
					t.Errorf("want INVALID_ARGUMENT %s naming %s:\n%s", httpapi.ReasonIdentityHeaderRepeated, tc.header, b)
				}
				if diff := cmp.Diff([]string{tc.header}, got.fields()); diff != "" {
					t.Errorf("field violations (-want +got):\n%s", diff)
				}
			}
		})
	}
}
