package awsimage

import (
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"

	"github.com/egress-proxies/egress/internal/vm/imagetest"
)

// Metadata is EC2's instance metadata service on 169.254.169.254 in
// the test's network: AWS's own mock of it (amazon-ec2-metadata-mock,
// run by package imdsmock in the test's process, IMDSv2 only) answers
// every request, and this handler, in front, records each before passing
// it on, as the other stand-ins record theirs. It changes one thing on
// the way: EC2's service serves every dated version of its API the same
// as latest, and cloud-init asks a dated one (2021-03-23, or 2009-04-04),
// where the mock serves latest only; the version is rewritten to latest.
type Metadata struct {
	proxy *httputil.ReverseProxy

	imagetest.Recorder
}

// NewMetadata fronts the mock at base (http://127.0.0.1:PORT).
func NewMetadata(base string) (*Metadata, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	return &Metadata{proxy: httputil.NewSingleHostReverseProxy(u)}, nil
}

// datedVersion is a dated version of the API at the start of a path.
var datedVersion = regexp.MustCompile(`^/[0-9]{4}-[0-9]{2}-[0-9]{2}(/|$)`)

func (m *Metadata) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.Record(r)
	if datedVersion.MatchString(r.URL.Path) {
		r.URL.Path = "/latest" + r.URL.Path[len("/YYYY-MM-DD"):]
		r.URL.RawPath = ""
	}
	m.proxy.ServeHTTP(w, r)
}
