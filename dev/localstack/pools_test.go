package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// poolView is a pool as GET /v1/pools/{pool} shows it.
type poolView struct {
	Status struct {
		Warm, Booting, ClaimsLastHour int
		Message                       string
	}
	DeleteRequestTime *time.Time
}

// pooledProxy is what the warm pool's test reads of a proxy.
type pooledProxy struct {
	UID        string
	Generation int64
	Status     struct {
		Phase, Endpoint, ProxyURL, ProviderID string
		ObservedGeneration                    int64
	}
}

// warmPool is the warm pools' flow on the local stack: an admin makes a pool
// of 2 in a placement no other part of the test uses; a proxy the pool
// serves is Ready on one of its warm VMs, relabelled with the proxy's uid,
// and serves; the pool refills; a PATCH and new credentials are applied on
// the same VM; and deleting the proxy and the pool leaves no VM that was
// not there before. No proxy of another placement may be made meanwhile:
// the test counts every VM of the mock.
func (s *liveStack) warmPool(t *testing.T) {
	const pool, ns, name = "e2e-warm", "demo", "pooled"
	admin := &egressCLI{bin: buildCLI(t, s.front.URL, "").bin, api: s.front.URL}
	alice := &egressCLI{bin: admin.bin, api: s.front.URL, token: unsignedToken(s.as[ns])}
	// fresh lists the VMs of /debug/instances that were not there when
	// the test began (a VM of an earlier test may still be going).
	var before []string
	fresh := func() []string {
		instances, _ := s.debugView(t)
		out := []string{}
		for _, in := range instances {
			if !slices.Contains(before, in.ID) {
				out = append(out, in.ID)
			}
		}
		return out
	}
	if before = fresh(); len(before) > 0 {
		t.Logf("VMs of earlier steps still there, left out of the counts: %v", before)
	}
	// getPool reads the pool; a pool gone reads as nil.
	getPool := func() *poolView {
		t.Helper()
		resp := s.doAs(t, "", http.MethodGet, "/v1/pools/"+pool, nil)
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			return nil
		}
		var p poolView
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /v1/pools/%s: %d %v", pool, resp.StatusCode, err)
		}
		return &p
	}

	admin.must(t, "pools", "put", pool, "--provider", "mock", "--region", "europe-west1", "--zone", "europe-west1-b", "--size", "2")
	waitFor(t, 2*time.Minute, "the pool to have 2 warm VMs", func() bool { return getPool().Status.Warm == 2 })
	warm := fresh()
	if len(warm) != 2 {
		t.Fatalf("the pool of 2 is warm with %d new VMs in /debug/instances: %v", len(warm), warm)
	}

	// A local server the proxy may reach (MOCK_SERVE_ALLOW), on a CONNECT
	// port of the proxy's.
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "answer of the local test server")
	}))
	defer target.Close()
	through := func(proxyURL string) string {
		t.Helper()
		u, err := url.Parse(proxyURL)
		if err != nil {
			t.Fatalf("proxyURL %q: %v", proxyURL, err)
		}
		c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u)}, Timeout: 30 * time.Second}
		resp, err := c.Get(target.URL + "/")
		if err != nil {
			return "refused"
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Sprint(resp.StatusCode)
		}
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, b)
	}
	const served = "200 answer of the local test server"

	get := func() pooledProxy {
		t.Helper()
		resp := s.do(t, http.MethodGet, "/v1/namespaces/"+ns+"/proxies/"+name, nil)
		defer resp.Body.Close()
		var p pooledProxy
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s/%s: %d %v", ns, name, resp.StatusCode, err)
		}
		return p
	}
	body := fmt.Sprintf(`{"name":%q,"spec":{"provider":"mock","placement":{"region":"europe-west1","zone":"europe-west1-b"},"allowedSourceRanges":["127.0.0.1/32"],"connectPorts":[%d]}}`,
		name, target.Listener.Addr().(*net.TCPAddr).Port)
	posted := time.Now()
	resp := s.do(t, http.MethodPost, "/v1/namespaces/"+ns+"/proxies", []byte(body))
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create %s/%s: status %d", ns, name, resp.StatusCode)
	}
	// A poll finer than waitFor's: the duration is logged, never asserted.
	var ready pooledProxy
	for deadline := posted.Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if ready = get(); ready.Status.Phase == "Ready" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%s not Ready 2m after its POST: %+v", ns, name, ready.Status)
		}
	}
	t.Logf("POST → Ready of a proxy a warm pool serves: %s", time.Since(posted).Round(time.Millisecond))

	// Served by a claimed VM: one of the pool's, now carrying the proxy's
	// uid; no VM was created for it.
	if !slices.Contains(warm, ready.Status.ProviderID) {
		t.Errorf("the pooled proxy's VM %q is not one of the pool's warm VMs %v", ready.Status.ProviderID, warm)
	}
	if in, ok := s.findInstance(t, ready.UID); !ok || in.ID != ready.Status.ProviderID {
		t.Errorf("the VM of uid %s in /debug/instances: %q (found %v), want the claimed %s", ready.UID, in.ID, ok, ready.Status.ProviderID)
	}
	if got := through(ready.Status.ProxyURL); got != served {
		t.Errorf("a request through the pooled proxy (%s): %q, want %q", ready.Status.Endpoint, got, served)
	}

	// The pool refills: 2 warm again, and the claim counted.
	waitFor(t, 2*time.Minute, "the pool to be back to 2 warm VMs", func() bool {
		st := getPool().Status
		return st.Warm == 2 && st.Booting == 0 && st.ClaimsLastHour == 1
	})
	if n := len(fresh()); n != 3 {
		t.Errorf("after the claim and the refill: %d new VMs in /debug/instances, want 3 (the claimed and 2 warm)", n)
	}

	// Live changes on the same VM and endpoint: a range that leaves this
	// machine out, then back; then new credentials.
	onProxy := []string{"-n", ns, "--wait", "--timeout", "2m", "-o", "json"}
	update := func(cidr string) {
		t.Helper()
		alice.must(t, append([]string{"proxies", "update", name, "--allowed-source-range", cidr}, onProxy...)...)
	}
	update("203.0.113.0/24")
	outside := through(ready.Status.ProxyURL)
	update("127.0.0.1/32")
	inside := through(ready.Status.ProxyURL)
	stdout, _ := alice.must(t, append([]string{"proxies", "rotate-credentials", name}, onProxy...)...)
	var rotated pooledProxy
	if err := json.Unmarshal([]byte(stdout), &rotated); err != nil {
		t.Fatalf("rotate-credentials -o json: %v\n%s", err, stdout)
	}
	type answers struct {
		OutsideTheRanges, BackInside, OldPassword, NewPassword string
		Endpoint, ProviderID                                   string
		Generation, ObservedGeneration                         int64
	}
	after := get()
	got := answers{
		OutsideTheRanges: outside, BackInside: inside,
		OldPassword: through(ready.Status.ProxyURL), NewPassword: through(rotated.Status.ProxyURL),
		Endpoint: after.Status.Endpoint, ProviderID: after.Status.ProviderID,
		Generation: after.Generation, ObservedGeneration: after.Status.ObservedGeneration,
	}
	want := answers{
		OutsideTheRanges: "refused", BackInside: served, OldPassword: "407", NewPassword: served,
		Endpoint: ready.Status.Endpoint, ProviderID: ready.Status.ProviderID,
		// Two PATCHes and a rotation of credentials, each served.
		Generation: ready.Generation + 3, ObservedGeneration: ready.Generation + 3,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the pooled proxy after two PATCHes and rotate-credentials: -want +got:\n%s", diff)
	}
	if userinfo(rotated.Status.ProxyURL) == userinfo(ready.Status.ProxyURL) {
		t.Errorf("rotate-credentials kept the credentials of %s", ready.Status.ProxyURL)
	}

	// Deleting the proxy, then the pool, leaves no VM that was not there
	// before: the claimed one with the proxy, the warm ones with the pool.
	if resp := s.do(t, http.MethodDelete, "/v1/namespaces/"+ns+"/proxies/"+name, nil); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("delete %s/%s: %d", ns, name, resp.StatusCode)
	}
	s.waitGone(t, ns, name)
	// The pool goes too: its claimed member lets go once the proxy has
	// relabelled the VM, not an hour after the claim.
	if _, stderr := admin.must(t, "pools", "delete", pool, "--wait", "--timeout", "2m"); !strings.HasSuffix(strings.TrimSpace(stderr), "gone") {
		t.Errorf("pools delete --wait did not end with the pool gone:\n%s", stderr)
	}
	if p := getPool(); p != nil {
		t.Errorf("GET of the deleted pool: %+v, want 404", *p)
	}
	waitFor(t, 2*time.Minute, "the pool's VMs to be gone", func() bool { return len(fresh()) == 0 })
}
