package engine

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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
	_, echoPort := startEcho(t)
	httpPort, seen := upstreamSeen(t)
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
			want:    exchange{Status: 400, Reason: "bad-framing", Body: "egress-proxy: bad-framing: Content-Length and Transfer-Encoding together", Closed: true},
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
			cfg := testConfig(t, echoPort, httpPort, v6Port)
			cfg.AllowDestinations = []string{"127.0.0.1/32", "::1/128", "fe80::/10"}
			_, proxy := startProxy(t, cfg)
			got := rawExchange(t, proxy, tc.raw, tc.halfClose)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n%q: -want +got:\n%s", tc.reason, firstLine(tc.raw), diff)
			}
			select {
			case r := <-seen:
				// A request of an earlier case may arrive late: only this
				// case's path counts.
				if !tc.reached && strings.Contains(tc.raw, r.URL.Path+" ") {
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
