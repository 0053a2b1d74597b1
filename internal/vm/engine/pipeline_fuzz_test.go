package engine

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// FuzzPipelined feeds byte streams, several requests in one write with
// any framing, to a running engine in front of a recording origin, and
// holds the engine to what the client's bytes say, read the strict way
// (RFC 9112, framed by frameRequests):
//
//   - the origin sees the requests the client framed unambiguously, in
//     order, each with its body, and no other before them;
//   - once a request's length is ambiguous (two framings, a coding
//     other than chunked, a malformed chunk), the origin sees no further
//     request, and the client's answer to it, if it gets one, is a 4xx or
//     501 and the last: the connection is closed after it.
//
// "ORIGIN" in the input stands for the origin's host:port and "AUTH" for
// a Proxy-Authorization header value with the test's credentials, so that
// the corpus reaches the origin. The seed corpus (testdata/fuzz/
// FuzzPipelined) holds issue 41's stream: a request with Content-Length
// and Transfer-Encoding behind another, its "body" a third request.
func FuzzPipelined(f *testing.F) {
	origin := newFuzzOrigin(f)
	_, proxy := startProxy(f, testConfig(f, origin.port))
	get := "GET http://ORIGIN/echo?n=1 HTTP/1.1\r\nHost: ORIGIN\r\nProxy-Authorization: AUTH\r\n\r\n"
	f.Add([]byte(get + get))
	f.Add([]byte(get + "POST http://ORIGIN/upload HTTP/1.1\r\nHost: ORIGIN\r\nProxy-Authorization: AUTH\r\nContent-Length: 5\r\n\r\nhello" + get))
	f.Add([]byte(get + "POST http://ORIGIN/upload HTTP/1.1\r\nHost: ORIGIN\r\nProxy-Authorization: AUTH\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n" + get))
	f.Fuzz(func(t *testing.T, in []byte) {
		raw := bytes.ReplaceAll(in, []byte("ORIGIN"), []byte("127.0.0.1:"+strconv.Itoa(origin.port)))
		raw = bytes.ReplaceAll(raw, []byte("AUTH"), []byte(basic(testUser, testPassword)))
		ref := frameRequests(raw)
		origin.reset()
		answers := sendStream(t, proxy, raw, ref.requests)
		seen := origin.served()
		k := len(ref.requests)
		// What the origin saw is the framed requests, in order, less
		// those the engine refused (another destination, no
		// credentials).
		j := 0
		for i, got := range seen {
			for j < k && ref.requests[j] != got {
				j++
			}
			if j == k {
				if ref.end == streamMalformed {
					break // what a lenient reader makes of a malformed request is not judged here
				}
				t.Fatalf("the origin saw request %d, %q, which the client's bytes did not frame (they frame %q; then %s):\n%q", i, got, ref.requests, ref.end, raw)
			}
			j++
		}
		if ref.end == streamAmbiguous && len(answers) > k {
			if a := answers[k]; a < 400 || len(answers) > k+1 {
				t.Fatalf("request %d's length is ambiguous; the client got %v (want a refusal, and the connection closed after it):\n%q", k, answers, raw)
			}
		}
	})
}

// seenRequest is a request as the origin saw it, or as the client's bytes
// frame it: method, origin-form target and body.
type seenRequest struct {
	Method, Target, Body string
}

// fuzzOrigin is an HTTP destination that records the requests it
// read whole.
type fuzzOrigin struct {
	port int
	mu   sync.Mutex
	seen []seenRequest
}

func newFuzzOrigin(t testing.TB) *fuzzOrigin {
	o := &fuzzOrigin{}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return // a body that broke off was not a request the origin served
		}
		o.mu.Lock()
		o.seen = append(o.seen, seenRequest{r.Method, r.URL.RequestURI(), string(body)})
		o.mu.Unlock()
		io.WriteString(w, "ok\n")
	}))
	t.Cleanup(up.Close)
	o.port = up.Listener.Addr().(*net.TCPAddr).Port
	return o
}

func (o *fuzzOrigin) reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen = nil
}

func (o *fuzzOrigin) served() []seenRequest {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.seen)
}

// sendStream writes raw in one write, half-closes and reads the answers
// until the engine closes; it returns their final statuses (1xx skipped).
// The engine answers requests in order, each after the origin's answer, so
// once it has closed the origin has seen all it will.
func sendStream(t *testing.T, proxy string, raw []byte, framed []seenRequest) []int {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	go func() {
		c.Write(raw)
		c.(*net.TCPConn).CloseWrite()
	}()
	br := bufio.NewReader(c)
	var statuses []int
	for {
		method := http.MethodGet
		if i := len(statuses); i < len(framed) {
			method = framed[i].Method
		}
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "reset") {
				return statuses
			}
			t.Fatalf("reading answer %d: %v", len(statuses), err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 200 {
			statuses = append(statuses, resp.StatusCode)
		}
	}
}

// How a byte stream ends, read the strict way.
type streamEnd string

const (
	// streamDone: every byte belongs to an unambiguous request, or the
	// last one is incomplete.
	streamDone streamEnd = "the stream ends"
	// streamAmbiguous: a request whose length readers may disagree on.
	streamAmbiguous streamEnd = "a request of ambiguous length"
	// streamMalformed: a request that is not HTTP/1.1 in some other way
	// (a lenient reader may take it, with the same length).
	streamMalformed streamEnd = "a malformed request"
)

type framing struct {
	requests []seenRequest
	end      streamEnd
}

// frameRequests reads raw as a strict HTTP/1.1 server would (RFC 9112:
// CRLF line ends, a token before each colon, one Content-Length of digits
// or one Transfer-Encoding that is chunked, never both) and returns the
// requests it frames, each as the origin would see it, up to the first
// that is incomplete, ambiguous or malformed.
func frameRequests(raw []byte) framing {
	var out framing
	for len(raw) > 0 {
		req, rest, end := frameOne(raw)
		if end != "" {
			out.end = end
			return out
		}
		out.requests = append(out.requests, req)
		raw = rest
	}
	out.end = streamDone
	return out
}

func frameOne(raw []byte) (seenRequest, []byte, streamEnd) {
	var req seenRequest
	line, raw, end := headLine(raw)
	if end != "" {
		return req, nil, end
	}
	f := strings.Split(string(line), " ")
	if len(f) != 3 || f[0] == "" || !validToken(f[0]) || (f[2] != "HTTP/1.1" && f[2] != "HTTP/1.0") {
		return req, nil, streamMalformed
	}
	req.Method = f[0]
	// The engine carries absolute-form requests to http:// origins only:
	// the origin sees the path and query.
	target, ok := strings.CutPrefix(f[1], "http://")
	if !ok {
		return req, nil, streamMalformed
	}
	i := strings.IndexByte(target, '/')
	if i < 0 {
		return req, nil, streamMalformed
	}
	u, err := url.ParseRequestURI(target[i:])
	if err != nil {
		return req, nil, streamMalformed
	}
	req.Target = u.RequestURI()
	var cl, te []string
	for {
		line, raw, end = headLine(raw)
		if end != "" {
			return req, nil, end
		}
		if len(line) == 0 {
			break
		}
		name, value, found := strings.Cut(string(line), ":")
		trimmed := strings.ToLower(strings.TrimSpace(name))
		framingField := trimmed == "content-length" || trimmed == "transfer-encoding"
		switch {
		case !found && framingField:
			return req, nil, streamAmbiguous
		case !found || !validToken(name):
			if framingField || strings.HasPrefix(trimmed, "content-length") || strings.HasPrefix(trimmed, "transfer-encoding") {
				return req, nil, streamAmbiguous
			}
			return req, nil, streamMalformed
		case trimmed == "content-length":
			cl = append(cl, strings.Trim(value, " \t"))
		case trimmed == "transfer-encoding":
			te = append(te, strings.Trim(value, " \t"))
		}
	}
	switch {
	case len(te) > 0 && (len(cl) > 0 || f[2] == "HTTP/1.0"), len(te) > 1, len(cl) > 1:
		// RFC 9112 §6.1: Transfer-Encoding in HTTP/1.0 is faulty framing.
		return req, nil, streamAmbiguous
	case len(te) == 1:
		if !strings.EqualFold(te[0], "chunked") {
			return req, nil, streamAmbiguous
		}
		body, rest, end := chunkedBody(raw)
		if end != "" {
			return req, nil, end
		}
		req.Body = body
		return req, rest, ""
	case len(cl) == 1:
		n, err := strconv.ParseInt(cl[0], 10, 64)
		if err != nil || cl[0] == "" || strings.TrimLeft(cl[0], "0123456789") != "" {
			return req, nil, streamAmbiguous
		}
		if int64(len(raw)) < n {
			return req, nil, streamDone
		}
		req.Body = string(raw[:n])
		return req, raw[n:], ""
	}
	return req, raw, ""
}

// chunkedBody reads a chunked body strictly: hex sizes, extensions after
// ";", CRLF after each size and chunk, trailer fields after the last
// chunk.
func chunkedBody(raw []byte) (string, []byte, streamEnd) {
	var body []byte
	for {
		line, rest, ok := crlfLine(raw)
		if !ok {
			return "", nil, crlfEnd(line)
		}
		size, _, _ := strings.Cut(string(line), ";")
		if size == "" || len(size) > 8 || strings.Trim(size, "0123456789abcdefABCDEF") != "" {
			return "", nil, streamAmbiguous
		}
		n, _ := strconv.ParseInt(size, 16, 64)
		raw = rest
		if n == 0 {
			// The trailer section is field lines, which a recipient
			// may end with a bare LF as it may a head's (RFC 9112
			// §2.2), and the engine writes the body anew, as it does
			// the head: read them as headLine reads a head's.
			for {
				var end streamEnd
				line, raw, end = headLine(raw)
				if end != "" {
					return "", nil, end
				}
				if len(line) == 0 {
					return string(body), raw, ""
				}
				if name, _, found := strings.Cut(string(line), ":"); !found || !validToken(name) {
					return "", nil, streamAmbiguous
				}
			}
		}
		if int64(len(raw)) < n+2 {
			if int64(len(raw)) > n && raw[n] != '\r' {
				return "", nil, streamAmbiguous
			}
			return "", nil, streamDone
		}
		if raw[n] != '\r' || raw[n+1] != '\n' {
			return "", nil, streamAmbiguous
		}
		body = append(body, raw[:n]...)
		raw = raw[n+2:]
	}
}

// headLine cuts a line of a head from raw: ended by LF, a CR before it
// dropped (RFC 9112 §2.2 lets a recipient take a bare LF; the engine
// writes the head anew, so no reader after it sees the difference). A CR
// anywhere else makes the line's end a matter of opinion.
func headLine(raw []byte) (line, rest []byte, end streamEnd) {
	i := bytes.IndexByte(raw, '\n')
	if i < 0 {
		if bytes.IndexByte(raw, '\r') >= 0 && bytes.IndexByte(raw, '\r') < len(raw)-1 {
			return nil, nil, streamAmbiguous
		}
		return nil, nil, streamDone
	}
	line = bytes.TrimSuffix(raw[:i], []byte("\r"))
	if bytes.IndexByte(line, '\r') >= 0 {
		return nil, nil, streamAmbiguous
	}
	return line, raw[i+1:], ""
}

// crlfLine cuts a line ended by CRLF from raw; ok is false when raw ends
// first or holds a bare CR or LF before the CRLF (line is then what
// there was).
func crlfLine(raw []byte) (line, rest []byte, ok bool) {
	i := bytes.Index(raw, []byte("\r\n"))
	if i < 0 {
		return raw, nil, false
	}
	if bytes.IndexAny(raw[:i], "\r\n") >= 0 {
		return raw[:i+1], nil, false
	}
	return raw[:i], raw[i+2:], true
}

// crlfEnd is how a stream whose line crlfLine could not cut ends: a bare
// CR or LF makes the line's end a matter of opinion; otherwise the line
// is only incomplete.
func crlfEnd(line []byte) streamEnd {
	if bytes.IndexAny(line, "\r\n") >= 0 {
		return streamAmbiguous
	}
	return streamDone
}

// validToken reports whether s is an RFC 9110 token.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}
