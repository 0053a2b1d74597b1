package hetznerfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/schema"

	"github.com/egress-proxies/egress/internal/vm/loopback"
)

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	*httptest.Server

	mu    sync.Mutex
	token string
	clock func() time.Time
	skew  time.Duration

	// What Hetzner keeps.
	servers    map[int64]*schema.Server
	userData   map[int64]string
	primaryIPs map[int64]*schema.PrimaryIP
	actions    map[int64]*schema.Action
	nextID     int64
	nextIPv4   int // ephemeral addresses, 198.51.100.x
	nextStatic int // Primary IPs made on their own, 203.0.113.x

	// What tests set up and read.
	faults         map[string][]Fault
	capacity       []*capacityFailure
	serverLimit    int
	primaryIPLimit int
	bucket         bucket
	calls          map[string]int
	creates        []schema.ServerCreateRequest
	tokens         map[string]int
	onPoll         func()
	pricingBody    string

	// serving is Serve's, nil when the fake does not serve.
	serving *loopback.Serving
}

// New starts a fake on a loopback port that accepts token (as
// "Authorization: Bearer TOKEN") and nothing else. Close it when done.
func New(token string) *Server {
	s := newServer(token)
	s.Server = httptest.NewServer(s)
	return s
}

// NewHandler is the fake without a listener, for a client whose
// transport calls ServeHTTP directly (the simulation, which must not
// spend a socket per call). Its URL names no host; Close is a no-op.
func NewHandler(token string) *Server {
	s := newServer(token)
	s.Server = &httptest.Server{URL: "http://hetznerfake.invalid"}
	return s
}

func newServer(token string) *Server {
	return &Server{
		token:      token,
		clock:      time.Now,
		servers:    map[int64]*schema.Server{},
		userData:   map[int64]string{},
		primaryIPs: map[int64]*schema.PrimaryIP{},
		actions:    map[int64]*schema.Action{},
		nextID:     1000,
		faults:     map[string][]Fault{},
		calls:      map[string]int{},
		tokens:     map[string]int{},
		bucket:     bucket{limit: DefaultRateLimit, window: DefaultRateWindow, remaining: DefaultRateLimit},
	}
}

// Close stops the listener, if there is one.
func (s *Server) Close() {
	s.StopServing()
	if s.Server != nil && s.Server.Listener != nil {
		s.Server.Close()
	}
}

// Endpoint is the API's base URL, as HCLOUD_ENDPOINT and the SDK's
// WithEndpoint take it.
func (s *Server) Endpoint() string { return s.URL + "/v1" }

// route is one method and path of the API; m holds the path's submatches.
type route struct {
	method, name string
	path         *regexp.Regexp
	serve        func(s *Server, w http.ResponseWriter, r *http.Request, m []string)
}

func path(p string) *regexp.Regexp { return regexp.MustCompile(`^/v1` + p + `$`) }

var routes = slices.Concat(serverRoutes, primaryIPRoutes, actionRoutes, catalogRoutes, pricingRoutes)

// ServeHTTP answers one request: authentication first, then the rate
// limit (every request spends one, as Hetzner counts them), then the
// route. Every answer carries the RateLimit-* headers.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	got, _ := cutBearer(r.Header.Get("Authorization"))
	s.tokens[got]++
	if got == "" || got != s.token {
		// "unauthorized: Request was made with an invalid or unknown token"
		writeError(w, Fault{Code: "unauthorized", Status: http.StatusUnauthorized, Message: "unable to authenticate"})
		return
	}
	limited := !s.bucket.take(now)
	s.bucket.headers(w.Header(), now)
	if limited {
		s.calls["ratelimited"]++
		writeError(w, Fault{Code: "rate_limit_exceeded", Status: http.StatusTooManyRequests, Message: fmt.Sprintf("limit of %d requests per %v reached", s.bucket.limit, s.bucket.window)})
		return
	}
	for _, rt := range routes {
		if m := rt.path.FindStringSubmatch(r.URL.Path); m != nil && rt.method == r.Method {
			s.calls[rt.name]++
			if f := s.takeFault(rt.name); f != nil {
				writeError(w, *f)
				return
			}
			rt.serve(s, w, r, m[1:])
			return
		}
	}
	writeError(w, Fault{Code: "not_found", Status: http.StatusNotFound, Message: "the fake does not serve " + r.Method + " " + r.URL.Path})
}

func cutBearer(h string) (string, bool) {
	const p = "Bearer "
	if len(h) > len(p) && h[:len(p)] == p {
		return h[len(p):], true
	}
	return "", false
}

// now is the fake's time. Called with s.mu held.
func (s *Server) now() time.Time { return s.clock().Add(s.skew).UTC().Truncate(time.Second) }

// id hands out the next id of any resource. Called with s.mu held.
func (s *Server) id() int64 { s.nextID++; return s.nextID }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// writeError answers Hetzner's error shape: {"error": {"code", "message",
// "details"}}.
func writeError(w http.ResponseWriter, f Fault) {
	writeJSON(w, f.Status, schema.ErrorResponse{Error: schema.Error{Code: f.Code, Message: f.Message, DetailsRaw: json.RawMessage(`{}`)}})
}

func invalidInput(format string, args ...any) Fault {
	return Fault{Code: "invalid_input", Status: http.StatusBadRequest, Message: fmt.Sprintf(format, args...)}
}

func notFound(what string, id string) Fault {
	return Fault{Code: "not_found", Status: http.StatusNotFound, Message: fmt.Sprintf("%s with ID %s not found", what, id)}
}

// page cuts a list into the page the request asks for (page, per_page;
// Hetzner's defaults 1 and 25, at most 50) and says where it is in meta,
// as the SDK's iterators read it.
func page[T any](r *http.Request, all []T) ([]T, schema.Meta) {
	q := r.URL.Query()
	p, _ := strconv.Atoi(q.Get("page"))
	per, _ := strconv.Atoi(q.Get("per_page"))
	p = max(p, 1)
	if per <= 0 {
		per = 25
	}
	per = min(per, 50)
	last := max((len(all)+per-1)/per, 1)
	pg := &schema.MetaPagination{Page: p, PerPage: per, LastPage: last, TotalEntries: len(all)}
	if p > 1 {
		pg.PreviousPage = p - 1
	}
	if p < last {
		pg.NextPage = p + 1
	}
	lo, hi := min((p-1)*per, len(all)), min(p*per, len(all))
	return all[lo:hi], schema.Meta{Pagination: pg}
}

// Calls returns how many calls of a route the fake answered (faults
// included; not those refused before the route, for the token or the
// rate limit, which "ratelimited" counts). Routes are named as Fail
// names them.
func (s *Server) Calls(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[name]
}

// Tokens returns how many requests carried each bearer token ("" for
// none).
func (s *Server) Tokens() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.tokens {
		out[k] = v
	}
	return out
}

// Creates returns the bodies of every server create, refused ones too.
func (s *Server) Creates() []schema.ServerCreateRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.creates)
}

// SetClock makes the fake read the time from now instead of time.Now.
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock = now
}

// Advance moves the fake's clock forward by d.
func (s *Server) Advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.skew += d
}

// HTTPClient is a client whose requests the fake serves in-process,
// without a socket: for a caller that makes many calls and must stay
// deterministic (the simulation), or has no loopback port to spend.
func (s *Server) HTTPClient() *http.Client {
	return &http.Client{Transport: inProcess{s}}
}

type inProcess struct{ s *Server }

func (t inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	rec := httptest.NewRecorder()
	t.s.ServeHTTP(rec, r)
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}
