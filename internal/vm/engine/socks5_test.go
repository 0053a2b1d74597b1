package engine

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// startSocks serves SOCKS5 of s on a loopback port until the test ends.
func startSocks(t testing.TB, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.ServeSOCKS5(ln)
	return ln.Addr().String()
}

// socksAnswer is what a SOCKS5 client saw: the method the proxy chose,
// the authentication status (when it got that far) and the reply code.
type socksAnswer struct {
	Method, Auth, Reply int
}

// socksClient is a SOCKS5 client's request; a zero user offers no
// username/password method.
type socksClient struct {
	user, password string
	command        byte
	atyp           byte
	addr           []byte
	port           int
}

// socksDial runs c's handshake against proxy and returns what it saw and,
// on reply 0, the connection.
func socksDial(t *testing.T, proxy string, c socksClient) (socksAnswer, net.Conn) {
	t.Helper()
	conn, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	got := socksAnswer{Method: -1, Auth: -1, Reply: -1}
	method := byte(socksMethodUserPass)
	if c.user == "" {
		method = 0x00
	}
	conn.Write([]byte{5, 1, method})
	var b [2]byte
	if _, err := io.ReadFull(conn, b[:]); err != nil {
		t.Fatalf("method selection: %v", err)
	}
	got.Method = int(b[1])
	if b[1] != socksMethodUserPass {
		return got, nil
	}
	auth := []byte{1, byte(len(c.user))}
	auth = append(auth, c.user...)
	auth = append(append(auth, byte(len(c.password))), c.password...)
	conn.Write(auth)
	if _, err := io.ReadFull(conn, b[:]); err != nil {
		t.Fatalf("authentication status: %v", err)
	}
	got.Auth = int(b[1])
	if b[1] != 0 {
		return got, nil
	}
	req := []byte{5, c.command, 0, c.atyp}
	if c.atyp == socksAddressDomain {
		req = append(req, byte(len(c.addr)))
	}
	req = append(req, c.addr...)
	req = binary.BigEndian.AppendUint16(req, uint16(c.port))
	conn.Write(req)
	var rep [4]byte
	if _, err := io.ReadFull(conn, rep[:]); err != nil {
		t.Fatalf("reply: %v", err)
	}
	got.Reply = int(rep[1])
	n := 4
	if rep[3] == socksAddressIPv6 {
		n = 16
	}
	io.ReadFull(conn, make([]byte, n+2))
	if rep[1] != 0 {
		return got, nil
	}
	return got, conn
}

func TestSocks5(t *testing.T) {
	_, echoPort := startEcho(t)
	closedPort := freePort(t)
	loopback := netip.MustParseAddr("127.0.0.1").AsSlice()
	connect := func(atyp byte, addr []byte, port int) socksClient {
		return socksClient{user: testUser, password: testPassword, command: socksCommandConnect, atyp: atyp, addr: addr, port: port}
	}
	cases := map[string]struct {
		reason string
		client socksClient
		want   socksAnswer
	}{
		"right credentials, by address": {
			reason: "a client with the proxy's credentials gets its tunnel",
			client: connect(socksAddressIPv4, loopback, echoPort),
			want:   socksAnswer{Method: 2, Auth: 0, Reply: 0},
		},
		"right credentials, by name": {
			reason: "a name is resolved by the proxy, checked and dialled by address",
			client: connect(socksAddressDomain, []byte("target.test"), echoPort),
			want:   socksAnswer{Method: 2, Auth: 0, Reply: 0},
		},
		"no username/password method": {
			reason: "RFC 1928: no acceptable method is FF, and the connection closes",
			client: socksClient{command: socksCommandConnect},
			want:   socksAnswer{Method: 0xff, Auth: -1, Reply: -1},
		},
		"wrong password": {
			reason: "RFC 1929: a failed authentication is status 1",
			client: socksClient{user: testUser, password: testPassword + "x", command: socksCommandConnect, atyp: socksAddressIPv4, addr: loopback, port: echoPort},
			want:   socksAnswer{Method: 2, Auth: 1, Reply: -1},
		},
		"BIND": {
			reason: "only CONNECT is carried: 07, command not supported",
			client: socksClient{user: testUser, password: testPassword, command: socksCommandBind, atyp: socksAddressIPv4, addr: loopback, port: echoPort},
			want:   socksAnswer{Method: 2, Auth: 0, Reply: 7},
		},
		"UDP ASSOCIATE": {
			reason: "only CONNECT is carried: 07, command not supported",
			client: socksClient{user: testUser, password: testPassword, command: socksCommandUDPAssociate, atyp: socksAddressIPv4, addr: loopback, port: echoPort},
			want:   socksAnswer{Method: 2, Auth: 0, Reply: 7},
		},
		"unknown address type": {
			reason: "08, address type not supported",
			client: connect(0x09, nil, echoPort),
			want:   socksAnswer{Method: 2, Auth: 0, Reply: 8},
		},
		"denied destination": {
			reason: "the metadata server is never reachable: 02, not allowed by ruleset",
			client: connect(socksAddressIPv4, []byte{169, 254, 169, 254}, echoPort),
			want:   socksAnswer{Method: 2, Auth: 0, Reply: 2},
		},
		"a name resolving to a denied address among allowed ones": {
			reason: "every address of a name is checked",
			client: connect(socksAddressDomain, []byte("mixed.test"), echoPort),
			want:   socksAnswer{Method: 2, Auth: 0, Reply: 2},
		},
		"zone ID in a name": {
			reason: "a zoned address as a name is refused before any check",
			client: connect(socksAddressDomain, []byte("127.0.0.1%lo"), echoPort),
			want:   socksAnswer{Method: 2, Auth: 0, Reply: 2},
		},
		"port not allowed": {
			reason: "the port allowlist holds for SOCKS5 as for CONNECT",
			client: connect(socksAddressIPv4, loopback, closedPort+1),
			want:   socksAnswer{Method: 2, Auth: 0, Reply: 2},
		},
		"a name that does not resolve": {
			reason: "04, host unreachable",
			client: connect(socksAddressDomain, []byte("nowhere.test"), echoPort),
			want:   socksAnswer{Method: 2, Auth: 0, Reply: 4},
		},
		"nothing listening": {
			reason: "05, connection refused",
			client: connect(socksAddressIPv4, loopback, closedPort),
			want:   socksAnswer{Method: 2, Auth: 0, Reply: 5},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, _ := startProxy(t, testConfig(t, echoPort, closedPort))
			got, conn := socksDial(t, startSocks(t, s), tc.client)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("%s\n-want +got:\n%s", tc.reason, diff)
			}
			if conn != nil {
				if err := echoes(t, tunnelConn{conn, bufio.NewReader(conn)}, "through SOCKS5"); err != nil {
					t.Errorf("%s\nthe tunnel does not carry bytes: %v", tc.reason, err)
				}
			}
		})
	}
}

// TestSocks5Counted: a SOCKS5 tunnel is counted and revoked as a CONNECT
// one is.
func TestSocks5Counted(t *testing.T) {
	_, echoPort := startEcho(t)
	cfg := testConfig(t, echoPort)
	s, _ := startProxy(t, cfg)
	_, conn := socksDial(t, startSocks(t, s), socksClient{user: testUser, password: testPassword, command: socksCommandConnect,
		atyp: socksAddressIPv4, addr: []byte{127, 0, 0, 1}, port: echoPort})
	if conn == nil {
		t.Fatal("no tunnel")
	}
	tc := tunnelConn{conn, bufio.NewReader(conn)}
	if err := echoes(t, tc, "12345"); err != nil {
		t.Fatal(err)
	}
	type counts struct{ BytesIn, BytesOut, Socks5, ActiveTunnels int64 }
	st := s.Stats()
	if diff := cmp.Diff(counts{5, 5, 1, 1}, counts{st.BytesIn, st.BytesOut, st.Requests.Socks5, st.ActiveTunnels}); diff != "" {
		t.Errorf("counters with a SOCKS5 tunnel open: -want +got:\n%s", diff)
	}
	next := cfg
	next.Generation = 2
	next.Users = []vmconfig.User{{Name: "bob", PasswordHash: hashOf(t, "bobsPasswordOf24Chars000")}}
	if err := s.Apply(next); err != nil {
		t.Fatal(err)
	}
	if err := echoes(t, tc, "revoked"); err == nil {
		t.Errorf("a SOCKS5 tunnel of a removed user still carries data")
	}
	waitUntil(t, "the SOCKS5 tunnel to be counted closed", func() bool { return s.Stats().ActiveTunnels == 0 })
}

// FuzzSocks5Handshake feeds any bytes to the SOCKS5 handshake: nothing
// panics, a handshake succeeds only with the right password (as the user
// or a session of it) and only for
// a CONNECT to an allowed port and a host the engine can name, and every
// byte the engine writes is a well-formed answer.
func FuzzSocks5Handshake(f *testing.F) {
	r, err := compile(testConfig(f, 443))
	if err != nil {
		f.Fatal(err)
	}
	auth := append([]byte{1, byte(len(testUser))}, testUser...)
	auth = append(append(auth, byte(len(testPassword))), testPassword...)
	f.Add(append(append([]byte{5, 1, 2}, auth...), 5, 1, 0, 3, 11, 't', 'a', 'r', 'g', 'e', 't', '.', 't', 'e', 's', 't', 1, 187))
	f.Add(append(append([]byte{5, 1, 2}, auth...), 5, 1, 0, 1, 127, 0, 0, 1, 1, 187))
	f.Add(append(append([]byte{5, 1, 2}, auth...), 5, 3, 0, 1, 127, 0, 0, 1, 1, 187))
	f.Add([]byte{5, 2, 0, 2, 1, 1, 'a', 1, 'b'})
	f.Add([]byte{4, 1, 0, 80, 127, 0, 0, 1, 0})
	session := append([]byte{1, byte(len(testUser + "-session-s1"))}, testUser+"-session-s1"...)
	session = append(append(session, byte(len(testPassword))), testPassword...)
	f.Add(append(append([]byte{5, 1, 2}, session...), 5, 1, 0, 1, 127, 0, 0, 1, 1, 187))
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		req, err := socksHandshake(struct {
			io.Reader
			io.Writer
		}{bytes.NewReader(in), &out}, r)
		if err == nil {
			// The credentials as sent: the user's name, or its
			// session's.
			user := testUser
			if req.cred.session != "" {
				user += sessionMarker + req.cred.session
			}
			sent := append([]byte{1, byte(len(user))}, user...)
			sent = append(append(sent, byte(len(testPassword))), testPassword...)
			if req.cred.name != testUser || !bytes.Contains(in, sent) || req.command != socksCommandConnect || !r.ports[req.port] || !validHost(req.host) {
				t.Fatalf("handshake %q passed as %+v", in, req)
			}
		}
		if b := out.Bytes(); len(b) > 0 && b[0] != socksVersion {
			t.Fatalf("the first answer %q is not SOCKS5's", b)
		}
	})
}

// TestSocks4Refused: a SOCKS4 or 4a client on the SOCKS5 port gets
// SOCKS4's own "request rejected" (0x5B) rather than a reset, and leaves
// an access line.
func TestSocks4Refused(t *testing.T) {
	cases := map[string]struct {
		request []byte
		line    vmconfig.AccessLine
	}{
		"SOCKS4 by address": {
			request: []byte{4, 1, 0, 80, 169, 254, 169, 254, 'u', 0},
			line:    vmconfig.AccessLine{Protocol: "socks5", Method: "CONNECT", Host: "169.254.169.254", Port: 80, Status: 0x5b, Reason: "socks-version-not-supported"},
		},
		"SOCKS4a by name": {
			request: append([]byte{4, 1, 1, 187, 0, 0, 0, 1, 0}, "target.test\x00"...),
			line:    vmconfig.AccessLine{Protocol: "socks5", Method: "CONNECT", Host: "target.test", Port: 443, Status: 0x5b, Reason: "socks-version-not-supported"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(t, 443)
			cfg.AccessLog = true
			s, _ := startProxy(t, cfg)
			c, err := net.Dial("tcp", startSocks(t, s))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second))
			c.Write(tc.request)
			got := make([]byte, 8)
			if _, err := io.ReadFull(c, got); err != nil {
				t.Fatalf("SOCKS4 reply: %v", err)
			}
			if diff := cmp.Diff([]byte{0, 0x5b, 0, 0, 0, 0, 0, 0}, got); diff != "" {
				t.Errorf("SOCKS4 reply -want +got:\n%s", diff)
			}
			waitUntil(t, "an access line", func() bool { return len(s.access.page(0).Lines) > 0 })
			lines := s.access.page(0).Lines
			if diff := cmp.Diff([]vmconfig.AccessLine{tc.line}, lines, cmpopts.IgnoreFields(vmconfig.AccessLine{}, "Time", "End", "Source", "DurationMs", "BytesIn", "BytesOut")); diff != "" {
				t.Errorf("access lines -want +got:\n%s", diff)
			}
		})
	}
}
