package engine

// SOCKS5 UDP ASSOCIATE (RFC 1928 §7), when the configuration's socks5UDP
// is on. The client asks on its SOCKS5 connection (the control
// connection), after the same credentials as CONNECT, from a source the
// same ranges admit; the engine answers with the relay's address: the
// address the client reached and the SOCKS5 port's number, on which one
// UDP socket (the relay) serves every association, so the VM's filter and
// a cloud's firewall open one UDP port beside the TCP one. A datagram to
// the relay carries RFC 1928's header (RSV FRAG ATYP DST.ADDR DST.PORT)
// before its data; the relay gives it to the association of its source
// address, and the association:
//
//   - takes datagrams only from the client's address: the control
//     connection's IP, and the port the request named, or when it named 0
//     the port of the first datagram from that IP (as Dante does);
//   - drops a fragment (FRAG not 0): the engine reassembles nothing;
//   - resolves each datagram's destination once, checks every address
//     as a tunnel's dial does (a denied one drops the datagram, counted,
//     never sent), and sends the data from a socket of its own, so the
//     destinations' answers come back to that socket alone;
//   - relays back, wrapped in the header naming their source, only the
//     datagrams of addresses the client sent to in this association;
//   - holds both directions' bytes (headers included) to the bandwidth
//     limit, as the tunnels' bytes are;
//   - lives as long as its control connection, and ends sooner when no
//     datagram moved either way for udpIdleTimeout, when the credential
//     or the source is taken away (Apply), or when socks5UDP is turned
//     off; its access line, made then, counts its datagrams and bytes
//     each way and its drops.
//
// The destination port is not held to connectPorts: those are the ports a
// TCP tunnel may reach, and UDP's uses (DNS on 53, QUIC on 443, STUN,
// games) share none of them but 443; the deny list holds for every
// datagram, and the VM's filter holds the same list for UDP in the kernel.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// udpQueueLen is how many of an association's datagrams wait for
	// their destination's resolution and the bandwidth limit; one more
	// is dropped, as a router drops what its queue cannot hold.
	udpQueueLen = 128
	// udpDestinationsMax bounds the destinations an association
	// remembers for the answers it lets back; past it the memory starts
	// afresh (an answer from a destination forgotten is dropped).
	udpDestinationsMax = 4096
	// udpDatagramMax is the largest datagram UDP carries.
	udpDatagramMax = 65535
	// udpHeaderMax is the longest header: an IPv6 address and a port.
	udpHeaderMax = 4 + 16 + 2
)

// endUDPOff ends an association whose configuration turned socks5UDP off.
const endUDPOff = "udp-disabled"

// udpHeader is the SOCKS5 UDP request header of one datagram (RFC 1928
// §7): its fragment number and its destination, an address or a name.
type udpHeader struct {
	Frag byte
	Host string
	Port int
}

// parseUDPHeader reads a datagram's header and returns it and the data
// after it. The destination must be an IPv4 or IPv6 address (an
// IPv4-mapped one in its IPv4 form; so is an address sent as a name) or a
// name validHost accepts, and its
// port 1-65535; RSV is not checked (RFC 1928 reserves it, and clients
// differ).
func parseUDPHeader(b []byte) (udpHeader, []byte, error) {
	var h udpHeader
	if len(b) < 4 {
		return h, nil, fmt.Errorf("socks5 udp: header of %d bytes, under 4", len(b))
	}
	h.Frag = b[2]
	rest := b[4:]
	switch b[3] {
	case socksAddressIPv4, socksAddressIPv6:
		n := 4
		if b[3] == socksAddressIPv6 {
			n = 16
		}
		if len(rest) < n+2 {
			return h, nil, fmt.Errorf("socks5 udp: address type %d needs %d bytes and a port, %d left", b[3], n, len(rest))
		}
		a, _ := netip.AddrFromSlice(rest[:n])
		h.Host = a.Unmap().String()
		rest = rest[n:]
	case socksAddressDomain:
		if len(rest) < 1 || len(rest) < 1+int(rest[0])+2 {
			return h, nil, errors.New("socks5 udp: a name longer than the datagram")
		}
		n := int(rest[0])
		h.Host = string(rest[1 : 1+n])
		if !validHost(h.Host) {
			return udpHeader{}, nil, fmt.Errorf("socks5 udp: %q is not a name this proxy resolves", h.Host)
		}
		if a, err := netip.ParseAddr(h.Host); err == nil {
			// An address written as a name is that address, in the
			// form the checks and the access log read.
			h.Host = a.Unmap().String()
		}
		rest = rest[1+n:]
	default:
		return h, nil, fmt.Errorf("socks5 udp: address type %d", b[3])
	}
	h.Port = int(binary.BigEndian.Uint16(rest))
	if h.Port == 0 {
		return udpHeader{}, nil, errors.New("socks5 udp: destination port 0")
	}
	return h, rest[2:], nil
}

// appendUDPHeader appends h's header to dst: an address as its type, any
// other host as a name (at most 255 bytes, which the caller ensures).
func appendUDPHeader(dst []byte, h udpHeader) []byte {
	if a, err := netip.ParseAddr(h.Host); err == nil {
		dst = append(dst, 0, 0, h.Frag)
		return appendUDPAddrPort(dst, netip.AddrPortFrom(a, uint16(h.Port)))
	}
	dst = append(dst, 0, 0, h.Frag, socksAddressDomain, byte(len(h.Host)))
	dst = append(dst, h.Host...)
	return binary.BigEndian.AppendUint16(dst, uint16(h.Port))
}

// appendUDPAddrPort appends ATYP, the address and the port of ap.
func appendUDPAddrPort(dst []byte, ap netip.AddrPort) []byte {
	a := ap.Addr().Unmap()
	if a.Is4() {
		dst = append(dst, socksAddressIPv4)
	} else {
		dst = append(dst, socksAddressIPv6)
	}
	dst = append(dst, a.AsSlice()...)
	return binary.BigEndian.AppendUint16(dst, ap.Port())
}

// udpRelay is the UDP socket on the SOCKS5 port and the associations it
// serves, found by the client's address.
type udpRelay struct {
	s    *Server
	conn *net.UDPConn
	port int
	mu   sync.Mutex
	// byAddr are the associations whose client's port is known;
	// pending those whose request named port 0, by the client's IP,
	// oldest first, until their first datagram says the port.
	byAddr  map[netip.AddrPort]*association
	pending map[netip.Addr][]*association
	// strays are datagrams from an address of no association: dropped,
	// in no access line.
	strays atomic.Int64
}

// listenUDP opens the relay on the UDP port of the SOCKS5 listener's
// address.
func (s *Server) listenUDP(socks net.Addr) (*udpRelay, error) {
	ta, ok := socks.(*net.TCPAddr)
	if !ok {
		return nil, fmt.Errorf("engine: the SOCKS5 listener's address %s is not TCP", socks)
	}
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: ta.IP, Port: ta.Port})
	if err != nil {
		return nil, fmt.Errorf("engine: listening on UDP %s for SOCKS5 UDP ASSOCIATE: %w", ta, err)
	}
	return &udpRelay{s: s, conn: conn, port: ta.Port, byAddr: map[netip.AddrPort]*association{}, pending: map[netip.Addr][]*association{}}, nil
}

// run reads the relay's datagrams until it is closed, handing each to
// its association's queue.
func (u *udpRelay) run() {
	buf := make([]byte, udpDatagramMax)
	for {
		n, from, err := u.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		a := u.find(from)
		if a == nil {
			u.strays.Add(1)
			continue
		}
		b := make([]byte, n)
		copy(b, buf[:n])
		select {
		case a.queue <- b:
		default:
			a.dropped.Add(1)
		}
	}
}

// find returns the association of a datagram from from: the one of that
// address, or else the oldest of its IP whose port is still to learn,
// which from's port then becomes.
func (u *udpRelay) find(from netip.AddrPort) *association {
	u.mu.Lock()
	defer u.mu.Unlock()
	if a := u.byAddr[from]; a != nil {
		return a
	}
	waiting := u.pending[from.Addr()]
	if len(waiting) == 0 {
		return nil
	}
	a := waiting[0]
	if len(waiting) == 1 {
		delete(u.pending, from.Addr())
	} else {
		u.pending[from.Addr()] = waiting[1:]
	}
	a.clientPort.Store(uint32(from.Port()))
	u.byAddr[from] = a
	return a
}

// add makes a's datagrams its own. A newer association from the same
// address takes it over: a client that ends one association and at once
// opens the next from the same socket means the new one.
func (u *udpRelay) add(a *association) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if p := a.clientPort.Load(); p != 0 {
		u.byAddr[netip.AddrPortFrom(a.clientIP, uint16(p))] = a
		return
	}
	u.pending[a.clientIP] = append(u.pending[a.clientIP], a)
}

func (u *udpRelay) remove(a *association) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if p := a.clientPort.Load(); p != 0 {
		ap := netip.AddrPortFrom(a.clientIP, uint16(p))
		if u.byAddr[ap] == a {
			delete(u.byAddr, ap)
		}
	}
	waiting := u.pending[a.clientIP]
	for i, w := range waiting {
		if w == a {
			waiting = append(waiting[:i:i], waiting[i+1:]...)
			break
		}
	}
	if len(waiting) == 0 {
		delete(u.pending, a.clientIP)
	} else {
		u.pending[a.clientIP] = waiting
	}
}

// association is one UDP ASSOCIATE: its client, its socket towards the
// destinations, the destinations it sent to, and its counts.
type association struct {
	s     *Server
	relay *udpRelay
	// clientIP is the control connection's; clientPort the request's,
	// or the first datagram's (0 until then).
	clientIP   netip.Addr
	clientPort atomic.Uint32
	// out sends to the destinations and receives their answers.
	out   *net.UDPConn
	queue chan []byte
	quit  chan struct{}
	// last is when a datagram last moved either way (UnixNano).
	last atomic.Int64

	mu   sync.Mutex
	sent map[netip.AddrPort]struct{}

	in, outCount, bytesIn, bytesOut atomic.Int64
	denied, fragmented, dropped     atomic.Int64
}

func (a *association) touch() { a.last.Store(time.Now().UnixNano()) }

// remember notes that the client sent to dst, whose answers may now come
// back.
func (a *association) remember(dst netip.AddrPort) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.sent[dst]; ok {
		return
	}
	if len(a.sent) >= udpDestinationsMax {
		a.sent = map[netip.AddrPort]struct{}{}
	}
	a.sent[dst] = struct{}{}
}

func (a *association) sentTo(src netip.AddrPort) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.sent[src]
	return ok
}

// takeAll waits until b grants n bytes: a datagram moves whole or not
// at all.
func takeAll(b *bucket, n int) {
	for n > 0 {
		n -= b.take(n)
	}
}

// toDestinations sends the client's datagrams on, one at a time in the
// order they came, until the association ends.
func (a *association) toDestinations() {
	for {
		var b []byte
		select {
		case <-a.quit:
			return
		case b = <-a.queue:
		}
		a.forward(b)
	}
}

// forward sends one datagram of the client's to its destination, or
// drops it and counts why.
func (a *association) forward(b []byte) {
	h, data, err := parseUDPHeader(b)
	if err != nil {
		a.dropped.Add(1)
		return
	}
	if h.Frag != 0 {
		a.fragmented.Add(1)
		return
	}
	s := a.s
	r := s.rules.Load()
	ctx, cancel := context.WithTimeout(s.ctx, r.dialTimeout)
	addrs, err := s.resolve(ctx, r, h.Host)
	cancel()
	if err != nil {
		if c := answerOf(err).Code; c == ansDestinationDenied.Code || c == ansZoneNotAllowed.Code {
			a.denied.Add(1)
		} else {
			a.dropped.Add(1)
		}
		s.log.Debug("SOCKS5 UDP datagram dropped", slog.String("destination", h.Host), slog.String("reason", err.Error()))
		return
	}
	dst := netip.AddrPortFrom(pickUDPAddr(addrs), uint16(h.Port))
	a.remember(dst)
	takeAll(s.up, len(b))
	if _, err := a.out.WriteToUDPAddrPort(data, dst); err != nil {
		a.dropped.Add(1)
		return
	}
	a.in.Add(1)
	a.bytesIn.Add(int64(len(b)))
	s.bytesIn.Add(int64(len(b)))
	a.touch()
}

// pickUDPAddr is the address a datagram to a name goes to: its first
// IPv4 address, else its first. A datagram has no Happy Eyeballs to fall
// back with, and every VM has an IPv4 route; not every one has IPv6.
func pickUDPAddr(addrs []netip.Addr) netip.Addr {
	for _, a := range addrs {
		if a.Unmap().Is4() {
			return a.Unmap()
		}
	}
	return addrs[0]
}

// toClient relays the destinations' datagrams to the client, each
// wrapped in the header naming its source, until out is closed.
func (a *association) toClient() {
	buf := make([]byte, udpHeaderMax+udpDatagramMax)
	for {
		n, from, err := a.out.ReadFromUDPAddrPort(buf[udpHeaderMax:])
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		port := a.clientPort.Load()
		if !a.sentTo(from) || port == 0 {
			a.dropped.Add(1)
			continue
		}
		// The header goes right before the data, in the room left for
		// it: no copy of the data.
		var hb [udpHeaderMax]byte
		hdr := appendUDPAddrPort(append(hb[:0], 0, 0, 0), from)
		start := udpHeaderMax - len(hdr)
		copy(buf[start:], hdr)
		pkt := buf[start : udpHeaderMax+n]
		takeAll(a.s.down, len(pkt))
		if _, err := a.relay.conn.WriteToUDPAddrPort(pkt, netip.AddrPortFrom(a.clientIP, uint16(port))); err != nil {
			a.dropped.Add(1)
			continue
		}
		a.outCount.Add(1)
		a.bytesOut.Add(int64(len(pkt)))
		a.s.bytesOut.Add(int64(len(pkt)))
		a.touch()
	}
}

// serveUDPAssociate carries one UDP ASSOCIATE whose handshake passed:
// the reply with the relay's address, then the association until its
// control connection closes, it idles out or it is taken away, then its
// access line.
func (s *Server) serveUDPAssociate(cc *clientConn, rec *record, req socksRequest) {
	rec.line.Host, rec.line.Port = "", 0
	u := s.udp
	if u == nil || !s.rules.Load().udp {
		// Turned on by a reload: the relay's socket waits for a restart.
		rec.answer = socksRefusalLen
		rec.done(int(ansCommandUnsupported.Socks), ansCommandUnsupported.Code)
		writeSocksReply(cc.conn, ansCommandUnsupported.Socks, nil)
		return
	}
	out, err := net.ListenUDP("udp", nil)
	if err != nil {
		s.log.Warn("SOCKS5 UDP ASSOCIATE failed: no socket towards the destinations", slog.Any("error", err))
		rec.answer = socksRefusalLen
		rec.done(socksGeneralFailure, ansConnectFailed.Code)
		writeSocksReply(cc.conn, socksGeneralFailure, nil)
		return
	}
	a := &association{s: s, relay: u, clientIP: cc.source, out: out, queue: make(chan []byte, udpQueueLen),
		quit: make(chan struct{}), sent: map[netip.AddrPort]struct{}{}}
	a.clientPort.Store(uint32(req.port))
	a.touch()
	cc.udp.Store(true)
	u.add(a)
	var workers sync.WaitGroup
	var reason string
	defer func() {
		u.remove(a)
		close(a.quit)
		out.Close()
		cc.conn.Close()
		workers.Wait()
		cc.read.Add(a.bytesIn.Load())
		cc.written.Add(a.bytesOut.Load())
		l := &rec.line
		l.DatagramsIn, l.DatagramsOut = a.in.Load(), a.outCount.Load()
		l.DatagramBytesIn, l.DatagramBytesOut = a.bytesIn.Load(), a.bytesOut.Load()
		l.DatagramsDenied, l.DatagramsFragmented, l.DatagramsDropped = a.denied.Load(), a.fragmented.Load(), a.dropped.Load()
		rec.done(socksSucceeded, reason)
	}()
	if r := cc.endReason(); r != "" {
		reason = r
		return
	}
	bound := &net.TCPAddr{Port: u.port}
	local, _ := cc.conn.LocalAddr().(*net.TCPAddr)
	remote, _ := cc.conn.RemoteAddr().(*net.TCPAddr)
	if local != nil && remote != nil {
		bound.IP = relayAddr(local.AddrPort().Addr(), remote.AddrPort().Addr()).AsSlice()
	}
	if err := writeSocksReply(cc, socksSucceeded, bound); err != nil {
		reason = endClientGone
		return
	}
	cc.conn.SetDeadline(time.Time{})
	workers.Add(2)
	go func() { defer workers.Done(); a.toDestinations() }()
	go func() { defer workers.Done(); a.toClient() }()
	// The control connection carries nothing more (RFC 1928 §7): its
	// close, or the engine's (cc.end), ends the association.
	closed := make(chan struct{})
	go func() {
		io.Copy(io.Discard, cc)
		close(closed)
	}()
	idle := time.NewTimer(s.rules.Load().udpIdle)
	defer idle.Stop()
	for {
		select {
		case <-closed:
			reason = cc.endReason()
			return
		case <-idle.C:
			limit := s.rules.Load().udpIdle
			quiet := time.Since(time.Unix(0, a.last.Load()))
			if quiet >= limit {
				reason = endIdle
				cc.end(endIdle)
				<-closed
				return
			}
			idle.Reset(limit - quiet)
		}
	}
}

// relayAddr is the address an ASSOCIATE's reply names for the relay: the
// one the client reached (local), except where the client reached it
// through a 1:1 NAT, as on Google Cloud and EC2, where the VM sees its
// private address and the client sent to the public one. A client that
// sends to the reply's address literally would then send to an address
// it cannot reach, so the reply names the unspecified address of the
// family, which clients take to mean "the address you reached" (Go's
// SOCKS5 clients substitute the server's address for 0.0.0.0 and ::).
// NAT is inferred: a private address on the VM's side and a client
// that is neither private nor loopback.
func relayAddr(local, client netip.Addr) netip.Addr {
	local, client = local.Unmap(), client.Unmap()
	if local.IsPrivate() && !client.IsPrivate() && !client.IsLoopback() {
		if local.Is4() {
			return netip.IPv4Unspecified()
		}
		return netip.IPv6Unspecified()
	}
	return local
}
