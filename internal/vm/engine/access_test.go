package engine

import (
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// readAccess reads the access log from the stats listener, after line
// number after.
func readAccess(t *testing.T, statsAddr string, after int64) vmconfig.AccessPage {
	t.Helper()
	var page vmconfig.AccessPage
	waitUntil(t, "the access log to be served", func() bool {
		resp, err := http.Get("http://" + statsAddr + "/access?after=" + strconv.FormatInt(after, 10))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(&page) == nil
	})
	return page
}

// TestAccessLog: one line per tunnel and plain request, refused or
// carried, naming the destination by host and port only.
func TestAccessLog(t *testing.T) {
	t.Parallel() // seconds of waiting on the wire, none of it CPU
	_, echoPort := startEcho(t)
	httpPort, _ := upstreamSeen(t)
	cfg := testConfig(t, echoPort, httpPort)
	cfg.AccessLog = true
	cfg.StatsListen = hostPort("127.0.0.1", freePort(t))
	s, proxy := startProxy(t, cfg)
	auth := basic(testUser, testPassword)

	_, tunnel := connectThrough(t, proxy, hostPort("127.0.0.1", echoPort), auth, nil)
	if err := echoes(t, tunnel, "12345"); err != nil {
		t.Fatal(err)
	}
	tunnel.Close()
	waitUntil(t, "the tunnel to close", func() bool { return s.Stats().ActiveTunnels == 0 })
	secret := "hunter2-in-the-url"
	rawExchange(t, proxy, "GET http://user:"+secret+"@127.0.0.1:"+strconv.Itoa(httpPort)+"/"+secret+"?token="+secret+" HTTP/1.1\r\nHost: x\r\nProxy-Authorization: "+auth+"\r\n\r\n", false)
	connectThrough(t, proxy, "169.254.169.254:"+strconv.Itoa(echoPort), auth, nil)
	connectThrough(t, proxy, hostPort("127.0.0.1", echoPort), "", nil)

	page := readAccess(t, cfg.StatsListen, 0)
	for i := range page.Lines {
		if !strings.HasPrefix(page.Lines[i].Source, "127.0.0.1:") || page.Lines[i].Time.IsZero() {
			t.Errorf("line %d: source %q, time %s", i, page.Lines[i].Source, page.Lines[i].Time)
		}
	}
	want := vmconfig.AccessPage{Next: 4, Lines: []vmconfig.AccessLine{
		{User: testUser, SourceAddress: "127.0.0.1", Protocol: "connect", Method: "CONNECT", Host: "127.0.0.1", Port: echoPort, Status: 200},
		{User: testUser, SourceAddress: "127.0.0.1", Protocol: "http", Method: "GET", Host: "127.0.0.1", Port: httpPort, Status: 200},
		{User: testUser, Protocol: "connect", Method: "CONNECT", Host: "169.254.169.254", Port: echoPort, Status: 403, Reason: "destination-denied"},
		{Protocol: "connect", Method: "CONNECT", Host: "127.0.0.1", Port: echoPort, Status: 407, Reason: "credentials-missing"},
	}}
	// The bytes are TestAccessBytes's.
	if diff := cmp.Diff(want, page, sourceHost, cmpopts.IgnoreFields(vmconfig.AccessLine{}, "Time", "End", "Source", "DurationMs", "BytesIn", "BytesOut")); diff != "" {
		t.Errorf("the access log: -want +got:\n%s", diff)
	}
	js, _ := json.Marshal(page)
	if strings.Contains(string(js), secret) {
		t.Errorf("the access log holds the URL's password, path or query: %s", js)
	}
	if next := readAccess(t, cfg.StatsListen, page.Next); len(next.Lines) != 0 || next.Next != page.Next {
		t.Errorf("after the last line: %+v, want no line and next %d", next, page.Next)
	}
}

// TestAccessLogOff: accessLog false keeps no line, a reload turns it on.
func TestAccessLogOff(t *testing.T) {
	_, echoPort := startEcho(t)
	cfg := testConfig(t, echoPort)
	cfg.StatsListen = hostPort("127.0.0.1", freePort(t))
	s, proxy := startProxy(t, cfg)
	connectThrough(t, proxy, hostPort("127.0.0.1", echoPort), "", nil)
	if page := readAccess(t, cfg.StatsListen, 0); len(page.Lines) != 0 {
		t.Errorf("with accessLog false: %+v", page)
	}
	cfg.AccessLog, cfg.Generation = true, 2
	if err := s.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	connectThrough(t, proxy, hostPort("127.0.0.1", echoPort), "", nil)
	if page := readAccess(t, cfg.StatsListen, 0); len(page.Lines) != 1 {
		t.Errorf("after accessLog turned on: %+v, want one line", page)
	}
}

// TestAccessRing: a reader that falls behind is told how many lines it
// lost, and pages through the rest.
func TestAccessRing(t *testing.T) {
	var a accessRing
	for i := range accessRingSize + 10 {
		a.add(vmconfig.AccessLine{Port: i + 1})
	}
	type page struct {
		Next, Dropped, Lines, FirstPort int64
	}
	summary := func(p vmconfig.AccessPage) page {
		s := page{Next: p.Next, Dropped: p.Dropped, Lines: int64(len(p.Lines))}
		if len(p.Lines) > 0 {
			s.FirstPort = int64(p.Lines[0].Port)
		}
		return s
	}
	got := []page{summary(a.page(0)), summary(a.page(accessRingSize + 5)), summary(a.page(accessRingSize + 10)), summary(a.page(1 << 40))}
	want := []page{
		{Next: 10 + accessPageMax, Dropped: 10, Lines: accessPageMax, FirstPort: 11},
		{Next: accessRingSize + 10, Lines: 5, FirstPort: accessRingSize + 6},
		{Next: accessRingSize + 10},
		// A number from before a restart starts again from what is held.
		{Next: 10 + accessPageMax, Dropped: 10, Lines: accessPageMax, FirstPort: 11},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pages: -want +got:\n%s", diff)
	}
}

// FuzzAccessLineRedaction: whatever request target a client sends, the
// access line names its destination by host and port alone: a secret in
// the userinfo, the path, the query or the fragment never reaches it.
func FuzzAccessLineRedaction(f *testing.F) {
	f.Add("CONNECT", "example.com:443", "u", "/p", "q=1")
	f.Add("GET", "example.com", "user:pw", "/a/b", "token=x")
	f.Add("GET", "[::1%25lo]:80", "", "/", "")
	f.Add("GET", "ex@ample.com", "a@b", "//c", "?")
	const secret = "S3CR3T"
	f.Fuzz(func(t *testing.T, method, host, userinfo, path, query string) {
		if strings.ContainsAny(host, "@/?#\\") {
			return // such a "host" moves the parts' borders: the secret is then a part of the host
		}
		path = "/" + path
		targets := []string{
			"http://" + userinfo + secret + "@" + host + path + secret + "?" + query + secret + "#" + secret,
			"http://" + host + "/" + secret + path,
			host,
		}
		for _, target := range targets {
			h, port := requestDestination(method, target)
			if h != "" && !validHost(h) || port < 0 || port > 65535 {
				t.Fatalf("%s %q named as %q port %d", method, target, h, port)
			}
			var r record
			r.destination(h, port)
			line, _ := json.Marshal(r.line)
			if strings.Contains(string(line), secret) && !strings.Contains(host, secret) {
				t.Fatalf("%s %q: the line %s holds what the host %q does not", method, target, line, host)
			}
		}
	})
}

// TestBucket: the bandwidth limit grants bytes at its rate, whatever the
// size of each ask, and a new rate applies at once.
func TestBucket(t *testing.T) {
	now := time.Unix(0, 0)
	b := newBucket()
	b.now = func() time.Time { return now }
	b.sleep = func(d time.Duration) { now = now.Add(d) }
	b.setRate(80 << 20) // 10 MiB a second
	var granted int
	for granted < 100<<20 {
		granted += b.take(1 << 20)
	}
	if got := now.Sub(time.Unix(0, 0)); got < 9900*time.Millisecond || got > 10100*time.Millisecond {
		t.Errorf("100 MiB at 10 MiB/s took %s of the bucket's clock, want 10 s", got)
	}
	b.setRate(8 << 20) // 1 MiB a second
	start := now
	for granted = 0; granted < 10<<20; {
		n := b.take(1 << 20)
		b.giveBack(n / 2) // half used
		granted += n - n/2
	}
	if got := now.Sub(start); got < 9900*time.Millisecond || got > 10200*time.Millisecond {
		t.Errorf("10 MiB at 1 MiB/s, half of each grant given back, took %s, want 10 s", got)
	}
	b.setRate(0)
	if got := b.take(1 << 30); got != 1<<30 {
		t.Errorf("without a limit: granted %d of %d", got, 1<<30)
	}
}

// countedConn counts the bytes a client wrote and read.
type countedConn struct {
	*net.TCPConn
	written, read int64
}

func (c *countedConn) Write(p []byte) (int, error) {
	n, err := c.TCPConn.Write(p)
	c.written += int64(n)
	return n, err
}

func (c *countedConn) Read(p []byte) (int, error) {
	n, err := c.TCPConn.Read(p)
	c.read += int64(n)
	return n, err
}

// TestAccessBytes: an access line's bytes are the bytes on the client's
// connection each way, whatever the protocol, refusals and heads
// included: what the client wrote and read, counted by the client.
func TestAccessBytes(t *testing.T) {
	_, echoPort := startEcho(t)
	httpPort, _ := upstreamSeen(t)
	auth := "Proxy-Authorization: " + basic(testUser, testPassword) + "\r\n"
	get := "GET http://127.0.0.1:" + strconv.Itoa(httpPort) + "/ HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n"
	socksAuth := append([]byte{5, 1, 2, 1, byte(len(testUser))}, testUser...)
	socksAuth = append(append(socksAuth, byte(len(testPassword))), testPassword...)
	cases := map[string]struct {
		socks bool
		// send is what the client writes, in one write; it then
		// half-closes and reads to the end.
		send  string
		lines int
	}{
		"plain GET":            {send: get, lines: 1},
		"two pipelined GETs":   {send: get + get, lines: 2},
		"HEAD":                 {send: "HEAD http://127.0.0.1:" + strconv.Itoa(httpPort) + "/ HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n", lines: 1},
		"407":                  {send: "GET http://127.0.0.1:" + strconv.Itoa(httpPort) + "/ HTTP/1.1\r\nHost: x\r\n\r\n", lines: 1},
		"unreadable head":      {send: "GET http://127.0.0.1/ HTTP/1.1\r\nX-Foo : bar\r\n\r\n", lines: 1},
		"CONNECT with payload": {send: "CONNECT 127.0.0.1:" + strconv.Itoa(echoPort) + " HTTP/1.1\r\nHost: x\r\n" + auth + "\r\nhello", lines: 1},
		"refused CONNECT":      {send: "CONNECT 169.254.169.254:" + strconv.Itoa(echoPort) + " HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n", lines: 1},
		"SOCKS5 tunnel": {socks: true, lines: 1,
			send: string(socksAuth) + string([]byte{5, 1, 0, 1, 127, 0, 0, 1, byte(echoPort >> 8), byte(echoPort)}) + "hello"},
		"SOCKS5 refused": {socks: true, lines: 1,
			send: string(socksAuth) + string([]byte{5, 1, 0, 1, 169, 254, 169, 254, byte(echoPort >> 8), byte(echoPort)})},
		"SOCKS4": {socks: true, lines: 1, send: string([]byte{4, 1, 0, 80, 1, 2, 3, 4, 'u', 0})},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(t, echoPort, httpPort)
			cfg.AccessLog = true
			s, proxy := startProxy(t, cfg)
			if tc.socks {
				proxy = startSocks(t, s)
			}
			c, err := net.Dial("tcp", proxy)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second))
			cc := &countedConn{TCPConn: c.(*net.TCPConn)}
			io.WriteString(cc, tc.send)
			cc.CloseWrite()
			io.Copy(io.Discard, struct{ io.Reader }{cc})
			waitUntil(t, "the lines", func() bool { return len(s.access.page(0).Lines) >= tc.lines })
			type bytes struct{ Lines, In, Out int64 }
			got := bytes{}
			for _, l := range s.access.page(0).Lines {
				got.Lines++
				got.In += l.BytesIn
				got.Out += l.BytesOut
			}
			if diff := cmp.Diff(bytes{int64(tc.lines), cc.written, cc.read}, got); diff != "" {
				t.Errorf("the lines' bytes against the client's: -want +got:\n%s", diff)
			}
		})
	}
}

// TestAccessLineShape: the journal's access line carries the very object
// /access serves: one shape, whichever an operator reads.
func TestAccessLineShape(t *testing.T) {
	t.Parallel() // seconds of waiting on the wire, none of it CPU
	httpPort, _ := upstreamSeen(t)
	cfg := testConfig(t, httpPort)
	cfg.AccessLog = true
	cfg.StatsListen = hostPort("127.0.0.1", freePort(t))
	var journal syncBuffer
	_, proxy := startProxyWith(t, cfg, Options{Resolver: names, Log: slog.New(slog.NewJSONHandler(&journal, nil))})
	rawExchange(t, proxy, "GET http://127.0.0.1:"+strconv.Itoa(httpPort)+"/ HTTP/1.1\r\nHost: x\r\n\r\n", false)
	rawExchange(t, proxy, "GET http://127.0.0.1:"+strconv.Itoa(httpPort)+"/ HTTP/1.1\r\nHost: x\r\nProxy-Authorization: "+basic(testUser, testPassword)+"\r\n\r\n", false)
	page := readAccess(t, cfg.StatsListen, 0)
	var served []map[string]any
	for _, l := range page.Lines {
		js, _ := json.Marshal(l)
		var m map[string]any
		json.Unmarshal(js, &m)
		served = append(served, m)
	}
	var logged []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(journal.String()), "\n") {
		var entry struct {
			Msg    string         `json:"msg"`
			Access map[string]any `json:"access"`
		}
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("journal line %q: %v", line, err)
		}
		if entry.Msg == "access" {
			logged = append(logged, entry.Access)
		}
	}
	if len(served) != 2 {
		t.Fatalf("/access served %d lines, want 2", len(served))
	}
	if diff := cmp.Diff(served, logged); diff != "" {
		t.Errorf("the journal's lines against /access's: -want +got:\n%s", diff)
	}
}

// syncBuffer is a bytes.Buffer for a logger's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestAccessReasons: a line says what happened as an operator reads it:
// an unreadable CONNECT is still a CONNECT, a client that hangs up is
// client-closed (nothing was answered), and a source outside the allowed
// ranges leaves a line, once a window however often it connects.
func TestAccessReasons(t *testing.T) {
	type line struct {
		Protocol, Method, Reason string
		Status                   int
	}
	cases := map[string]struct {
		sources []string
		sends   []string
		want    []line
	}{
		"a 70 KiB CONNECT head": {
			sends: []string{"CONNECT example.test:443 HTTP/1.1\r\nX-Pad: " + strings.Repeat("a", 70<<10) + "\r\n\r\n"},
			want:  []line{{Protocol: "connect", Method: "CONNECT", Reason: "header-too-large", Status: 431}},
		},
		"a client that hangs up in its head": {
			sends: []string{"GET http://127.0.0.1/ HTTP/1.1\r\nHost: x\r\n"},
			want:  []line{{Protocol: "http", Method: "GET", Reason: "client-closed"}},
		},
		"a source outside the allowed ranges, three times": {
			sources: []string{"10.0.0.0/8"},
			sends:   []string{"GET / HTTP/1.1\r\n\r\n", "GET / HTTP/1.1\r\n\r\n", "GET / HTTP/1.1\r\n\r\n"},
			want:    []line{{Protocol: "http", Reason: "source-not-allowed"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(t, 443)
			cfg.AccessLog = true
			if tc.sources != nil {
				cfg.AllowedSourceRanges = tc.sources
			}
			s, proxy := startProxy(t, cfg)
			for _, send := range tc.sends {
				c, err := net.Dial("tcp", proxy)
				if err != nil {
					t.Fatal(err)
				}
				c.SetDeadline(time.Now().Add(30 * time.Second))
				io.WriteString(c, send)
				c.(*net.TCPConn).CloseWrite()
				io.Copy(io.Discard, c)
				c.Close()
			}
			waitUntil(t, "the lines", func() bool { return len(s.access.page(0).Lines) >= len(tc.want) })
			var got []line
			for _, l := range s.access.page(0).Lines {
				got = append(got, line{l.Protocol, l.Method, l.Reason, l.Status})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
		})
	}
}
