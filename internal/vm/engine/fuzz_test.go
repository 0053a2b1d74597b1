package engine

import (
	"bufio"
	"bytes"
	"net/http"
	"strings"
	"testing"
)

// FuzzRequestHead feeds a request head, as a client sends it, through the
// parser the server uses (net/http's) and then the proxy's own reading of
// it: the credentials and the destination. Whatever the bytes, nothing
// panics, only the right credentials authorise, and a destination that
// passes has an allowed port and a host (a session of the user,
// USER-session-ID, is the user). The seed corpus is in
// testdata/fuzz/FuzzRequestHead and runs with every go test.
func FuzzRequestHead(f *testing.F) {
	r, err := compile(testConfig(f, 443, 80))
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nProxy-Authorization: " + basic(testUser, testPassword) + "\r\n\r\n"))
	f.Add([]byte("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nProxy-Authorization: " + basic(testUser+"-session-s1", testPassword) + "\r\n\r\n"))
	f.Fuzz(func(t *testing.T, head []byte) {
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
		if err != nil {
			return
		}
		auth := req.Header.Get("Proxy-Authorization")
		if user, err := r.authorize(auth); err == nil {
			name, password, ok := parseBasic(auth)
			if user.session != "" {
				name = strings.TrimSuffix(name, sessionMarker+user.session)
			}
			if !ok || name != testUser || user.name != testUser || password != testPassword {
				t.Fatalf("%q authorised as %q: want only %s with its password", auth, user, testUser)
			}
		}
		hostport, def := req.Host, 0
		if req.Method != http.MethodConnect {
			hostport, def = req.URL.Host, 80
		}
		if host, port, err := r.target(hostport, def); err == nil && (host == "" || !r.ports[port]) {
			t.Fatalf("destination %q passed as host %q port %d", hostport, host, port)
		}
	})
}

// FuzzBasic: the credentials decoder takes any header value; what it
// decodes is what was encoded, split at the first colon (RFC 7617: a
// username holds none), and an empty username is no credential.
func FuzzBasic(f *testing.F) {
	f.Add("alice", "s3cret")
	f.Add("", "")
	f.Add("a:b", "c")
	f.Fuzz(func(t *testing.T, user, password string) {
		header := basic(user, password)
		gotUser, gotPassword, ok := parseBasic(header)
		wantUser, wantPassword, _ := strings.Cut(user+":"+password, ":")
		if ok != (wantUser != "") {
			t.Fatalf("parseBasic(%q) ok = %v, want %v", header, ok, wantUser != "")
		}
		if ok && (gotUser != wantUser || gotPassword != wantPassword) {
			t.Fatalf("parseBasic(%q) = %q, %q; want %q, %q", header, gotUser, gotPassword, wantUser, wantPassword)
		}
		parseBasic(user + password) // any text at all: no panic
	})
}

// FuzzSocks5UDPHeader feeds a datagram, as a SOCKS5 client sends it to
// the UDP relay, through parseUDPHeader: whatever the bytes, nothing
// panics; a header that parses names a host the engine would resolve
// (validHost) and a port 1-65535; and the header built again from it
// parses to the same header, before the same data.
func FuzzSocks5UDPHeader(f *testing.F) {
	f.Add([]byte{0, 0, 0, socksAddressIPv4, 192, 0, 2, 7, 0, 53, 'q'})
	f.Add(append([]byte{0, 0, 0, socksAddressDomain, 8}, "dns.test\x00\x35data"...))
	f.Add(append([]byte{0, 0, 1, socksAddressIPv6}, make([]byte, 18)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, data, err := parseUDPHeader(b)
		if err != nil {
			return
		}
		if !validHost(h.Host) || h.Port < 1 || h.Port > 65535 {
			t.Fatalf("parseUDPHeader(%x) = %+v: want a host validHost accepts and a port 1-65535", b, h)
		}
		again := append(appendUDPHeader(nil, h), data...)
		h2, data2, err := parseUDPHeader(again)
		if err != nil || h2 != h || !bytes.Equal(data2, data) {
			t.Fatalf("parseUDPHeader(%x) = %+v; built again, %x parses to %+v, %v", b, h, again, h2, err)
		}
	})
}

// FuzzSessionUsername feeds a username, as a client sends it in Basic or
// RFC 1929 credentials, through parseSessionUsername and the credential
// check: whatever the text, nothing panics; a split is at the last
// "-session-", rebuilds the name, has a user and a valid ID; and the
// test user's password admits USER-session-ID exactly when the last
// split leaves that user and ID, as that user with that session.
func FuzzSessionUsername(f *testing.F) {
	r, err := compile(testConfig(f, 443))
	if err != nil {
		f.Fatal(err)
	}
	f.Add("alice-session-abc")
	f.Add("team-session-1-session-x_y-z")
	f.Add("-session-")
	f.Add("alice-session-" + strings.Repeat("9", 65))
	f.Fuzz(func(t *testing.T, name string) {
		user, id, ok := parseSessionUsername(name)
		if ok {
			if user == "" || !validSessionID(id) || user+sessionMarker+id != name || strings.Contains(id, sessionMarker) {
				t.Fatalf("parseSessionUsername(%q) = %q, %q: want a user, a valid ID after the last %q, rebuilding the name", name, user, id, sessionMarker)
			}
		} else if i := strings.LastIndex(name, sessionMarker); i > 0 && validSessionID(name[i+len(sessionMarker):]) {
			t.Fatalf("parseSessionUsername(%q) refused a name with a user and a valid ID", name)
		}
		// The check reads the name as the parser does: the last split
		// decides, so an ID holding the marker (or overlapping it, as
		// in "session-session-0") leaves a user named USER-session…
		// before it, whom the rules do not hold.
		full := testUser + sessionMarker + name
		u, id, ok := parseSessionUsername(full)
		c, err := r.check(full, testPassword)
		if want := ok && u == testUser; (err == nil) != want {
			t.Fatalf("check(%q) = %v; want admitted %v", full, err, want)
		}
		if err == nil && (c.name != testUser || c.session != id || id != name) {
			t.Fatalf("check(%q) = user %q session %q", full, c.name, c.session)
		}
	})
}
