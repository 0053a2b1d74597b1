package engine

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// The answers at the edges of HTTP: each case is a request as a client
// (or an attacker) sends it on a connection of its own, and the answer it
// must get, the reason the engine gives, and whether the engine keeps the
// connection.

// exchange is what a client saw of one raw request: the answer's status,
// its X-Egress-Error, its Via, its first body line, and whether the
// connection was closed after it.
type exchange struct {
	Status int
	Reason string
	Via    string
	Body   string
	Closed bool
}

// rawExchange sends raw on a new connection to proxy, reads one answer
// and then looks whether the engine closed the connection: an EOF within
// the wait is closed, silence is kept open. halfClose closes the client's
// writing half after raw, as a client that has nothing more to send does.
func rawExchange(t *testing.T, proxy, raw string, halfClose bool) exchange {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	if halfClose {
		c.(*net.TCPConn).CloseWrite()
	}
	br := bufio.NewReader(c)
	method, _, _ := strings.Cut(raw, " ")
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading the answer to %q: %v", firstLine(raw), err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	got := exchange{Status: resp.StatusCode, Reason: resp.Header.Get("X-Egress-Error"), Via: resp.Header.Get("Via"), Body: firstLine(string(body))}
	if resp.StatusCode == http.StatusOK && method == http.MethodConnect {
		return got
	}
	// Closed means an EOF (or a reset) soon; an open connection answers
	// nothing and the read waits out its deadline.
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, err = br.ReadByte()
	got.Closed = err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
	return got
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimSuffix(line, "\r")
}

// upstreamSeen starts an HTTP destination on loopback that records the
// requests it gets and answers "hello".
func upstreamSeen(t *testing.T) (port int, seen chan *http.Request) {
	t.Helper()
	seen = make(chan *http.Request, 16)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		seen <- r
		io.WriteString(w, "hello\n")
	}))
	t.Cleanup(up.Close)
	return up.Listener.Addr().(*net.TCPAddr).Port, seen
}

func TestAnswersAtTheEdges(t *testing.T) {
	t.Parallel() // seconds of waiting on the wire, none of it CPU
	_, echoPort := startEcho(t)
	// Each case has its own HTTP destination (below), so that the cases
	// run in parallel and what one destination saw is its case's alone;
	// this one only gives the cases' requests a port to name.
	httpPort, _ := upstreamSeen(t)
	v6, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	defer v6.Close()
	go func() {
		for {
			c, err := v6.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	v6Port := v6.Addr().(*net.TCPAddr).Port
	auth := "Proxy-Authorization: " + basic(testUser, testPassword) + "\r\n"
	hp := strconv.Itoa(httpPort)
	cases := map[string]struct {
		reason    string
		raw       string
		halfClose bool
		want      exchange
		// reached: whether the HTTP destination may see a request.
		reached bool
	}{
		"zone ID on IPv6 loopback, CONNECT": {
			reason: "a zone ID makes netip's Contains false for every range: an address with one is refused before the check, or ::1 is reachable",
			raw:    "CONNECT [::1%25x]:" + strconv.Itoa(v6Port) + " HTTP/1.1\r\nHost: [::1%25x]:" + strconv.Itoa(v6Port) + "\r\n" + auth + "\r\n",
			want:   exchange{Status: 403, Reason: "zone-not-allowed", Body: "egress-proxy: zone-not-allowed: an address with a zone ID is never a destination", Closed: true},
		},
		"zone ID on IPv6 loopback, unescaped": {
			reason: "the zone as a client may write it without percent-encoding",
			raw:    "CONNECT [::1%x]:" + strconv.Itoa(v6Port) + " HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n",
			want:   exchange{Status: 403, Reason: "zone-not-allowed", Body: "egress-proxy: zone-not-allowed: an address with a zone ID is never a destination", Closed: true},
		},
		"zone ID on a link-local address, CONNECT": {
			reason: "any zoned address is refused, whatever its range",
			raw:    "CONNECT [fe80::1%25lo]:" + strconv.Itoa(echoPort) + " HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n",
			want:   exchange{Status: 403, Reason: "zone-not-allowed", Body: "egress-proxy: zone-not-allowed: an address with a zone ID is never a destination", Closed: true},
		},
		"zone ID in an absolute-form request": {
			reason: "plain HTTP checks the destination as CONNECT does",
			raw:    "GET http://[::1%25lo]:" + strconv.Itoa(v6Port) + "/ HTTP/1.1\r\nHost: [::1%25lo]\r\n" + auth + "\r\n",
			want:   exchange{Status: 403, Reason: "zone-not-allowed", Body: "egress-proxy: zone-not-allowed: an address with a zone ID is never a destination", Closed: false},
		},
		"refused CONNECT closes": {
			reason: "bytes a client sent after a refused CONNECT head are tunnel bytes, never a next request (RFC 9112 §9.3... a CONNECT refused ends the connection)",
			raw:    "CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n" + auth + "\r\nGET http://127.0.0.1:" + hp + "/smuggled HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n",
			want:   exchange{Status: 403, Reason: "port-not-allowed", Body: "egress-proxy: port-not-allowed: the destination port is not one this proxy allows", Closed: true},
		},
		"Content-Length and Transfer-Encoding": {
			reason:  "RFC 9112 §6.1: a server MUST close the connection after a request with both",
			raw:     "POST http://127.0.0.1:" + hp + "/both HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
			want:    exchange{Status: 400, Reason: "bad-framing", Body: "egress-proxy: bad-framing: the request's length is ambiguous (RFC 9112 §6.3)", Closed: true},
			reached: false,
		},
		"malformed chunk size": {
			reason:  "a body the client framed wrong is the client's error, 400, not the gateway's",
			raw:     "POST http://127.0.0.1:" + hp + "/chunks HTTP/1.1\r\nHost: x\r\n" + auth + "Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
			want:    exchange{Status: 400, Reason: "bad-body", Body: "egress-proxy: bad-body: the request body is malformed", Closed: true},
			reached: true,
		},
		"TRACE with Max-Forwards 0": {
			reason: "RFC 9110 §7.6.2: Max-Forwards 0 makes the proxy the final recipient; the proxy does not reflect requests (their headers may carry secrets)",
			raw:    "TRACE http://127.0.0.1:" + hp + "/trace HTTP/1.1\r\nHost: x\r\nMax-Forwards: 0\r\n" + auth + "\r\n",
			want:   exchange{Status: 405, Reason: "method-not-allowed", Body: "egress-proxy: method-not-allowed: TRACE is not carried", Closed: false},
		},
		"TRACE": {
			reason: "TRACE reflects the request, cookies included, to whoever reads the answer: never carried",
			raw:    "TRACE http://127.0.0.1:" + hp + "/trace HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n",
			want:   exchange{Status: 405, Reason: "method-not-allowed", Body: "egress-proxy: method-not-allowed: TRACE is not carried", Closed: false},
		},
		"OPTIONS with Max-Forwards 0": {
			reason: "the proxy answers for itself and forwards nothing",
			raw:    "OPTIONS http://127.0.0.1:" + hp + "/ HTTP/1.1\r\nHost: x\r\nMax-Forwards: 0\r\n" + auth + "\r\n",
			want:   exchange{Status: 200, Via: "1.1 egress-proxy", Closed: false},
		},
		"WebSocket upgrade in absolute form": {
			reason: "an upgrade is a tunnel: asked for with CONNECT, which every WebSocket client behind a proxy uses",
			raw:    "GET http://127.0.0.1:" + hp + "/ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" + auth + "\r\n",
			want:   exchange{Status: 501, Reason: "upgrade-not-supported", Body: "egress-proxy: upgrade-not-supported: send CONNECT for a WebSocket or another upgraded protocol", Closed: true},
		},
		"half-closed before the 200": {
			reason: "a client that sent its CONNECT and has nothing more to send still gets its tunnel, not a 502",
			raw:    "CONNECT 127.0.0.1:" + strconv.Itoa(echoPort) + " HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n", halfClose: true,
			want: exchange{Status: 200},
		},
		"a name that does not resolve": {
			reason: "a 502 with a reason the client can act on",
			raw:    "CONNECT nowhere.test:" + strconv.Itoa(echoPort) + " HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n",
			want:   exchange{Status: 502, Reason: "name-not-resolved", Body: "egress-proxy: name-not-resolved: the destination's name did not resolve", Closed: true},
		},
		"a denied destination": {
			reason: "403 with the reason, not which range",
			raw:    "CONNECT 169.254.169.254:" + strconv.Itoa(echoPort) + " HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n",
			want:   exchange{Status: 403, Reason: "destination-denied", Body: "egress-proxy: destination-denied: the destination is in a range this proxy never reaches", Closed: true},
		},
		"an IPv4-compatible address of the metadata server": {
			reason: "::/96 (RFC 4291 §2.5.5.1, deprecated) is a way back into IPv4: denied as the mapped and NAT64 forms are",
			raw:    "CONNECT [::a9fe:a9fe]:" + strconv.Itoa(echoPort) + " HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n",
			want:   exchange{Status: 403, Reason: "destination-denied", Body: "egress-proxy: destination-denied: the destination is in a range this proxy never reaches", Closed: true},
		},
		"an IPv4-compatible address of loopback": {
			reason: "::127.0.0.1 is not ::1, but it is in ::/96",
			raw:    "CONNECT [::127.0.0.1]:" + strconv.Itoa(echoPort) + " HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n",
			want:   exchange{Status: 403, Reason: "destination-denied", Body: "egress-proxy: destination-denied: the destination is in a range this proxy never reaches", Closed: true},
		},
		"no credentials": {
			reason: "407 names the reason too, and keeps the connection for the client's answer to the challenge",
			raw:    "GET http://127.0.0.1:" + hp + "/ HTTP/1.1\r\nHost: x\r\n\r\n",
			want:   exchange{Status: 407, Reason: "credentials-missing", Body: "egress-proxy: credentials-missing: this proxy needs Basic credentials", Closed: false},
		},
		"an origin-form request": {
			reason: "a request for the proxy itself is not one it carries",
			raw:    "GET /index.html HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n",
			want:   exchange{Status: 400, Reason: "not-a-proxy-request", Body: "egress-proxy: not-a-proxy-request: send CONNECT host:port or an absolute http:// URL", Closed: false},
		},
		"Via on a forwarded answer": {
			reason: "RFC 9110 §7.6.3: a proxy adds Via to what it forwards, both ways",
			raw:    "GET http://127.0.0.1:" + hp + "/via HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n",
			want:   exchange{Status: 200, Via: "1.1 egress-proxy", Body: "hello", Closed: false}, reached: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// In parallel: a connection the engine keeps open is known
			// only by waiting out rawExchange's read, three seconds a case.
			t.Parallel()
			// The case's own destination, on the port its request names.
			ownPort, seen := upstreamSeen(t)
			raw := strings.ReplaceAll(tc.raw, ":"+hp+"/", ":"+strconv.Itoa(ownPort)+"/")
			cfg := testConfig(t, echoPort, ownPort, v6Port)
			cfg.AllowDestinations = []string{"127.0.0.1/32", "::1/128", "fe80::/10"}
			_, proxy := startProxy(t, cfg)
			got := rawExchange(t, proxy, raw, tc.halfClose)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n%q: -want +got:\n%s", tc.reason, firstLine(raw), diff)
			}
			select {
			case r := <-seen:
				if !tc.reached {
					t.Errorf("%s\nthe destination got %s %s", tc.reason, r.Method, r.URL)
				}
			default:
			}
		})
	}
}

// TestViaUpstream: the destination sees the proxy's Via, after any the
// request carried.
func TestViaUpstream(t *testing.T) {
	t.Parallel() // seconds of waiting on the wire, none of it CPU
	httpPort, seen := upstreamSeen(t)
	_, proxy := startProxy(t, testConfig(t, httpPort))
	got := rawExchange(t, proxy, "GET http://127.0.0.1:"+strconv.Itoa(httpPort)+"/ HTTP/1.1\r\nHost: x\r\nVia: 1.0 corp\r\nProxy-Authorization: "+basic(testUser, testPassword)+"\r\n\r\n", false)
	if got.Status != 200 {
		t.Fatalf("GET: %+v", got)
	}
	r := <-seen
	if via := strings.Join(r.Header.Values("Via"), ", "); via != "1.0 corp, 1.1 egress-proxy" {
		t.Errorf("the destination saw Via %q, want %q", via, "1.0 corp, 1.1 egress-proxy")
	}
}

// blackholeListener listens on addr with an accept queue of one that it
// fills and never accepts: every further SYN is dropped, so a connect
// hangs as one to a blackholed address does.
func blackholeListener(t *testing.T, family int, sa syscall.Sockaddr, addr string) {
	t.Helper()
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Skipf("socket: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, sa); err != nil {
		t.Skipf("bind %s: %v", addr, err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	// Fill the queue: the first connection completes into it.
	for range 2 {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			t.Cleanup(func() { c.Close() })
		}
	}
}

// TestHappyEyeballs: a name with a blackholed IPv6 address and a working
// IPv4 one is reached over IPv4 within the dial timeout (RFC 8305): the
// IPv6 attempt does not take the whole budget.
func TestHappyEyeballs(t *testing.T) {
	_, echoPort := startEcho(t)
	blackholeListener(t, syscall.AF_INET6, &syscall.SockaddrInet6{Port: echoPort, Addr: [16]byte{15: 1}}, hostPort("::1", echoPort))
	cfg := testConfig(t, echoPort)
	cfg.AllowDestinations = []string{"127.0.0.1/32", "::1/128"}
	cfg.DialTimeout = vmconfig.Duration(3 * time.Second)
	names["dual.test"] = []netip.Addr{netip.MustParseAddr("::1"), netip.MustParseAddr("127.0.0.1")}
	t.Cleanup(func() { delete(names, "dual.test") })
	_, proxy := startProxy(t, cfg)
	got, conn := connectThrough(t, proxy, hostPort("dual.test", echoPort), basic(testUser, testPassword), nil)
	if got.Status != 200 {
		t.Fatalf("CONNECT to a name whose IPv6 address is blackholed: %d, want 200 over IPv4", got.Status)
	}
	if err := echoes(t, conn, "over IPv4"); err != nil {
		t.Error(err)
	}
}

// TestBounds: an unauthenticated connection is not kept for long, a body
// that stops is not waited for, and the connections beyond the cap are
// answered 503.
func TestBounds(t *testing.T) {
	httpPort, _ := upstreamSeen(t)
	cfg := testConfig(t, httpPort)
	cfg.UnauthenticatedIdleTimeout = vmconfig.Duration(100 * time.Millisecond)
	cfg.BodyIdleTimeout = vmconfig.Duration(100 * time.Millisecond)
	cfg.MaxConnections = 2
	s, proxy := startProxy(t, cfg)
	hp := strconv.Itoa(httpPort)

	t.Run("unauthenticated keep-alive", func(t *testing.T) {
		got := rawExchange(t, proxy, "GET http://127.0.0.1:"+hp+"/ HTTP/1.1\r\nHost: x\r\n\r\n", false)
		if got.Status != 407 || !got.Closed {
			t.Errorf("after a 407, idle: %+v, want 407 and the connection closed after unauthenticatedIdleTimeout", got)
		}
	})
	t.Run("request body that stops", func(t *testing.T) {
		got := rawExchange(t, proxy, "POST http://127.0.0.1:"+hp+"/ HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\nProxy-Authorization: "+basic(testUser, testPassword)+"\r\n\r\n0123456789", false)
		want := exchange{Status: 408, Reason: "body-timeout", Body: "egress-proxy: body-timeout: no byte of the body came for bodyIdleTimeout", Closed: true}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("a POST whose body stops: -want +got:\n%s", diff)
		}
	})
	t.Run("connection cap", func(t *testing.T) {
		// The connections of the cases before are closed by now, and
		// counted out a moment later.
		waitUntil(t, "no connection open", func() bool { return s.Stats().ActiveConnections == 0 })
		var held []net.Conn
		for range 2 {
			c, err := net.Dial("tcp", proxy)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// Authenticated and kept: each holds its place.
			io.WriteString(c, "GET http://127.0.0.1:"+hp+"/ HTTP/1.1\r\nHost: x\r\nProxy-Authorization: "+basic(testUser, testPassword)+"\r\n\r\n")
			c.SetDeadline(time.Now().Add(30 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("connection %d: %v %v", len(held), resp, err)
			}
			held = append(held, c)
		}
		got := rawExchange(t, proxy, "GET http://127.0.0.1:"+hp+"/ HTTP/1.1\r\nHost: x\r\nProxy-Authorization: "+basic(testUser, testPassword)+"\r\n\r\n", false)
		want := exchange{Status: 503, Reason: "too-many-connections", Body: "egress-proxy: too-many-connections: the proxy holds maxConnections connections", Closed: true}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("a third connection with maxConnections 2: -want +got:\n%s", diff)
		}
	})
}

// TestRevocation: a configuration without a user closes at once the
// tunnels and the kept-alive connections that user opened; another
// user's go on.
func TestRevocation(t *testing.T) {
	_, echoPort := startEcho(t)
	httpPort, _ := upstreamSeen(t)
	cfg := testConfig(t, echoPort, httpPort)
	cfg.Users = append(cfg.Users, vmconfig.User{Name: "bob", PasswordHash: hashOf(t, "bobsPasswordOf24Chars000")})
	s, proxy := startProxy(t, cfg)
	target := hostPort("127.0.0.1", echoPort)
	_, aliceTunnel := connectThrough(t, proxy, target, basic(testUser, testPassword), nil)
	_, bobTunnel := connectThrough(t, proxy, target, basic("bob", "bobsPasswordOf24Chars000"), nil)
	kept, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	kept.SetDeadline(time.Now().Add(30 * time.Second))
	io.WriteString(kept, "GET http://127.0.0.1:"+strconv.Itoa(httpPort)+"/ HTTP/1.1\r\nHost: x\r\nProxy-Authorization: "+basic(testUser, testPassword)+"\r\n\r\n")
	kr := bufio.NewReader(kept)
	if resp, err := http.ReadResponse(kr, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("a kept-alive GET: %v %v", resp, err)
	} else {
		io.Copy(io.Discard, resp.Body)
	}

	next := cfg
	next.Generation = 2
	next.Users = cfg.Users[1:] // alice's password is revoked
	if err := s.Apply(next); err != nil {
		t.Fatal(err)
	}
	type after struct{ AliceTunnel, BobTunnel, AliceKeptAlive bool }
	got := after{AliceTunnel: echoes(t, aliceTunnel, "revoked?") == nil, BobTunnel: echoes(t, bobTunnel, "kept") == nil}
	_, err = kr.ReadByte()
	got.AliceKeptAlive = err == nil || errors.Is(err, os.ErrDeadlineExceeded)
	if diff := cmp.Diff(after{BobTunnel: true}, got); diff != "" {
		t.Errorf("carrying after alice's removal: -want +got:\n%s", diff)
	}
}

// TestExpectContinue: a client that waits for 100 Continue before its
// body gets it from the proxy, and its request is carried whole.
func TestExpectContinue(t *testing.T) {
	httpPort, seen := upstreamSeen(t)
	_, proxy := startProxy(t, testConfig(t, httpPort))
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	io.WriteString(c, "POST http://127.0.0.1:"+strconv.Itoa(httpPort)+"/upload HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\nProxy-Authorization: "+basic(testUser, testPassword)+"\r\n\r\n")
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("before the body: %q %v, want 100 Continue", line, err)
	}
	br.ReadString('\n')
	io.WriteString(c, "hello")
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("after the body: %v %v", resp, err)
	}
	if r := <-seen; r.URL.Path != "/upload" || r.ContentLength != 5 {
		t.Errorf("the destination got %s %s of %d bytes", r.Method, r.URL.Path, r.ContentLength)
	}
}

// recordingOrigin is a destination on loopback that records the request
// targets it serves, in order, and answers each "hello".
func recordingOrigin(t *testing.T) (port int, served func() []string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.RequestURI())
		mu.Unlock()
		io.WriteString(w, "hello\n")
	}))
	t.Cleanup(up.Close)
	return up.Listener.Addr().(*net.TCPAddr).Port, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// pipelined is what a client saw of requests sent in one write: the
// status and X-Egress-Error of each answer, in order, and whether the
// connection was closed after the last.
type pipelined struct {
	Answers []string
	Closed  bool
}

// sendPipelined writes raw in one write and reads answers until the
// connection closes or stays silent.
func sendPipelined(t *testing.T, proxy, raw string) pipelined {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	var got pipelined
	for {
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			got.Closed = !errors.Is(err, os.ErrDeadlineExceeded)
			return got
		}
		io.Copy(io.Discard, resp.Body)
		got.Answers = append(got.Answers, strconv.Itoa(resp.StatusCode)+" "+resp.Header.Get("X-Egress-Error"))
	}
}

// TestPipelinedFraming: a request with two framings is refused and its
// connection closed wherever it stands in a pipeline (RFC 9112 §6.1,
// §6.3), so the bytes after it are never read as a request of their own.
func TestPipelinedFraming(t *testing.T) {
	port, served := recordingOrigin(t)
	origin := "http://127.0.0.1:" + strconv.Itoa(port)
	auth := "Proxy-Authorization: " + basic(testUser, testPassword) + "\r\n"
	get := func(q string) string {
		return "GET " + origin + "/echo?" + q + " HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n"
	}
	smuggler := "POST " + origin + "/upload HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nG"
	third := "ET " + origin + "/echo?third=1 HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n"
	cases := map[string]struct {
		reason string
		raw    string
		want   pipelined
		served []string
	}{
		"second of three": {
			reason: "the issue's stream: request 2 carries both framings, its 'body' starts request 3",
			raw:    get("n=1") + smuggler + third,
			want:   pipelined{Answers: []string{"200 ", "400 bad-framing"}, Closed: true},
			served: []string{"GET /echo?n=1"},
		},
		"third of three": {
			reason: "the position in the pipeline does not matter",
			raw:    get("n=1") + get("n=2") + smuggler + third,
			want:   pipelined{Answers: []string{"200 ", "200 ", "400 bad-framing"}, Closed: true},
			served: []string{"GET /echo?n=1", "GET /echo?n=2"},
		},
		"first": {
			reason: "sent alone or first, as before",
			raw:    smuggler + third,
			want:   pipelined{Answers: []string{"400 bad-framing"}, Closed: true},
		},
		"Transfer-Encoding first, Content-Length after, pipelined": {
			reason: "the order of the two fields does not matter",
			raw:    get("n=1") + "POST " + origin + "/upload HTTP/1.1\r\nHost: x\r\n" + auth + "Transfer-Encoding: chunked\r\nContent-Length: 6\r\n\r\n0\r\n\r\nG" + third,
			want:   pipelined{Answers: []string{"200 ", "400 bad-framing"}, Closed: true},
			served: []string{"GET /echo?n=1"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := len(served())
			_, proxy := startProxy(t, testConfig(t, port))
			got := sendPipelined(t, proxy, tc.raw)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nthe client saw -want +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.served, served()[before:], cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nthe origin served -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestRefusalBeforeTheBody: a request refused before its body is read
// (no credentials, a denied destination) gets its answer however big the
// body: the engine half-closes and reads what the client still sends,
// rather than closing on unread bytes, which sends a reset that destroys
// the answer in flight (RFC 9112 §9.6). The client here writes its whole
// body before it reads, as many do.
func TestRefusalBeforeTheBody(t *testing.T) {
	t.Parallel() // seconds of waiting on the wire, none of it CPU
	port, served := recordingOrigin(t)
	_, proxy := startProxy(t, testConfig(t, port))
	body := bytes.Repeat([]byte("x"), 30<<20)
	cases := map[string]string{
		"no credentials":     "POST http://127.0.0.1:" + strconv.Itoa(port) + "/up HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n",
		"denied destination": "POST http://169.254.169.254:" + strconv.Itoa(port) + "/up HTTP/1.1\r\nHost: x\r\nProxy-Authorization: " + basic(testUser, testPassword) + "\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n",
		"wrong credentials":  "POST http://127.0.0.1:" + strconv.Itoa(port) + "/up HTTP/1.1\r\nHost: x\r\nProxy-Authorization: " + basic(testUser, "nope") + "\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n",
	}
	// Before the lingering close, one try in three ended in a reset:
	// ten tries of each case miss that with odds of (2/3)^30 together.
	const tries = 10
	// A group, so that its parallel cases end before the origin is
	// asked what it served.
	t.Run("cases", func(t *testing.T) {
		for name, head := range cases {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				answered := map[string]int{}
				for range tries {
					c, err := net.Dial("tcp", proxy)
					if err != nil {
						t.Fatal(err)
					}
					c.SetDeadline(time.Now().Add(30 * time.Second))
					// A client such as curl gives up with "connection reset"
					// when its upload is reset, and never reads the answer.
					if _, err := c.Write(append([]byte(head), body...)); err != nil {
						answered["reset while sending"]++
						c.Close()
						continue
					}
					resp, err := http.ReadResponse(bufio.NewReader(c), nil)
					if err != nil {
						answered["no answer"]++
					} else {
						answered[strconv.Itoa(resp.StatusCode)]++
					}
					c.Close()
				}
				want := map[string]int{"407": tries}
				if name == "denied destination" {
					want = map[string]int{"403": tries}
				}
				if diff := cmp.Diff(want, answered); diff != "" {
					t.Errorf("answers the client read, of %d tries: -want +got:\n%s", tries, diff)
				}
			})
		}
	})
	if got := served(); len(got) != 0 {
		t.Errorf("the origin served %q", got)
	}
}

// TestExpectContinueEndToEnd: Expect: 100-continue goes to the origin,
// and the client gets the origin's 100 or its final answer (RFC 9110
// §10.1.1): an origin that refuses the upload at once receives none of it.
func TestExpectContinueEndToEnd(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type origin struct {
		Expect    string
		BodyBytes int64
	}
	seen := make(chan origin, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			seen <- origin{Expect: "unreadable: " + err.Error()}
			return
		}
		io.WriteString(c, "HTTP/1.1 413 Content Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		// Whatever comes before the proxy closes is body the origin
		// refused.
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		n, _ := io.Copy(io.Discard, br)
		seen <- origin{Expect: req.Header.Get("Expect"), BodyBytes: n}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	_, proxy := startProxy(t, testConfig(t, port))
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	const size = 4 << 20
	io.WriteString(c, "POST http://127.0.0.1:"+strconv.Itoa(port)+"/upload HTTP/1.1\r\nHost: x\r\nContent-Length: "+strconv.Itoa(size)+
		"\r\nExpect: 100-continue\r\nProxy-Authorization: "+basic(testUser, testPassword)+"\r\n\r\n")
	br := bufio.NewReader(c)
	var statuses []int
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("after %v: %v", statuses, err)
		}
		statuses = append(statuses, resp.StatusCode)
		if resp.StatusCode != http.StatusContinue {
			break
		}
		// The client sends its body once told to.
		go c.Write(bytes.Repeat([]byte("x"), size))
	}
	type result struct {
		Statuses []int
		Origin   origin
	}
	want := result{Statuses: []int{413}, Origin: origin{Expect: "100-continue"}}
	if diff := cmp.Diff(want, result{statuses, <-seen}); diff != "" {
		t.Errorf("an upload the origin refuses at once: -want +got:\n%s", diff)
	}
}

// TestOriginRelayedContinue: the origin's 100 Continue is relayed, and the
// upload carried whole after it.
func TestOriginRelayedContinue(t *testing.T) {
	httpPort, seen := upstreamSeen(t)
	_, proxy := startProxy(t, testConfig(t, httpPort))
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	io.WriteString(c, "POST http://127.0.0.1:"+strconv.Itoa(httpPort)+"/upload HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\nProxy-Authorization: "+basic(testUser, testPassword)+"\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusContinue {
		t.Fatalf("before the body: %v %v, want 100 Continue", resp, err)
	}
	io.WriteString(c, "hello")
	resp, err = http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("after the body: %v %v", resp, err)
	}
	r := <-seen
	if got := []string{r.URL.Path, strconv.FormatInt(r.ContentLength, 10), r.Header.Get("Expect")}; !slices.Equal(got, []string{"/upload", "5", "100-continue"}) {
		t.Errorf("the destination got %q, want /upload of 5 bytes with its Expect", got)
	}
}

// TestOriginSeesWhatTheClientSent: the engine adds no field the client
// did not send (net/http's Transport would add its User-Agent).
func TestOriginSeesWhatTheClientSent(t *testing.T) {
	t.Parallel() // seconds of waiting on the wire, none of it CPU
	httpPort, seen := upstreamSeen(t)
	_, proxy := startProxy(t, testConfig(t, httpPort))
	got := rawExchange(t, proxy, "GET http://127.0.0.1:"+strconv.Itoa(httpPort)+"/ HTTP/1.1\r\nHost: x\r\nProxy-Authorization: "+basic(testUser, testPassword)+"\r\n\r\n", false)
	if got.Status != 200 {
		t.Fatalf("GET: %+v", got)
	}
	r := <-seen
	if ua, ok := r.Header["User-Agent"]; ok {
		t.Errorf("the destination saw User-Agent %q; the client sent none", ua)
	}
}

// TestUnsolicitedSwitch: a 101 to a request that asked for no upgrade is
// not HTTP the engine can relay: 502, and the connection closes.
func TestUnsolicitedSwitch(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				http.ReadRequest(bufio.NewReader(c))
				io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: mine\r\n\r\n")
				time.Sleep(5 * time.Second)
			}()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	_, proxy := startProxy(t, testConfig(t, port))
	got := rawExchange(t, proxy, "GET http://127.0.0.1:"+strconv.Itoa(port)+"/ HTTP/1.1\r\nHost: x\r\nProxy-Authorization: "+basic(testUser, testPassword)+"\r\n\r\n", false)
	want := exchange{Status: 502, Reason: "upstream-failed", Body: "egress-proxy: upstream-failed: the destination's answer was not HTTP this proxy can read", Closed: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("an origin's 101 to a plain GET: -want +got:\n%s", diff)
	}
}

// TestRequestsTheEngineCannotRead: requests that are the client's fault
// or not HTTP/1.x get an answer that says so, never a gateway error, and
// their access line names no destination (none was contacted).
func TestRequestsTheEngineCannotRead(t *testing.T) {
	httpPort, seen := upstreamSeen(t)
	hp := strconv.Itoa(httpPort)
	auth := "Proxy-Authorization: " + basic(testUser, testPassword) + "\r\n"
	type line struct {
		Protocol, Method, Host, Reason string
		Status                         int
	}
	cases := map[string]struct {
		reason string
		raw    string
		want   exchange
		line   line
	}{
		"space before the colon": {
			reason: "RFC 9112 §5.1: no whitespace between a field name and its colon; a server MUST answer 400",
			raw:    "GET http://127.0.0.1:" + hp + "/ HTTP/1.1\r\nHost: x\r\nX-Foo : bar\r\n" + auth + "\r\n",
			want:   exchange{Status: 400, Reason: "bad-request", Body: "egress-proxy: bad-request: the request is not HTTP/1.1 this proxy can read", Closed: true},
			line:   line{Protocol: "http", Method: "GET", Reason: "bad-request", Status: 400},
		},
		"HTTP/2 prior knowledge": {
			reason: "the HTTP/2 preface is answered for what it is, as Squid does (505)",
			raw:    "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
			want:   exchange{Status: 505, Reason: "version-not-supported", Body: "egress-proxy: version-not-supported: only HTTP/1.0 and HTTP/1.1 are served (no HTTP/2 prior knowledge)", Closed: true},
			line:   line{Protocol: "http", Method: "PRI", Reason: "version-not-supported", Status: 505},
		},
		"a transfer coding besides chunked": {
			reason: "RFC 9112 §6.1: a transfer coding the server does not understand is 501",
			raw:    "POST http://127.0.0.1:" + hp + "/gz HTTP/1.1\r\nHost: x\r\n" + auth + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
			want:   exchange{Status: 501, Reason: "transfer-coding-not-supported", Body: "egress-proxy: transfer-coding-not-supported: the only transfer coding carried is chunked", Closed: true},
			line:   line{Protocol: "http", Method: "POST", Reason: "transfer-coding-not-supported", Status: 501},
		},
		"chunked not last": {
			reason: "RFC 9112 §6.3: chunked not the final coding of a request is 400, and close",
			raw:    "POST http://127.0.0.1:" + hp + "/gz HTTP/1.1\r\nHost: x\r\n" + auth + "Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n",
			want:   exchange{Status: 400, Reason: "bad-framing", Body: "egress-proxy: bad-framing: the request's length is ambiguous (RFC 9112 §6.3)", Closed: true},
			line:   line{Protocol: "http", Method: "POST", Reason: "bad-framing", Status: 400},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(t, httpPort)
			cfg.AccessLog = true
			s, proxy := startProxy(t, cfg)
			got := rawExchange(t, proxy, tc.raw, false)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
			var lines []line
			for _, l := range s.access.page(0).Lines {
				lines = append(lines, line{l.Protocol, l.Method, l.Host, l.Reason, l.Status})
			}
			if diff := cmp.Diff([]line{tc.line}, lines); diff != "" {
				t.Errorf("%s\naccess lines -want +got:\n%s", tc.reason, diff)
			}
			select {
			case r := <-seen:
				t.Errorf("the destination got %s %s", r.Method, r.URL)
			default:
			}
		})
	}
}

// TestMalformedTrailerIsRefused: net/http reads a trailer field with a
// space before its colon as a field, but RFC 9112 §5.1 makes the message
// invalid (FuzzPipelined found it, corpus 3f4801ca183e4daf). The body does
// not end: the origin serves nothing, and the client gets 400 and a
// closed connection, as for a malformed chunk (Squid answers 400 too).
func TestMalformedTrailerIsRefused(t *testing.T) {
	origin := newFuzzOrigin(t)
	_, proxy := startProxy(t, testConfig(t, origin.port))
	auth := "Proxy-Authorization: " + basic(testUser, testPassword) + "\r\n"
	for name, trailer := range map[string]string{
		"space before the colon": "X-T : v\r\n",
		"no name":                "0 :\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			origin.reset()
			raw := "POST http://127.0.0.1:" + strconv.Itoa(origin.port) + "/up HTTP/1.1\r\nHost: x\r\n" + auth +
				"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n" + trailer + "\r\n"
			got := rawExchange(t, proxy, raw, false)
			want := exchange{Status: 400, Reason: "bad-body", Body: "egress-proxy: bad-body: the request body is malformed", Closed: true}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
			if seen := origin.served(); len(seen) != 0 {
				t.Errorf("the origin served %v, want nothing", seen)
			}
		})
	}
}
