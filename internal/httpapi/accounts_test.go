package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/egress-proxies/egress/internal/account"
	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/provider/gcp"
)

// TestAccounts: platform admins make, read, list, replace and delete the
// cloud accounts; an account that breaks a rule is a 400 naming each
// field and its rule, and nothing is written; anyone else gets 403.
func TestAccounts(t *testing.T) {
	e := memEnv(t, func(o *httpapi.Options) {
		o.AccountVars = map[string][]string{gcp.Type: gcp.Plugin.PerAccount()}
	})
	type step struct {
		reason, who, method, path, body string
		code                            int
		// want is the account the answer holds, or the violations'
		// fields of a 400.
		want       *account.Account
		wantFields []string
	}
	second := &account.Account{ID: "second", Provider: "gcp", Settings: map[string]string{"GCP_PROJECT": "egress-2"}, Regions: []string{"europe-west1"},
		Limits: account.Limits{InstancesPerRegion: 5}, State: account.Active}
	drained := &account.Account{ID: "second", Provider: "gcp", Settings: map[string]string{"GCP_PROJECT": "egress-2"}, State: account.Draining}
	steps := []step{
		{reason: "a new account; the state left out is active", who: admin, method: "PUT", path: "/v1/accounts/second",
			body: `{"provider":"gcp","settings":{"GCP_PROJECT":"egress-2"},"regions":["europe-west1"],"limits":{"instancesPerRegion":5}}`, code: 201, want: second},
		{reason: "read", who: admin, method: "GET", path: "/v1/accounts/second", code: 200, want: second},
		{reason: "replaced, drained", who: admin, method: "PUT", path: "/v1/accounts/second",
			body: `{"provider":"gcp","settings":{"GCP_PROJECT":"egress-2"},"state":"draining"}`, code: 200, want: drained},
		{reason: "a deployment's variable, a type not enabled, a bad state: each named", who: admin, method: "PUT", path: "/v1/accounts/third",
			body: `{"provider":"gcp","settings":{"GCP_NETWORK":"other"},"state":"paused","limits":{"instancesPerRegion":-1}}`, code: 400,
			wantFields: []string{"settings.GCP_NETWORK", "limits.instancesPerRegion", "state"}},
		{reason: "a provider not enabled", who: admin, method: "PUT", path: "/v1/accounts/third", body: `{"provider":"azure"}`, code: 400, wantFields: []string{"provider"}},
		{reason: "the refused account was not written", who: admin, method: "GET", path: "/v1/accounts/third", code: 404},
		{reason: "not an admin", who: owner, method: "PUT", path: "/v1/accounts/fourth", body: `{"provider":"gcp"}`, code: 403},
		{reason: "not an admin reads none", who: owner, method: "GET", path: "/v1/accounts/second", code: 403},
		{reason: "deleted", who: admin, method: "DELETE", path: "/v1/accounts/second", code: 204},
		{reason: "deleted again: idempotent", who: admin, method: "DELETE", path: "/v1/accounts/second", code: 204},
		{reason: "gone", who: admin, method: "GET", path: "/v1/accounts/second", code: 404},
	}
	for i, st := range steps {
		resp, b := e.do(st.who, st.method, st.path, st.body)
		if resp.StatusCode != st.code {
			t.Fatalf("step %d (%s): %d, want %d\n%s", i, st.reason, resp.StatusCode, st.code, b)
		}
		switch {
		case st.want != nil:
			var got account.Account
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("step %d (%s): %v\n%s", i, st.reason, err, b)
			}
			if diff := cmp.Diff(st.want, &got, cmpopts.IgnoreFields(account.Account{}, "CreateTime", "UpdateTime"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("step %d (%s): the account (-want +got):\n%s", i, st.reason, diff)
			}
			if st.code == http.StatusCreated && resp.Header.Get("Location") != st.path {
				t.Errorf("step %d (%s): Location %q, want %s", i, st.reason, resp.Header.Get("Location"), st.path)
			}
		case st.wantFields != nil:
			got := decodeErr(t, b)
			if diff := cmp.Diff(st.wantFields, got.fields()); diff != "" || got.reason() != httpapi.ReasonAccountInvalid {
				t.Errorf("step %d (%s): reason %s, fields (-want +got):\n%s", i, st.reason, got.reason(), diff)
			}
		}
	}
	// The list: every account, by id, to admins alone.
	for _, id := range []string{"b", "a"} {
		if resp, b := e.do(admin, "PUT", "/v1/accounts/"+id, `{"provider":"mock"}`); resp.StatusCode != 201 {
			t.Fatalf("PUT %s: %d %s", id, resp.StatusCode, b)
		}
	}
	resp, b := e.do(admin, "GET", "/v1/accounts", "")
	var page struct{ Accounts []account.Account }
	if err := json.Unmarshal(b, &page); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /v1/accounts: %d %v\n%s", resp.StatusCode, err, b)
	}
	var ids []string
	for _, a := range page.Accounts {
		ids = append(ids, a.ID)
	}
	if diff := cmp.Diff([]string{"a", "b"}, ids); diff != "" {
		t.Errorf("the list's ids (-want +got):\n%s", diff)
	}
	if resp, _ := e.do(viewer, "GET", "/v1/accounts", ""); resp.StatusCode != 403 {
		t.Errorf("a viewer's list of the accounts: %d, want 403", resp.StatusCode)
	}
}
