package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

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

// writeAccounts writes each accounts cloud's second account, as an admin
// does (docs/operations/accounts.md), through the Firestore emulator's
// REST API: before any proxy is placed, so that no reconciler's cached
// list of accounts misses it.
func (s *liveStack) writeAccounts(t *testing.T) {
	t.Helper()
	str := func(v string) map[string]any { return map[string]any{"stringValue": v} }
	for _, c := range s.accountClouds {
		settings := map[string]any{}
		for k, v := range c.second.Settings {
			settings[k] = str(v)
		}
		doc := map[string]any{"fields": map[string]any{
			"provider":   str(c.typ),
			"state":      str("active"),
			"settings":   map[string]any{"mapValue": map[string]any{"fields": settings}},
			"createTime": map[string]any{"timestampValue": time.Now().UTC().Format(time.RFC3339Nano)},
		}}
		body, _ := json.Marshal(doc)
		u := fmt.Sprintf("http://%s/v1/projects/%s/databases/(default)/documents/accounts?documentId=%s", s.firestore, s.project, c.second.ID)
		req, _ := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer owner")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("writing accounts/%s: %d %s", c.second.ID, resp.StatusCode, b.String())
		}
	}
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
