package engine

// The source address of a connection to an IPv6 destination, and the
// sessions a client names in its username. Where the VM has a routed IPv6
// prefix (vmconfig.Config.IPv6Prefix), the agent makes every address in
// it local (a local route for the prefix on lo), and the engine binds
// each upstream connection to the address ipv6Egress picks, with
// IPV6_FREEBIND so that no address is ever configured on an interface:
//
//   - off, single: the kernel's choice (the VM's own IPv6 address);
//   - perConnection: a fresh random address inside the prefix for each
//     connection;
//   - perSession: for a client that authenticated as USER-session-ID,
//     the session's address, derived from the session (below); for a
//     plain USER, perConnection's.
//
// IPv4 destinations always leave from the kernel's choice, the VM's IPv4
// address. A name that resolves to both families is raced as before
// (dial.go): its IPv6 attempts leave from the chosen address.
//
// A session's address is HMAC-SHA256 keyed with the user's password, of
// the prefix, the user and the session ID, its leading bits put in the
// prefix's host part: the same session gets the same address without a
// table the engine would have to bound, keep or share, and a different ID
// or user a different one (up to the prefix's size). The key is the
// password because it is the one secret the engine holds that is stable
// for the proxy's life: a session keeps its address across reloads, a
// re-rendered configuration (whose hashes are salted afresh), an engine
// restart and a reboot, for as long as the proxy keeps its prefix and its
// password; a key drawn at the engine's start would move every session at
// each restart, and the configuration holds no other stable secret. A
// password rotation moves the sessions: new credentials, new identities.
// Keyed, the addresses tell a destination nothing it could link to a
// user or a session without the password.

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"net"
	"net/netip"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// sessionMarker separates a username's user from its session ID.
const sessionMarker = "-session-"

// sessionIDMax is the longest session ID.
const sessionIDMax = 64

// parseSessionUsername splits USER-session-ID at the last "-session-":
// user is what comes before it (not empty), id what comes after, 1 to 64
// letters, digits, '_' and '-' (and so never "-session-" itself: the
// split is the last). ok is false for a name that has no such split.
// check tries a username as a user's whole name first: a user whose name
// holds "-session-" authenticates plainly by it.
func parseSessionUsername(name string) (user, id string, ok bool) {
	i := strings.LastIndex(name, sessionMarker)
	if i <= 0 {
		return "", "", false
	}
	user, id = name[:i], name[i+len(sessionMarker):]
	if !validSessionID(id) {
		return "", "", false
	}
	return user, id, true
}

// validSessionID reports whether id is 1-64 ASCII letters, digits, '_'
// and '-'.
func validSessionID(id string) bool {
	if id == "" || len(id) > sessionIDMax {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ipv6Source returns the source a connection of who's to an IPv6
// destination leaves from, or the zero Addr for the kernel's choice.
func (r *rules) ipv6Source(who credential) netip.Addr {
	switch r.ipv6Egress {
	case vmconfig.IPv6EgressPerConnection:
		return randomAddress(r.ipv6Prefix)
	case vmconfig.IPv6EgressPerSession:
		if who.session == "" {
			return randomAddress(r.ipv6Prefix)
		}
		return sessionAddress(r.ipv6Prefix, who.password, who.name, who.session)
	}
	return netip.Addr{}
}

// prefixText is p as a log line says it: "" for none.
func prefixText(p netip.Prefix) string {
	if !p.IsValid() {
		return ""
	}
	return p.String()
}

// rotates reports whether connections to IPv6 destinations leave from an
// address chosen per connection or per session, not the kernel's.
func (r *rules) rotates() bool {
	return vmconfig.RotatesIPv6(r.ipv6Egress)
}

// randomAddress is a random address inside p, never its network address
// (the subnet-router anycast address, RFC 4291 §2.6.1).
func randomAddress(p netip.Prefix) netip.Addr {
	for {
		var host [16]byte
		rand.Read(host[:])
		if a, ok := within(p, host); ok {
			return a
		}
	}
}

// sessionAddress is the address of user's session id inside p, keyed with
// the user's password (the file's comment says why).
func sessionAddress(p netip.Prefix, password, user, id string) netip.Addr {
	mac := hmac.New(sha256.New, []byte(password))
	// Each part with its length, so no two (prefix, user, id) write the
	// same bytes.
	for _, part := range []string{"egress-proxy session address v1", p.String(), user, id} {
		mac.Write([]byte{byte(len(part) >> 8), byte(len(part))})
		mac.Write([]byte(part))
	}
	var host [16]byte
	copy(host[:], mac.Sum(nil))
	if a, ok := within(p, host); ok {
		return a
	}
	// The digest's host bits were all zero (1 in 2^(128-bits)): the
	// address next to the network's, as stable as any other.
	host[15] = 1
	a, _ := within(p, host)
	return a
}

// within puts host's low bits (as many as p's host part holds) in p's
// host part; ok is false when they are all zero, the network address.
func within(p netip.Prefix, host [16]byte) (netip.Addr, bool) {
	net16 := p.Masked().Addr().As16()
	bits := p.Bits()
	zero := true
	for i := range 16 {
		// The mask of byte i's host bits.
		var m byte
		switch {
		case (i+1)*8 <= bits:
			m = 0
		case i*8 >= bits:
			m = 0xff
		default:
			m = 0xff >> (bits - i*8)
		}
		h := host[i] & m
		zero = zero && h == 0
		net16[i] |= h
	}
	return netip.AddrFrom16(net16), !zero
}

// connectFrom is one connection attempt to dst, from src when it is
// valid (an address of the VM's prefix, bound without being configured:
// IPV6_FREEBIND) or from the kernel's choice. IP_BIND_ADDRESS_NO_PORT
// lets connect pick the port for the whole 4-tuple, so a session's one
// address is not held to one ephemeral port range shared by all its
// destinations.
func connectFrom(ctx context.Context, src netip.Addr, dst netip.AddrPort) (net.Conn, error) {
	var d net.Dialer
	if src.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: src.AsSlice()}
		d.Control = freebind
	}
	return d.DialContext(ctx, "tcp", dst.String())
}

// freebind lets a socket bind an address no interface holds.
func freebind(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_IPV6, unix.IPV6_FREEBIND, 1)
		if serr == nil {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
		}
	})
	if err != nil {
		return err
	}
	return serr
}
