package engine

// The connections the Server holds: each client's, as Apply (revocation)
// and Shutdown (drain) see it, the accept loop that admits them within the
// connection cap, and the set they are tracked in.

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// clientConn is one client's connection, as Apply and Shutdown see it.
type clientConn struct {
	conn   *net.TCPConn
	source netip.Addr
	remote string
	// cred is who the connection last authenticated as; nil before.
	cred atomic.Pointer[credential]
	// idle is true while an HTTP connection waits for its next request:
	// Shutdown closes such a connection at once.
	idle atomic.Bool
	// up is the destination of the tunnel the connection became.
	up atomic.Pointer[net.TCPConn]
	// ended says why the engine closed the connection, if it did.
	ended atomic.Pointer[string]
	// statusOnly is a connection from a status source that is not an
	// allowed source: it may ask for the status and nothing else.
	statusOnly bool
	// read and written are the bytes read from the client's socket and
	// written to it, for the access lines: Read and Write count them,
	// and a tunnel adds what it spliced.
	read, written atomic.Int64
	// udp is true once the connection is a SOCKS5 UDP association's
	// control connection, which a configuration without socks5UDP ends.
	udp atomic.Bool
}

// Read reads from the client's socket, counting.
func (c *clientConn) Read(p []byte) (int, error) {
	n, err := c.conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// Write writes to the client's socket, counting.
func (c *clientConn) Write(p []byte) (int, error) {
	n, err := c.conn.Write(p)
	c.written.Add(int64(n))
	return n, err
}

// end closes the connection and its tunnel's destination, saying why.
func (c *clientConn) end(reason string) {
	c.ended.CompareAndSwap(nil, &reason)
	c.conn.Close()
	if up := c.up.Load(); up != nil {
		up.Close()
	}
}

func (c *clientConn) endReason() string {
	if r := c.ended.Load(); r != nil {
		return *r
	}
	return ""
}

// acceptLoop accepts on ln until Shutdown: a client outside the source
// ranges is closed before a byte is read, one past the connection cap is
// told so (http) or closed, the others served each in a goroutine.
func (s *Server) acceptLoop(ln net.Listener, serve func(*clientConn), isHTTP bool) error {
	if !s.trackListener(ln) {
		ln.Close()
		return errServerClosed
	}
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.isClosing() {
				return errServerClosed
			}
			// Out of descriptors, or a connection reset before it was
			// accepted: wait a little, as net/http does, and go on.
			var ne net.Error
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ECONNABORTED) || errors.As(err, &ne) && ne.Timeout() {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", slog.Any("error", err), slog.Duration("retryIn", backoff))
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		tc, ok := c.(*net.TCPConn)
		if !ok {
			// Only a listener that is not TCP gets here (none this
			// package makes): refuse rather than copy through user space.
			c.Close()
			s.log.Error("connection refused: not TCP", slog.String("type", fmt.Sprintf("%T", c)))
			continue
		}
		addr := remoteAddr(c)
		r := s.rules.Load()
		statusOnly := false
		if !r.sourceAllowed(addr) {
			// The control plane asks for the status on the HTTP port only.
			statusOnly = isHTTP && r.statusSource(addr)
		}
		if !statusOnly && !r.sourceAllowed(addr) {
			c.Close()
			s.log.Debug("connection refused: source not in allowedSourceRanges", slog.String("source", addr.String()))
			if s.outsiders.allow(addr, time.Now()) {
				protocol := vmconfig.ProtocolSocks5
				if isHTTP {
					protocol = vmconfig.ProtocolHTTP
				}
				s.newRecord(&clientConn{remote: c.RemoteAddr().String()}, protocol, "").done(0, ansSourceNotAllowed.Code)
			}
			continue
		}
		if s.activeConns.Load() >= s.maxConns {
			s.refused.Add(1)
			s.overCap(tc, isHTTP)
			continue
		}
		cc := &clientConn{conn: tc, source: addr, remote: c.RemoteAddr().String(), statusOnly: statusOnly}
		if !s.register(cc) {
			c.Close()
			continue
		}
		if !statusOnly {
			s.connections.Add(1)
		}
		go func() {
			defer s.unregister(cc)
			defer tc.Close()
			serve(cc)
		}()
	}
}

// outsiderWindow is how often a source outside allowedSourceRanges leaves
// an access line: once a minute each, however often it connects, so a
// scan costs the log a line per address (as Squid's operators expect a
// denied client to show), not one per SYN.
const outsiderWindow = time.Minute

// outsiderLimit is the most sources outsiders remembers; a scan from
// more addresses than that within a window starts the memory afresh.
const outsiderLimit = 4096

// outsiders rate-limits the lines of sources outside the allowed ranges.
type outsiders struct {
	mu   sync.Mutex
	last map[netip.Addr]time.Time
}

// allow reports whether a's connection at now gets a line.
func (o *outsiders) allow(a netip.Addr, now time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if t, ok := o.last[a]; ok && now.Sub(t) < outsiderWindow {
		return false
	}
	if o.last == nil || len(o.last) >= outsiderLimit {
		o.last = map[netip.Addr]time.Time{}
	}
	o.last[a] = now
	return true
}

// errServerClosed is what Serve returns after Shutdown, as net/http's
// servers do.
var errServerClosed = http.ErrServerClosed

// overCap answers a connection past the cap: 503 and close for HTTP, a
// close for SOCKS5. The answer is written by a few goroutines at most, so
// a flood past the cap costs it nothing more than closes.
func (s *Server) overCap(c *net.TCPConn, isHTTP bool) {
	if !isHTTP || s.overCapAnswering.Add(1) > 64 {
		if isHTTP {
			s.overCapAnswering.Add(-1)
		}
		c.Close()
		return
	}
	go func() {
		defer s.overCapAnswering.Add(-1)
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Second))
		writeAnswerTo(c, ansTooManyConnections, true, nil)
		// Read what the client sent before closing, so the close is a FIN
		// and not a reset that could destroy the answer in flight.
		c.CloseWrite()
		var b [4096]byte
		for {
			if _, err := c.Read(b[:]); err != nil {
				return
			}
		}
	}()
	// One line a second at most: a flood past the cap would otherwise
	// fill the journal, which is in memory.
	if now := time.Now().UnixNano(); now-s.overCapLogged.Load() > int64(time.Second) {
		s.overCapLogged.Store(now)
		s.log.Warn("connections refused: maxConnections open", slog.Int64("maxConnections", s.maxConns), slog.Int64("refused", s.refused.Load()))
	}
}

func (s *Server) trackListener(ln net.Listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.listeners[ln] = struct{}{}
	return true
}

func (s *Server) register(cc *clientConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.conns[cc] = struct{}{}
	s.activeConns.Add(1)
	s.wg.Add(1)
	return true
}

func (s *Server) unregister(cc *clientConn) {
	s.mu.Lock()
	delete(s.conns, cc)
	s.mu.Unlock()
	s.activeConns.Add(-1)
	s.wg.Done()
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

func remoteAddr(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// The bounds of a lingering close, nginx's defaults (lingering_time 30s,
// lingering_timeout 5s): a client still sending after its answer is read
// for at most lingerTotal, and given up after lingerQuiet without a byte.
const (
	lingerTotal = 30 * time.Second
	lingerQuiet = 5 * time.Second
)

// lingeringClose ends a connection whose client may still be sending (a
// body the engine refused before reading it): closing with unread bytes
// makes the kernel send a reset, which destroys the answer in flight
// (RFC 9112 §9.6). It half-closes, so the client reads the answer to its
// end, and reads what comes until the client closes or the bounds pass.
func lingeringClose(c *net.TCPConn) {
	if err := c.CloseWrite(); err != nil {
		return
	}
	until := time.Now().Add(lingerTotal)
	var b [16 << 10]byte
	for {
		d := time.Now().Add(lingerQuiet)
		if d.After(until) {
			d = until
		}
		c.SetReadDeadline(d)
		if _, err := c.Read(b[:]); err != nil {
			return
		}
	}
}
