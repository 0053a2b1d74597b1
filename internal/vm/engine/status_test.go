package engine

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// The status credential of the tests, and the control plane's address:
// a loopback address of its own, outside the proxy's allowed sources.
const (
	statusUser     = "egress-status"
	statusPassword = "statusPasswordOf32CharactersXYZ0"
	controlPlane   = "127.0.0.2"
	// statusNonce is a nonce of the control plane's shape (16 bytes).
	statusNonce = "bm9uY2Utb2YtMTYtYnl0ZQ"
)

// statusSignKey is the VM's sign key of the tests, and its configuration
// form.
var (
	statusSignKey    = []byte("the-sign-key-of-this-VM-32-bytes")
	statusSignKeyB64 = base64.RawURLEncoding.EncodeToString(statusSignKey)
)

// startStatusProxy serves cfg with the status readable from controlPlane
// and the readiness ready says.
func startStatusProxy(t *testing.T, cfg vmconfig.Config, ready vmconfig.Readiness) (*Server, string) {
	t.Helper()
	cfg.AllowedSourceRanges = []string{"127.0.0.1/32"}
	cfg.Status = &vmconfig.StatusAccess{User: vmconfig.User{Name: statusUser, PasswordHash: hashOf(t, statusPassword)},
		Sources: []string{controlPlane + "/32"}, SignKey: statusSignKeyB64}
	return startProxyWith(t, cfg, Options{Resolver: names, Readiness: func() vmconfig.Readiness { return ready }})
}

// ask sends one request head from the address from and returns the
// answer's status, its X-Egress-Error and its body.
func ask(t *testing.T, proxy, from, head string) (int, string, []byte) {
	code, reason, body, _ := askSigned(t, proxy, from, head)
	return code, reason, body
}

// askSigned is ask that returns the answer's signature too.
func askSigned(t *testing.T, proxy, from, head string) (int, string, []byte, string) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	method, _, _ := cutSpace(head)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		return 0, "closed", nil, ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("X-Egress-Error"), body, resp.Header.Get(vmconfig.StatusSignatureHeader)
}

func cutSpace(s string) (string, string, bool) {
	for i := range len(s) {
		if s[i] == ' ' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func TestStatusOnTheProxyPort(t *testing.T) {
	_, echoPort := startEcho(t)
	echo := hostPort("127.0.0.1", echoPort)
	bare := "GET http://egress-status.invalid/status HTTP/1.1\r\nHost: egress-status.invalid\r\n"
	status := bare + vmconfig.StatusNonceHeader + ": " + statusNonce + "\r\n"
	asStatus := "Proxy-Authorization: " + basic(statusUser, statusPassword) + "\r\n"
	asUser := "Proxy-Authorization: " + basic(testUser, testPassword) + "\r\n"
	cases := map[string]struct {
		reason    string
		from      string
		head      string
		ready     vmconfig.Readiness
		wantCode  int
		wantError string
		// wantStatus is the status answered, when the code is 200.
		wantStatus *vmconfig.Status
	}{
		"ready": {
			reason: "the control plane, from its address, with the status credential, reads the generation, readiness and counters",
			from:   controlPlane, head: status + asStatus + "\r\n", ready: vmconfig.Readiness{Generation: 3, Ready: true},
			wantCode: 200, wantStatus: &vmconfig.Status{Generation: 3, Ready: true},
		},
		"not ready, with the agent's reason": {
			reason: "a self-test that failed is said with its reason",
			from:   controlPlane, head: status + asStatus + "\r\n", ready: vmconfig.Readiness{Generation: 3, Error: "generation 3: the self-test failed"},
			wantCode: 200, wantStatus: &vmconfig.Status{Generation: 3, Error: "generation 3: the self-test failed"},
		},
		"ready for another generation": {
			reason: "readiness of a generation the engine does not serve is not readiness",
			from:   controlPlane, head: status + asStatus + "\r\n", ready: vmconfig.Readiness{Generation: 2, Ready: true},
			wantCode: 200, wantStatus: &vmconfig.Status{Generation: 3},
		},
		"from an allowed source": {
			reason: "the status credential is what matters, not only the address",
			from:   "127.0.0.1", head: status + asStatus + "\r\n", ready: vmconfig.Readiness{Generation: 3, Ready: true},
			wantCode: 200, wantStatus: &vmconfig.Status{Generation: 3, Ready: true},
		},
		"no credential": {
			reason: "the status is the status credential's only",
			from:   controlPlane, head: status + "\r\n",
			wantCode: 407, wantError: "credentials-missing",
		},
		"wrong password": {
			reason: "a wrong status password is refused as a wrong proxy password is",
			from:   controlPlane, head: status + "Proxy-Authorization: " + basic(statusUser, statusPassword+"x") + "\r\n\r\n",
			wantCode: 407, wantError: "credentials-wrong",
		},
		"a proxy user's credentials": {
			reason: "a tenant's credentials read no status",
			from:   "127.0.0.1", head: status + asUser + "\r\n",
			wantCode: 407, wantError: "credentials-wrong",
		},
		"no nonce": {
			reason: "an answer signed over no nonce could be replayed: a status request without one is refused",
			from:   controlPlane, head: bare + asStatus + "\r\n",
			wantCode: 400, wantError: "status-nonce-missing",
		},
		"a nonce too short": {
			reason: "a nonce shorter than 16 random bytes' worth is no nonce",
			from:   controlPlane, head: bare + vmconfig.StatusNonceHeader + ": abc\r\n" + asStatus + "\r\n",
			wantCode: 400, wantError: "status-nonce-missing",
		},
		"another path": {
			reason: "the reserved host serves /status and /access only",
			from:   controlPlane, head: "GET http://egress-status.invalid/metrics HTTP/1.1\r\nHost: egress-status.invalid\r\n" + vmconfig.StatusNonceHeader + ": " + statusNonce + "\r\n" + asStatus + "\r\n",
			wantCode: 404, wantError: "status-not-found",
		},
		"the status credential as a proxy user": {
			reason: "the engine carries nothing for the status credential",
			from:   "127.0.0.1", head: "CONNECT " + echo + " HTTP/1.1\r\nHost: " + echo + "\r\n" + asStatus + "\r\n",
			wantCode: 407, wantError: "credentials-wrong",
		},
		"the control plane's address as a client": {
			reason: "a status source that is not an allowed source gets the status and nothing else, whoever's credentials it sends",
			from:   controlPlane, head: "CONNECT " + echo + " HTTP/1.1\r\nHost: " + echo + "\r\n" + asUser + "\r\n",
			wantCode: 403, wantError: "source-not-allowed",
		},
		"another address": {
			reason: "an address neither allowed nor a status source is closed before a byte is read",
			from:   "127.0.0.3", head: status + asStatus + "\r\n",
			wantError: "closed",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(t, echoPort)
			cfg.Generation = 3
			s, addr := startStatusProxy(t, cfg, tc.ready)
			code, reason, body, sig := askSigned(t, addr, tc.from, tc.head)
			if code != tc.wantCode || reason != tc.wantError {
				t.Fatalf("%s\nanswer %d %q, want %d %q: %s", tc.reason, code, reason, tc.wantCode, tc.wantError, body)
			}
			if want := vmconfig.SignAnswer(statusSignKey, statusNonce, "GET", "/status", body); code == 200 && sig != want {
				t.Errorf("%s\nthe answer's signature is %q, want %q: the VM's sign key over the nonce, the request and the body", tc.reason, sig, want)
			}
			if code != 200 && sig != "" {
				t.Errorf("%s\na refusal carries a signature %q: only answers are signed", tc.reason, sig)
			}
			if tc.wantStatus != nil {
				var got vmconfig.Status
				if err := json.Unmarshal(body, &got); err != nil {
					t.Fatalf("the status answer %q: %v", body, err)
				}
				if diff := cmp.Diff(*tc.wantStatus, got, cmpopts.IgnoreFields(vmconfig.Status{}, "Stats")); diff != "" {
					t.Errorf("%s\nstatus (-want +got):\n%s", tc.reason, diff)
				}
				if got.Stats.Generation != 3 {
					t.Errorf("the status's counters are of generation %d, want 3", got.Stats.Generation)
				}
			}
			st := s.Stats()
			if strings.Contains(tc.head, vmconfig.StatusHost) && st.Requests.HTTP != 0 {
				t.Errorf("%s\nafter one status request the counters say %+v: a status request is not a tenant's traffic", tc.reason, st)
			}
			if tc.from == controlPlane && st.Connections != 0 {
				t.Errorf("%s\nthe control plane's connection was counted: %+v", tc.reason, st)
			}
		})
	}
}

// TestStatusAccessPage: the access log is read through the proxy port as
// on the stats listener, and a status request leaves no line in it.
func TestStatusAccessPage(t *testing.T) {
	_, echoPort := startEcho(t)
	cfg := testConfig(t, echoPort)
	cfg.AccessLog = true
	_, addr := startStatusProxy(t, cfg, vmconfig.Readiness{Generation: 1, Ready: true})
	target := hostPort("127.0.0.1", echoPort)
	if a, c := connectThrough(t, addr, target, basic(testUser, testPassword), nil); a.Status != 200 {
		t.Fatalf("CONNECT: %d", a.Status)
	} else {
		c.Close()
	}
	asStatus := "Proxy-Authorization: " + basic(statusUser, statusPassword) + "\r\n" + vmconfig.StatusNonceHeader + ": " + statusNonce + "\r\n"
	ask(t, addr, controlPlane, "GET http://egress-status.invalid/status HTTP/1.1\r\nHost: egress-status.invalid\r\n"+asStatus+"\r\n")
	var page vmconfig.AccessPage
	waitUntil(t, "the tunnel's access line", func() bool {
		code, _, body, sig := askSigned(t, addr, controlPlane, "GET http://egress-status.invalid/access?after=0 HTTP/1.1\r\nHost: egress-status.invalid\r\n"+asStatus+"\r\n")
		if code != 200 || json.Unmarshal(body, &page) != nil {
			t.Fatalf("GET /access: %d %s", code, body)
		}
		if want := vmconfig.SignAnswer(statusSignKey, statusNonce, "GET", "/access?after=0", body); sig != want {
			t.Fatalf("the access page's signature is %q, want %q (over the target with its query)", sig, want)
		}
		return len(page.Lines) > 0
	})
	want := []vmconfig.AccessLine{{Source: "127.0.0.1", User: testUser, SourceAddress: "127.0.0.1", Protocol: vmconfig.ProtocolConnect, Method: "CONNECT", Host: "127.0.0.1", Port: echoPort, Status: 200}}
	if diff := cmp.Diff(want, page.Lines, sourceHost, cmpopts.IgnoreFields(vmconfig.AccessLine{}, "Time", "End", "BytesIn", "BytesOut", "DurationMs", "Reason", "Source")); diff != "" {
		t.Errorf("the access page through the proxy port: only the tenant's tunnel, no status request (-want +got):\n%s", diff)
	}
	if page.Next != 1 {
		t.Errorf("next %d, want 1", page.Next)
	}
}

// TestStatusWithoutAccess: without status access in the configuration,
// the reserved name is a destination like any other, which no resolver
// answers.
func TestStatusWithoutAccess(t *testing.T) {
	_, addr := startProxy(t, testConfig(t, 80))
	code, reason, _ := ask(t, addr, "127.0.0.1", "GET http://egress-status.invalid/status HTTP/1.1\r\nHost: egress-status.invalid\r\nProxy-Authorization: "+basic(testUser, testPassword)+"\r\n\r\n")
	if code != 502 || reason != "name-not-resolved" {
		t.Errorf("answer %d %q, want 502 name-not-resolved", code, reason)
	}
}

// TestStatusConfigRefused: a status user that is a proxy user too, one
// without a hash, or status access without a sign key of 32 bytes (its
// answers could not be signed), does not load.
func TestStatusConfigRefused(t *testing.T) {
	cases := map[string]vmconfig.StatusAccess{
		"a status user who is a proxy user too":     {User: vmconfig.User{Name: testUser, PasswordHash: hashOf(t, "x")}, SignKey: statusSignKeyB64},
		"a password in place of a hash":             {User: vmconfig.User{Name: statusUser, PasswordHash: statusPassword}, SignKey: statusSignKeyB64},
		"no sign key (a configuration from before)": {User: vmconfig.User{Name: statusUser, PasswordHash: hashOf(t, "x")}},
		"a sign key of 16 bytes":                    {User: vmconfig.User{Name: statusUser, PasswordHash: hashOf(t, "x")}, SignKey: base64.RawURLEncoding.EncodeToString(make([]byte, 16))},
		"a sign key that is not base64":             {User: vmconfig.User{Name: statusUser, PasswordHash: hashOf(t, "x")}, SignKey: "not base64!"},
	}
	for name, status := range cases {
		cfg := testConfig(t, 80)
		cfg.Status = &status
		if _, err := New(cfg, Options{}); err == nil {
			t.Errorf("status access with %s loaded", name)
		}
	}
}
