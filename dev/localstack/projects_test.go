package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/clouds/cloudsdev"
	"github.com/egress-proxies/egress/internal/provider/providerstack"
)

// Issue 48's several accounts of one cloud: each cloud that brings a part
// for it (internal/clouds/cloudsdev's Accounts: Compute Engine's two
// projects) is enabled on its default account's fake, and its second
// account's document is written before any proxy is placed; its flow runs
// as TestEndToEnd/NAME.

// accountsCloud is one cloud's part, started: its second account and its
// flow.
type accountsCloud struct {
	typ, name string
	second    providerstack.Account
	flow      providerstack.AccountsFlow
}

// startAccounts starts each accounts cloud's fakes, and returns them with
// the stack's variables for them.
func startAccounts(t *testing.T) ([]accountsCloud, []string) {
	t.Helper()
	var out []accountsCloud
	var env []string
	for _, a := range cloudsdev.Accounts() {
		e, second, flow := a.Start(t)
		out = append(out, accountsCloud{typ: a.Type(), name: a.Name(), second: second, flow: flow})
		env = append(env, e...)
	}
	return out, env
}

// enable adds the accounts clouds' types to providers, once each.
func enable(providers []string, clouds []accountsCloud) []string {
	for _, c := range clouds {
		if !slices.Contains(providers, c.typ) {
			providers = append(providers, c.typ)
		}
	}
	return providers
}

// writeAccounts writes each accounts cloud's second account as a
// platform admin does (docs/operations/accounts.md), through the API:
// before any proxy is placed, so that no reconciler's cached list of
// accounts misses it. It reads it back one by one and in the list.
func (s *liveStack) writeAccounts(t *testing.T) {
	t.Helper()
	for _, c := range s.accountClouds {
		body, err := json.Marshal(map[string]any{"provider": c.typ, "settings": c.second.Settings})
		if err != nil {
			t.Fatal(err)
		}
		path := "/v1/accounts/" + c.second.ID
		if code, b := readAll(t, s.doAs(t, "", http.MethodPut, path, body)); code != http.StatusCreated {
			t.Fatalf("PUT %s: %d %s, want 201", path, code, b)
		}
		var got struct {
			Provider string            `json:"provider"`
			Settings map[string]string `json:"settings"`
			State    string            `json:"state"`
		}
		code, b := readAll(t, s.doAs(t, "", http.MethodGet, path, nil))
		if code != http.StatusOK || json.Unmarshal(b, &got) != nil {
			t.Fatalf("GET %s: %d %s, want 200 and the account", path, code, b)
		}
		want := got
		want.Provider, want.Settings, want.State = c.typ, c.second.Settings, "active"
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("GET %s (-want +got):\n%s", path, diff)
		}
	}
	var list struct {
		Accounts []struct {
			ID string `json:"id"`
		} `json:"accounts"`
	}
	code, b := readAll(t, s.doAs(t, "", http.MethodGet, "/v1/accounts", nil))
	if code != http.StatusOK || json.Unmarshal(b, &list) != nil {
		t.Fatalf("GET /v1/accounts: %d %s, want 200 and the list", code, b)
	}
	var ids, want []string
	for _, a := range list.Accounts {
		ids = append(ids, a.ID)
	}
	for _, c := range s.accountClouds {
		want = append(want, c.second.ID)
	}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("GET /v1/accounts: the ids (-want +got):\n%s", diff)
	}
}

// removeAccounts deletes each accounts cloud's second account once its
// flow is done and no proxy names it, as an admin retires one.
func (s *liveStack) removeAccounts(t *testing.T) {
	t.Helper()
	for _, c := range s.accountClouds {
		path := "/v1/accounts/" + c.second.ID
		if code, b := readAll(t, s.doAs(t, "", http.MethodDelete, path, nil)); code != http.StatusNoContent {
			t.Errorf("DELETE %s: %d %s, want 204", path, code, b)
		}
		if code, b := readAll(t, s.doAs(t, "", http.MethodGet, path, nil)); code != http.StatusNotFound {
			t.Errorf("GET %s after its DELETE: %d %s, want 404", path, code, b)
		}
	}
}

// readAll is a response's status and body, the body closed.
func readAll(t *testing.T, resp *http.Response) (int, []byte) {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// accountsStack is the stack as an accounts flow uses it.
type accountsStack struct{ s *liveStack }

var _ providerstack.AccountsStack = accountsStack{}

func (a accountsStack) Namespace() string { return "demo" }

func (a accountsStack) CreateVM(t *testing.T, name, typ, region, zone string) providerstack.Placed {
	t.Helper()
	body := fmt.Sprintf(`{"name":%q,"spec":{"provider":%q,"placement":{"region":%q,"zone":%q},"allowedSourceRanges":["203.0.113.0/24"]}}`, name, typ, region, zone)
	resp := a.s.do(t, http.MethodPost, "/v1/namespaces/demo/proxies", []byte(body))
	var created resource
	json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create demo/%s on %s: %d", name, typ, resp.StatusCode)
	}
	var got struct {
		Status struct{ Phase, ProviderID, Account string }
	}
	waitFor(t, 60*time.Second, "demo/"+name+" has a VM", func() bool {
		resp := a.s.do(t, http.MethodGet, "/v1/namespaces/demo/proxies/"+name, nil)
		defer resp.Body.Close()
		json.NewDecoder(resp.Body).Decode(&got)
		return got.Status.ProviderID != ""
	})
	return providerstack.Placed{Name: name, UID: created.UID, Phase: got.Status.Phase, ProviderID: got.Status.ProviderID, Account: got.Status.Account}
}

func (a accountsStack) Delete(t *testing.T, name string) {
	t.Helper()
	resp := a.s.do(t, http.MethodDelete, "/v1/namespaces/demo/proxies/"+name, nil)
	resp.Body.Close()
	waitFor(t, 60*time.Second, "demo/"+name+" gone", func() bool {
		code, _ := a.s.get(t, "demo", name)
		return code == http.StatusNotFound
	})
}
