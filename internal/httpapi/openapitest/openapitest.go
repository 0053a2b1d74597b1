// Package openapitest holds the API's real traffic to its OpenAPI
// document, with kin-openapi: a Validator checks requests and responses
// against the document, and Transport checks every exchange that passes
// through it, for tests whose clients are the API's own (the httpapi tests,
// the end-to-end test's HTTP calls) or processes of their own (the CLI,
// through a reverse proxy on this Transport).
package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// Validator checks exchanges against one OpenAPI document.
type Validator struct {
	doc    *openapi3.T
	router routers.Router
	errSch *openapi3.Schema

	mu      sync.Mutex
	checked map[string]int
}

// New loads and validates the document.
func New(doc []byte) (*Validator, error) {
	t, err := openapi3.NewLoader().LoadFromData(doc)
	if err != nil {
		return nil, fmt.Errorf("loading the OpenAPI document: %w", err)
	}
	if err := t.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("the OpenAPI document is not valid: %w", err)
	}
	// Route by path alone: the document's servers name the local stack's
	// usual address, not a test's.
	t.Servers = nil
	r, err := gorillamux.NewRouter(t)
	if err != nil {
		return nil, fmt.Errorf("routing the OpenAPI document: %w", err)
	}
	errRef := t.Components.Schemas["Error"]
	if errRef == nil || errRef.Value == nil {
		return nil, fmt.Errorf("the OpenAPI document has no Error schema")
	}
	return &Validator{doc: t, router: r, errSch: errRef.Value, checked: map[string]int{}}, nil
}

// options are the filter's: every response status must be documented
// (an error's by the operation's default answer), and identity is the
// platform's to check, not the document's.
func options() *openapi3filter.Options {
	return &openapi3filter.Options{
		IncludeResponseStatus: true,
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
		MultiError:            true,
	}
}

// Request checks a request, its body given (req.Body is not read), against
// its operation: what a client of the API sends must be what the document
// says it may.
func (v *Validator) Request(req *http.Request, body []byte) error {
	route, params, err := v.router.FindRoute(req)
	if err != nil {
		return fmt.Errorf("%s %s: no operation of the OpenAPI document: %w", req.Method, req.URL.Path, err)
	}
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route, Options: options()}
	if err := openapi3filter.ValidateRequest(req.Context(), in); err != nil {
		return fmt.Errorf("%s %s: the request breaks the OpenAPI document: %w", req.Method, req.URL.Path, err)
	}
	return nil
}

// Response checks a response against the operation of its request: its
// status must be documented and its body must match that answer's schema.
// A request no operation matches (a path or method the API answers 404 or
// 405) must be answered with the document's Error.
func (v *Validator) Response(req *http.Request, status int, header http.Header, body []byte) error {
	route, params, err := v.router.FindRoute(req)
	if err != nil {
		if status < 400 {
			return fmt.Errorf("%s %s answered %d, but the OpenAPI document has no such operation", req.Method, req.URL.Path, status)
		}
		v.count("(no operation) " + fmt.Sprint(status))
		return v.errorBody(req, status, body)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: options()},
		Status:                 status,
		Header:                 header,
		Options:                options(),
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(req.Context(), in); err != nil {
		return fmt.Errorf("%s %s answered %d: the answer breaks the OpenAPI document: %w\n%s", req.Method, req.URL.Path, status, err, body)
	}
	v.count(fmt.Sprintf("%s %d", route.Operation.OperationID, status))
	return nil
}

func (v *Validator) errorBody(req *http.Request, status int, body []byte) error {
	var value any
	if err := json.Unmarshal(body, &value); err != nil {
		return fmt.Errorf("%s %s answered %d with a body that is not JSON: %q", req.Method, req.URL.Path, status, body)
	}
	if err := v.errSch.VisitJSON(value, openapi3.EnableJSONSchema2020()); err != nil {
		return fmt.Errorf("%s %s answered %d with a body that is not the document's Error: %w\n%s", req.Method, req.URL.Path, status, err, body)
	}
	return nil
}

func (v *Validator) count(key string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.checked[key]++
}

// Checked returns how many responses were checked, by operation ID and
// status ("createProxy 201"), so a test can say what its traffic covered.
func (v *Validator) Checked() map[string]int {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make(map[string]int, len(v.checked))
	for k, n := range v.checked {
		out[k] = n
	}
	return out
}

// Operations returns the document's operation IDs, sorted.
func (v *Validator) Operations() []string {
	var ids []string
	for _, item := range v.doc.Paths.Map() {
		for _, op := range item.Operations() {
			ids = append(ids, op.OperationID)
		}
	}
	sort.Strings(ids)
	return ids
}

// Transport checks each exchange it carries: the request (unless
// Requests is false: a test that sends bad requests on purpose) and the
// response. Paths Skip says are carried unchecked (the local stack's
// /debug/instances). A failure goes to Report; the exchange goes on.
type Transport struct {
	Base      http.RoundTripper
	Validator *Validator
	Requests  bool
	Skip      func(path string) bool
	Report    func(error)
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if t.Skip != nil && t.Skip(req.URL.Path) {
		return base.RoundTrip(req)
	}
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
	if t.Requests {
		if err := t.Validator.Request(req, body); err != nil {
			t.Report(err)
		}
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
	// The document routes by path: the request as the API saw it.
	seen := req.Clone(req.Context())
	seen.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	if err := t.Validator.Response(seen, resp.StatusCode, resp.Header, b); err != nil {
		t.Report(err)
	}
	return resp, nil
}
