package dofake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/digitalocean/godo"

	"github.com/egress-proxies/egress/internal/vm/loopback"
)

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	*httptest.Server

	mu    sync.Mutex
	token string
	clock func() time.Time
	skew  time.Duration

	// What DigitalOcean keeps.
	droplets    map[int]*droplet
	reservedIPs map[string]*reservedIP
	firewalls   map[string]*godo.Firewall
	tags        map[string]bool
	actions     map[int]*godo.Action
	nextID      int
	nextIPv4    int // Droplets' own addresses, 198.51.100.x
	nextStatic  int // reserved IPs, 203.0.113.x

	// What tests set up and read.
	faults          map[string][]Fault
	capacity        []*capacityFailure
	dropletLimit    int
	reservedIPLimit int
	windows         windows
	calls           map[string]int
	creates         []godo.DropletCreateRequest
	tokens          map[string]int
	tamper          func(route string, body map[string]any)

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
// transport calls ServeHTTP directly (HTTPClient: the simulation, which
// must not spend a socket per call). Its URL names no host; Close is a
// no-op.
func NewHandler(token string) *Server {
	s := newServer(token)
	s.Server = &httptest.Server{URL: "http://dofake.invalid"}
	return s
}

// The account's limits of a new account, as DigitalOcean gives them:
// 10 Droplets ("new accounts start with a Droplet limit of 10"), and
// the fake's assumption of 3 reserved IPs.
const (
	DefaultDropletLimit    = 10
	DefaultReservedIPLimit = 3
)

func newServer(token string) *Server {
	return &Server{
		token:           token,
		clock:           time.Now,
		droplets:        map[int]*droplet{},
		reservedIPs:     map[string]*reservedIP{},
		firewalls:       map[string]*godo.Firewall{},
		tags:            map[string]bool{},
		actions:         map[int]*godo.Action{},
		nextID:          500000,
		faults:          map[string][]Fault{},
		calls:           map[string]int{},
		tokens:          map[string]int{},
		dropletLimit:    DefaultDropletLimit,
		reservedIPLimit: DefaultReservedIPLimit,
		windows:         defaultWindows(),
	}
}

// Close stops the listener, if there is one.
func (s *Server) Close() {
	s.StopServing()
	if s.Server != nil && s.Server.Listener != nil {
		s.Server.Close()
	}
}

// Endpoint is the API's base URL, as godo.SetBaseURL takes it (the
// paths begin with /v2).
func (s *Server) Endpoint() string { return s.URL + "/" }

// route is one method and path of the API; m holds the path's submatches.
type route struct {
	method, name string
	path         *regexp.Regexp
	serve        func(s *Server, w *writer, r *http.Request, m []string)
}

func path(p string) *regexp.Regexp { return regexp.MustCompile(`^/v2` + p + `$`) }

var routes = slices.Concat(dropletRoutes, reservedIPRoutes, firewallRoutes, tagRoutes, actionRoutes, catalogRoutes)

// writer writes a route's answer through the Tamper hook.
type writer struct {
	http.ResponseWriter
	s     *Server
	route string
}

// ServeHTTP answers one request: authentication first, then the rate
// limit (every request spends one, as DigitalOcean counts them), then the
// route. Every answer carries the ratelimit-* headers.
func (s *Server) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	w := &writer{ResponseWriter: rw, s: s}
	got, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.tokens[got]++
	if got == "" || got != s.token {
		w.error(Fault{Status: http.StatusUnauthorized, ID: "Unauthorized", Message: "Unable to authenticate you"})
		return
	}
	if !s.windows.take(w.Header(), now) {
		s.calls["ratelimited"]++
		w.error(Fault{Status: http.StatusTooManyRequests, ID: "too_many_requests", Message: "API Rate limit exceeded."})
		return
	}
	for _, rt := range routes {
		if m := rt.path.FindStringSubmatch(r.URL.Path); m != nil && rt.method == r.Method {
			s.calls[rt.name]++
			w.route = rt.name
			if f := s.takeFault(rt.name); f != nil {
				w.error(*f)
				return
			}
			rt.serve(s, w, r, m[1:])
			return
		}
	}
	w.error(Fault{Status: http.StatusNotFound, ID: "not_found", Message: "The resource you were accessing could not be found."})
}

// now is the fake's time. Called with s.mu held.
func (s *Server) now() time.Time { return s.clock().Add(s.skew).UTC().Truncate(time.Second) }

// id hands out the next id of any resource. Called with s.mu held.
func (s *Server) id() int { s.nextID++; return s.nextID }

// json writes v, through the Tamper hook.
func (w *writer) json(status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("dofake: encoding %T: %v", v, err))
	}
	if w.s.tamper != nil && w.route != "" {
		var m map[string]any
		if json.Unmarshal(body, &m) == nil {
			w.s.tamper(w.route, m)
			body, _ = json.Marshal(m)
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// noContent answers 204, as a delete does.
func (w *writer) noContent() { w.WriteHeader(http.StatusNoContent) }

// error answers DigitalOcean's error shape: {"id", "message",
// "request_id"}.
func (w *writer) error(f Fault) {
	w.json(f.Status, map[string]string{"id": f.ID, "message": f.Message, "request_id": "dofake-" + strconv.Itoa(w.s.nextID)})
}

func unprocessable(format string, args ...any) Fault {
	return Fault{Status: http.StatusUnprocessableEntity, ID: "unprocessable_entity", Message: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) Fault {
	return Fault{Status: http.StatusBadRequest, ID: "bad_request", Message: fmt.Sprintf(format, args...)}
}

func notFound() Fault {
	return Fault{Status: http.StatusNotFound, ID: "not_found", Message: "The resource you were accessing could not be found."}
}

// decode reads a request body into v, answering 400 when it is no such
// JSON.
func decode(w *writer, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		w.error(badRequest("invalid JSON: %v", err))
		return false
	}
	return true
}

// page cuts a list into the page the request asks for (page, per_page;
// DigitalOcean's defaults 1 and 20, at most 200) and says where it is in
// links and meta, as godo's Links read them.
func page[T any](s *Server, r *http.Request, all []T) ([]T, *godo.Links, *godo.Meta) {
	q := r.URL.Query()
	p, _ := strconv.Atoi(q.Get("page"))
	per, _ := strconv.Atoi(q.Get("per_page"))
	p = max(p, 1)
	if per <= 0 {
		per = 20
	}
	per = min(per, 200)
	last := max((len(all)+per-1)/per, 1)
	at := func(n int) string {
		u := *r.URL
		q := u.Query()
		q.Set("page", strconv.Itoa(n))
		q.Set("per_page", strconv.Itoa(per))
		u.RawQuery = q.Encode()
		return strings.TrimSuffix(s.URL, "/") + u.RequestURI()
	}
	links := &godo.Links{}
	if p < last {
		links.Pages = &godo.Pages{Next: at(p + 1), Last: at(last)}
	}
	if p > 1 {
		if links.Pages == nil {
			links.Pages = &godo.Pages{}
		}
		links.Pages.First, links.Pages.Prev = at(1), at(p-1)
	}
	lo, hi := min((p-1)*per, len(all)), min(p*per, len(all))
	return orEmpty(all[lo:hi]), links, &godo.Meta{Total: len(all)}
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
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

// Creates returns the bodies of every Droplet create, refused ones too.
func (s *Server) Creates() []godo.DropletCreateRequest {
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

// Tamper changes every answer of a route the fake writes from now on
// (every route for ""), as f changes its JSON: a test's plant of a field
// DigitalOcean would never write, to see its check of the answers refuse
// it. Nil stops it.
func (s *Server) Tamper(route string, f func(body map[string]any)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f == nil {
		s.tamper = nil
		return
	}
	s.tamper = func(r string, body map[string]any) {
		if route == "" || r == route {
			f(body)
		}
	}
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
