package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
)

// crossSite is issue 42's browser test: a page of another origin (a
// server of its own, on another port) opened in the local admin's tab
// tries what a page can make a signed-in browser send without asking —
// a form POST to the API's :rotateCredentials, a no-cors fetch that
// creates a proxy, and form POSTs to the console's own actions. Each
// reaches the stack and is refused (403, as Chromium saw the answer), and
// the store is as it was: the same credentials and generation, no new
// proxy, the same members.
func (s *liveStack) crossSite(t *testing.T, tab context.Context) {
	const ns, name = "console-team", "web"
	api := fmt.Sprintf("%s/v1/namespaces/%s/proxies", s.url, ns)
	attacks := []struct{ what, method, path string }{
		{"a form POST to :rotateCredentials", "POST", fmt.Sprintf("/v1/namespaces/%s/proxies/%s:rotateCredentials", ns, name)},
		{"a no-cors fetch that creates a proxy", "POST", fmt.Sprintf("/v1/namespaces/%s/proxies", ns)},
		{"a form POST to the console's add-member", "POST", fmt.Sprintf("/console/namespaces/%s/add-member", ns)},
		{"a form POST to the console's rotate-credentials", "POST", fmt.Sprintf("/console/namespaces/%s/proxies/%s/rotate-credentials", ns, name)},
	}
	page := fmt.Sprintf(`<!doctype html><html lang="en"><title>Another site</title>
<form id="a" method="POST" action="%[1]s/%[2]s:rotateCredentials"><input name="x" value="1"></form>
<form id="c" method="POST" action="%[3]s/console/namespaces/%[4]s/add-member"><input name="member" value="mallory@example.com"><input name="role" value="owner"></form>
<form id="d" method="POST" action="%[3]s/console/namespaces/%[4]s/proxies/%[2]s/rotate-credentials"></form>
</html>`, api, name, s.url, ns)
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, page)
	}))
	defer elsewhere.Close()
	if strings.HasPrefix(s.url, elsewhere.URL) {
		t.Fatalf("the other site %s is the stack's origin %s", elsewhere.URL, s.url)
	}

	before := s.crossSiteState(t, ns, name)
	if before["generation"] == "" || before["credentials"] == "" || !strings.Contains(before["proxies"], name) {
		t.Fatalf("the store before the other site's page has no proxy %s to hold: %v", name, before)
	}
	// The stack's answer to each request the tab sends, by path, as
	// Chromium saw it (DevTools' network events): a redirect's too.
	var mu sync.Mutex
	answers := map[string]string{}
	record := func(r *network.Response) {
		if r == nil || !strings.HasPrefix(r.URL, s.url) {
			return
		}
		u, err := url.Parse(r.URL)
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		answers[u.Path] = fmt.Sprint(r.Status)
	}
	if err := chromedp.Listen(tab, func(ev any) {
		switch e := ev.(type) {
		case *network.EventResponseReceived:
			record(e.Response)
		case *network.EventRequestWillBeSent:
			record(e.RedirectResponse)
		}
	}); err != nil {
		t.Fatal(err)
	}
	create := `{"name":"planted","spec":{"placement":{"region":"us-central1","zone":"us-central1-a"},"allowedSourceRanges":["127.0.0.1/32"]}}`
	scripts := map[string]string{
		attacks[0].path: `document.getElementById("a").submit(), true`,
		attacks[1].path: fmt.Sprintf(`fetch(%q, {method: "POST", mode: "no-cors", credentials: "include", body: new TextEncoder().encode(%q)}).then(() => true, () => true)`, api, create),
		attacks[2].path: `document.getElementById("c").submit(), true`,
		attacks[3].path: `document.getElementById("d").submit(), true`,
	}
	want, got := map[string]string{}, map[string]string{}
	for _, a := range attacks {
		// Each from a fresh load of the other site's page: a form's post
		// leaves it.
		drive(t, tab, "the other site's page", chromedp.Navigate(elsewhere.URL+"/"), waitText("title", "Another site"),
			step(chromedp.Evaluate[bool](scripts[a.path], chromedp.EvalAwaitPromise)))
		answer := "no answer seen"
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			mu.Lock()
			v, ok := answers[a.path]
			mu.Unlock()
			if ok {
				answer = v
				break
			}
		}
		want[a.what], got[a.what] = "403", answer
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the stack's answers to the other site's requests (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, s.crossSiteState(t, ns, name)); diff != "" {
		t.Errorf("the store after the other site's requests (-before +after):\n%s", diff)
	}
}

// crossSiteState is what the other site tried to change, read from the
// Firestore emulator's documents: the proxy's generation and sealed
// password, the namespace's proxies and its members.
func (s *liveStack) crossSiteState(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	var doc struct {
		Fields map[string]json.RawMessage `json:"fields"`
	}
	if err := json.Unmarshal([]byte(s.rawDocuments(t, "namespaces/"+ns+"/proxies/"+name)), &doc); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Documents []struct{ Name string } `json:"documents"`
	}
	if err := json.Unmarshal([]byte(s.rawDocuments(t, "namespaces/"+ns+"/proxies")), &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range list.Documents {
		names = append(names, d.Name[strings.LastIndex(d.Name, "/")+1:])
	}
	var nsDoc struct {
		Fields map[string]json.RawMessage `json:"fields"`
	}
	if err := json.Unmarshal([]byte(s.rawDocuments(t, "namespaces/"+ns)), &nsDoc); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"generation":  string(doc.Fields["generation"]),
		"credentials": credentialsOf(doc.Fields["reconciler"]),
		"proxies":     strings.Join(names, ","),
		"members":     string(nsDoc.Fields["members"]),
	}
}

// credentialsOf is the credentials map of the reconciler's bookkeeping,
// as the emulator's REST JSON holds it.
func credentialsOf(raw json.RawMessage) string {
	var r struct {
		MapValue struct {
			Fields map[string]json.RawMessage `json:"fields"`
		} `json:"mapValue"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return "unreadable"
	}
	return string(r.MapValue.Fields["credentials"])
}
