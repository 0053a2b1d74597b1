package engine

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// established is the answer to a CONNECT the proxy carries.
const established = "HTTP/1.1 200 Connection established\r\n\r\n"

// connect dials the destination of a CONNECT for who and, once connected, makes
// the client's connection a tunnel to it (runTunnel). The dial is under
// the server's context, not the client's: a client that half-closes after
// its CONNECT (it has nothing to send; it waits for the answer) still
// gets its tunnel.
func (s *Server) connect(hc *httpConn, req *http.Request, r *rules, who credential, rec *record) {
	cc := hc.cc
	host, port, err := r.target(req.RequestURI, 0)
	if err != nil {
		a := answerOf(err)
		hc.refuse(rec, a, true, nil)
		return
	}
	rec.destination(host, port)
	up, err := s.dial(s.ctx, r, who, host, port)
	if err != nil {
		a := answerOf(err)
		s.log.Debug("CONNECT refused", slog.String("user", rec.line.User), slog.String("destination", host), slog.String("reason", err.Error()))
		hc.refuse(rec, a, true, nil)
		return
	}
	cc.up.Store(up)
	rec.line.SourceAddress = up.LocalAddr().String()
	if cc.endReason() != "" {
		// Revoked while it dialled.
		up.Close()
		rec.done(http.StatusOK, cc.endReason())
		return
	}
	cc.conn.SetDeadline(time.Time{})
	if _, err := cc.Write([]byte(established)); err != nil {
		up.Close()
		rec.done(http.StatusOK, endClientGone)
		return
	}
	// Bytes the client sent after its CONNECT head without waiting for the
	// 200 (a TLS ClientHello, often) sit in the reader's buffer: they go
	// upstream first, or the tunnel would lose them.
	if n := hc.br.Buffered(); n > 0 {
		b, _ := hc.br.Peek(n)
		up.SetWriteDeadline(time.Now().Add(r.idleTimeout))
		if _, err := up.Write(b); err != nil {
			up.Close()
			rec.done(http.StatusOK, endUpstreamGone)
			return
		}
		s.bytesIn.Add(int64(n))
	}
	// The tunnel holds no buffer of the HTTP side.
	hc.releaseReader()
	hc.releaseWriter()
	s.runTunnel(cc, up, r, rec, http.StatusOK)
}

// runTunnel carries bytes both ways between the client's connection and
// the destination's until both are done, closing the writing half of
// each side whose source ended, so a client that half-closes still gets
// its answer. It then writes the tunnel's access line with status, the
// bytes spliced each way added to the connection's counts, and why it
// ended if not by both sides closing; the line is written before the
// tunnel is counted closed.
func (s *Server) runTunnel(cc *clientConn, up *net.TCPConn, r *rules, rec *record, status int) {
	s.activeTuns.Add(1)
	defer s.activeTuns.Add(-1)
	var in, out int64
	var reason string
	defer func() {
		cc.read.Add(in)
		cc.written.Add(out)
		rec.done(status, reason)
	}()
	client := cc.conn
	client.SetDeadline(time.Time{})
	up.SetDeadline(time.Time{})
	last := new(atomic.Int64)
	last.Store(time.Now().UnixNano())
	toUp := &flow{src: client, dst: up, count: func(n int64) { s.bytesIn.Add(n) }, limit: s.up, idle: r.idleTimeout, last: last}
	toClient := &flow{src: up, dst: client, count: func(n int64) { s.bytesOut.Add(n) }, limit: s.down, idle: r.idleTimeout, last: last}
	ended := func(f *flow, err error) {
		if err == nil {
			// The source is done sending: tell the other side, and let
			// the other direction finish.
			f.dst.CloseWrite()
			return
		}
		// Idle, a reset or a closed side: nothing more can move either
		// way.
		client.Close()
		up.Close()
	}
	upErr := make(chan error, 1)
	go func() {
		n, err := toUp.run()
		in = n
		ended(toUp, err)
		upErr <- err
	}()
	var downErr error
	out, downErr = toClient.run()
	ended(toClient, downErr)
	clientErr := <-upErr
	client.Close()
	up.Close()
	// A flow fails reading its source or writing its destination: the
	// side at fault is the source's, or the destination's (writeError).
	var we *writeError
	switch {
	case cc.endReason() != "":
		reason = cc.endReason()
	case errors.Is(clientErr, errIdle) || errors.Is(downErr, errIdle):
		reason = endIdle
	case errors.As(downErr, &we), clientErr != nil && !errors.As(clientErr, &we):
		reason = endClientGone
	case downErr != nil, clientErr != nil:
		reason = endUpstreamGone
	}
}
