package engine

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// The access log: one vmconfig.AccessLine per CONNECT tunnel, SOCKS5
// connection and plain-HTTP request, kept in a bounded ring that the VM's
// agent reads from the stats listener (GET /access?after=SEQ), and
// written to the engine's log as a JSON line (message "access"), so the
// journal has them too. Only when the configuration's accessLog is true:
// some tenants must not keep one.

// accessRingSize is how many lines the engine holds for a reader; one that
// reads less often than the proxy writes that many loses the oldest, and
// is told how many (vmconfig.AccessPage.Dropped).
const accessRingSize = 4096

// accessPageMax is the most lines one GET /access answers.
const accessPageMax = vmconfig.AccessPageMax

// accessRing holds the newest lines, numbered from 1.
type accessRing struct {
	mu    sync.Mutex
	lines [accessRingSize]vmconfig.AccessLine
	// last is the number of the newest line; 0 before the first.
	last int64
}

func (a *accessRing) add(l vmconfig.AccessLine) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.last++
	a.lines[a.last%accessRingSize] = l
}

// page returns the lines after line number after that the ring still
// holds (at most accessPageMax), the number to ask after next, and how
// many lines after `after` the ring let go before they were read.
func (a *accessRing) page(after int64) vmconfig.AccessPage {
	a.mu.Lock()
	defer a.mu.Unlock()
	if after > a.last || after < 0 {
		// A reader from before a restart: start again from what is held.
		after = 0
	}
	oldest := max(a.last-accessRingSize+1, 1)
	p := vmconfig.AccessPage{Lines: []vmconfig.AccessLine{}}
	from := after + 1
	if from < oldest {
		p.Dropped = oldest - from
		from = oldest
	}
	to := min(a.last, from+accessPageMax-1)
	for n := from; n <= to; n++ {
		p.Lines = append(p.Lines, a.lines[n%accessRingSize])
	}
	p.Next = max(to, after)
	return p
}

func (s *Server) serveAccess(w http.ResponseWriter, req *http.Request) {
	after, err := strconv.ParseInt(req.URL.Query().Get("after"), 10, 64)
	if err != nil && req.URL.Query().Get("after") != "" {
		http.Error(w, "after: want a line number", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(s.access.page(after))
}

// record is the access line of one request in the making: who and what
// are filled as they are known, and done writes it. Its bytes are the
// client connection's counters from the record's start to its done (see
// vmconfig.AccessLine.BytesIn).
type record struct {
	s     *Server
	start time.Time
	line  vmconfig.AccessLine
	cc    *clientConn
	// read0 and written0 are cc's counters at the start.
	read0, written0 int64
	// unread is what was read from the socket but not yet taken by a
	// request (an HTTP connection's buffer, holding a pipelined
	// request): bytes of the request that takes them, not the one that
	// read them. unread0 is its value at the start.
	unread  func() int
	unread0 int
	// answer is a refusal's bytes, written right after the line.
	answer int
}

func (s *Server) newRecord(cc *clientConn, protocol, method string) *record {
	now := time.Now()
	return &record{s: s, start: now, cc: cc, read0: cc.read.Load(), written0: cc.written.Load(),
		line: vmconfig.AccessLine{Time: now.UTC(), Source: cc.remote, Protocol: protocol, Method: method}}
}

// newRecord starts the line of a request on an HTTP connection, whose
// reader may hold bytes of it already.
func (hc *httpConn) newRecord(protocol, method string) *record {
	rec := hc.s.newRecord(hc.cc, protocol, method)
	rec.unread = hc.buffered
	rec.read0, rec.unread0 = hc.headRead0, hc.headStart
	return rec
}

// destination names the destination in the line: host and port only, and
// only a host validHost accepts, so nothing a client wrote beside it (a
// path, a query, userinfo) reaches the log.
func (r *record) destination(host string, port int) {
	if validHost(host) {
		r.line.Host = host
	}
	if port > 0 && port < 65536 {
		r.line.Port = port
	}
}

// done writes the line with its status and reason (empty when the
// request was carried to its end), if the rules keep an access log.
func (r *record) done(status int, reason string) {
	if r == nil {
		return
	}
	r.line.Status, r.line.Reason = status, reason
	if r.cc != nil {
		r.line.BytesIn = r.cc.read.Load() - r.read0 + int64(r.unread0)
		if r.unread != nil {
			r.line.BytesIn -= int64(r.unread())
		}
		r.line.BytesOut = r.cc.written.Load() - r.written0 + int64(r.answer)
	}
	end := time.Now()
	r.line.End = end.UTC()
	r.line.DurationMs = end.Sub(r.start).Milliseconds()
	if !r.s.rules.Load().accessLog {
		return
	}
	r.s.access.add(r.line)
	// The journal's line carries the same object as /access, under
	// "access": one shape, whichever an operator reads.
	js, err := json.Marshal(r.line)
	if err != nil {
		return
	}
	r.s.log.LogAttrs(context.Background(), slog.LevelInfo, "access", slog.Any("access", json.RawMessage(js)))
}

// requestDestination is what an access line names of an HTTP request's
// destination, read from its request target alone: CONNECT's authority,
// or an absolute URL's host and port (80 by default); for anything else,
// nothing.
func requestDestination(method, target string) (host string, port int) {
	if method == http.MethodConnect {
		h, p, err := splitTarget(target, 0)
		if err != nil {
			return "", 0
		}
		return h, p
	}
	u, err := url.Parse(target)
	if err != nil || !strings.EqualFold(u.Scheme, "http") || u.Host == "" {
		return "", 0
	}
	h, p, err := splitTarget(u.Host, 80)
	if err != nil {
		return "", 0
	}
	return h, p
}
