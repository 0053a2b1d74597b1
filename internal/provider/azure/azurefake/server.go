package azurefake

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/egress-proxies/egress/internal/vm/loopback"
)

// Server is the fake: Azure Resource Manager, Entra ID's token endpoint
// and the cloud metadata az reads, on one TLS listener. Its methods are
// safe for concurrent use.
type Server struct {
	*httptest.Server

	mu           sync.Mutex
	subscription string
	tenant       string
	clock        func() time.Time

	// Entra ID: who may have a token, and the tokens handed out.
	secrets    map[string]string                 // client id → secret
	assertions map[string]func(jwt string) error // client id → what checks its assertion
	issued     map[string]Grant                  // access token → how it was had
	accepted   map[string]bool                   // tokens taken without a grant (AcceptToken)
	grants     []Grant                           // every token answered, in order

	// What Azure keeps, by lower-cased resource id (ARM's ids are
	// case-insensitive).
	groups  map[string]*group
	vnets   map[string]*resource
	subnets map[string]*resource
	nsgs    map[string]*resource
	vms     map[string]*resource
	nics    map[string]*resource
	ips     map[string]*resource
	disks   map[string]*resource
	ops     map[string]*operation
	nextID  int
	nextIP  int // public addresses, 20.0.x.y

	// What tests set up and read.
	pollsToFinish int // 0: operations finish at Settle only
	pageSize      int
	buckets       map[string]*bucket // ARM's throttling, by "reads", "writes", "deletes"
	faults        map[string][]Fault
	capacity      []*capacityFailure
	calls         map[string]int
	apiVersions   map[string]map[string]bool
	requests      []Request
	tamper        func(route string, body map[string]any)
	quotas        map[string]Quotas // by location (SetQuotas)

	// serving is Serve's, nil when the fake does not serve.
	serving *loopback.Serving
}

// group is a resource group.
type group struct {
	name, location string
}

// Request is one request the fake answered, as tests read them back.
type Request struct {
	Route       string // "virtualMachines.put"
	Method      string
	Path        string
	APIVersion  string
	IfNoneMatch string
	Body        map[string]any // the JSON body, nil when none
}

// New starts a fake on a loopback port, over TLS with a certificate of
// its own (CAFile writes it for a client that reads a CA bundle: az's
// REQUESTS_CA_BUNDLE; Client trusts it). subscription and tenant are the
// only ones it knows. Close it when done.
func New(subscription, tenant string) *Server {
	s := newServer(subscription, tenant)
	s.Server = httptest.NewTLSServer(s)
	return s
}

// NewHTTP is the fake on a plain HTTP loopback port: for a client that
// sends its bearer token over HTTP to a fake on this machine (azcore
// refuses to unless told, with InsecureAllowCredentialWithHTTP). MSAL
// asks an authority over https only: a client of NewHTTP's fake takes
// its token from elsewhere (AcceptToken).
func NewHTTP(subscription, tenant string) *Server {
	s := newServer(subscription, tenant)
	s.Server = httptest.NewServer(s)
	return s
}

// NewHandler is the fake without a listener, for a client whose
// transport calls ServeHTTP directly (HTTPClient: the simulation, which
// must not spend a socket per call). Its URL names no host; Close is a
// no-op.
func NewHandler(subscription, tenant string) *Server {
	s := newServer(subscription, tenant)
	s.Server = &httptest.Server{URL: "https://azurefake.invalid"}
	return s
}

func newServer(subscription, tenant string) *Server {
	return &Server{
		subscription:  subscription,
		tenant:        tenant,
		clock:         time.Now,
		secrets:       map[string]string{},
		assertions:    map[string]func(string) error{},
		issued:        map[string]Grant{},
		accepted:      map[string]bool{},
		groups:        map[string]*group{},
		vnets:         map[string]*resource{},
		subnets:       map[string]*resource{},
		nsgs:          map[string]*resource{},
		vms:           map[string]*resource{},
		nics:          map[string]*resource{},
		ips:           map[string]*resource{},
		disks:         map[string]*resource{},
		ops:           map[string]*operation{},
		pageSize:      DefaultPageSize,
		pollsToFinish: DefaultPollsToFinish,
		faults:        map[string][]Fault{},
		calls:         map[string]int{},
		apiVersions:   map[string]map[string]bool{},
		quotas:        map[string]Quotas{},
	}
}

// Close stops the VMs' engines (StopServing) and the listener, if there
// is one.
func (s *Server) Close() {
	s.StopServing()
	if s.Server != nil && s.Server.Listener != nil {
		s.Server.Close()
	}
}

// HTTPClient is a client whose requests the fake serves in-process,
// without a socket: for a caller that makes many calls and must stay
// deterministic (the simulation). It is a policy.Transporter of azcore
// as it is (it has Do).
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

// DefaultPageSize is how many resources a list answers a page: the fake's
// choice, small enough that a listing of a few dozen follows nextLink.
// SetPageSize changes it.
const DefaultPageSize = 20

// Endpoint is ARM's base URL (https://127.0.0.1:PORT), as the SDK's
// cloud.Configuration and az's --endpoint-resource-manager take it.
func (s *Server) Endpoint() string { return s.URL }

// AuthorityHost is the base URL of Entra ID's endpoints, as azidentity's
// cloud.Configuration.ActiveDirectoryAuthorityHost takes it: tokens are
// at AuthorityHost/{tenant}/oauth2/v2.0/token.
func (s *Server) AuthorityHost() string { return s.URL + "/" }

// CertPEM is the fake's TLS certificate, PEM-encoded: the CA a client
// must trust. Only New's fake has one.
func (s *Server) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
}

// CAFile writes CertPEM to path, for a client that takes a CA bundle
// file (az: REQUESTS_CA_BUNDLE).
func (s *Server) CAFile(path string) error { return os.WriteFile(path, s.CertPEM(), 0o644) }

// CertPool is a pool holding the fake's certificate alone.
func (s *Server) CertPool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(s.Certificate())
	return p
}

// TLSConfig trusts the fake's certificate.
func (s *Server) TLSConfig() *tls.Config { return &tls.Config{RootCAs: s.CertPool()} }

// Subscription and Tenant are the ids the fake was started with.
func (s *Server) Subscription() string { return s.subscription }
func (s *Server) Tenant() string       { return s.tenant }

// route is one method and path; m holds the path's submatches.
type route struct {
	method, name string
	path         *regexp.Regexp
	auth         bool // needs an ARM token
	serve        func(s *Server, w *writer, r *http.Request, m []string)
}

// The parts of ARM's paths. Fixed segments match in any case, as ARM's
// do ("resourcegroups" and "resourceGroups" are one).
const (
	subPath = `(?i)^/subscriptions/([^/]+)`
	rgPath  = subPath + `/resourceGroups/([^/]+)`
)

func armPath(p string) *regexp.Regexp { return regexp.MustCompile(p + `$`) }

var routes = slices.Concat(tokenRoutes, operationRoutes, networkRoutes, computeRoutes, usageRoutes)

// writer writes a route's answer through the Tamper hook.
type writer struct {
	http.ResponseWriter
	s          *Server
	route      string
	apiVersion string
}

// ServeHTTP answers one request: the route, then for ARM's routes the
// bearer token, the subscription and the throttling buckets, an injected
// fault, then the route's own answer.
func (s *Server) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := &writer{ResponseWriter: rw, s: s, apiVersion: r.URL.Query().Get("api-version")}
	rw.Header().Set("x-ms-request-id", s.newID())
	for _, rt := range routes {
		m := rt.path.FindStringSubmatch(r.URL.Path)
		if m == nil || rt.method != r.Method {
			continue
		}
		w.route = rt.name
		s.calls[rt.name]++
		s.record(rt.name, r)
		if rt.auth {
			if f := s.authenticate(r); f != nil {
				w.error(*f)
				return
			}
			if w.apiVersion == "" {
				w.error(Fault{Status: http.StatusBadRequest, Code: "MissingApiVersionParameter", Message: "The api-version query parameter (?api-version=) is required for all requests."})
				return
			}
			if !strings.EqualFold(m[1], s.subscription) {
				w.error(Fault{Status: http.StatusNotFound, Code: "SubscriptionNotFound", Message: fmt.Sprintf("The subscription '%s' could not be found.", m[1])})
				return
			}
		}
		if rt.auth {
			if f := s.throttle(w, r); f != nil {
				w.error(*f)
				return
			}
		}
		if f := s.takeFault(rt.name); f != nil {
			w.error(*f)
			return
		}
		rt.serve(s, w, r, m[1:])
		return
	}
	s.calls["unrouted"]++
	w.error(Fault{Status: http.StatusNotFound, Code: "NoRegisteredProviderFound", Message: fmt.Sprintf("The fake serves no %s %s.", r.Method, r.URL.Path)})
}

// record keeps the request and its api-version. Called with s.mu held.
func (s *Server) record(route string, r *http.Request) {
	q := r.URL.Query().Get("api-version")
	if q != "" {
		if s.apiVersions[route] == nil {
			s.apiVersions[route] = map[string]bool{}
		}
		s.apiVersions[route][q] = true
	}
	req := Request{Route: route, Method: r.Method, Path: r.URL.Path, APIVersion: q, IfNoneMatch: r.Header.Get("If-None-Match")}
	if r.Body != nil && (r.Method == http.MethodPut || r.Method == http.MethodPatch) {
		var body map[string]any
		if json.NewDecoder(r.Body).Decode(&body) == nil {
			req.Body = body
			// The route reads the body again.
			b, _ := json.Marshal(body)
			r.Body = readCloser{strings.NewReader(string(b))}
		}
	}
	s.requests = append(s.requests, req)
}

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }

// now is the fake's time. Called with s.mu held.
func (s *Server) now() time.Time { return s.clock().UTC().Truncate(time.Second) }

// newID hands out a new GUID-shaped id. Called with s.mu held.
func (s *Server) newID() string {
	s.nextID++
	return fmt.Sprintf("00000000-0000-4000-8000-%012x", s.nextID)
}

// json writes v, through the Tamper hook.
func (w *writer) json(status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("azurefake: encoding %T: %v", v, err))
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
	w.Write(body)
}

// error answers ARM's error shape, {"error": {"code", "message"}}, with
// Retry-After when the fault has one.
func (w *writer) error(f Fault) {
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
	}
	if f.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer authorization_uri="`+w.s.URL+"/"+w.s.tenant+`", error="invalid_token", error_description="`+f.Message+`"`)
	}
	w.Header().Set("x-ms-failure-cause", "gateway")
	w.json(f.Status, map[string]any{"error": map[string]string{"code": f.Code, "message": f.Message}})
}

// decode reads a request body into v, answering 400 when it is no such
// JSON.
func decode(w *writer, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		w.error(Fault{Status: http.StatusBadRequest, Code: "InvalidRequestContent", Message: fmt.Sprintf("The request content was invalid and could not be deserialized: %v", err)})
		return false
	}
	return true
}

// list answers a page of a list: {"value": [...], "nextLink"} where more
// follow, the next page's link carrying the request's query with
// $skiptoken, as ARM's do.
func (s *Server) list(w *writer, r *http.Request, all []*resource, view func(*resource) any) {
	sort.Slice(all, func(i, j int) bool { return strings.ToLower(all[i].name) < strings.ToLower(all[j].name) })
	from, _ := strconv.Atoi(r.URL.Query().Get("$skiptoken"))
	from = min(max(from, 0), len(all))
	to := min(from+s.pageSize, len(all))
	value := make([]any, 0, to-from)
	for _, res := range all[from:to] {
		value = append(value, view(res))
	}
	out := map[string]any{"value": value}
	if to < len(all) {
		u := *r.URL
		q := u.Query()
		q.Set("$skiptoken", strconv.Itoa(to))
		u.RawQuery = q.Encode()
		out["nextLink"] = s.URL + u.RequestURI()
	}
	w.json(http.StatusOK, out)
}

// Calls returns how many calls of a route the fake answered, faults and
// refused tokens included. The routes are named "KIND.VERB":
// virtualMachines.{put,patch,get,list,delete}, disks.{get,list,delete},
// networkInterfaces.{put,get,list,delete},
// publicIPAddresses.{put,get,list,delete}, subnets.get,
// virtualNetworks.{get,list}, networkSecurityGroups.{get,list},
// resourceGroups.get, operations.get (an Azure-AsyncOperation poll),
// operations.location (a Location poll), token, openid, discovery,
// subscriptions.list, subscriptions.get, tenants.list, metadata;
// "unrouted" counts requests no route serves, "throttled" those
// SetRateLimits's buckets refused.
func (s *Server) Calls(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[route]
}

// APIVersions returns, by route, the api-versions the requests carried,
// sorted: what each client (the Go SDK, az) asked for.
func (s *Server) APIVersions() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]string{}
	for r, vs := range s.apiVersions {
		for v := range vs {
			out[r] = append(out[r], v)
		}
		sort.Strings(out[r])
	}
	return out
}

// Requests returns every request the fake answered, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// SetClock makes the fake read the time from now instead of time.Now.
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock = now
}

// SetPageSize sets how many resources a list answers a page.
func (s *Server) SetPageSize(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pageSize = max(n, 1)
}

// Tamper changes every answer of a route the fake writes from now on
// (every route for ""), as f changes its JSON: a test's plant of a shape
// ARM never writes, to see a client's check of the answers refuse it.
// Nil stops it.
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
