package ec2fake

import (
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/egress-proxies/egress/internal/vm/loopback"
)

// xmlns is EC2's namespace, which every answer of its query API carries.
const xmlns = "http://ec2.amazonaws.com/doc/2016-11-15/"

// OwnerID is the account the fake plays: every instance, reservation and
// Elastic IP is its.
const OwnerID = "123456789012"

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	*httptest.Server

	mu    sync.Mutex
	clock func() time.Time

	// What EC2 keeps.
	regions   map[string][]string // region → its availability zones
	images    []image
	instances map[string]*Instance
	order     []string // instance ids, oldest first: DescribeInstances's order
	tokens    map[string]tokenUse
	addresses map[string]*Address
	seq       int // the ids: instances, reservations, allocations, associations
	nextIP    int // public and private addresses

	// What tests set up and read.
	faults        map[string][]string // action → codes of the next calls
	lost          map[string]int      // action → answers to lose after doing it
	noCapacity    map[string]bool     // zone
	unsupported   map[string]bool     // zone + "/" + instance type
	ipv6Subnets   map[string]string   // zone → its default subnet's IPv6 block
	ipv6Given     map[string]int      // subnet → IPv6 addresses given
	prefixesGiven map[string]int      // subnet → IPv6 prefixes delegated
	groups        map[string]string   // region/security group id → its name
	// quotas are the account's quotas in each region (SetQuotas).
	quotas Quotas
	calls  []Call
	trust  *Trust
	issued map[string]time.Time // access key ids STS issued → expiry
	reads  map[string]map[string]bool
	// throttling is EC2's request throttling (SetRateLimits).
	throttling throttling

	// serving is Serve's, nil when the fake does not serve.
	serving *loopback.Serving
}

// Call is one request the fake answered (or refused).
type Call struct {
	Action, Region string
	// AccessKeyID is the key the request was signed with ("" for STS's
	// unsigned AssumeRoleWithWebIdentity).
	AccessKeyID string
	// NextToken is the page a paged call asked for ("" the first): a
	// retried page is the same page again, which a count of pages read
	// tells apart from the next.
	NextToken string
}

// New starts a fake on a loopback port. Close it when done.
func New() *Server {
	s := newServer()
	s.Server = httptest.NewServer(s)
	return s
}

// NewHandler is the fake without a listener, for a client whose
// transport calls ServeHTTP directly (the simulation, which must not
// spend a socket per call). Its URL names no host; Close is a no-op.
func NewHandler() *Server {
	s := newServer()
	s.Server = &httptest.Server{URL: "http://ec2fake.invalid"}
	return s
}

func newServer() *Server {
	s := &Server{
		clock:         time.Now,
		regions:       maps.Clone(defaultRegions),
		instances:     map[string]*Instance{},
		tokens:        map[string]tokenUse{},
		addresses:     map[string]*Address{},
		faults:        map[string][]string{},
		quotas:        DefaultQuotas,
		lost:          map[string]int{},
		noCapacity:    map[string]bool{},
		unsupported:   map[string]bool{},
		ipv6Subnets:   map[string]string{},
		ipv6Given:     map[string]int{},
		prefixesGiven: map[string]int{},
		groups:        map[string]string{},
		issued:        map[string]time.Time{},
		reads:         map[string]map[string]bool{},
		throttling:    throttling{left: -1},
	}
	s.images = debianImages(s.regions)
	return s
}

// Close stops the engines of Serve, and the listener, if there is one.
func (s *Server) Close() {
	s.StopServing()
	if s.Listener != nil {
		s.Server.Close()
	}
}

// Endpoint is the URL to give the SDK (BaseEndpoint) or the CLI
// (--endpoint-url).
func (s *Server) Endpoint() string { return s.URL }

// HTTPClient is a client that reaches the fake: through the listener, or
// straight into ServeHTTP for NewHandler's.
func (s *Server) HTTPClient() *http.Client {
	if s.Listener != nil {
		return s.Client()
	}
	return &http.Client{Transport: handlerTransport{s}}
}

type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// SetClock replaces the fake's time (time.Now by default): launch times,
// allocation times, and the expiry of STS's tokens and credentials.
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock = now
}

// Calls returns the requests answered so far, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// Actions returns how many calls of each action the fake answered.
func (s *Server) Actions() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for _, c := range s.calls {
		out[c.Action]++
	}
	return out
}

// Reads returns, by action, the query parameters the fake read, as
// paths with N for a list's index ("TagSpecification.N.Tag.N.Key"):
// what model_test.go holds to the service model.
func (s *Server) Reads() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]string{}
	for a, ps := range s.reads {
		out[a] = slices.Sorted(maps.Keys(ps))
	}
	return out
}

// apiError is an answer of EC2's with an error code.
type apiError struct {
	Status        int
	Code, Message string
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func errorf(code, format string, args ...any) *apiError {
	return &apiError{Status: statusOf(code), Code: code, Message: fmt.Sprintf(format, args...)}
}

// handler answers one action; the value it returns is the XML answer's
// body, a struct that embeds Meta.
type handler func(s *Server, r *request) (any, error)

// handlers are the actions the fake serves.
var handlers = map[string]handler{
	"RunInstances":              (*Server).runInstances,
	"DescribeInstances":         (*Server).describeInstances,
	"TerminateInstances":        (*Server).terminateInstances,
	"AllocateAddress":           (*Server).allocateAddress,
	"AssociateAddress":          (*Server).associateAddress,
	"DisassociateAddress":       (*Server).disassociateAddress,
	"DescribeAddresses":         (*Server).describeAddresses,
	"ReleaseAddress":            (*Server).releaseAddress,
	"DescribeAvailabilityZones": (*Server).describeAvailabilityZones,
	"DescribeImages":            (*Server).describeImages,
	"DescribeSubnets":           (*Server).describeSubnets,
	"DescribeSecurityGroups":    (*Server).describeSecurityGroups,
	"DescribeAccountAttributes": (*Server).describeAccountAttributes,
}

// Served are the EC2 actions the fake answers.
func Served() []string { return slices.Sorted(maps.Keys(handlers)) }

// credentialScope is the region and access key of a SigV4 signature:
// "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/ec2/aws4_request, …".
var credentialScope = regexp.MustCompile(`Credential=([^/]+)/\d{8}/([a-z0-9-]+)/([a-z0-9]+)/aws4_request`)

func (s *Server) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	body, err := io.ReadAll(hr.Body)
	if err != nil {
		writeError(w, errorf("InvalidRequest", "reading the body: %v", err))
		return
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		writeError(w, errorf("InvalidQueryParameter", "the body is not a form: %v", err))
		return
	}
	for k, v := range hr.URL.Query() {
		form[k] = append(form[k], v...)
	}
	action := form.Get("Action")
	if action == "AssumeRoleWithWebIdentity" {
		s.assumeRoleWithWebIdentity(w, form)
		return
	}
	m := credentialScope.FindStringSubmatch(hr.Header.Get("Authorization"))

	s.mu.Lock()
	defer s.mu.Unlock()
	if m == nil {
		s.calls = append(s.calls, Call{Action: action})
		writeError(w, errorf("AuthFailure", "the request carries no AWS Signature Version 4 (Authorization: AWS4-HMAC-SHA256 Credential=…)"))
		return
	}
	key, region := m[1], m[2]
	s.calls = append(s.calls, Call{Action: action, Region: region, AccessKeyID: key, NextToken: form.Get("NextToken")})
	if err := s.authorize(key, region, m[3]); err != nil {
		writeError(w, err)
		return
	}
	if v := form.Get("Version"); v != "2016-11-15" {
		writeError(w, errorf("InvalidParameterValue", "Version %q is not EC2's 2016-11-15", v))
		return
	}
	h, ok := handlers[action]
	if !ok {
		writeError(w, errorf("InvalidAction", "The action %s is not valid for this web service.", action))
		return
	}
	if err := s.throttle(region, action, form); err != nil {
		writeError(w, err)
		return
	}
	if code, ok := s.nextFault(action); ok && !(refusals[code] && s.launched(action, region, form)) {
		s.takeFault(action)
		writeError(w, errorf(code, "%s", faultMessage(code)))
		return
	}
	r := &request{form: form, region: region, action: action, reads: s.readsOf(action)}
	out, err := h(s, r)
	if err != nil {
		writeError(w, err)
		return
	}
	if s.lost[action] > 0 {
		// Done, and the answer lost on its way: what a client sees of a
		// connection reset after EC2 acted.
		s.lost[action]--
		writeError(w, errorf("InternalError", "An internal error has occurred"))
		return
	}
	writeXML(w, http.StatusOK, action+"Response", s.requestID(), out)
}

// authorize checks the signature's service, region and key: with a
// Trust set to Exclusive, only keys STS issued and that have not
// expired.
func (s *Server) authorize(key, region, service string) error {
	if service != "ec2" {
		return errorf("AuthFailure", "the request is signed for service %q, not ec2", service)
	}
	if _, ok := s.regions[region]; !ok {
		return errorf("AuthFailure", "region %s is not enabled for this account (the fake's regions: %s)", region, strings.Join(slices.Sorted(maps.Keys(s.regions)), ", "))
	}
	if s.trust != nil && s.trust.Exclusive {
		exp, ok := s.issued[key]
		switch {
		case !ok:
			return errorf("AuthFailure", "AWS was not able to validate the provided access credentials")
		case !s.clock().Before(exp):
			return errorf("RequestExpired", "the credentials of access key %s expired at %s", key, exp.Format(time.RFC3339))
		}
	}
	return nil
}

func (s *Server) requestID() string {
	s.seq++
	return fmt.Sprintf("00000000-0000-4000-8000-%012x", s.seq)
}

func (s *Server) readsOf(action string) map[string]bool {
	if s.reads[action] == nil {
		s.reads[action] = map[string]bool{}
	}
	return s.reads[action]
}

// Meta is what every answer carries beside its members.
type Meta struct {
	XMLName   xml.Name
	Xmlns     string `xml:"xmlns,attr"`
	RequestID string `xml:"requestId"`
}

func (m *Meta) set(root, id string) {
	m.XMLName, m.Xmlns, m.RequestID = xml.Name{Local: root}, xmlns, id
}

type hasMeta interface{ set(root, id string) }

func writeXML(w http.ResponseWriter, status int, root, id string, v any) {
	if m, ok := v.(hasMeta); ok {
		m.set(root, id)
	}
	b, err := xml.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(b)
}

// errorResponse is EC2's error document.
type errorResponse struct {
	XMLName   xml.Name `xml:"Response"`
	Errors    []errXML `xml:"Errors>Error"`
	RequestID string   `xml:"RequestID"`
}

type errXML struct {
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

func writeError(w http.ResponseWriter, err error) {
	e, ok := err.(*apiError)
	if !ok {
		e = errorf("InternalError", "%v", err)
	}
	b, _ := xml.Marshal(errorResponse{Errors: []errXML{{Code: e.Code, Message: e.Message}}, RequestID: "00000000-0000-4000-8000-ffffffffffff"})
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(e.Status)
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(b)
}

// request is one action's parameters. Each read names its parameter by
// its path, with N for a list index ("TagSpecification.N.ResourceType"),
// and is recorded for model_test.go.
type request struct {
	form           url.Values
	region, action string
	reads          map[string]bool
	// base and pattern are a list entry's prefix: as sent
	// ("TagSpecification.2.") and as recorded ("TagSpecification.N.").
	base, pattern string
}

// str is a scalar parameter.
func (r *request) str(path string) string {
	r.reads[r.pattern+path] = true
	return r.form.Get(r.base + path)
}

// boolean is a boolean parameter.
func (r *request) boolean(path string) bool {
	return r.str(path) == "true"
}

// integer is an integer parameter, or def when it is absent.
func (r *request) integer(path string, def int) (int, error) {
	v := r.str(path)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, errorf("InvalidParameterValue", "Invalid value '%s' for %s: not an integer", v, path)
	}
	return n, nil
}

// list is a flattened list of strings, path.1, path.2, … in order.
func (r *request) list(path string) []string {
	r.reads[r.pattern+path+".N"] = true
	var out []string
	for i := 1; ; i++ {
		v, ok := r.form[r.base+path+"."+strconv.Itoa(i)]
		if !ok {
			return out
		}
		out = append(out, v[0])
	}
}

// count is how many entries a list of structures has: the indexes at
// which prefix.i.field is set.
func (r *request) count(prefix, field string) int {
	n := 0
	for r.form.Has(r.base + prefix + "." + strconv.Itoa(n+1) + "." + field) {
		n++
	}
	return n
}

// sub is entry i (from 1) of a list of structures.
func (r *request) sub(prefix string, i int) *request {
	c := *r
	c.base, c.pattern = r.base+prefix+"."+strconv.Itoa(i)+".", r.pattern+prefix+".N."
	return &c
}

// tags are the tags of a list of Tag structures (Tag.N.Key, Tag.N.Value).
func (r *request) tags(prefix string) (map[string]string, error) {
	out := map[string]string{}
	for i := 1; i <= r.count(prefix, "Key"); i++ {
		t := r.sub(prefix, i)
		k, v := t.str("Key"), t.str("Value")
		switch {
		case strings.HasPrefix(strings.ToLower(k), "aws:"):
			return nil, errorf("InvalidParameterValue", "Tag keys starting with 'aws:' are reserved for internal use")
		case len(k) > 128 || len(v) > 256:
			return nil, errorf("InvalidParameterValue", "tag %q: keys are at most 128 characters and values at most 256", k)
		}
		out[k] = v
	}
	return out, nil
}

// tagSpecifications are TagSpecification.N's tags by resource type; a
// type the action cannot tag is refused, as EC2 refuses it.
func (r *request) tagSpecifications(allowed ...string) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	for i := 1; i <= r.count("TagSpecification", "ResourceType"); i++ {
		spec := r.sub("TagSpecification", i)
		typ := spec.str("ResourceType")
		if !slices.Contains(allowed, typ) {
			return nil, errorf("InvalidParameterValue", "'%s' is not a valid taggable resource type for this operation.", typ)
		}
		tags, err := spec.tags("Tag")
		if err != nil {
			return nil, err
		}
		if out[typ] == nil {
			out[typ] = map[string]string{}
		}
		maps.Copy(out[typ], tags)
	}
	return out, nil
}

// tagXML is EC2's Tag in an answer's tagSet.
type tagXML struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

func tagSet(tags map[string]string) []tagXML {
	var out []tagXML
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		out = append(out, tagXML{Key: k, Value: tags[k]})
	}
	return out
}

// timestamp is how EC2 writes a time: ISO 8601 in UTC, milliseconds.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
