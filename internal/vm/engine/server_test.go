package engine

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

var challenge = `Basic realm="egress-proxy"`

func TestConnect(t *testing.T) {
	_, echoPort := startEcho(t)
	closedPort := freePort(t)
	right := basic(testUser, testPassword)
	cases := map[string]struct {
		reason string
		// config changes the test's configuration.
		config func(*vmconfig.Config)
		target string
		auth   string
		want   answer
	}{
		"right credentials": {
			reason: "a client with the proxy's credentials gets its tunnel",
			target: hostPort("127.0.0.1", echoPort), auth: right,
			want: answer{Status: 200},
		},
		"missing credentials": {
			reason: "a client without credentials is asked for them",
			target: hostPort("127.0.0.1", echoPort),
			want:   answer{Status: 407, Challenge: challenge},
		},
		"wrong password": {
			reason: "a wrong password is 407 too, not 401, so a client says the proxy refused it, not the site",
			target: hostPort("127.0.0.1", echoPort), auth: basic(testUser, testPassword+"x"),
			want: answer{Status: 407, Challenge: challenge},
		},
		"unknown user": {
			reason: "a user the proxy does not hold is refused as a wrong password is",
			target: hostPort("127.0.0.1", echoPort), auth: basic("mallory", testPassword),
			want: answer{Status: 407, Challenge: challenge},
		},
		"another scheme": {
			reason: "only Basic credentials are read",
			target: hostPort("127.0.0.1", echoPort), auth: "Bearer " + testPassword,
			want: answer{Status: 407, Challenge: challenge},
		},
		"not base64": {
			reason: "credentials that do not decode are missing ones",
			target: hostPort("127.0.0.1", echoPort), auth: "Basic !!!",
			want: answer{Status: 407, Challenge: challenge},
		},
		"port not allowed": {
			reason: "CONNECT reaches only connectPorts",
			config: func(c *vmconfig.Config) { c.ConnectPorts = []int{443} },
			target: hostPort("127.0.0.1", echoPort), auth: right,
			want: answer{Status: 403},
		},
		"credentials before the port": {
			reason: "a client without credentials learns nothing of the rules: 407 before 403",
			config: func(c *vmconfig.Config) { c.ConnectPorts = []int{443} },
			target: hostPort("127.0.0.1", echoPort),
			want:   answer{Status: 407, Challenge: challenge},
		},
		"loopback denied": {
			reason: "loopback is in the deny list unless allowed, as on a VM",
			config: func(c *vmconfig.Config) { c.AllowDestinations = nil },
			target: hostPort("127.0.0.1", echoPort), auth: right,
			want: answer{Status: 403},
		},
		"metadata server denied": {
			reason: "the metadata server is never reachable",
			config: func(c *vmconfig.Config) { c.ConnectPorts = []int{80} },
			target: "169.254.169.254:80", auth: right,
			want: answer{Status: 403},
		},
		"IPv6 loopback denied": {
			reason: "the allowance of 127.0.0.1 is not one of ::1",
			target: hostPort("::1", echoPort), auth: right,
			want: answer{Status: 403},
		},
		"IPv4-mapped metadata server denied": {
			reason: "an IPv4-mapped IPv6 address is checked as the IPv4 one",
			config: func(c *vmconfig.Config) { c.ConnectPorts = []int{80} },
			target: "[::ffff:169.254.169.254]:80", auth: right,
			want: answer{Status: 403},
		},
		"a name resolving to an allowed address": {
			reason: "names are resolved, checked and dialled by address",
			target: hostPort("target.test", echoPort), auth: right,
			want: answer{Status: 200},
		},
		"a name resolving to a denied address among allowed ones": {
			reason: "every address of a name is checked: one denied refuses the name",
			target: hostPort("mixed.test", echoPort), auth: right,
			want: answer{Status: 403},
		},
		"a name that does not resolve": {
			reason: "no address, no tunnel",
			target: hostPort("nowhere.test", echoPort), auth: right,
			want: answer{Status: 502},
		},
		"nothing listening": {
			reason: "a refused dial is a bad gateway",
			config: func(c *vmconfig.Config) { c.ConnectPorts = []int{closedPort} },
			target: hostPort("127.0.0.1", closedPort), auth: right,
			want: answer{Status: 502},
		},
		"no port": {
			reason: "CONNECT needs host:port",
			target: "127.0.0.1", auth: right,
			want: answer{Status: 400},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(t, echoPort)
			if tc.config != nil {
				tc.config(&cfg)
			}
			_, proxy := startProxy(t, cfg)
			got, conn := connectThrough(t, proxy, tc.target, tc.auth, nil)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("%s\nCONNECT %s: -want +got:\n%s", tc.reason, tc.target, diff)
			}
			if got.Status == 200 {
				if err := echoes(t, conn, "through the tunnel"); err != nil {
					t.Errorf("%s\nthe tunnel does not carry bytes: %v", tc.reason, err)
				}
			}
		})
	}
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestPipelinedBytes: a client that sends its first bytes with the CONNECT
// head, without waiting for the 200, must not lose them in the proxy's
// buffer.
func TestPipelinedBytes(t *testing.T) {
	_, echoPort := startEcho(t)
	_, proxy := startProxy(t, testConfig(t, echoPort))
	hello := strings.Repeat("ClientHello", 100)
	got, conn := connectThrough(t, proxy, hostPort("127.0.0.1", echoPort), basic(testUser, testPassword), []byte(hello))
	if got.Status != 200 {
		t.Fatalf("CONNECT: %d", got.Status)
	}
	buf := make([]byte, len(hello))
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != hello {
		t.Fatalf("the bytes sent with the CONNECT head came back as %q (%v), want %d bytes of ClientHello", buf, err, len(hello))
	}
}

func TestSourceRanges(t *testing.T) {
	_, echoPort := startEcho(t)
	cases := map[string]struct {
		reason  string
		sources []string
		want    bool
	}{
		"loopback allowed":   {"a client in a range is served", []string{"127.0.0.0/8"}, true},
		"elsewhere only":     {"a client outside every range is closed before a byte is read", []string{"10.0.0.0/8", "2001:db8::/32"}, false},
		"exactly the client": {"a /32 is one address", []string{"127.0.0.1/32"}, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(t, echoPort)
			cfg.AllowedSourceRanges = tc.sources
			s, proxy := startProxy(t, cfg)
			c, err := net.Dial("tcp", proxy)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second))
			io.WriteString(c, "CONNECT "+hostPort("127.0.0.1", echoPort)+" HTTP/1.1\r\nProxy-Authorization: "+basic(testUser, testPassword)+"\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			served := err == nil && resp.StatusCode == 200
			if served != tc.want {
				t.Errorf("%s\nserved = %v (%v), want %v", tc.reason, served, err, tc.want)
			}
			if want := map[bool]int64{true: 1, false: 0}[tc.want]; s.Stats().Connections != want {
				t.Errorf("%s\nconnections counted: %d, want %d", tc.reason, s.Stats().Connections, want)
			}
		})
	}
}

// TestPlainHTTP: a plain request is forwarded without the hop-by-hop
// headers either way, and without the client's credentials.
func TestPlainHTTP(t *testing.T) {
	seen := make(chan http.Header, 1)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Clone()
		w.Header().Set("Connection", "X-Upstream-Hop")
		w.Header().Set("X-Upstream-Hop", "1")
		w.Header().Set("X-Upstream-End", "kept")
		io.WriteString(w, "hello from "+r.URL.Path)
	}))
	defer upstream.Close()
	port := upstream.Listener.Addr().(*net.TCPAddr).Port
	_, proxy := startProxy(t, testConfig(t, port))
	proxyURL := "http://" + proxy

	send := func(t *testing.T, auth string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, upstream.URL+"/path", nil)
		req.Header.Set("Connection", "X-Client-Hop")
		req.Header.Set("X-Client-Hop", "1")
		req.Header.Set("Proxy-Connection", "keep-alive")
		req.Header.Set("Keep-Alive", "timeout=5")
		req.Header.Set("X-Client-End", "kept")
		if auth != "" {
			req.Header.Set("Proxy-Authorization", auth)
		}
		c, err := net.Dial("tcp", proxy)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(30 * time.Second))
		if err := req.WriteProxy(c); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), req)
		if err != nil {
			t.Fatalf("GET through %s: %v", proxyURL, err)
		}
		return resp
	}

	t.Run("forwarded", func(t *testing.T) {
		resp := send(t, basic(testUser, testPassword))
		body, _ := io.ReadAll(resp.Body)
		type seenHeaders struct{ ClientEnd, ClientHop, ProxyConnection, ProxyAuthorization, KeepAlive, Connection string }
		h := <-seen
		gotUp := seenHeaders{h.Get("X-Client-End"), h.Get("X-Client-Hop"), h.Get("Proxy-Connection"), h.Get("Proxy-Authorization"), h.Get("Keep-Alive"), h.Get("Connection")}
		if diff := cmp.Diff(seenHeaders{ClientEnd: "kept"}, gotUp); diff != "" {
			t.Errorf("headers the destination got (only end-to-end ones, never the credentials): -want +got:\n%s", diff)
		}
		type back struct{ Status, Body, UpstreamEnd, UpstreamHop string }
		got := back{resp.Status, string(body), resp.Header.Get("X-Upstream-End"), resp.Header.Get("X-Upstream-Hop")}
		if diff := cmp.Diff(back{"200 OK", "hello from /path", "kept", ""}, got); diff != "" {
			t.Errorf("the answer the client got: -want +got:\n%s", diff)
		}
	})
	t.Run("without credentials", func(t *testing.T) {
		resp := send(t, "")
		got := answer{resp.StatusCode, resp.Header.Get("Proxy-Authenticate")}
		if diff := cmp.Diff(answer{407, challenge}, got); diff != "" {
			t.Errorf("GET without credentials: -want +got:\n%s", diff)
		}
		select {
		case <-seen:
			t.Errorf("a request without credentials reached the destination")
		default:
		}
	})
}

// TestReload: a new configuration applies to new requests; a tunnel
// opened with a password the new one no longer holds is closed (see
// TestRevocation), and one opened with a password it keeps goes on.
func TestReload(t *testing.T) {
	_, echoPort := startEcho(t)
	cfg := testConfig(t, echoPort)
	s, proxy := startProxy(t, cfg)
	target := hostPort("127.0.0.1", echoPort)
	old := basic(testUser, testPassword)
	if got, _ := connectThrough(t, proxy, target, old, nil); got.Status != 200 {
		t.Fatalf("before the reload: %d", got.Status)
	}
	_, open := connectThrough(t, proxy, target, old, nil)

	// The control plane salts each rendering afresh: a new hash of the
	// same password (a PATCH of the ranges, say) is not a rotation.
	kept := cfg
	kept.Generation = 2
	kept.Users = []vmconfig.User{{Name: testUser, PasswordHash: hashOf(t, testPassword)}}
	if kept.Users[0].PasswordHash == cfg.Users[0].PasswordHash {
		t.Fatal("two hashes of one password are the same: the salt is not fresh")
	}
	if err := s.Apply(kept); err != nil {
		t.Fatal(err)
	}
	if err := echoes(t, open, "still here"); err != nil {
		t.Errorf("the tunnel opened before a reload that keeps its password: %v", err)
	}

	next := cfg
	next.Generation = 2
	next.Users = []vmconfig.User{{Name: "bob", PasswordHash: hashOf(t, "anotherPasswordOf24Chars")}}
	if err := s.Apply(next); err != nil {
		t.Fatal(err)
	}
	if err := echoes(t, open, "revoked"); err == nil {
		t.Errorf("the tunnel opened with the password the reload removed still carries data")
	}
	type after struct {
		OldPassword, NewPassword answer
		Generation               int64
	}
	oldAnswer, _ := connectThrough(t, proxy, target, old, nil)
	newAnswer, _ := connectThrough(t, proxy, target, basic("bob", "anotherPasswordOf24Chars"), nil)
	got := after{oldAnswer, newAnswer, s.Stats().Generation}
	want := after{OldPassword: answer{407, challenge}, NewPassword: answer{Status: 200}, Generation: 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after the reload: -want +got:\n%s", diff)
	}
	noUsers := next
	noUsers.Generation, noUsers.Users = 3, nil
	if err := s.Apply(noUsers); err == nil {
		t.Errorf("a configuration without users at generation 3 was applied")
	}
	if s.Stats().Generation != 2 {
		t.Errorf("a refused configuration changed the generation to %d", s.Stats().Generation)
	}
}

// TestCounters: bytes through a tunnel and a plain request are counted,
// as are connections and the tunnels open.
func TestCounters(t *testing.T) {
	_, echoPort := startEcho(t)
	s, proxy := startProxy(t, testConfig(t, echoPort))
	_, c := connectThrough(t, proxy, hostPort("127.0.0.1", echoPort), basic(testUser, testPassword), []byte("12345"))
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadFull(c, make([]byte, 5)); err != nil {
		t.Fatalf("the pipelined bytes' echo: %v", err)
	}
	if err := echoes(t, c, strings.Repeat("x", 1<<20)); err != nil {
		t.Fatal(err)
	}
	if s.Stats().ActiveTunnels != 1 {
		t.Errorf("active tunnels with one open: %d", s.Stats().ActiveTunnels)
	}
	c.Close()
	waitUntil(t, "the tunnel to close", func() bool { return s.Stats().ActiveTunnels == 0 })
	// The five pipelined bytes count in, and out once echoed.
	// The month's bytes are both ways together.
	want := vmconfig.Stats{Generation: 1, BytesIn: 1<<20 + 5, BytesOut: 1<<20 + 5, Connections: 1, Requests: vmconfig.ProtocolCounts{Connect: 1},
		Month: time.Now().UTC().Format("2006-01"), MonthBytes: 2 * (1<<20 + 5)}
	if diff := cmp.Diff(want, s.Stats(), cmpopts.IgnoreFields(vmconfig.Stats{}, "Since")); diff != "" {
		t.Errorf("counters after 1 MiB and 5 bytes each way: -want +got:\n%s", diff)
	}
}

// TestIdleTimeout: a tunnel through which nothing moves is closed.
func TestIdleTimeout(t *testing.T) {
	_, echoPort := startEcho(t)
	cfg := testConfig(t, echoPort)
	cfg.IdleTimeout = vmconfig.Duration(50 * time.Millisecond)
	s, proxy := startProxy(t, cfg)
	_, c := connectThrough(t, proxy, hostPort("127.0.0.1", echoPort), basic(testUser, testPassword), nil)
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if n, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("reading an idle tunnel: %d bytes, %v; want it closed (EOF)", n, err)
	}
	waitUntil(t, "the tunnel to be counted closed", func() bool { return s.Stats().ActiveTunnels == 0 })
}

// TestShutdown: a drain lets an open tunnel go on and takes no new
// connection; its deadline closes what is left.
func TestShutdown(t *testing.T) {
	_, echoPort := startEcho(t)
	s, proxy := startProxy(t, testConfig(t, echoPort))
	_, c := connectThrough(t, proxy, hostPort("127.0.0.1", echoPort), basic(testUser, testPassword), nil)
	ctx, cancel := context.WithCancel(context.Background())
	drained := make(chan error, 1)
	go func() { drained <- s.Shutdown(ctx) }()
	waitUntil(t, "the listener to close", func() bool {
		c, err := net.Dial("tcp", proxy)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	if err := echoes(t, c, "draining"); err != nil {
		t.Errorf("an open tunnel during the drain: %v", err)
	}
	cancel()
	if err := <-drained; !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown past its deadline: %v, want context.Canceled", err)
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Errorf("the tunnel is still open after the drain's deadline")
	}
}

func TestStats(t *testing.T) {
	cfg := testConfig(t, 443)
	cfg.StatsListen = hostPort("127.0.0.1", freePort(t))
	startProxy(t, cfg)
	var resp *http.Response
	waitUntil(t, "the stats to be served", func() bool {
		var err error
		resp, err = http.Get("http://" + cfg.StatsListen + "/stats")
		return err == nil
	})
	defer resp.Body.Close()
	c, err := io.ReadAll(resp.Body)
	if err != nil || !strings.Contains(string(c), `"generation":1`) || !strings.Contains(string(c), `"activeTunnels":0`) {
		t.Errorf("GET /stats: %s %v", c, err)
	}
	for _, addr := range []string{"0.0.0.0:9", "192.0.2.1:9", ":9"} {
		cfg.StatsListen = addr
		if _, err := New(cfg, Options{}); err == nil {
			t.Errorf("statsListen %s was accepted: the counters must stay on loopback", addr)
		}
	}
}

func TestReadConfig(t *testing.T) {
	cases := map[string]struct {
		json    string
		wantErr string
	}{
		"complete":       {json: `{"listen":":3128","users":[{"name":"a","passwordHash":"sha256:AA:BB"}],"allowedSourceRanges":["10.0.0.0/8"],"connectPorts":[443],"idleTimeout":"5m"}`},
		"unknown field":  {json: `{"listen":":3128","users":[],"extra":1}`, wantErr: `unknown field "extra"`},
		"no users":       {json: `{"generation":2,"listen":":3128","allowedSourceRanges":["10.0.0.0/8"],"connectPorts":[443]}`, wantErr: "users: none"},
		"warm, no users": {json: `{"generation":0,"listen":":3128","users":[],"allowedSourceRanges":["10.0.0.0/8"],"connectPorts":[443]}`},
		"bad range":      {json: `{"users":[{"name":"a","passwordHash":"sha256:AA:BB"}],"allowedSourceRanges":["10.0.0.0"],"connectPorts":[443]}`, wantErr: "is not a CIDR"},
		"bad duration":   {json: `{"idleTimeout":"soon"}`, wantErr: "not a duration"},
		"plain password": {json: `{"users":[{"name":"a","passwordHash":"hunter2"}],"allowedSourceRanges":["10.0.0.0/8"],"connectPorts":[443]}`,
			wantErr: "passwordHash is not sha256:SALT:DIGEST"},
	}
	for name, tc := range cases {
		_, err := ReadConfig([]byte(tc.json))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if (tc.wantErr == "") != (err == nil) || !strings.Contains(got, tc.wantErr) {
			t.Errorf("%s: ReadConfig: %v, want an error holding %q", name, err, tc.wantErr)
		}
	}
}

// waitUntil polls cond, for states that settle in another goroutine; the
// bound only stops a broken test.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestReloadRanges: a reload that takes a source's range away closes the
// tunnels from that source and refuses its kept-alive plain requests; a
// reload that keeps the range keeps the tunnel.
func TestReloadRanges(t *testing.T) {
	_, echoPort := startEcho(t)
	cfg := testConfig(t, echoPort)
	s, proxy := startProxy(t, cfg)
	target := hostPort("127.0.0.1", echoPort)
	auth := basic(testUser, testPassword)
	_, open := connectThrough(t, proxy, target, auth, nil)

	kept := cfg
	kept.Generation = 2
	kept.AllowedSourceRanges = []string{"127.0.0.1/32"}
	if err := s.Apply(kept); err != nil {
		t.Fatal(err)
	}
	if err := echoes(t, open, "kept"); err != nil {
		t.Errorf("a tunnel whose source is still allowed: %v", err)
	}
	removed := kept
	removed.Generation = 3
	removed.AllowedSourceRanges = []string{"127.0.0.2/32"}
	if err := s.Apply(removed); err != nil {
		t.Fatal(err)
	}
	if err := echoes(t, open, "gone"); err == nil {
		t.Errorf("a tunnel from a source no longer allowed still carries data")
	}
	// Apply closes the tunnel's connections; its goroutine counts it out
	// a moment later.
	waitUntil(t, "no active tunnel after the range was removed", func() bool { return s.Stats().ActiveTunnels == 0 })
}

// TestWarmNoUsers: generation 0 without users (a warm pool's VM) serves,
// and answers every request 407, with credentials or without.
func TestWarmNoUsers(t *testing.T) {
	_, echoPort := startEcho(t)
	cfg := testConfig(t, echoPort)
	cfg.Generation, cfg.Users = 0, nil
	_, proxy := startProxy(t, cfg)
	target := hostPort("127.0.0.1", echoPort)
	type answers struct{ Without, With answer }
	without, _ := connectThrough(t, proxy, target, "", nil)
	with, _ := connectThrough(t, proxy, target, basic(testUser, testPassword), nil)
	want := answers{answer{407, challenge}, answer{407, challenge}}
	if diff := cmp.Diff(want, answers{without, with}); diff != "" {
		t.Errorf("a warm VM's answers (-want +got):\n%s", diff)
	}
}
