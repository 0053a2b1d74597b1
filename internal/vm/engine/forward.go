package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/textproto"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// via is what the engine adds to Via (RFC 9110 §7.6.3), after the
// protocol version of the message it received: a pseudonym, never the
// VM's name or address.
const via = "egress-proxy"

// scopeKey carries a request's dialScope to the dial of its upstream
// connection.
type scopeKey struct{}

// dialScope is what the dial of a plain request's upstream connection
// needs of the request: the rules that authorised it, so it is dialled
// under them, and who it is for, whose source ipv6Egress picks.
type dialScope struct {
	r   *rules
	who credential
}

// forward carries a plain HTTP request (absolute-form, http://…) to its
// destination with net/http's Transport, and its answer back: without the
// hop-by-hop headers either way (Connection and the fields it names,
// Proxy-Connection, Keep-Alive, Proxy-Authorization, Proxy-Authenticate,
// TE, Trailer, Transfer-Encoding, Upgrade), with Via added both ways. It
// reports whether the connection may carry another request.
func (s *Server) forward(hc *httpConn, req *http.Request, r *rules, who credential, rec *record) bool {
	cc := hc.cc
	keepable := !req.Close && req.ProtoAtLeast(1, 1)
	bodyless := req.ContentLength == 0
	refuseWith := func(a reply) bool {
		keep := keepable && bodyless
		hc.refuse(rec, a, !keep, nil)
		return keep
	}
	if !strings.EqualFold(req.URL.Scheme, "http") || req.URL.Host == "" {
		return refuseWith(ansNotAProxyRequest)
	}
	host, port, err := r.target(req.URL.Host, 80)
	if err != nil {
		return refuseWith(answerOf(err))
	}
	rec.destination(host, port)
	if req.Method == http.MethodTrace {
		// TRACE reflects the request, its cookies and authorization
		// included, to whoever reads the answer (cross-site tracing); no
		// client needs it through a proxy.
		return refuseWith(ansMethodNotAllowed)
	}
	if upgrade := req.Header.Get("Upgrade"); upgrade != "" && hasToken(req.Header, "Connection", "upgrade") && !strings.EqualFold(upgrade, "h2c") {
		// An upgraded connection is a tunnel; CONNECT asks for one (every
		// WebSocket client behind a proxy can), and a tunnel of the
		// engine's is spliced, counted and revocable in one place. h2c
		// is only dropped: the destination answers in HTTP/1.1.
		keepable = false
		return refuseWith(ansUpgradeUnsupported)
	}
	out := req.Clone(context.Background())
	removeHopByHop(out.Header)
	// Expect: 100-continue is end to end (RFC 9110 §10.1.1): the origin
	// decides whether it wants the body, and its 100 or its final answer
	// reaches the client before the body is sent. Other expectations
	// are dropped.
	expectContinue := strings.EqualFold(req.Header.Get("Expect"), "100-continue") && req.ProtoAtLeast(1, 1) && !bodyless
	out.Header.Del("Expect")
	if expectContinue {
		out.Header.Set("Expect", "100-continue")
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		// An empty value makes the Transport send none, not its own.
		out.Header["User-Agent"] = []string{""}
	}
	out.RequestURI, out.Close = "", false
	out.Proto, out.ProtoMajor, out.ProtoMinor = "HTTP/1.1", 1, 1
	out.Header["Via"] = append(out.Header["Via"], fmt.Sprintf("%d.%d %s", req.ProtoMajor, req.ProtoMinor, via))
	if mf := req.Header.Get("Max-Forwards"); mf != "" && req.Method == http.MethodOptions {
		n, err := strconv.Atoi(strings.TrimSpace(mf))
		if err == nil && n <= 0 {
			// RFC 9110 §7.6.2: the proxy is the final recipient.
			hc.writer().WriteString("HTTP/1.1 200 OK\r\nVia: 1.1 " + via + "\r\nContent-Length: 0\r\n\r\n")
			err := hc.writer().Flush()
			rec.done(http.StatusOK, "")
			return err == nil && keepable && bodyless
		}
		if err == nil {
			out.Header.Set("Max-Forwards", strconv.Itoa(n-1))
		}
	}
	ctx, cancel := context.WithCancel(context.WithValue(s.ctx, scopeKey{}, dialScope{r: r, who: who}))
	defer cancel()
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		// The connection the request goes out on, new or kept alive:
		// the line's source address.
		rec.line.SourceAddress = info.Conn.LocalAddr().String()
	}}
	var body *requestBody
	if !bodyless {
		body = &requestBody{body: req.Body, trailer: func() http.Header { return req.Trailer }, conn: cc.conn, w: cc, idle: r.bodyIdleTimeout,
			limit: s.up, count: func(n int64) { s.bytesIn.Add(n) }, expectContinue: expectContinue}
		out.Body = body
		if expectContinue {
			// The origin's 100 is relayed as it comes, before the
			// Transport sends the body; if the origin says nothing
			// within the Transport's ExpectContinueTimeout, the first
			// read of the body sends one instead.
			trace.Got100Continue = func() { body.sendContinue() }
		}
	} else {
		out.Body = nil
	}
	out = out.WithContext(httptrace.WithClientTrace(ctx, trace))
	transport := s.transport
	if r.rotates() {
		// A connection of its own, from the source this request's
		// client gets: a kept-alive one was made for another.
		transport = s.fresh
	}
	resp, err := transport.RoundTrip(out)
	if err == nil && resp.StatusCode == http.StatusSwitchingProtocols {
		// No request the engine forwards asks for an upgrade: a 101 is
		// not an answer to it, and relaying one leaves the client
		// waiting on a protocol nobody speaks.
		resp.Body.Close()
		err = errors.New("an unsolicited 101 Switching Protocols")
		keepable = false
	}
	if body != nil {
		defer body.detach()
	}
	if err != nil {
		a := ansUpstreamFailed
		var ne net.Error
		var ref *refusal
		switch {
		case body != nil && body.failed() != nil:
			a = ansBadBody
			if errors.Is(body.failed(), os.ErrDeadlineExceeded) {
				a = ansBodyTimeout
			}
		case errors.As(err, &ref):
			a = ref.answer
		case errors.As(err, &ne) && ne.Timeout():
			a = ansUpstreamTimeout
		}
		s.log.Debug("request refused", slog.String("method", req.Method), slog.String("user", rec.line.User),
			slog.String("destination", host), slog.String("reason", err.Error()))
		if body != nil && !body.done() {
			keepable = false
		}
		if body != nil && body.failed() != nil && clientGone(body.failed()) {
			// The client hung up in its body: nobody to answer.
			rec.done(0, endClientGone)
			return false
		}
		hc.refuse(rec, a, !keepable, nil)
		return keepable
	}
	defer resp.Body.Close()
	// The response body gets bodyIdleTimeout between reads.
	idle := time.AfterFunc(r.bodyIdleTimeout, cancel)
	defer idle.Stop()
	respBody := &idleReader{r: resp.Body, t: idle, d: r.bodyIdleTimeout}
	keep, _, err := s.writeResponse(hc, req, resp, respBody)
	if body != nil {
		// The transport may still hold the request body (an answer sent
		// before the body was read): the connection is only reused once
		// the body was read to its end.
		body.detach()
		keep = keep && body.done()
	}
	reason := ""
	if err != nil {
		keep = false
		var we *writeError
		switch {
		case cc.endReason() != "":
			reason = cc.endReason()
		case errors.As(err, &we):
			reason = endClientGone
		case errors.Is(err, context.Canceled):
			reason = ansBodyTimeout.Code
		default:
			reason = endUpstreamGone
		}
	}
	rec.done(resp.StatusCode, reason)
	return keep && keepable
}

// writeResponse writes resp's head and body to the client, framed for
// it: the destination's length when it gave one, else chunked (or, to an
// HTTP/1.0 client, until the close). It reports whether the connection
// may go on and the body bytes written.
func (s *Server) writeResponse(hc *httpConn, req *http.Request, resp *http.Response, body io.Reader) (bool, int64, error) {
	w := hc.writer()
	h := resp.Header.Clone()
	removeHopByHop(h)
	h.Del("Content-Length")
	h["Via"] = append(h["Via"], fmt.Sprintf("%d.%d %s", resp.ProtoMajor, resp.ProtoMinor, via))
	hasBody := req.Method != http.MethodHead && resp.StatusCode >= 200 && resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusNotModified
	keep, chunked := true, false
	switch {
	case resp.ContentLength >= 0 && (hasBody || req.Method == http.MethodHead):
		h.Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	case !hasBody:
	case req.ProtoAtLeast(1, 1):
		h.Set("Transfer-Encoding", "chunked")
		chunked = true
	default:
		keep = false
	}
	if !keep || req.Close || !req.ProtoAtLeast(1, 1) {
		h.Set("Connection", "close")
		keep = false
	}
	fmt.Fprintf(w, "HTTP/1.1 %s\r\n", resp.Status)
	h.Write(w)
	w.WriteString("\r\n")
	if !hasBody {
		return keep, 0, w.Flush()
	}
	var dst io.Writer = flushWriter{w}
	var cw io.WriteCloser
	if chunked {
		cw = httputil.NewChunkedWriter(flushWriter{w})
		dst = cw
	}
	n, err := copyLimited(dst, body, s.down, func(n int64) { s.bytesOut.Add(n) })
	if err != nil {
		w.Flush()
		return false, n, err
	}
	if chunked {
		cw.Close()
		w.WriteString("\r\n")
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return false, n, io.ErrUnexpectedEOF
	}
	return keep, n, w.Flush()
}

// flushWriter writes through a bufio.Writer and flushes, so each piece of
// a body reaches the client as it comes (an event stream, a slow
// download).
type flushWriter struct {
	w interface {
		io.Writer
		Flush() error
	}
}

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		err = f.w.Flush()
	}
	return n, err
}

// idleReader resets t to d before each read: the timer cancels the
// request when the destination sends nothing for d.
type idleReader struct {
	r io.Reader
	t *time.Timer
	d time.Duration
}

func (i *idleReader) Read(p []byte) (int, error) {
	i.t.Reset(i.d)
	return i.r.Read(p)
}

// hopByHop are the fields that concern one connection, never forwarded.
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopByHop(h http.Header) {
	for _, v := range h["Connection"] {
		for _, f := range strings.Split(v, ",") {
			if f = textproto.TrimString(f); f != "" {
				h.Del(f)
			}
		}
	}
	for _, f := range hopByHop {
		h.Del(f)
	}
}

func hasToken(h http.Header, field, token string) bool {
	for _, v := range h[textproto.CanonicalMIMEHeaderKey(field)] {
		for _, f := range strings.Split(v, ",") {
			if strings.EqualFold(textproto.TrimString(f), token) {
				return true
			}
		}
	}
	return false
}

// requestBody is a plain request's body as the transport reads it from
// the client: bodyIdleTimeout between reads, counted, limited, a 100
// Continue sent before the first read if the client waits for one, and
// the first error kept, for the answer. detach ends the transport's use
// of it, so that the connection's reader is never read by two.
type requestBody struct {
	body io.ReadCloser
	// trailer is the request's trailer section, read with the body's
	// end.
	trailer func() http.Header
	conn    *net.TCPConn
	// w is the client's connection as written to, counted.
	w              io.Writer
	idle           time.Duration
	limit          *bucket
	count          func(int64)
	expectContinue bool
	continued      sync.Once
	continueErr    error

	mu       sync.Mutex
	n        int64
	eof      bool
	err      error
	detached bool
}

// errBadTrailer ends a request body whose trailer section has a field
// that is not one.
var errBadTrailer = errors.New("malformed trailer field")

func (b *requestBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.detached {
		return 0, io.ErrUnexpectedEOF
	}
	if err := b.sendContinue(); err != nil {
		b.err = err
		return 0, err
	}
	b.conn.SetReadDeadline(time.Now().Add(b.idle))
	want := b.limit.take(len(p))
	n, err := b.body.Read(p[:want])
	b.limit.giveBack(want - n)
	b.n += int64(n)
	b.count(int64(n))
	if err == io.EOF && !validFields(b.trailer()) {
		// net/http reads a trailer field such as "X :" without a
		// word, but RFC 9112 §5.1 and §7.1.2 make the message invalid:
		// the body does not end, so the Transport breaks off what it
		// sent upstream (the origin serves nothing) and the client is
		// answered 400 and closed, as for a malformed chunk.
		err = errBadTrailer
	}
	switch {
	case err == io.EOF:
		b.eof = true
	case err != nil && b.err == nil:
		b.err = err
	}
	return n, err
}

// sendContinue tells a client that waits for it to send its body, once:
// on the origin's 100 or at the body's first read, whichever is first.
// The Transport calls the two from different goroutines but never at the
// same time (the body is read only after the 100, or its timeout).
func (b *requestBody) sendContinue() error {
	if !b.expectContinue {
		return nil
	}
	b.continued.Do(func() {
		b.conn.SetWriteDeadline(time.Now().Add(b.idle))
		_, b.continueErr = io.WriteString(b.w, "HTTP/1.1 100 Continue\r\n\r\n")
	})
	return b.continueErr
}

// Close is the transport's; the engine ends the body with detach.
func (b *requestBody) Close() error { return nil }

// detach stops the transport's reads: one in flight is woken, and none
// follows.
func (b *requestBody) detach() {
	b.conn.SetReadDeadline(time.Now())
	b.mu.Lock()
	b.detached = true
	b.mu.Unlock()
}

func (b *requestBody) failed() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

func (b *requestBody) done() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.eof
}

// newTransport is the upstream side of plain HTTP: every connection made
// by Server.dial under the request's rules, no proxy of its own, no
// transparent decompression (the client gets the bytes the site sent).
func (s *Server) newTransport(responseHeaderTimeout time.Duration) *http.Transport {
	return &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			scope, _ := ctx.Value(scopeKey{}).(dialScope)
			r := scope.r
			if r == nil {
				r = s.rules.Load()
			}
			host, portText, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			port, err := strconv.Atoi(portText)
			if err != nil {
				return nil, err
			}
			c, err := s.dial(ctx, r, scope.who, host, port)
			if err != nil {
				// Tagged with its answer, so that it is not read as a
				// failure of the exchange with the destination.
				return nil, refuse(answerOf(err), err)
			}
			return c, nil
		},
		DisableCompression: true,
		// How long an origin has to answer Expect: 100-continue before
		// the body goes anyway (net/http's DefaultTransport's value).
		ExpectContinueTimeout: time.Second,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: responseHeaderTimeout,
	}
}
