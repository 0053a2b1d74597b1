package engine

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// chunk is how many bytes one io.CopyN of a tunnel moves before the tunnel
// notes its progress and counts it: large enough that the bookkeeping is
// nothing beside the copy, small enough that the counters move during a
// long download.
const chunk = 4 << 20

// established is the answer to a CONNECT the proxy carries.
const established = "HTTP/1.1 200 Connection established\r\n\r\n"

// connect dials the destination of a CONNECT, then hands the client's
// connection and the destination's to the kernel: io.Copy between two
// *net.TCPConn is splice(2) on Linux, so the bytes never enter this
// process.
func (s *Server) connect(w http.ResponseWriter, req *http.Request, r *rules, user string) {
	host, port, err := r.target(req.Host, 0)
	if err != nil {
		if !errors.Is(err, errPort) {
			err = fmt.Errorf("%w: %w", errBadRequest, err)
		}
		s.refuse(w, req, user, err)
		return
	}
	up, err := s.dial(req.Context(), r, host, port)
	if err != nil {
		s.refuse(w, req, user, err)
		return
	}
	// Registered before the hijack: from then on the HTTP server no longer
	// counts this connection, and a Shutdown must still wait for it.
	t := &tunnel{up: up}
	s.track(t, true)
	handedOff := false
	defer func() {
		if !handedOff {
			t.close()
			s.track(t, false)
		}
	}()
	conn, brw, err := w.(http.Hijacker).Hijack()
	if err != nil {
		s.log.Warn("tunnel not opened: hijack failed", slog.Any("error", err))
		return
	}
	client, ok := conn.(*net.TCPConn)
	if !ok {
		// Only a listener that is not TCP gets here (none this package
		// makes): refuse rather than copy through user space unnoticed.
		conn.Close()
		s.log.Error("tunnel not opened: the client connection is not TCP", slog.String("type", fmt.Sprintf("%T", conn)))
		return
	}
	t.setClient(client)
	// The HTTP server's read deadline is its header timeout; a tunnel has
	// the idle timeout instead.
	client.SetDeadline(time.Time{})
	if _, err := client.Write([]byte(established)); err != nil {
		return
	}
	// Bytes the client sent after its CONNECT head without waiting for the
	// 200 (a TLS ClientHello, often) sit in the HTTP server's buffer: they
	// go upstream first, or the tunnel would lose them.
	var pipelined int64
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		if _, err := up.Write(b); err != nil {
			return
		}
		pipelined = int64(n)
		s.bytesIn.Add(pipelined)
	}
	// The tunnel goes on in goroutines of its own and this handler
	// returns, so the HTTP server's state for the connection (its buffers,
	// the handler's deep stack) is freed: an open tunnel holds two small
	// goroutines, two sockets and, while bytes move, the kernel's pipes.
	handedOff = true
	s.activeTuns.Add(1)
	go func() {
		defer s.track(t, false)
		defer s.activeTuns.Add(-1)
		start := time.Now()
		in, out, err := t.run(s, r.idleTimeout)
		s.log.Debug("tunnel closed", slog.String("user", user), slog.String("destination", host),
			slog.Int64("bytesIn", in+pipelined), slog.Int64("bytesOut", out), slog.Duration("duration", time.Since(start)), slog.Any("error", err))
	}()
}

// track adds or removes a tunnel from those Shutdown waits for.
func (s *Server) track(t *tunnel, open bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if open {
		s.tunnels[t] = struct{}{}
		s.tunnelWG.Add(1)
		return
	}
	delete(s.tunnels, t)
	s.tunnelWG.Done()
}

// tunnel is one CONNECT's pair of connections.
type tunnel struct {
	client, up *net.TCPConn
	// clientSet guards client, which Shutdown may read before the hijack
	// has set it.
	clientSet atomic.Pointer[net.TCPConn]
	// last is when a byte last moved either way, in Unix nanoseconds.
	last atomic.Int64
}

func (t *tunnel) setClient(c *net.TCPConn) {
	t.client = c
	t.clientSet.Store(c)
}

// close closes both connections, which ends both copies.
func (t *tunnel) close() {
	if c := t.clientSet.Load(); c != nil {
		c.Close()
	}
	t.up.Close()
}

// errIdle ends a tunnel through which nothing moved for the idle timeout.
var errIdle = errors.New("idle timeout")

// run copies both ways until both ends are done, closing the writing half
// of each side whose source ended, so a client that half-closes still gets
// its answer. It returns the bytes from the client (in) and to it (out).
func (t *tunnel) run(s *Server, idle time.Duration) (in, out int64, err error) {
	t.last.Store(time.Now().UnixNano())
	upErr := make(chan error, 1)
	go func() {
		n, err := t.pump(t.up, t.client, &s.bytesIn, idle)
		in = n
		upErr <- err
	}()
	out, err = t.pump(t.client, t.up, &s.bytesOut, idle)
	err = errors.Join(err, <-upErr)
	t.client.Close()
	t.up.Close()
	return in, out, err
}

// pump copies src to dst, counting as it goes, until src ends, either side
// fails or the tunnel has been idle for idle. Each io.CopyN between the two
// *net.TCPConn is a splice(2) loop in the kernel (the src is passed as an
// *io.LimitedReader over the *net.TCPConn, a form net's splice accepts);
// the read deadline wakes it every quarter of idle to look at the tunnel's
// last activity, in either direction, so a long download with a quiet
// upload is not idle.
func (t *tunnel) pump(dst, src *net.TCPConn, counter *atomic.Int64, idle time.Duration) (int64, error) {
	var total int64
	tick := max(idle/4, time.Millisecond)
	for {
		src.SetReadDeadline(time.Now().Add(tick))
		n, err := io.CopyN(dst, src, chunk)
		if n > 0 {
			total += n
			counter.Add(n)
			t.last.Store(time.Now().UnixNano())
		}
		switch {
		case err == nil:
			continue
		case errors.Is(err, os.ErrDeadlineExceeded):
			if n > 0 || time.Since(time.Unix(0, t.last.Load())) < idle {
				continue
			}
			t.close()
			return total, errIdle
		case errors.Is(err, io.EOF):
			// The source is done sending: tell the destination, and let
			// the other direction finish.
			dst.CloseWrite()
			return total, nil
		default:
			// A reset or a closed side: nothing more can move either way.
			t.close()
			return total, err
		}
	}
}
