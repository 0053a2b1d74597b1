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
// are filled as they are known, and done writes it.
type record struct {
	s     *Server
	start time.Time
	line  vmconfig.AccessLine
}

func (s *Server) newRecord(source, protocol, method string) *record {
	now := time.Now()
	return &record{s: s, start: now, line: vmconfig.AccessLine{Time: now.UTC(), Source: source, Protocol: protocol, Method: method}}
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
func (r *record) done(status int, reason string, in, out int64) {
	if r == nil {
		return
	}
	r.line.Status, r.line.Reason = status, reason
	r.line.BytesIn, r.line.BytesOut = in, out
	r.line.DurationMs = time.Since(r.start).Milliseconds()
	if !r.s.rules.Load().accessLog {
		return
	}
	r.s.access.add(r.line)
	l := r.line
	r.s.log.LogAttrs(context.Background(), slog.LevelInfo, "access",
		slog.String("source", l.Source), slog.String("user", l.User), slog.String("protocol", l.Protocol),
		slog.String("method", l.Method), slog.String("host", l.Host), slog.Int("port", l.Port),
		slog.Int("status", l.Status), slog.Int64("bytesIn", l.BytesIn), slog.Int64("bytesOut", l.BytesOut),
		slog.Int64("durationMs", l.DurationMs), slog.String("reason", l.Reason))
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
