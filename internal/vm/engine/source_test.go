package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// TestParseSessionUsername: USER-session-ID splits at the last
// "-session-"; an ID is 1-64 letters, digits, '_' and '-'.
func TestParseSessionUsername(t *testing.T) {
	type split struct {
		User, ID string
		OK       bool
	}
	long := strings.Repeat("a", 64)
	cases := map[string]struct {
		reason string
		name   string
		want   split
	}{
		"plain":           {"a name without a session", "alice", split{}},
		"session":         {"the form of commercial rotating proxies", "alice-session-a1", split{"alice", "a1", true}},
		"underscore dash": {"an ID holds '_' and '-'", "alice-session-x_y-z", split{"alice", "x_y-z", true}},
		"last splits":     {"a user whose name holds -session- names a session after it", "team-session-1-session-abc", split{"team-session-1", "abc", true}},
		"64":              {"an ID of 64", "alice-session-" + long, split{"alice", long, true}},
		"65":              {"an ID of 65 is too long", "alice-session-" + long + "a", split{}},
		"empty id":        {"no ID", "alice-session-", split{}},
		"empty user":      {"no user", "-session-abc", split{}},
		"dot":             {"a dot is not an ID's", "alice-session-a.b", split{}},
		"space":           {"nor a space", "alice-session-a b", split{}},
		"colon":           {"nor a colon", "alice-session-a:b", split{}},
		"non-ascii":       {"nor a letter outside ASCII", "alice-session-é", split{}},
		"case":            {"the marker is lowercase", "alice-SESSION-abc", split{}},
		"bad last":        {"the last split decides: its ID is bad, no earlier split is tried", "alice-session-ok-session-b.d", split{}},
		"marker only":     {"the marker alone", "-session-", split{}},
		"id is a marker":  {"an ID that ends in the marker has an empty ID", "alice-session-x-session-", split{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			user, id, ok := parseSessionUsername(tc.name)
			if diff := cmp.Diff(tc.want, split{user, id, ok}); diff != "" {
				t.Errorf("%s: parseSessionUsername(%q) (-want +got):\n%s", tc.reason, tc.name, diff)
			}
		})
	}
}

// TestSessionCredentials: USER-session-ID with USER's password is USER,
// with the session; a configured name is a whole name first, so a user
// whose name holds -session- authenticates plainly by it.
func TestSessionCredentials(t *testing.T) {
	cfg := testConfig(t, 443)
	cfg.Users = append(cfg.Users, vmconfig.User{Name: "team-session-1", PasswordHash: hashOf(t, "teamPassword")})
	r, err := compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	type who struct {
		User, Session string
		OK            bool
	}
	cases := map[string]struct {
		reason         string
		name, password string
		want           who
	}{
		"plain":               {"the user as today", testUser, testPassword, who{testUser, "", true}},
		"session":             {"a session of the user", testUser + "-session-s1", testPassword, who{testUser, "s1", true}},
		"session wrong":       {"a session with a wrong password", testUser + "-session-s1", "nope", who{}},
		"session other's":     {"a session with another user's password", testUser + "-session-s1", "teamPassword", who{}},
		"unknown user":        {"a session of nobody", "bob-session-s1", testPassword, who{}},
		"bad id":              {"an ID that is not one is no session, and no user", testUser + "-session-a.b", testPassword, who{}},
		"marker user plain":   {"a user whose name holds -session-, plainly", "team-session-1", "teamPassword", who{"team-session-1", "", true}},
		"marker user session": {"and with a session", "team-session-1-session-q", "teamPassword", who{"team-session-1", "q", true}},
		"marker user as team": {"its name is not a session of a user team", "team-session-1", testPassword, who{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := r.check(tc.name, tc.password)
			if diff := cmp.Diff(tc.want, who{c.name, c.session, err == nil}); diff != "" {
				t.Errorf("%s: check(%q) (-want +got):\n%s", tc.reason, tc.name, diff)
			}
			if err == nil && !r.holds(c) {
				t.Errorf("%s: the rules do not hold the credential they gave", tc.reason)
			}
		})
	}
}

// TestSessionAddress: a session's address is inside the prefix, never its
// network address, the same every time, and another for another session,
// user or password, on every cloud's prefix size.
func TestSessionAddress(t *testing.T) {
	for _, prefix := range []string{"2a01:4f8:1c1c:a0b1::/64", "2600:1f18:abcd:1200:7e4a::/80", "2600:1900:4000:8c1d:0:1::/96", "2604:a880:400:d1::7a0/124"} {
		t.Run(prefix, func(t *testing.T) {
			p := netip.MustParsePrefix(prefix)
			type seen struct {
				InPrefix, Network, Stable bool
			}
			addrs := map[string]netip.Addr{}
			for _, k := range []struct{ password, user, id string }{
				{testPassword, testUser, "a"}, {testPassword, testUser, "b"}, {testPassword, testUser, "c"},
				{testPassword, "bob", "a"}, {"another password", testUser, "a"},
			} {
				a := sessionAddress(p, k.password, k.user, k.id)
				got := seen{p.Contains(a), a == p.Addr(), a == sessionAddress(p, k.password, k.user, k.id)}
				if diff := cmp.Diff(seen{InPrefix: true, Stable: true}, got); diff != "" {
					t.Errorf("sessionAddress(%s, %s, %s) = %s (-want +got):\n%s", prefix, k.user, k.id, a, diff)
				}
				addrs[fmt.Sprint(k)] = a
			}
			if p.Bits() > 96 {
				// A /124's 15 addresses: five keys may share one.
				return
			}
			distinct := map[netip.Addr]bool{}
			for _, a := range addrs {
				distinct[a] = true
			}
			if len(distinct) != len(addrs) {
				t.Errorf("%d keys share %d addresses: %v", len(addrs), len(distinct), addrs)
			}
		})
	}
}

// TestRandomAddress: perConnection's addresses are inside the prefix,
// never its network address, and (in a /64) all different; in a /124
// they cover the 15 addresses there are.
func TestRandomAddress(t *testing.T) {
	type drawn struct {
		Outside, Network, Distinct int
	}
	cases := map[string]struct {
		prefix string
		draws  int
		want   drawn
	}{
		"/64":  {"2001:db8:7:1::/64", 1000, drawn{Distinct: 1000}},
		"/96":  {"2001:db8:7:1::/96", 1000, drawn{Distinct: 1000}},
		"/124": {"2001:db8:7:1::7a0/124", 2000, drawn{Distinct: 15}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := netip.MustParsePrefix(tc.prefix)
			var got drawn
			seen := map[netip.Addr]bool{}
			for range tc.draws {
				a := randomAddress(p)
				if !p.Contains(a) {
					got.Outside++
				}
				if a == p.Addr() {
					got.Network++
				}
				seen[a] = true
			}
			got.Distinct = len(seen)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%d draws in %s (-want +got):\n%s", tc.draws, tc.prefix, diff)
			}
		})
	}
}

// TestWithin: the host bits land in the prefix's host part, the network
// bits are the prefix's whatever the host holds, and all-zero host bits
// are the network address, refused.
func TestWithin(t *testing.T) {
	ones := [16]byte{}
	for i := range ones {
		ones[i] = 0xff
	}
	type put struct {
		Addr string
		OK   bool
	}
	cases := map[string]struct {
		prefix string
		host   [16]byte
		want   put
	}{
		"/64 ones":       {"2001:db8:7:1::/64", ones, put{"2001:db8:7:1:ffff:ffff:ffff:ffff", true}},
		"/64 zero":       {"2001:db8:7:1::/64", [16]byte{}, put{"2001:db8:7:1::", false}},
		"/64 high bytes": {"2001:db8:7:1::/64", [16]byte{0: 0xff, 7: 0xff}, put{"2001:db8:7:1::", false}},
		"/124 ones":      {"2001:db8::7a0/124", ones, put{"2001:db8::7af", true}},
		"/124 one":       {"2001:db8::7a0/124", [16]byte{15: 0x11}, put{"2001:db8::7a1", true}},
		"/124 above":     {"2001:db8::7a0/124", [16]byte{15: 0xf0}, put{"2001:db8::7a0", false}},
		"/61 mid byte":   {"2001:db8:7:8::/61", [16]byte{7: 0xff}, put{"2001:db8:7:f::", true}},
		"/80":            {"2001:db8:7:1:2::/80", [16]byte{9: 0xff, 10: 0x01}, put{"2001:db8:7:1:2:100::", true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a, ok := within(netip.MustParsePrefix(tc.prefix), tc.host)
			if diff := cmp.Diff(tc.want, put{a.String(), ok}); diff != "" {
				t.Errorf("within(%s, %x) (-want +got):\n%s", tc.prefix, tc.host, diff)
			}
		})
	}
}

// attempts records the source each connection attempt was given and
// dials without it: loopback routes no documentation prefix back, so the
// test sees the choice, and the connection still carries.
type attempts struct {
	mu   sync.Mutex
	srcs map[netip.AddrPort][]netip.Addr // by destination
}

func (a *attempts) connect(ctx context.Context, src netip.Addr, dst netip.AddrPort) (net.Conn, error) {
	a.mu.Lock()
	if a.srcs == nil {
		a.srcs = map[netip.AddrPort][]netip.Addr{}
	}
	a.srcs[dst] = append(a.srcs[dst], src)
	a.mu.Unlock()
	return connectFrom(ctx, netip.Addr{}, dst)
}

// take returns the sources given to attempts to dst since the last take.
func (a *attempts) take(dst netip.AddrPort) []netip.Addr {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.srcs[dst]
	delete(a.srcs, dst)
	return s
}

// sources sums up the sources of a username's connections: how many the
// kernel chose, how many were inside the prefix, how many different.
type sources struct {
	Kernel, InPrefix, Distinct int
}

func summarize(p netip.Prefix, srcs []netip.Addr) sources {
	var s sources
	seen := map[netip.Addr]bool{}
	for _, a := range srcs {
		switch {
		case !a.IsValid():
			s.Kernel++
		case p.Contains(a) && a != p.Addr():
			s.InPrefix++
		}
		seen[a] = true
	}
	s.Distinct = len(seen)
	return s
}

// startEcho6 serves a TCP echo on ::1.
func startEcho6(t *testing.T) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().(*net.TCPAddr).AddrPort()
}

// TestIPv6EgressSources: the source each connection to an IPv6
// destination is given, by ipv6Egress, through HTTP CONNECT and SOCKS5
// alike: the kernel's in off and single (a session changes nothing),
// a fresh one inside the prefix per connection in perConnection, and in
// perSession one per session and a fresh one per plain connection. IPv4
// destinations keep the kernel's choice in every mode. The access lines
// name the session and the source address.
func TestIPv6EgressSources(t *testing.T) {
	echo6 := startEcho6(t)
	_, echoPort4 := startEcho(t)
	echo4 := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(echoPort4))
	prefix := netip.MustParsePrefix("2001:db8:7:1::/64")
	type conns struct {
		user string
		dst  netip.AddrPort
		n    int
	}
	cases := map[string]struct {
		mode  string
		conns []conns
		want  map[string]sources
	}{
		"off": {"off", []conns{{testUser, echo6, 4}, {testUser + "-session-a", echo6, 4}},
			map[string]sources{testUser: {Kernel: 4, Distinct: 1}, testUser + "-session-a": {Kernel: 4, Distinct: 1}}},
		"single": {"single", []conns{{testUser, echo6, 4}, {testUser + "-session-a", echo6, 4}},
			map[string]sources{testUser: {Kernel: 4, Distinct: 1}, testUser + "-session-a": {Kernel: 4, Distinct: 1}}},
		"perConnection": {"perConnection", []conns{{testUser, echo6, 20}, {testUser + "-session-a", echo6, 6}},
			map[string]sources{testUser: {InPrefix: 20, Distinct: 20}, testUser + "-session-a": {InPrefix: 6, Distinct: 6}}},
		"perSession": {"perSession", []conns{{testUser + "-session-a", echo6, 6}, {testUser + "-session-b", echo6, 6}, {testUser, echo6, 6}},
			map[string]sources{testUser + "-session-a": {InPrefix: 6, Distinct: 1}, testUser + "-session-b": {InPrefix: 6, Distinct: 1}, testUser: {InPrefix: 6, Distinct: 6}}},
		"perConnection IPv4": {"perConnection", []conns{{testUser, echo4, 4}},
			map[string]sources{testUser: {Kernel: 4, Distinct: 1}}},
		"perSession IPv4": {"perSession", []conns{{testUser + "-session-a", echo4, 4}},
			map[string]sources{testUser + "-session-a": {Kernel: 4, Distinct: 1}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(t, int(echo6.Port()), echoPort4)
			cfg.AllowDestinations = []string{"127.0.0.1/32", "::1/128"}
			cfg.IPv6Prefix, cfg.IPv6Egress = prefix.String(), tc.mode
			cfg.AccessLog = true
			cfg.StatsListen = hostPort("127.0.0.1", freePort(t))
			rec := &attempts{}
			s, proxy := startProxyWith(t, cfg, Options{Resolver: names}, func(s *Server) { s.connectTo = rec.connect })
			socks := startSocks(t, s)
			got := map[string]sources{}
			bySession := map[string][]netip.Addr{}
			lines := 0
			for _, c := range tc.conns {
				var srcs []netip.Addr
				for i := range c.n {
					// Every other connection by SOCKS5: both doors lead
					// to the same source.
					if i%2 == 0 {
						a, conn := connectThrough(t, proxy, c.dst.String(), basic(c.user, testPassword), nil)
						if a.Status != 200 {
							t.Fatalf("CONNECT %s as %s: %d", c.dst, c.user, a.Status)
						}
						if err := echoes(t, conn, "x"); err != nil {
							t.Fatal(err)
						}
						conn.Close()
					} else {
						ip := c.dst.Addr().AsSlice()
						atyp := byte(socksAddressIPv4)
						if c.dst.Addr().Is6() {
							atyp = socksAddressIPv6
						}
						a, conn := socksDial(t, socks, socksClient{user: c.user, password: testPassword, command: socksCommandConnect, atyp: atyp, addr: ip, port: int(c.dst.Port())})
						if a.Reply != 0 {
							t.Fatalf("SOCKS5 CONNECT %s as %s: %+v", c.dst, c.user, a)
						}
						conn.Close()
					}
					lines++
					srcs = append(srcs, rec.take(c.dst)...)
				}
				got[c.user] = summarize(prefix, srcs)
				if user, id, ok := parseSessionUsername(c.user); ok && tc.mode == vmconfig.IPv6EgressPerSession && c.dst.Addr().Is6() {
					bySession[id] = srcs
					if want := sessionAddress(prefix, testPassword, user, id); srcs[0] != want {
						t.Errorf("session %s left from %s, want %s", id, srcs[0], want)
					}
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ipv6Egress %s: the sources (-want +got):\n%s", tc.mode, diff)
			}
			if a, b := bySession["a"], bySession["b"]; a != nil && b != nil && a[0] == b[0] {
				t.Errorf("sessions a and b share %s", a[0])
			}
			// The lines: the session named, the user the base user,
			// the connection's source address.
			waitUntil(t, "every connection's access line", func() bool { return len(readAccess(t, cfg.StatsListen, 0).Lines) == lines })
			type lineSeen struct{ User, Session, SourceHost string }
			count := map[lineSeen]int{}
			for _, l := range readAccess(t, cfg.StatsListen, 0).Lines {
				host, _, _ := net.SplitHostPort(l.SourceAddress)
				count[lineSeen{l.User, l.Session, host}]++
			}
			want := map[lineSeen]int{}
			for _, c := range tc.conns {
				user, id, ok := parseSessionUsername(c.user)
				if !ok {
					user = c.user
				}
				// The seam dials from the kernel's choice: loopback's.
				want[lineSeen{user, id, c.dst.Addr().String()}] += c.n
			}
			if diff := cmp.Diff(want, count); diff != "" {
				t.Errorf("the access lines by user, session and source address (-want +got):\n%s", diff)
			}
		})
	}
}

// TestIPv6EgressPlainHTTP: plain HTTP requests on one kept-alive client
// connection each get a connection of their own, from its own source,
// where ipv6Egress rotates; in single mode they share the kept-alive
// upstream connection as before.
func TestIPv6EgressPlainHTTP(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello\n") }))
	up.Listener.Close()
	up.Listener = ln
	up.Start()
	t.Cleanup(up.Close)
	dst := ln.Addr().(*net.TCPAddr).AddrPort()
	prefix := netip.MustParsePrefix("2001:db8:7:1::/64")
	cases := map[string]struct {
		mode, user string
		want       sources
	}{
		"single":        {"single", testUser, sources{Kernel: 1, Distinct: 1}},
		"perConnection": {"perConnection", testUser, sources{InPrefix: 3, Distinct: 3}},
		"perSession":    {"perSession", testUser + "-session-z", sources{InPrefix: 3, Distinct: 1}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(t, int(dst.Port()))
			cfg.AllowDestinations = []string{"::1/128"}
			cfg.IPv6Prefix, cfg.IPv6Egress = prefix.String(), tc.mode
			rec := &attempts{}
			_, proxy := startProxyWith(t, cfg, Options{Resolver: names}, func(s *Server) { s.connectTo = rec.connect })
			req := "GET http://" + dst.String() + "/ HTTP/1.1\r\nHost: " + dst.String() + "\r\nProxy-Authorization: " + basic(tc.user, testPassword) + "\r\n\r\n"
			c, err := net.Dial("tcp", proxy)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second))
			br := bufio.NewReader(c)
			for i := range 3 {
				io.WriteString(c, req)
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("request %d on one connection: %v", i, err)
				}
				io.Copy(io.Discard, resp.Body)
				if resp.StatusCode != 200 || resp.Close {
					t.Fatalf("request %d on one connection: %d, close %v; want 200 and the connection kept", i, resp.StatusCode, resp.Close)
				}
			}
			if diff := cmp.Diff(tc.want, summarize(prefix, rec.take(dst))); diff != "" {
				t.Errorf("ipv6Egress %s: the upstream connections' sources (-want +got):\n%s", tc.mode, diff)
			}
		})
	}
}

// TestIPv6EgressConfig: a configuration whose prefix or mode the engine
// cannot use does not load.
func TestIPv6EgressConfig(t *testing.T) {
	cases := map[string]struct {
		prefix, mode string
		ok           bool
	}{
		"none":             {"", "", true},
		"single":           {"", "single", true},
		"perConnection":    {"2001:db8::/64", "perConnection", true},
		"no prefix":        {"", "perSession", false},
		"too long":         {"2001:db8::/126", "perConnection", false},
		"ipv4":             {"198.51.100.0/24", "single", false},
		"unknown mode":     {"2001:db8::/64", "random", false},
		"prefix and off":   {"2001:db8::/64", "off", true},
		"prefix no mode":   {"2001:db8::/64", "", true},
		"host bits masked": {"2001:db8::1/64", "perSession", true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(t, 443)
			cfg.IPv6Prefix, cfg.IPv6Egress = tc.prefix, tc.mode
			body, err := json.Marshal(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ReadConfig(body); (err == nil) != tc.ok {
				t.Errorf("ReadConfig with ipv6Prefix %q, ipv6Egress %q: %v, want ok %v", tc.prefix, tc.mode, err, tc.ok)
			}
		})
	}
}

// TestFreebind: connectFrom binds an address no interface holds (the
// agent routes the prefix to the VM, never configures its addresses),
// where a plain bind is refused; and with loopback's own address as the
// source it carries a connection.
func TestFreebind(t *testing.T) {
	echo := startEcho6(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := connectFrom(ctx, netip.MustParseAddr("::1"), echo)
	if err != nil {
		t.Fatalf("connectFrom ::1 to %s: %v", echo, err)
	}
	if got := c.LocalAddr().(*net.TCPAddr).AddrPort().Addr(); got != netip.MustParseAddr("::1") {
		t.Errorf("bound %s, want ::1", got)
	}
	c.Close()

	src := netip.MustParseAddr("2001:db8:7:1::5")
	// A destination no route leads to here, or one that never answers:
	// what counts is whether the bind before the connect succeeded.
	dst := netip.MustParseAddrPort("[2001:db8:9::9]:80")
	var plain net.Dialer
	plain.LocalAddr = &net.TCPAddr{IP: src.AsSlice()}
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	if _, err := plain.DialContext(short, "tcp", dst.String()); !errors.Is(err, syscall.EADDRNOTAVAIL) {
		t.Fatalf("a plain bind of %s: %v, want EADDRNOTAVAIL (else this test proves nothing)", src, err)
	}
	if _, err := connectFrom(short, src, dst); errors.Is(err, syscall.EADDRNOTAVAIL) {
		t.Errorf("connectFrom %s: %v: the address was not bound free", src, err)
	}
}

// TestIPv6EgressHappyEyeballs: a name with both families is raced as
// before, its IPv6 attempt from the session's address and its IPv4
// attempt from the kernel's choice: here the IPv6 address refuses, and
// the IPv4 one carries.
func TestIPv6EgressHappyEyeballs(t *testing.T) {
	_, port := startEcho(t) // on 127.0.0.1 alone: [::1] refuses the port
	names["both.test"] = []netip.Addr{netip.MustParseAddr("::1"), netip.MustParseAddr("127.0.0.1")}
	t.Cleanup(func() { delete(names, "both.test") })
	prefix := netip.MustParsePrefix("2001:db8:7:1::/64")
	cfg := testConfig(t, port)
	cfg.AllowDestinations = []string{"127.0.0.1/32", "::1/128"}
	cfg.IPv6Prefix, cfg.IPv6Egress = prefix.String(), vmconfig.IPv6EgressPerSession
	rec := &attempts{}
	_, proxy := startProxyWith(t, cfg, Options{Resolver: names}, func(s *Server) { s.connectTo = rec.connect })
	a, conn := connectThrough(t, proxy, hostPort("both.test", port), basic(testUser+"-session-he", testPassword), nil)
	if a.Status != 200 {
		t.Fatalf("CONNECT both.test: %d, want 200 over IPv4", a.Status)
	}
	if err := echoes(t, conn, "over IPv4"); err != nil {
		t.Fatal(err)
	}
	type tried struct{ V6, V4 []netip.Addr }
	got := tried{rec.take(netip.AddrPortFrom(netip.MustParseAddr("::1"), uint16(port))), rec.take(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)))}
	want := tried{[]netip.Addr{sessionAddress(prefix, testPassword, testUser, "he")}, []netip.Addr{{}}}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("the attempts' sources (-want +got):\n%s", diff)
	}
}
