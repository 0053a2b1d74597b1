package digitalocean

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// description is DigitalOcean's published API description (the part in
// testdata), loaded once for every test of the package.
var description = sync.OnceValues(func() (routers.Router, error) {
	data, err := os.ReadFile(openapiFile)
	if err != nil {
		return nil, err
	}
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", openapiFile, err)
	}
	if err := doc.Validate(context.Background(), openapi3.DisableExamplesValidation()); err != nil {
		return nil, fmt.Errorf("%s is not a valid description: %w", openapiFile, err)
	}
	// Route by path alone: the description's server is DigitalOcean's,
	// not the fake's.
	doc.Servers = nil
	return gorillamux.NewRouter(doc)
})

// openapiCheck holds every exchange that passes through its transport to
// the description: the request the provider sends, and the answer the
// fake writes. What breaks it goes to report.
type openapiCheck struct {
	router routers.Router
	report func(error)

	mu      sync.Mutex
	checked map[string]int // "request OPERATION", "OPERATION STATUS"
}

// newOpenAPICheck is a check whose every refusal fails t.
func newOpenAPICheck(t testing.TB) *openapiCheck {
	t.Helper()
	r, err := description()
	if err != nil {
		t.Fatal(err)
	}
	return &openapiCheck{router: r, checked: map[string]int{}, report: func(err error) { t.Helper(); t.Error(err) }}
}

func filterOptions() *openapi3filter.Options {
	return &openapi3filter.Options{IncludeResponseStatus: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}
}

// request checks a request, its body given.
func (c *openapiCheck) request(req *http.Request, body []byte) error {
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		return fmt.Errorf("%s %s: no operation of DigitalOcean's API description: %w", req.Method, req.URL.Path, err)
	}
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route, Options: filterOptions()}
	if err := openapi3filter.ValidateRequest(req.Context(), in); err != nil {
		return fmt.Errorf("%s %s: the request breaks DigitalOcean's API description: %w\n%s", req.Method, req.URL.Path, err, body)
	}
	c.count("request " + route.Operation.OperationID)
	return nil
}

// response checks an answer against the operation of its request: its
// status documented (an error's by the operation's default) and its body
// and headers what that answer's schema says.
func (c *openapiCheck) response(req *http.Request, status int, header http.Header, body []byte) error {
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		return fmt.Errorf("%s %s answered %d: no operation of DigitalOcean's API description: %w", req.Method, req.URL.Path, status, err)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: filterOptions()},
		Status:                 status, Header: header, Options: filterOptions(),
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(req.Context(), in); err != nil {
		return fmt.Errorf("%s %s answered %d: the answer breaks DigitalOcean's API description: %w\n%s", req.Method, req.URL.Path, status, err, body)
	}
	c.count(fmt.Sprintf("%s %d", route.Operation.OperationID, status))
	return nil
}

func (c *openapiCheck) count(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checked[key]++
}

// Checked returns how many requests and answers were checked, by
// operation (and status).
func (c *openapiCheck) Checked() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.checked {
		out[k] = v
	}
	return out
}

// Operations are the operations the check saw an answer of.
func (c *openapiCheck) Operations() []string {
	var out []string
	for k := range c.Checked() {
		if op, _, ok := strings.Cut(k, " "); ok && op != "request" && !slices.Contains(out, op) {
			out = append(out, op)
		}
	}
	slices.Sort(out)
	return out
}

// transport checks each exchange it carries, and carries it on to base
// (http.DefaultTransport when nil) whatever the check says.
func (c *openapiCheck) transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		var body []byte
		if req.Body != nil {
			b, err := io.ReadAll(req.Body)
			req.Body.Close()
			if err != nil {
				return nil, err
			}
			body = b
			req.Body = io.NopCloser(bytes.NewReader(b))
		}
		if err := c.request(req, body); err != nil {
			c.report(err)
		}
		resp, err := base.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		// The description routes by path: the request as the API saw it.
		seen := req.Clone(req.Context())
		seen.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
		if err := c.response(seen, resp.StatusCode, resp.Header, b); err != nil {
			c.report(err)
		}
		return resp, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
