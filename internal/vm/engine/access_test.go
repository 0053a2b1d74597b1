package engine

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
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
		{User: testUser, Protocol: "connect", Method: "CONNECT", Host: "127.0.0.1", Port: echoPort, Status: 200, BytesIn: 5, BytesOut: 5},
		{User: testUser, Protocol: "http", Method: "GET", Host: "127.0.0.1", Port: httpPort, Status: 200, BytesOut: 6},
		{User: testUser, Protocol: "connect", Method: "CONNECT", Host: "169.254.169.254", Port: echoPort, Status: 403, Reason: "destination-denied"},
		{Protocol: "connect", Method: "CONNECT", Host: "127.0.0.1", Port: echoPort, Status: 407, Reason: "credentials-missing"},
	}}
	if diff := cmp.Diff(want, page, cmpopts.IgnoreFields(vmconfig.AccessLine{}, "Time", "Source", "DurationMs")); diff != "" {
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
