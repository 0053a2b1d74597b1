package engine

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

func TestUDPHeaderParse(t *testing.T) {
	type result struct {
		Header udpHeader
		Data   string
		Err    bool
	}
	v4 := []byte{0, 0, 0, socksAddressIPv4, 192, 0, 2, 7, 0x01, 0xbb}
	mapped := append([]byte{0, 0, 0, socksAddressIPv6}, netip.MustParseAddr("::ffff:192.0.2.7").AsSlice()...)
	cases := map[string]struct {
		in   []byte
		want result
	}{
		"IPv4 and data":        {append(v4, "hi"...), result{Header: udpHeader{Host: "192.0.2.7", Port: 443}, Data: "hi"}},
		"IPv4, no data":        {v4, result{Header: udpHeader{Host: "192.0.2.7", Port: 443}}},
		"a fragment":           {append([]byte{0, 0, 1}, v4[3:]...), result{Header: udpHeader{Frag: 1, Host: "192.0.2.7", Port: 443}}},
		"RSV not zero":         {append([]byte{0xff, 0xff, 0}, v4[3:]...), result{Header: udpHeader{Host: "192.0.2.7", Port: 443}}},
		"IPv6":                 {append(append([]byte{0, 0, 0, socksAddressIPv6}, netip.MustParseAddr("2001:db8::1").AsSlice()...), 0, 53, 'q'), result{Header: udpHeader{Host: "2001:db8::1", Port: 53}, Data: "q"}},
		"IPv4-mapped IPv6":     {append(mapped, 0, 53), result{Header: udpHeader{Host: "192.0.2.7", Port: 53}}},
		"a name":               {append([]byte{0, 0, 0, socksAddressDomain, 8}, "dns.test\x00\x35data"...), result{Header: udpHeader{Host: "dns.test", Port: 53}, Data: "data"}},
		"an address as a name": {append([]byte{0, 0, 0, socksAddressDomain, 8}, "0000:0::\x00\x35"...), result{Header: udpHeader{Host: "::", Port: 53}}},
		"empty":                {nil, result{Err: true}},
		"three bytes":          {[]byte{0, 0, 0}, result{Err: true}},
		"IPv4 cut short":       {v4[:8], result{Err: true}},
		"IPv6 cut short":       {append([]byte{0, 0, 0, socksAddressIPv6}, make([]byte, 16)...), result{Err: true}},
		"address type 2":       {[]byte{0, 0, 0, 2, 1, 2, 3, 4, 0, 53}, result{Err: true}},
		"name cut short":       {[]byte{0, 0, 0, socksAddressDomain, 20, 'a', 'b', 0, 53}, result{Err: true}},
		"empty name":           {[]byte{0, 0, 0, socksAddressDomain, 0, 0, 53}, result{Err: true}},
		"name with a zone":     {append([]byte{0, 0, 0, socksAddressDomain, 10}, "fe80::1%lo\x00\x35"...), result{Err: true}},
		"name with a path":     {append([]byte{0, 0, 0, socksAddressDomain, 3}, "a/b\x00\x35"...), result{Err: true}},
		"port 0":               {[]byte{0, 0, 0, socksAddressIPv4, 192, 0, 2, 7, 0, 0}, result{Err: true}},
	}
	for name, tc := range cases {
		h, data, err := parseUDPHeader(tc.in)
		got := result{Header: h, Data: string(data), Err: err != nil}
		if err != nil {
			got.Header = udpHeader{}
			if tc.want.Header.Frag != 0 {
				got.Header.Frag = h.Frag
			}
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: parseUDPHeader(%x): -want +got:\n%s", name, tc.in, diff)
		}
	}
}

func TestUDPHeaderBuild(t *testing.T) {
	cases := map[string]struct {
		in   udpHeader
		want []byte
	}{
		"IPv4":        {udpHeader{Host: "192.0.2.7", Port: 443}, []byte{0, 0, 0, socksAddressIPv4, 192, 0, 2, 7, 0x01, 0xbb}},
		"IPv6":        {udpHeader{Host: "2001:db8::1", Port: 53}, append(append([]byte{0, 0, 0, socksAddressIPv6}, netip.MustParseAddr("2001:db8::1").AsSlice()...), 0, 53)},
		"IPv4-mapped": {udpHeader{Host: "::ffff:192.0.2.7", Port: 53}, []byte{0, 0, 0, socksAddressIPv4, 192, 0, 2, 7, 0, 53}},
		"a name":      {udpHeader{Host: "dns.test", Port: 53}, append(append([]byte{0, 0, 0, socksAddressDomain, 8}, "dns.test"...), 0, 53)},
		"a fragment":  {udpHeader{Frag: 3, Host: "192.0.2.7", Port: 1}, []byte{0, 0, 3, socksAddressIPv4, 192, 0, 2, 7, 0, 1}},
	}
	for name, tc := range cases {
		if diff := cmp.Diff(tc.want, appendUDPHeader(nil, tc.in)); diff != "" {
			t.Errorf("%s: appendUDPHeader(%+v): -want +got:\n%s", name, tc.in, diff)
		}
	}
}

// udpEcho is a UDP echo server: each datagram goes back to its sender.
type udpEcho struct {
	port int
	// got counts the datagrams received; last is the newest one's sender.
	got  atomic.Int64
	last atomic.Pointer[netip.AddrPort]
}

// startUDPEcho serves a UDP echo on host until the test ends.
func startUDPEcho(t *testing.T, host string) *udpEcho {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(host)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	e := &udpEcho{port: c.LocalAddr().(*net.UDPAddr).Port}
	go func() {
		b := make([]byte, 65535)
		for {
			n, from, err := c.ReadFromUDPAddrPort(b)
			if err != nil {
				return
			}
			e.last.Store(&from)
			e.got.Add(1)
			c.WriteToUDPAddrPort(b[:n], from)
		}
	}()
	return e
}

// startUDPProxy serves cfg with SOCKS5 and its UDP relay on a loopback
// port, and returns the server and the SOCKS5 address.
func startUDPProxy(t *testing.T, cfg vmconfig.Config) (*Server, string) {
	t.Helper()
	cfg.AccessLog = true
	cfg.Socks5Listen = hostPort("127.0.0.1", freePort(t))
	cfg.Socks5UDP = true
	s, _ := startProxyWith(t, cfg, Options{Resolver: names})
	waitUntil(t, "the SOCKS5 listener", func() bool {
		c, err := net.Dial("tcp", cfg.Socks5Listen)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return s, cfg.Socks5Listen
}

// udpLine waits for the access line of a UDP association and returns it.
func udpLine(t *testing.T, s *Server) vmconfig.AccessLine {
	t.Helper()
	var line vmconfig.AccessLine
	waitUntil(t, "the association's access line", func() bool {
		for _, l := range s.access.page(0).Lines {
			if l.Method == "UDP ASSOCIATE" {
				line = l
				return true
			}
		}
		return false
	})
	return line
}

// udpLineFields are what a UDP association's line is compared on: the
// times and the sources' ports vary from run to run.
var udpLineFields = cmpopts.IgnoreFields(vmconfig.AccessLine{}, "Time", "End", "DurationMs", "Source", "BytesIn", "BytesOut")

// pysocksScript drives UDP ASSOCIATE with PySocks: two echoes (one to an
// address, one to a name the engine resolves), two datagrams to denied
// destinations (an address and a name with a denied address), a fragment
// sent raw from the same socket, and a last echo, which comes back only
// after the relay took the datagrams before it. It prints each echo.
const pysocksScript = `
import socket, struct, sys
import socks

proxy, port, user, password, echo, denied = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
s = socks.socksocket(socket.AF_INET, socket.SOCK_DGRAM)
s.set_proxy(socks.SOCKS5, proxy, port, rdns=True, username=user, password=password)
s.settimeout(20)
s.bind(("127.0.0.1", 0))

def echoed(data, dest):
    s.sendto(data, dest)
    got, frm = s.recvfrom(65535)
    print("%s from %s:%d" % (got.decode(), frm[0], frm[1]))

echoed(b"one", ("127.0.0.1", echo))
echoed(b"two", ("target.test", echo))
s.sendto(b"denied", ("127.0.0.2", denied))
s.sendto(b"denied-name", ("mixed.test", echo))
socket.socket.send(s, b"\x00\x00\x01\x01" + socket.inet_aton("127.0.0.1") + struct.pack(">H", echo) + b"fragment")
echoed(b"three", ("127.0.0.1", echo))
s.close()
`

// pythonWithPySocks is a python3 that imports socks (Debian's
// python3-socks, under /usr/bin/python3; scripts/install-deps.sh installs
// it), or "" when there is none.
func pythonWithPySocks() string {
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(p, "-c", "import socks").Run() == nil {
			return p
		}
	}
	return ""
}

// TestSocks5UDPPySocks drives UDP ASSOCIATE with a client the project did
// not write, PySocks: the echoes come back through the relay, the denied
// destinations and the fragment are dropped and counted, never sent, and
// the association's access line counts it all.
func TestSocks5UDPPySocks(t *testing.T) {
	python := pythonWithPySocks()
	if python == "" {
		msg := "python3-socks (PySocks) is not installed, so no outside client drove UDP ASSOCIATE: scripts/install-deps.sh installs it (apt-get install python3-socks)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	echoPort := startUDPEcho(t, "127.0.0.1").port
	// 127.0.0.2 is in the test's deny list (loopback, bar 127.0.0.1): an
	// echo there proves nothing reached it.
	denied := startUDPEcho(t, "127.0.0.2")
	deniedPort := denied.port
	s, proxy := startUDPProxy(t, testConfig(t, 443))
	host, port, _ := net.SplitHostPort(proxy)
	script := t.TempDir() + "/udp.py"
	if err := os.WriteFile(script, []byte(pysocksScript), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(python, script, host, port, testUser, testPassword, strconv.Itoa(echoPort), strconv.Itoa(deniedPort)).CombinedOutput()
	if err != nil {
		t.Fatalf("PySocks: %v\n%s", err, out)
	}
	echo := "from 127.0.0.1:" + strconv.Itoa(echoPort)
	want := []string{"one " + echo, "two " + echo, "three " + echo}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSpace(string(out)), "\n")); diff != "" {
		t.Errorf("PySocks's echoes: -want +got:\n%s", diff)
	}
	line := udpLine(t, s)
	// The bytes as the client's side carries them: a header (10 bytes
	// for an IPv4 address; 4 + 1 + 11 + 2 for target.test) and the data.
	wantLine := vmconfig.AccessLine{User: testUser, Protocol: vmconfig.ProtocolSocks5, Method: "UDP ASSOCIATE", Status: socksSucceeded,
		DatagramsIn: 3, DatagramsOut: 3, DatagramBytesIn: (10 + 3) + (18 + 3) + (10 + 5), DatagramBytesOut: (10 + 3) + (10 + 3) + (10 + 5),
		DatagramsDenied: 2, DatagramsFragmented: 1}
	if diff := cmp.Diff(wantLine, line, udpLineFields); diff != "" {
		t.Errorf("the association's access line: -want +got:\n%s", diff)
	}
	if line.BytesIn <= line.DatagramBytesIn || line.BytesOut <= line.DatagramBytesOut {
		t.Errorf("bytesIn %d, bytesOut %d: want the datagrams' %d and %d and the handshake's", line.BytesIn, line.BytesOut, line.DatagramBytesIn, line.DatagramBytesOut)
	}
	if n := denied.got.Load(); n != 0 {
		t.Errorf("the denied destination received %d datagrams, want 0", n)
	}
}

// udpAssociate opens an association with the test's own client, saying
// client as the address it sends from, and returns the control
// connection and the relay's address.
func udpAssociate(t *testing.T, proxy string, client netip.AddrPort) (net.Conn, netip.AddrPort) {
	t.Helper()
	got, conn := socksDial(t, proxy, socksClient{user: testUser, password: testPassword, command: socksCommandUDPAssociate,
		atyp: socksAddressIPv4, addr: client.Addr().AsSlice(), port: int(client.Port())})
	if got.Reply != socksSucceeded {
		t.Fatalf("UDP ASSOCIATE: %+v, want reply 0", got)
	}
	// socksDial read the reply; the relay is on the SOCKS5 port.
	ap := netip.MustParseAddrPort(proxy)
	return conn, ap
}

// udpClient is the test's own SOCKS5 UDP client: a socket towards the
// relay that wraps what it sends in the header.
type udpClient struct {
	t    *testing.T
	conn *net.UDPConn
}

func newUDPClient(t *testing.T, relay netip.AddrPort) *udpClient {
	t.Helper()
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(relay))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return &udpClient{t: t, conn: c}
}

// datagram is data to host:port in its header.
func datagram(host string, port int, data string) []byte {
	return append(appendUDPHeader(nil, udpHeader{Host: host, Port: port}), data...)
}

// echo sends data to the echo at port and returns what came back, the
// header included.
func (c *udpClient) echo(port int, data string) string {
	c.t.Helper()
	if _, err := c.conn.Write(datagram("127.0.0.1", port, data)); err != nil {
		c.t.Fatal(err)
	}
	b := make([]byte, 65535+udpHeaderMax)
	n, err := c.conn.Read(b)
	if err != nil {
		c.t.Fatalf("the echo of %q through the association: %v", data, err)
	}
	return string(b[:n])
}

// TestSocks5UDPLearnedPort: a client that says port 0 is the first
// datagram's port, as Dante takes it; a datagram from another port of the
// same IP belongs to no association and is dropped; a datagram to the
// association's socket from an address the client never sent to is
// dropped, never relayed; the line counts what was carried and dropped.
func TestSocks5UDPLearnedPort(t *testing.T) {
	echo := startUDPEcho(t, "127.0.0.1")
	s, proxy := startUDPProxy(t, testConfig(t, 443))
	control, relay := udpAssociate(t, proxy, netip.MustParseAddrPort("0.0.0.0:0"))
	client := newUDPClient(t, relay)
	other := newUDPClient(t, relay)
	if diff := cmp.Diff(string(datagram("127.0.0.1", echo.port, "learned")), client.echo(echo.port, "learned")); diff != "" {
		t.Errorf("the echo, in its header: -want +got:\n%s", diff)
	}
	other.conn.Write(datagram("127.0.0.1", echo.port, "stray"))
	waitUntil(t, "the stray datagram to be dropped", func() bool { return s.udp.strays.Load() == 1 })
	// A stranger on loopback writes to the association's own socket (the
	// echo saw its address): the client never sent to the stranger.
	stranger, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(*echo.last.Load()))
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	stranger.Write([]byte("unasked"))
	// The next datagram the client gets is its own echo, not the
	// stranger's.
	if diff := cmp.Diff(string(datagram("127.0.0.1", echo.port, "after")), client.echo(echo.port, "after")); diff != "" {
		t.Errorf("the echo after the stranger's datagram: -want +got:\n%s", diff)
	}
	// The stranger's datagram may still be in flight on loopback: wait
	// for its drop before the line is made.
	waitUntil(t, "the association to count the stranger's datagram", func() bool { return associationDropped(s) == 1 })
	control.Close()
	line := udpLine(t, s)
	each := int64(len(datagram("127.0.0.1", echo.port, "learned")) + len(datagram("127.0.0.1", echo.port, "after")))
	want := vmconfig.AccessLine{User: testUser, Protocol: vmconfig.ProtocolSocks5, Method: "UDP ASSOCIATE",
		DatagramsIn: 2, DatagramsOut: 2, DatagramBytesIn: each, DatagramBytesOut: each, DatagramsDropped: 1}
	if diff := cmp.Diff(want, line, udpLineFields); diff != "" {
		t.Errorf("the association's line: -want +got:\n%s", diff)
	}
}

// associationDropped is the drops of the server's one association.
func associationDropped(s *Server) int64 {
	s.udp.mu.Lock()
	defer s.udp.mu.Unlock()
	for _, a := range s.udp.byAddr {
		return a.dropped.Load()
	}
	return -1
}

// fakeClock makes a bucket's time a count: it moves only when the bucket
// sleeps, so the time slept says how many bytes the limit let through.
func fakeClock(b *bucket) *atomic.Int64 {
	var slept atomic.Int64
	start := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.now = func() time.Time { return start.Add(time.Duration(slept.Load())) }
	b.sleep = func(d time.Duration) { slept.Add(int64(d)) }
	b.last, b.tokens = start, 0
	return &slept
}

// TestSocks5UDPBandwidth: the datagrams' bytes, headers included, are
// held to the bandwidth limit each way: from an empty bucket, the time
// the limit made them wait is their bytes at the rate.
func TestSocks5UDPBandwidth(t *testing.T) {
	echo := startUDPEcho(t, "127.0.0.1")
	cfg := testConfig(t, 443)
	const bps = 1_000_000
	cfg.BandwidthBitsPerSecond = bps
	s, proxy := startUDPProxy(t, cfg)
	up, down := fakeClock(s.up), fakeClock(s.down)
	control, relay := udpAssociate(t, proxy, netip.MustParseAddrPort("0.0.0.0:0"))
	client := newUDPClient(t, relay)
	for _, size := range []int{1000, 3000, 1} {
		client.echo(echo.port, strings.Repeat("x", size))
	}
	control.Close()
	line := udpLine(t, s)
	// Bytes the bucket let through in the time it slept, to the byte
	// (the float arithmetic of a refill may cost a byte's wait).
	through := func(slept *atomic.Int64) int64 {
		return int64(time.Duration(slept.Load()).Seconds()*bps/8 + 0.5)
	}
	got := [2]int64{through(up), through(down)}
	want := [2]int64{line.DatagramBytesIn, line.DatagramBytesOut}
	if d := [2]int64{got[0] - want[0], got[1] - want[1]}; d[0] < 0 || d[0] > 1 || d[1] < 0 || d[1] > 1 || want[0] != 10*3+4001 {
		t.Errorf("the limit let through %v bytes (up, down), want the datagrams' %v (10 bytes of header and the data, 4001 bytes of it)", got, want)
	}
}

// TestSocks5UDPIdle: an association through which nothing moves ends at
// udpIdleTimeout, its control connection closed, its line saying why.
func TestSocks5UDPIdle(t *testing.T) {
	cfg := testConfig(t, 443)
	cfg.UDPIdleTimeout = vmconfig.Duration(50 * time.Millisecond)
	s, proxy := startUDPProxy(t, cfg)
	conn, _ := udpAssociate(t, proxy, netip.MustParseAddrPort("127.0.0.1:9"))
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the control connection of an idle association: %v, want closed", err)
	}
	line := udpLine(t, s)
	if diff := cmp.Diff(vmconfig.AccessLine{User: testUser, Protocol: vmconfig.ProtocolSocks5, Method: "UDP ASSOCIATE", Reason: endIdle}, line, udpLineFields); diff != "" {
		t.Errorf("the idle association's line: -want +got:\n%s", diff)
	}
}

// TestSocks5UDPTakenAway: a reload that takes the association's
// credential or its client's range away ends it at once, as it ends a
// tunnel, its line saying why.
func TestSocks5UDPTakenAway(t *testing.T) {
	for name, tc := range map[string]struct {
		change func(*vmconfig.Config)
		reason string
	}{
		"PasswordRotated": {func(c *vmconfig.Config) { c.Users[0].PasswordHash = hashOf(t, testPassword+"x") }, endRevoked},
		"RangeRemoved":    {func(c *vmconfig.Config) { c.AllowedSourceRanges = []string{"192.0.2.0/24"} }, endSourceGone},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(t, 443)
			s, proxy := startUDPProxy(t, cfg)
			conn, _ := udpAssociate(t, proxy, netip.MustParseAddrPort("127.0.0.1:9"))
			cfg.AccessLog, cfg.Socks5Listen, cfg.Socks5UDP = true, s.started.Socks5Listen, true
			cfg.Users = []vmconfig.User{cfg.Users[0]}
			tc.change(&cfg)
			if err := s.Apply(cfg); err != nil {
				t.Fatal(err)
			}
			conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			if _, err := conn.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("the control connection after the reload: %v, want closed", err)
			}
			want := vmconfig.AccessLine{User: testUser, Protocol: vmconfig.ProtocolSocks5, Method: "UDP ASSOCIATE", Reason: tc.reason}
			if diff := cmp.Diff(want, udpLine(t, s), udpLineFields); diff != "" {
				t.Errorf("the association's line: -want +got:\n%s", diff)
			}
		})
	}
}

// TestSocks5UDPOff: without socks5UDP, UDP ASSOCIATE keeps its refusal,
// and a configuration that turns it off ends the associations open.
func TestSocks5UDPOff(t *testing.T) {
	cfg := testConfig(t, 443)
	s, proxy := startUDPProxy(t, cfg)
	conn, _ := udpAssociate(t, proxy, netip.MustParseAddrPort("127.0.0.1:9"))
	cfg.AccessLog, cfg.Socks5Listen, cfg.Socks5UDP = true, s.started.Socks5Listen, false
	if err := s.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the control connection after socks5UDP turned off: %v, want closed", err)
	}
	line := udpLine(t, s)
	if diff := cmp.Diff(vmconfig.AccessLine{User: testUser, Protocol: vmconfig.ProtocolSocks5, Method: "UDP ASSOCIATE", Reason: endUDPOff}, line, udpLineFields); diff != "" {
		t.Errorf("the association's line: -want +got:\n%s", diff)
	}
	got, _ := socksDial(t, proxy, socksClient{user: testUser, password: testPassword, command: socksCommandUDPAssociate,
		atyp: socksAddressIPv4, addr: []byte{127, 0, 0, 1}, port: 9})
	if got.Reply != socksCommandNotSupported {
		t.Errorf("UDP ASSOCIATE with socks5UDP off: reply %d, want %d", got.Reply, socksCommandNotSupported)
	}
}

// TestRelayAddr: the reply names the address the client reached, or the
// unspecified address where a private address on the VM's side and a
// public client say a 1:1 NAT is between them.
func TestRelayAddr(t *testing.T) {
	for _, tc := range []struct{ local, client, want string }{
		{"127.0.0.1", "127.0.0.1", "127.0.0.1"},
		{"10.128.0.5", "203.0.113.9", "0.0.0.0"},
		{"10.128.0.5", "10.128.0.9", "10.128.0.5"},
		{"::ffff:10.128.0.5", "::ffff:198.51.100.7", "0.0.0.0"},
		{"192.0.2.10", "203.0.113.9", "192.0.2.10"},
		{"fd00::5", "2001:db8::9", "::"},
		{"2001:db8:7::5", "2001:db8::9", "2001:db8:7::5"},
	} {
		got := relayAddr(netip.MustParseAddr(tc.local), netip.MustParseAddr(tc.client))
		if diff := cmp.Diff(tc.want, got.String()); diff != "" {
			t.Errorf("relayAddr(%s, %s) (-want +got):\n%s", tc.local, tc.client, diff)
		}
	}
}
