package vmstatus_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/vmside"
	"github.com/egress-proxies/egress/internal/vm/engine"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

const uid = "3f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098"

// The status ids of two VMs of the proxy: the one it has, and the one it
// had before (retired by a replacement, a rotation or new credentials).
var (
	vmID      = vmstatus.StatusID(provider.CreateRequest{UID: uid, Name: "egress-3f2c1b0a", RequestID: "attempt-2"})
	retiredID = vmstatus.StatusID(provider.CreateRequest{UID: uid, Name: "egress-3f2c1b0a", RequestID: "attempt-1"})
)

func key(t *testing.T, fill byte) vmstatus.Key {
	t.Helper()
	k, err := vmstatus.NewKey([]byte(strings.Repeat(string(fill), 32)))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// serve runs an engine whose status access is access, ready at
// generation 2, on a loopback port, and returns the port.
func serve(t *testing.T, access *vmconfig.StatusAccess) int32 {
	t.Helper()
	hash, _ := vmconfig.NewPasswordHash("a-tenant-password-of-24c")
	cfg := vmconfig.Config{Generation: 2, Listen: "127.0.0.1:0", Users: []vmconfig.User{{Name: "tenant", PasswordHash: hash}},
		AllowedSourceRanges: []string{"192.0.2.0/24"}, ConnectPorts: []int{443}, Status: access}
	s, err := engine.New(cfg, engine.Options{Readiness: func() vmconfig.Readiness { return vmconfig.Readiness{Generation: 2, Ready: true} }})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		s.Shutdown(ctx)
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return int32(ln.Addr().(*net.TCPAddr).Port)
}

// TestProbe: the prober reads a VM's status with the credential its key
// derives for the uid and the VM's status id, from an address the VM
// admits for the status only; another key, another uid, another VM's
// status id (a retired VM's credential) or a port where nothing listens
// is no answer.
func TestProbe(t *testing.T) {
	at := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	access, err := key(t, 'k').Access(uid, vmID, []string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	port := serve(t, access)
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := int32(closed.Addr().(*net.TCPAddr).Port)
	closed.Close()
	cases := map[string]struct {
		reason  string
		key     vmstatus.Key
		uid, id string
		port    int32
		want    vmstatus.Status
		wantErr string
	}{
		"the control plane": {
			reason: "the key that made the VM's configuration reads its status",
			key:    key(t, 'k'), uid: uid, id: vmID, port: port,
			want: vmstatus.Status{Generation: 2, Ready: true, Traffic: &provider.Traffic{ReportTime: at}},
		},
		"another key": {
			reason: "a key that did not make the configuration reads nothing",
			key:    key(t, 'x'), uid: uid, id: vmID, port: port,
			wantErr: "407 Proxy Authentication Required (credentials-wrong)",
		},
		"another uid": {
			reason: "a VM's credential is its uid's: another proxy's opens nothing here",
			key:    key(t, 'k'), uid: "00000000-0000-4000-8000-000000000000", id: vmID, port: port,
			wantErr: "407 Proxy Authentication Required (credentials-wrong)",
		},
		"a retired VM's credential": {
			reason: "the credential of another VM of the same proxy (its retired one) does not open this VM's status",
			key:    key(t, 'k'), uid: uid, id: retiredID, port: port,
			wantErr: "407 Proxy Authentication Required (credentials-wrong)",
		},
		"no status id": {
			reason: "a VM without a status id label (made before per-VM credentials) is not asked",
			key:    key(t, 'k'), uid: uid, port: port,
			wantErr: "no status id label",
		},
		"nothing listens": {
			reason: "a VM whose engine does not listen yet has no answer",
			key:    key(t, 'k'), uid: uid, id: vmID, port: closedPort,
			wantErr: "connection refused",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &vmstatus.Prober{Key: func(context.Context) (vmstatus.Key, error) { return tc.key, nil }, Now: func() time.Time { return at }}
			got, err := p.Probe(context.Background(), "127.0.0.1", tc.port, tc.uid, tc.id)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%s\nerror %v, want one with %q", tc.reason, err, tc.wantErr)
				}
				if strings.Contains(err.Error(), tc.key.Password(tc.uid, tc.id)) {
					t.Errorf("the error names the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\n%v", tc.reason, err)
			}
			if tc.want.Traffic != nil {
				// The engine counts the month it runs in, by its own clock.
				tc.want.Traffic.Month = time.Now().UTC().Format("2006-01")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestAccess: the access page comes through the proxy port, signed.
func TestAccess(t *testing.T) {
	k := key(t, 'k')
	access, _ := k.Access(uid, vmID, []string{"127.0.0.1/32"})
	port := serve(t, access)
	p := &vmstatus.Prober{Key: func(context.Context) (vmstatus.Key, error) { return k, nil }}
	page, err := p.Access(context.Background(), "127.0.0.1", port, uid, vmID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(vmconfig.AccessPage{Lines: []vmconfig.AccessLine{}}, page, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("the access page of an engine that carried nothing (-want +got):\n%s", diff)
	}
}

// TestAccessConfig: what a VM's configuration carries is a salted hash
// of the derived password, never the password, salted afresh each time,
// and its own sign key; the key's rules are held.
func TestAccessConfig(t *testing.T) {
	k := key(t, 'k')
	a, err := k.Access(uid, vmID, []string{"198.51.100.7/32"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := k.Access(uid, vmID, []string{"198.51.100.7/32"})
	pw := k.Password(uid, vmID)
	switch {
	case a.User.Name != vmstatus.User || !vmconfig.Matches(a.User.PasswordHash, pw):
		t.Errorf("the status user %+v does not hold the derived password", a.User)
	case strings.Contains(a.User.PasswordHash, pw) || strings.Contains(a.SignKey, pw):
		t.Errorf("the configuration holds the password")
	case a.User.PasswordHash == b.User.PasswordHash:
		t.Errorf("two renderings share a salt")
	case len(pw) < 43:
		t.Errorf("the password %q is under 256 bits", pw)
	case a.SignKey != base64.RawURLEncoding.EncodeToString(k.SignKey(uid, vmID)) || a.SignKey != b.SignKey:
		t.Errorf("the sign key %q is not the VM's", a.SignKey)
	}
	if _, err := k.Access(uid, vmID, nil); err == nil {
		t.Error("an access with no source range was made")
	}
	if _, err := k.Access(uid, vmID, []string{"198.51.100.7"}); err == nil {
		t.Error("an access with a source that is not a CIDR was made")
	}
	if _, err := k.Access(uid, "", []string{"198.51.100.7/32"}); err == nil {
		t.Error("an access without a status id was made")
	}
	if _, err := vmstatus.NewKey(make([]byte, 16)); err == nil {
		t.Error("a 128-bit key was taken")
	}
	if _, err := vmstatus.ParseKey("not base64!"); err == nil {
		t.Error("a key that is not base64 was taken")
	}
	if got, err := vmstatus.ParseKey("a2trazEya2trazEya2trazEya2trazEya2trazEya2s="); err != nil || got.Password(uid, vmID) == "" {
		t.Errorf("ParseKey of 32 base64 bytes: %v", err)
	}
}

// TestPerVM: each VM of a proxy has its own credential and sign key. A
// retired VM's credential opens no later VM's status (root on it learns
// nothing that reads the next), a new create attempt (a replacement, a
// rotation, :rotateCredentials, which on these clouds makes a new VM)
// gets a new one, and a retry of one attempt the same one (it makes or
// adopts the same VM).
func TestPerVM(t *testing.T) {
	k := key(t, 'k')
	type derived struct{ ID, Password, SignKey string }
	of := func(req provider.CreateRequest) derived {
		id := vmstatus.StatusID(req)
		return derived{id, k.Password(req.UID, id), base64.RawURLEncoding.EncodeToString(k.SignKey(req.UID, id))}
	}
	first := provider.CreateRequest{UID: uid, Name: "egress-3f2c1b0a", RequestID: "0b5e5c3e-first"}
	cases := map[string]struct {
		reason string
		next   provider.CreateRequest
		same   bool
	}{
		"a replacement":         {"a lost VM's replacement is a new attempt", provider.CreateRequest{UID: uid, Name: first.Name, RequestID: "7d1f-replacement"}, false},
		"new credentials":       {":rotateCredentials makes a new VM with a new attempt on these clouds", provider.CreateRequest{UID: uid, Name: first.Name, RequestID: "a9c2-rotate-credentials"}, false},
		"another proxy":         {"another proxy's VM, even with the same attempt id", provider.CreateRequest{UID: "00000000-0000-4000-8000-000000000000", Name: first.Name, RequestID: first.RequestID}, false},
		"a retry of an attempt": {"a retry after a crash or a 503 makes or adopts the same VM", first, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a, b := of(first), of(tc.next)
			if (a == b) != tc.same {
				t.Fatalf("%s: the first VM's %+v and the next's %+v; want the same: %t", tc.reason, a, b, tc.same)
			}
			if tc.same {
				return
			}
			if a.ID == b.ID || a.Password == b.Password || a.SignKey == b.SignKey {
				t.Errorf("%s: the two VMs share a status id, password or sign key: %+v, %+v", tc.reason, a, b)
			}
			next, err := k.Access(tc.next.UID, b.ID, []string{"198.51.100.7/32"})
			if err != nil {
				t.Fatal(err)
			}
			if vmconfig.Matches(next.User.PasswordHash, a.Password) {
				t.Errorf("%s: the first VM's password opens the next VM's status", tc.reason)
			}
		})
	}
	if err := vmstatus.CheckStatusID(vmstatus.StatusID(first)); err != nil {
		t.Errorf("a status id fails its own check: %v", err)
	}
}

// impostor answers at an address in a VM's place: each request it reads
// is answered by answer, which gets the request and may ask the real
// VM at real (a relay); it returns the port it listens on.
func impostor(t *testing.T, answer func(req *http.Request) *http.Response) int32 {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				resp := answer(req)
				resp.Write(c)
			}()
		}
	}()
	return int32(ln.Addr().(*net.TCPAddr).Port)
}

// relay asks the engine at port the request req, as the prober sent it
// (the impostor has seen the password go by), with its nonce header
// replaced by nonce unless nonce is empty, and returns the engine's
// answer whole.
func relay(t *testing.T, port int32, req *http.Request, nonce string) *http.Response {
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
	if err != nil {
		t.Error(err)
		return &http.Response{StatusCode: 502, Body: http.NoBody}
	}
	defer c.Close()
	out := req.Clone(context.Background())
	if nonce != "" {
		out.Header.Set(vmconfig.StatusNonceHeader, nonce)
	}
	if err := out.WriteProxy(c); err != nil {
		t.Error(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), out)
	if err != nil {
		t.Error(err)
		return &http.Response{StatusCode: 502, Body: http.NoBody}
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp
}

// forged is a 200 answer of body, signed with sig (none when empty).
func forged(body, sig string) *http.Response {
	h := http.Header{"Content-Type": {"application/json"}}
	if sig != "" {
		h.Set(vmconfig.StatusSignatureHeader, sig)
	}
	return &http.Response{StatusCode: 200, ProtoMajor: 1, ProtoMinor: 1, Header: h, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}
}

// TestImpostorAnswers: whoever answers at a VM's address without its sign
// key (a reused address, someone on the path who saw the password go by)
// cannot make the control plane take the VM to serve, nor to serve a
// generation: an answer without the VM's signature over this request's
// nonce is refused with an error naming the VM and the rule, and the
// provider's view (vmside.Observe) stays Provisioning with no
// generation. A faithful relay of the VM's own answer is the VM's answer.
func TestImpostorAnswers(t *testing.T) {
	k := key(t, 'k')
	access, err := k.Access(uid, vmID, []string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	real := serve(t, access)
	const readyAt7 = `{"generation":7,"ready":true,"stats":{}}` + "\n"
	sign := func(key []byte, req *http.Request, body string) string {
		return vmconfig.SignAnswer(key, req.Header.Get(vmconfig.StatusNonceHeader), req.Method, req.URL.RequestURI(), []byte(body))
	}
	// replayed keeps the first answer the VM gave through it, and gives
	// it again for every later request.
	var (
		mu       sync.Mutex
		replayed *http.Response
		body     []byte
	)
	type seen struct {
		State      provider.InstanceState
		Generation int64
		Unanswered bool
	}
	cases := map[string]struct {
		reason  string
		answer  func(req *http.Request) *http.Response
		asks    int
		wantErr string
		want    seen
	}{
		"unsigned": {
			reason: "an answer that carries no signature is no answer",
			answer: func(*http.Request) *http.Response { return forged(readyAt7, "") },
			asks:   1, wantErr: "not signed with the VM's status sign key",
			want: seen{State: provider.StateProvisioning, Unanswered: true},
		},
		"signed with a wrong key": {
			reason: "a signature under a key that is not the VM's (the sign key of another key's derivation) is no signature",
			answer: func(req *http.Request) *http.Response {
				return forged(readyAt7, sign(key(t, 'x').SignKey(uid, vmID), req, readyAt7))
			},
			asks: 1, wantErr: "not signed with the VM's status sign key",
			want: seen{State: provider.StateProvisioning, Unanswered: true},
		},
		"signed by a retired VM": {
			reason: "root on the proxy's retired VM holds that VM's sign key, which signs for no later VM",
			answer: func(req *http.Request) *http.Response {
				return forged(readyAt7, sign(k.SignKey(uid, retiredID), req, readyAt7))
			},
			asks: 1, wantErr: "not signed with the VM's status sign key",
			want: seen{State: provider.StateProvisioning, Unanswered: true},
		},
		"the VM's answer to another nonce": {
			reason: "someone on the path asks the VM with the password it saw and a nonce of its own, and passes the signed answer on: its nonce is not this request's",
			answer: func(req *http.Request) *http.Response { return relay(t, real, req, "QW5vdGhlci1ub25jZS0xNmJ5dGVz") },
			asks:   1, wantErr: "not signed with the VM's status sign key",
			want: seen{State: provider.StateProvisioning, Unanswered: true},
		},
		"a replay": {
			reason: "the VM's signed answer to an earlier request, given again, is refused: the prober's nonce is fresh each time",
			answer: func(req *http.Request) *http.Response {
				mu.Lock()
				defer mu.Unlock()
				if replayed == nil {
					replayed = relay(t, real, req, "")
					body, _ = io.ReadAll(replayed.Body)
				}
				r := *replayed
				r.Body = io.NopCloser(bytes.NewReader(body))
				return &r
			},
			asks: 2, wantErr: "not signed with the VM's status sign key",
			want: seen{State: provider.StateProvisioning, Unanswered: true},
		},
		"a faithful relay": {
			reason: "the VM's own answer to this request, passed on unchanged, is the VM's answer",
			answer: func(req *http.Request) *http.Response { return relay(t, real, req, "") },
			asks:   1,
			want:   seen{State: provider.StateRunning, Generation: 2},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			port := impostor(t, tc.answer)
			p := &vmstatus.Prober{Key: func(context.Context) (vmstatus.Key, error) { return k, nil }}
			var err error
			in := &provider.Instance{ID: "hcloud://1", IP: "127.0.0.1", UID: uid, StatusID: vmID, State: provider.StateRunning}
			for range tc.asks {
				in = &provider.Instance{ID: "hcloud://1", IP: "127.0.0.1", UID: uid, StatusID: vmID, State: provider.StateRunning}
				var unanswered error
				unanswered, err = vmside.Observe(context.Background(), p, in, port, "")
				if err != nil {
					t.Fatal(err)
				}
				err = unanswered
			}
			got := seen{State: in.State, Generation: in.Generation, Unanswered: err != nil}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nwhat the provider sees (-want +got):\n%s", tc.reason, diff)
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Errorf("%s\n%v", tc.reason, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, vmstatus.ErrUnsigned) ||
				!strings.Contains(err.Error(), vmID) || !strings.Contains(err.Error(), uid) {
				t.Errorf("%s\nerror %v; want ErrUnsigned naming the VM (uid and status id) and %q", tc.reason, err, tc.wantErr)
			}
			// The access page is held to the same rule.
			if _, err := p.Access(context.Background(), "127.0.0.1", port, uid, vmID, 0); !errors.Is(err, vmstatus.ErrUnsigned) {
				t.Errorf("%s\nthe access page: %v, want ErrUnsigned", tc.reason, err)
			}
		})
	}
}

// sendOrder sends PUT http://egress-status.invalid/traffic to the engine
// at port as a client that knows the status password (it travels in
// clear), with order and sig as the order's headers, and returns the
// status and the refusal's reason.
func sendOrder(t *testing.T, port int32, password, nonce, order, sig string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	auth := base64.StdEncoding.EncodeToString([]byte(vmstatus.User + ":" + password))
	io.WriteString(c, "PUT http://"+vmconfig.StatusHost+vmconfig.TrafficPath+" HTTP/1.1\r\nHost: "+vmconfig.StatusHost+"\r\nProxy-Authorization: Basic "+auth+
		"\r\n"+vmconfig.StatusNonceHeader+": "+nonce+"\r\n"+vmconfig.TrafficOrderHeader+": "+order+"\r\n"+vmconfig.TrafficOrderSignatureHeader+": "+sig+"\r\nContent-Length: 0\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("X-Egress-Error")
}

// TestTrafficOrder: the control plane's prober stops a VM's traffic
// through its status door and lifts the stop again; an order made
// without the VM's sign key (by one who saw the status password go by),
// one sent again, and one issued out of the engine's clock's reach
// change nothing.
func TestTrafficOrder(t *testing.T) {
	k := key(t, 'k')
	access, _ := k.Access(uid, vmID, []string{"127.0.0.1/32"})
	port := serve(t, access)
	now := time.Now().UTC()
	month := now.Format("2006-01")
	stop := &vmconfig.TrafficStop{Month: month, Reason: "the namespace's budget"}
	issued := now
	p := &vmstatus.Prober{Key: func(context.Context) (vmstatus.Key, error) { return k, nil }, Now: func() time.Time { return issued }}
	ctx := context.Background()
	served := func() *vmconfig.TrafficStop {
		t.Helper()
		st, err := p.Probe(ctx, "127.0.0.1", port, uid, vmID)
		if err != nil {
			t.Fatal(err)
		}
		return st.TrafficStop
	}
	if _, err := p.StopTraffic(ctx, "127.0.0.1", port, uid, vmID, stop); err != nil {
		t.Fatalf("the control plane's stop: %v", err)
	}
	if diff := cmp.Diff(stop, served()); diff != "" {
		t.Errorf("after the control plane's stop (-want +got):\n%s", diff)
	}

	// Orders of others, each meant to lift the stop.
	orderOf := func(at time.Time) string {
		b, _ := json.Marshal(vmconfig.TrafficOrder{Issued: at})
		return base64.RawURLEncoding.EncodeToString(b)
	}
	const nonce = "bm9uY2Utb2YtdGhlLXRlc3Qtb3JkZXI"
	target := vmconfig.TrafficPath
	signed := func(key []byte, order string) string {
		return vmconfig.SignOrder(key, nonce, http.MethodPut, target, order)
	}
	later := orderOf(now.Add(time.Second))
	type answer struct {
		Status int
		Why    string
	}
	for name, tc := range map[string]struct {
		reason     string
		order, sig string
		want       answer
	}{
		"NoSignKey": {reason: "The status password alone, which travels in clear, signs no order.",
			order: later, sig: signed(k.SignKey(uid, retiredID), later), want: answer{403, "traffic-order-refused"}},
		"Unsigned": {reason: "An order without a signature is none.", order: later, want: answer{403, "traffic-order-refused"}},
		"TooOld": {reason: "An order issued beyond the skew (one kept and sent later) is refused.",
			order: orderOf(now.Add(-2 * vmconfig.OrderSkew)), sig: signed(k.SignKey(uid, vmID), orderOf(now.Add(-2*vmconfig.OrderSkew))), want: answer{403, "traffic-order-refused"}},
		"NotAfterTheLast": {reason: "An order issued before the last one taken (the stop, sent again) is refused.",
			order: orderOf(now.Add(-time.Second)), sig: signed(k.SignKey(uid, vmID), orderOf(now.Add(-time.Second))), want: answer{403, "traffic-order-refused"}},
	} {
		t.Run(name, func(t *testing.T) {
			s, why := sendOrder(t, port, k.Password(uid, vmID), nonce, tc.order, tc.sig)
			if diff := cmp.Diff(tc.want, answer{s, why}); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(stop, served()); diff != "" {
				t.Errorf("%s: the stop served after it (-want +got):\n%s", tc.reason, diff)
			}
		})
	}

	issued = now.Add(2 * time.Second)
	if _, err := p.StopTraffic(ctx, "127.0.0.1", port, uid, vmID, nil); err != nil {
		t.Fatalf("the control plane's lift: %v", err)
	}
	if got := served(); got != nil {
		t.Errorf("after the control plane lifted the stop, the VM serves %+v", got)
	}
}
