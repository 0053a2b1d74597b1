package engine

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// SOCKS5 (RFC 1928) with username and password (RFC 1929), on
// Socks5Listen: the same users, source ranges, destination filter, port
// allowlist, counters, access log and tunnels as HTTP CONNECT. The
// CONNECT command is carried, and UDP ASSOCIATE where the configuration's
// socks5UDP is on (udp.go, whose relay and ports the VM's filter models);
// BIND, and UDP ASSOCIATE otherwise, are answered "command not supported"
// (07): a proxy VM that accepted connections for its clients would be an
// open door the firewall does not model. A client that offers no
// username/password method is answered "no acceptable methods" (FF).

// socksRequest is what a SOCKS5 client asked for once it authenticated.
type socksRequest struct {
	cred    credential
	command byte
	host    string
	port    int
}

// errSocksClosed ends a handshake whose answer was written already (a
// refused method or credentials, which RFC 1929 says to close on).
var errSocksClosed = errors.New("socks5: handshake refused")

// socksHandshake reads a client's greeting, credentials and request from
// rw under r, writing the method selection, the authentication status
// and, for a request it refuses, the reply; it reads exactly the bytes of
// the handshake, so whatever the client sends after its request is the
// tunnel's. On success the caller writes the reply, once it knows the
// dial's outcome. The returned error is a refusal (its answer names the
// reply written) or the client's fault.
func socksHandshake(rw io.ReadWriter, r *rules) (socksRequest, error) {
	var req socksRequest
	var hdr [2]byte
	if _, err := io.ReadFull(rw, hdr[:]); err != nil {
		return req, err
	}
	if hdr[0] != socksVersion {
		return req, fmt.Errorf("socks5: version %d", hdr[0])
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(rw, methods); err != nil {
		return req, err
	}
	offered := false
	for _, m := range methods {
		offered = offered || m == socksMethodUserPass
	}
	if !offered {
		rw.Write([]byte{socksVersion, socksNoAcceptableMethods})
		return req, refuse(ansCredentialsMissing, errSocksClosed)
	}
	if _, err := rw.Write([]byte{socksVersion, socksMethodUserPass}); err != nil {
		return req, err
	}
	// RFC 1929: VER ULEN UNAME PLEN PASSWD.
	if _, err := io.ReadFull(rw, hdr[:]); err != nil {
		return req, err
	}
	if hdr[0] != socksAuthVersion {
		rw.Write([]byte{socksAuthVersion, socksAuthFailed})
		return req, refuse(ansCredentialsMissing, errSocksClosed)
	}
	name := make([]byte, int(hdr[1])+1)
	if _, err := io.ReadFull(rw, name); err != nil {
		return req, err
	}
	password := make([]byte, name[len(name)-1])
	name = name[:len(name)-1]
	if _, err := io.ReadFull(rw, password); err != nil {
		return req, err
	}
	cred, err := r.check(string(name), string(password))
	if err != nil || len(name) == 0 {
		rw.Write([]byte{socksAuthVersion, socksAuthFailed})
		return req, refuse(ansCredentialsWrong, errSocksClosed)
	}
	if _, err := rw.Write([]byte{socksAuthVersion, socksAuthSucceeded}); err != nil {
		return req, err
	}
	req.cred = cred
	// The request: VER CMD RSV ATYP DST.ADDR DST.PORT.
	var head [4]byte
	if _, err := io.ReadFull(rw, head[:]); err != nil {
		return req, err
	}
	req.command = head[1]
	reject := func(a reply, err error) (socksRequest, error) {
		writeSocksReply(rw, a.Socks, nil)
		return req, refuse(a, err)
	}
	if head[0] != socksVersion {
		return reject(ansBadRequest, fmt.Errorf("socks5: request version %d", head[0]))
	}
	switch head[3] {
	case socksAddressIPv4, socksAddressIPv6:
		b := make([]byte, 4)
		if head[3] == socksAddressIPv6 {
			b = make([]byte, 16)
		}
		if _, err := io.ReadFull(rw, b); err != nil {
			return req, err
		}
		a, _ := netip.AddrFromSlice(b)
		req.host = a.Unmap().String()
	case socksAddressDomain:
		var n [1]byte
		if _, err := io.ReadFull(rw, n[:]); err != nil {
			return req, err
		}
		b := make([]byte, n[0])
		if _, err := io.ReadFull(rw, b); err != nil {
			return req, err
		}
		req.host = string(b)
	default:
		return reject(ansAddressUnsupported, fmt.Errorf("socks5: address type %d", head[3]))
	}
	var port [2]byte
	if _, err := io.ReadFull(rw, port[:]); err != nil {
		return req, err
	}
	req.port = int(binary.BigEndian.Uint16(port[:]))
	if req.command == socksCommandUDPAssociate && r.udp {
		// The address the client will send its datagrams from; only
		// its port counts (udp.go), and 0 is "the first datagram's".
		return req, nil
	}
	if req.command != socksCommandConnect {
		return reject(ansCommandUnsupported, fmt.Errorf("socks5: command %d", req.command))
	}
	host, p, err := splitTarget(net.JoinHostPort(req.host, strconv.Itoa(req.port)), 0)
	if err != nil {
		return reject(answerOf(err), err)
	}
	if !r.ports[p] {
		return reject(ansPortNotAllowed, fmt.Errorf("socks5: port %d", p))
	}
	req.host, req.port = host, p
	return req, nil
}

// socksRefusalLen is the bytes of a refusal's reply: an IPv4 zero
// address and port.
const socksRefusalLen = 10

// writeSocksReply writes a reply with code and the bound address (zeros
// when there is none: a refusal).
func writeSocksReply(w io.Writer, code byte, bound *net.TCPAddr) error {
	b := []byte{socksVersion, code, 0x00}
	a, port := netip.IPv4Unspecified(), 0
	if bound != nil {
		a, port = bound.AddrPort().Addr().Unmap(), int(bound.Port)
	}
	if a.Is4() {
		b = append(b, socksAddressIPv4)
	} else {
		b = append(b, socksAddressIPv6)
	}
	b = append(b, a.AsSlice()...)
	b = binary.BigEndian.AppendUint16(b, uint16(port))
	_, err := w.Write(b)
	return err
}

// serveSOCKS5 serves one SOCKS5 connection: the handshake within the
// header timeout, the dial, the reply, then the tunnel.
func (s *Server) serveSOCKS5(cc *clientConn) {
	r := s.rules.Load()
	s.reqSocks.Add(1)
	rec := s.newRecord(cc, vmconfig.ProtocolSocks5, "")
	cc.conn.SetDeadline(time.Now().Add(r.headerTimeout))
	var version [1]byte
	if _, err := io.ReadFull(cc, version[:]); err != nil {
		return
	}
	if version[0] == socks4Version {
		s.refuseSocks4(cc, rec)
		return
	}
	req, err := socksHandshake(struct {
		io.Reader
		io.Writer
	}{io.MultiReader(bytes.NewReader(version[:]), cc), cc}, r)
	rec.line.Method = socksCommandName(req.command)
	rec.line.User, rec.line.Session = req.cred.name, req.cred.session
	if req.host != "" {
		rec.destination(req.host, req.port)
	}
	if err != nil {
		var ref *refusal
		if errors.As(err, &ref) {
			rec.done(int(ref.answer.Socks), ref.answer.Code)
		} else if rec.line.User != "" {
			// Authenticated, then the request broke off: worth a line.
			reason := ansBadRequest.Code
			if clientGone(err) {
				reason = endClientGone
			}
			rec.done(int(socksGeneralFailure), reason)
		}
		return
	}
	cc.cred.Store(&req.cred)
	if a, refused := s.refusedBefore(r); refused {
		rec.answer = socksRefusalLen
		rec.done(int(a.Socks), a.Code)
		writeSocksReply(cc.conn, a.Socks, nil)
		return
	}
	if req.command == socksCommandUDPAssociate {
		s.serveUDPAssociate(cc, rec, req)
		return
	}
	up, err := s.dial(s.ctx, r, req.cred, req.host, req.port)
	if err != nil {
		a := answerOf(err)
		s.log.Debug("SOCKS5 CONNECT refused", slog.String("user", req.cred.name), slog.String("destination", req.host), slog.String("reason", err.Error()))
		rec.answer = socksRefusalLen
		rec.done(int(a.Socks), a.Code)
		writeSocksReply(cc.conn, a.Socks, nil)
		return
	}
	cc.up.Store(up)
	rec.line.SourceAddress = up.LocalAddr().String()
	if cc.endReason() != "" {
		up.Close()
		rec.done(socksSucceeded, cc.endReason())
		return
	}
	if err := writeSocksReply(cc, socksSucceeded, up.LocalAddr().(*net.TCPAddr)); err != nil {
		up.Close()
		rec.done(socksSucceeded, endClientGone)
		return
	}
	s.runTunnel(cc, up, r, rec, socksSucceeded)
}

// SOCKS4 (and 4a, its extension for names): VN CD DSTPORT DSTIP USERID
// NUL, and for 4a, DSTIP 0.0.0.x (x not 0) and the name, NUL-terminated.
// Its reply is VN 0, CD, and six bytes the client ignores.
const (
	socks4Version  = 0x04
	socks4Rejected = 0x5b
	// socks4FieldMax bounds the USERID and the 4a name the engine reads.
	socks4FieldMax = 255
)

// refuseSocks4 answers a SOCKS4 or 4a request on the SOCKS5 port with
// SOCKS4's own "request rejected or failed" (0x5B), so that the client
// says the proxy refused rather than that it reset; SOCKS4 has no
// password, so it is never carried. The line names the destination the
// request named, never its USERID.
func (s *Server) refuseSocks4(cc *clientConn, rec *record) {
	br := bufio.NewReaderSize(io.LimitReader(cc, 8+2*(socks4FieldMax+1)), 64)
	var head [7]byte
	if _, err := io.ReadFull(br, head[:]); err == nil {
		rec.line.Method = socksCommandName(head[0])
		ip := netip.AddrFrom4([4]byte(head[3:7]))
		host := ip.String()
		if _, err := readNulTerminated(br); err == nil && head[3] == 0 && head[4] == 0 && head[5] == 0 && head[6] != 0 {
			name, err := readNulTerminated(br)
			host = name
			if err != nil {
				host = ""
			}
		}
		rec.destination(host, int(binary.BigEndian.Uint16(head[1:3])))
	}
	reply := []byte{0x00, socks4Rejected, 0, 0, 0, 0, 0, 0}
	rec.answer = len(reply)
	rec.done(socks4Rejected, ansSocksVersion.Code)
	cc.conn.Write(reply)
	lingeringClose(cc.conn)
}

// readNulTerminated reads a SOCKS4 field up to its NUL, at most
// socks4FieldMax bytes.
func readNulTerminated(br *bufio.Reader) (string, error) {
	var b []byte
	for len(b) <= socks4FieldMax {
		c, err := br.ReadByte()
		if err != nil {
			return "", err
		}
		if c == 0 {
			return string(b), nil
		}
		b = append(b, c)
	}
	return "", errors.New("socks4: field over 255 bytes")
}

func socksCommandName(c byte) string {
	switch c {
	case 0:
		return ""
	case socksCommandConnect:
		return "CONNECT"
	case socksCommandBind:
		return "BIND"
	case socksCommandUDPAssociate:
		return "UDP ASSOCIATE"
	}
	return "COMMAND " + strconv.Itoa(int(c))
}
