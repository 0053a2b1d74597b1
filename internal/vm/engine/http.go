package engine

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// The HTTP side of the engine is its own loop over each client
// connection, not net/http's server: a proxy has to decide, per
// connection, what net/http's server decides for it — when to close (after
// a refused CONNECT, after a request with two framings: RFC 9112 §6.1 and
// §9.6), how long to wait for the next request (a connection that has not
// authenticated gets seconds, not the idle timeout), how long to wait for a
// body, and whom the connection belongs to (a revoked user's kept-alive
// connection is closed). net/http still parses every request
// (http.ReadRequest: its smuggling defences, header limits and chunked
// reader) and carries the plain requests to their destinations (its
// Transport).

// httpConn is the state of one HTTP client connection between requests.
type httpConn struct {
	s  *Server
	cc *clientConn
	// head limits and records what is read of a request's head.
	head *headReader
	// br reads the connection; held only while it has bytes buffered
	// (pipelined requests), else in the pool.
	br *bufio.Reader
	bw *bufio.Writer
	// linger is set once an answer ended the connection: the client may
	// still be sending (a body not read), so the close is a lingering one.
	linger bool
	// headRead0 and headStart are the connection's bytes read and its
	// reader's buffered bytes when the current request's head began:
	// where its access line's count starts.
	headRead0 int64
	headStart int
}

// buffered is what the connection's reader holds beyond what requests
// took.
func (hc *httpConn) buffered() int {
	if hc.br == nil {
		return 0
	}
	return hc.br.Buffered()
}

// serveHTTP serves one client connection's requests until it closes, a
// request asks for a close or becomes a tunnel, or the engine ends it.
func (s *Server) serveHTTP(cc *clientConn) {
	hc := &httpConn{s: s, cc: cc, head: &headReader{c: cc}}
	defer func() {
		if hc.linger && cc.endReason() == "" {
			cc.idle.Store(true)
			lingeringClose(cc.conn)
		}
	}()
	defer hc.releaseReader()
	defer hc.releaseWriter()
	raw, err := cc.conn.SyscallConn()
	if err != nil {
		return
	}
	first := true
	for {
		r := s.rules.Load()
		if hc.br == nil || hc.br.Buffered() == 0 {
			hc.releaseReader()
			hc.releaseWriter()
			wait := r.idleTimeout
			switch {
			case first:
				wait = r.headerTimeout
			case cc.cred.Load() == nil:
				// Answered (a 407 most often) but never authenticated:
				// seconds for its next try, not minutes.
				wait = r.unauthIdle
			}
			// Wait for the next request holding no buffer: a kept-alive
			// connection costs its socket only.
			cc.idle.Store(true)
			if s.isClosing() {
				return
			}
			cc.conn.SetReadDeadline(time.Now().Add(wait))
			err := waitReadable(raw)
			cc.idle.Store(false)
			if err != nil {
				return
			}
		}
		first = false
		if !hc.serveOne(s.rules.Load()) {
			return
		}
	}
}

// serveOne reads and answers one request, and reports whether the
// connection may carry another.
func (hc *httpConn) serveOne(r *rules) bool {
	s, cc := hc.s, hc.cc
	cc.conn.SetReadDeadline(time.Now().Add(r.headerTimeout))
	hc.head.start()
	hc.headRead0, hc.headStart = cc.read.Load(), hc.buffered()
	if hc.br == nil {
		hc.br = getReader(hc.head)
	} else if n := hc.br.Buffered(); n > 0 {
		// A pipelined request's head may sit whole in the buffer, read
		// from the socket with the request before it: the framing checks
		// below see it from its first byte all the same.
		p, _ := hc.br.Peek(n)
		hc.head.rec = append(hc.head.rec, p...)
	}
	req, err := http.ReadRequest(hc.br)
	head := hc.head.stop()
	if err != nil {
		if len(head) == 0 || errors.Is(err, io.EOF) && len(bytes.TrimSpace(head)) == 0 {
			return false // the client closed, or sent nothing in time
		}
		a := ansBadRequest
		switch {
		case clientGone(err) && !hc.head.over:
			// Part of a head, then the client hung up: nobody to
			// answer, and not a request the engine refused.
			hc.newRecord(protocolOf(requestMethod(head)), requestMethod(head)).done(0, endClientGone)
			return false
		case hc.head.over:
			a = ansHeaderTooLarge
		case errors.Is(err, os.ErrDeadlineExceeded):
			return false // a head that never ended: nothing to answer
		case zonedTarget(head):
			a = ansZoneNotAllowed
		default:
			if f := framingOf(head); f != nil {
				a = *f
			}
		}
		hc.refuseUnread(head, a)
		return false
	}
	// What net/http reads leniently but RFC 9112 does not allow: a field
	// name that is not a token ("X-Foo : bar", §5.1), a value with
	// control bytes, two framings (§6.1: net/http drops Content-Length
	// then), a transfer coding other than chunked, and a version other
	// than 1.x (the HTTP/2 preface parses as "PRI * HTTP/2.0").
	if f := framingOf(head); f != nil {
		hc.refuseUnread(head, *f)
		return false
	}
	if !validFields(req.Header) {
		hc.refuseUnread(head, ansBadRequest)
		return false
	}
	if req.ProtoMajor != 1 {
		hc.refuseUnread(head, ansVersionNotSupported)
		return false
	}
	if r.status != nil && isStatusRequest(req) {
		s.serveStatus(hc, req, r)
		return false
	}
	if cc.statusOnly {
		// A status source asks for the status and nothing else: no line,
		// no count, as the connection was never a tenant's.
		hc.answer(ansSourceNotAllowed, true, nil)
		return false
	}
	if req.Method == http.MethodConnect {
		s.reqConnect.Add(1)
	} else {
		s.reqHTTP.Add(1)
	}
	rec := hc.newRecord(protocolOf(req.Method), req.Method)
	rec.destination(requestDestination(req.Method, req.RequestURI))
	// A CONNECT refused ends its connection: the bytes after its head are
	// the tunnel's, never a next request (RFC 9112 §9.3.6: a client may
	// send them before the answer). A request with a body that is not
	// read ends it too.
	closeAfterRefusal := req.Method == http.MethodConnect || req.ContentLength != 0 || req.Close || !req.ProtoAtLeast(1, 1)
	// The line is written before the answer, so that a client that has
	// its answer finds its line.
	refuseWith := func(a reply, extra http.Header) bool {
		hc.refuse(rec, a, closeAfterRefusal, extra)
		return !closeAfterRefusal
	}
	if !r.sourceAllowed(cc.source) {
		// A kept-alive connection accepted before a reload took its
		// source's range away.
		closeAfterRefusal = true
		return refuseWith(ansSourceNotAllowed, nil)
	}
	cred, err := r.authorize(req.Header.Get("Proxy-Authorization"))
	if err != nil {
		a := ansCredentialsMissing
		if req.Header.Get("Proxy-Authorization") != "" {
			a = ansCredentialsWrong
		}
		return refuseWith(a, http.Header{"Proxy-Authenticate": {`Basic realm="` + Realm + `"`}})
	}
	cc.cred.Store(&cred)
	rec.line.User, rec.line.Session = cred.name, cred.session
	if a, refused := s.refusedBefore(r); refused {
		return refuseWith(a, nil)
	}
	if req.Method == http.MethodConnect {
		s.connect(hc, req, r, cred, rec)
		return false
	}
	if !s.forward(hc, req, r, cred, rec) {
		hc.linger = true
		return false
	}
	return true
}

// answer writes a refusal: the status, X-Egress-Error with the answer's
// code, and its one-line body. close adds Connection: close; the caller
// then ends the connection.
func (hc *httpConn) answer(a reply, close bool, extra http.Header) {
	hc.refuse(nil, a, close, extra)
}

// refuse writes rec's line, counting the answer's bytes, then the answer
// (the line comes first, so that a client that has its answer finds its
// line).
func (hc *httpConn) refuse(rec *record, a reply, close bool, extra http.Header) {
	b := answerBytes(a, close, extra)
	if rec != nil {
		rec.answer = len(b)
		rec.done(a.Status, a.Code)
		hc.cc.written.Add(-int64(len(b))) // counted once, in rec.answer
	}
	hc.cc.conn.SetWriteDeadline(time.Now().Add(hc.s.rules.Load().bodyIdleTimeout))
	hc.cc.Write(b)
	hc.linger = hc.linger || close
}

// protocolOf is the access line's protocol of a request on the HTTP
// listener with method.
func protocolOf(method string) string {
	if method == http.MethodConnect {
		return vmconfig.ProtocolConnect
	}
	return vmconfig.ProtocolHTTP
}

// clientGone reports whether err is the client's connection ending (a
// close or a reset) rather than bytes the engine could not read.
func clientGone(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed)
}

// refuseUnread answers a request whose head the engine does not carry
// further (unreadable, ambiguous, not HTTP/1.x) and ends the connection:
// its line names the protocol and method its request line shows, and no
// destination, since none was contacted.
func (hc *httpConn) refuseUnread(head []byte, a reply) {
	method := requestMethod(head)
	if method == http.MethodConnect {
		hc.s.reqConnect.Add(1)
	} else {
		hc.s.reqHTTP.Add(1)
	}
	hc.refuse(hc.newRecord(protocolOf(method), method), a, true, nil)
}

// requestMethod is the method of a request line, if it is a token of
// capitals (every method a proxy carries): nothing else a client wrote
// reaches the log.
func requestMethod(head []byte) string {
	m, _, ok := bytes.Cut(head, []byte(" "))
	if !ok || len(m) == 0 || len(m) > 16 {
		return ""
	}
	for _, c := range m {
		if c < 'A' || c > 'Z' {
			return ""
		}
	}
	return string(m)
}

// framingOf reads the framing fields of a raw request head as the client
// sent them and returns the answer to a request whose body length
// is ambiguous (RFC 9112 §6.1, §6.3: Content-Length with
// Transfer-Encoding, chunked not the final coding or applied twice) or
// has a coding the engine does not carry (501); nil if the framing is
// one a reader cannot mistake.
func framingOf(head []byte) *reply {
	te, hasTE := fieldValues(head, "Transfer-Encoding")
	_, hasCL := fieldValues(head, "Content-Length")
	if !hasTE {
		return nil
	}
	line, _, _ := bytes.Cut(head, []byte("\n"))
	if hasCL || bytes.HasSuffix(bytes.TrimSuffix(line, []byte("\r")), []byte("HTTP/1.0")) {
		// HTTP/1.0 has no Transfer-Encoding: a reader may ignore it
		// (net/http does), another may not (§6.1: faulty framing).
		return &ansBadFraming
	}
	var codings []string
	for _, v := range te {
		for _, c := range strings.Split(v, ",") {
			if c = strings.ToLower(textproto.TrimString(c)); c != "" {
				codings = append(codings, c)
			}
		}
	}
	chunked := 0
	for _, c := range codings {
		if c == "chunked" {
			chunked++
		}
	}
	switch {
	case len(codings) == 0 || codings[len(codings)-1] != "chunked" || chunked > 1:
		return &ansBadFraming
	case len(codings) > 1:
		return &ansCodingUnsupported
	}
	return nil
}

// validFields reports whether every field name is a token and every
// value free of control bytes, as RFC 9110 §5 has them (net/http's
// server checks the same; http.ReadRequest alone does not).
func validFields(h http.Header) bool {
	for k, vs := range h {
		if !httpguts.ValidHeaderFieldName(k) {
			return false
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return false
			}
		}
	}
	return true
}

// writeAnswerTo writes a's answer to w in one write.
func writeAnswerTo(w io.Writer, a reply, close bool, extra http.Header) error {
	_, err := w.Write(answerBytes(a, close, extra))
	return err
}

// answerBytes is a's answer: the status line, X-Egress-Error, extra and
// the one-line body.
func answerBytes(a reply, close bool, extra http.Header) []byte {
	var b bytes.Buffer
	body := a.body()
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", a.Status, http.StatusText(a.Status))
	b.WriteString("Content-Type: text/plain; charset=utf-8\r\n")
	b.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n")
	b.WriteString("X-Egress-Error: " + a.Code + "\r\n")
	extra.Write(&b)
	if close {
		b.WriteString("Connection: close\r\n")
	}
	b.WriteString("\r\n")
	b.WriteString(body)
	return b.Bytes()
}

// zonedTarget reports whether a request head that net/http could not
// parse names a zoned address in its request line ("CONNECT [::1%x]:443"
// is not a URL net/http reads): it is answered as the zone it is, not as
// a malformed request.
func zonedTarget(head []byte) bool {
	line, _, _ := bytes.Cut(head, []byte("\n"))
	f := strings.Fields(string(line))
	return len(f) == 3 && strings.Contains(f[1], "[") && strings.Contains(f[1], "%")
}

// fieldValues returns the values of the fields named name in a raw
// request head, up to its first empty line, and whether there is one:
// net/http drops Content-Length from a request that also has
// Transfer-Encoding, so the engine looks at what the client sent. A name
// followed by whitespace before its colon counts too: some reader down
// the line may trim it.
func fieldValues(head []byte, name string) (values []string, found bool) {
	for i, line := range bytes.Split(head, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		if i == 0 {
			continue
		}
		if len(line) == 0 {
			break
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if ok && strings.EqualFold(strings.TrimSpace(string(k)), name) {
			values, found = append(values, string(v)), true
		}
	}
	return values, found
}

// headReader is what the connection's bufio.Reader reads from: while a
// head is read it allows maxHeaderBytes and records them (for hasField
// and zonedTarget); otherwise it reads the connection as it is.
type headReader struct {
	c         *clientConn
	reading   bool
	remaining int
	over      bool
	rec       []byte
}

func (h *headReader) start() {
	h.reading, h.remaining, h.over, h.rec = true, maxHeaderBytes+4096, false, h.rec[:0]
}

// stop ends the head and returns what was read meanwhile (the head, and
// maybe the start of a body).
func (h *headReader) stop() []byte {
	h.reading = false
	rec := h.rec
	if cap(h.rec) > 4096 {
		h.rec = nil // a large head's record is not kept for the next one
	}
	return rec
}

func (h *headReader) Read(p []byte) (int, error) {
	if !h.reading {
		return h.c.Read(p)
	}
	if h.remaining <= 0 {
		h.over = true
		return 0, errors.New("request head over 64 KiB")
	}
	if len(p) > h.remaining {
		p = p[:h.remaining]
	}
	n, err := h.c.Read(p)
	h.remaining -= n
	h.rec = append(h.rec, p[:n]...)
	return n, err
}

// The bufio readers and writers, 4 KiB each, are pooled: a connection
// holds one only while it reads a head or writes an answer.
var (
	readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}
	writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4096) }}
)

func getReader(r io.Reader) *bufio.Reader {
	br := readers.Get().(*bufio.Reader)
	br.Reset(r)
	return br
}

func (hc *httpConn) releaseReader() {
	if hc.br != nil {
		hc.br.Reset(nil)
		readers.Put(hc.br)
		hc.br = nil
	}
}

func (hc *httpConn) writer() *bufio.Writer {
	if hc.bw == nil {
		hc.bw = writers.Get().(*bufio.Writer)
		hc.bw.Reset(deadlineWriter{hc.cc, hc.s.rules.Load().bodyIdleTimeout})
	}
	return hc.bw
}

func (hc *httpConn) releaseWriter() {
	if hc.bw != nil {
		hc.bw.Reset(nil)
		writers.Put(hc.bw)
		hc.bw = nil
	}
}

// deadlineWriter gives each write to the client d to go through: a client
// that stops taking a response is not waited for.
type deadlineWriter struct {
	c *clientConn
	d time.Duration
}

func (w deadlineWriter) Write(p []byte) (int, error) {
	w.c.conn.SetWriteDeadline(time.Now().Add(w.d))
	return w.c.Write(p)
}
