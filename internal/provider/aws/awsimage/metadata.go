package imagetest

import (
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"sync"
	"time"
)

// EC2Metadata is EC2's instance metadata service on 169.254.169.254 in
// the test's network: AWS's own mock of it (amazon-ec2-metadata-mock,
// run by package imdsmock in the test's process, IMDSv2 only) answers
// every request, and this handler, in front, records each before passing
// it on, as the other stand-ins record theirs. It changes one thing on
// the way: EC2's service serves every dated version of its API the same
// as latest, and cloud-init asks a dated one (2021-03-23, or 2009-04-04),
// where the mock serves latest only; the version is rewritten to latest.
type EC2Metadata struct {
	proxy *httputil.ReverseProxy

	mu       sync.Mutex
	requests []Request
}

// NewEC2Metadata fronts the mock at base (http://127.0.0.1:PORT).
func NewEC2Metadata(base string) (*EC2Metadata, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	return &EC2Metadata{proxy: httputil.NewSingleHostReverseProxy(u)}, nil
}

// datedVersion is a dated version of the API at the start of a path.
var datedVersion = regexp.MustCompile(`^/[0-9]{4}-[0-9]{2}-[0-9]{2}(/|$)`)

func (m *EC2Metadata) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	m.requests = append(m.requests, Request{Time: time.Now(), RemoteAddr: r.RemoteAddr, Method: r.Method,
		URI: r.RequestURI, Forwarded: r.Header.Get("X-Forwarded-For")})
	m.mu.Unlock()
	if datedVersion.MatchString(r.URL.Path) {
		r.URL.Path = "/latest" + r.URL.Path[len("/YYYY-MM-DD"):]
		r.URL.RawPath = ""
	}
	m.proxy.ServeHTTP(w, r)
}

// Requests returns every request so far.
func (m *EC2Metadata) Requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.requests...)
}
