// Package client is the API's Go client: the calls of the API
// (docs/reference/api.md) over HTTP, and the API's errors (AIP-193)
// as values a program can act on. The egress CLI and the benchmark use it;
// who the caller is rides in the http.Client it is given (an ID token's
// transport, or none for the local stack).
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client calls one deployment of the API.
type Client struct {
	base string
	http *http.Client
}

// New returns a client of the API at baseURL (the ProxyAPI function's
// URL, or the local stack's), calling it through hc; nil means
// http.DefaultClient.
func New(baseURL string, hc *http.Client) (*Client, error) {
	u, err := ParseURL(baseURL)
	if err != nil {
		return nil, err
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: strings.TrimSuffix(u.String(), "/"), http: hc}, nil
}

// ParseURL checks that baseURL can be the API's: http or https, with a
// host.
func ParseURL(baseURL string) (*url.URL, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("API URL %q: want http(s)://HOST[:PORT], the ProxyAPI function's URL", baseURL)
	}
	return u, nil
}

// Error is an error the API answered, in Google's shape (AIP-193).
type Error struct {
	// Code is the HTTP status code; Status the canonical status
	// ("INVALID_ARGUMENT").
	Code   int
	Status string
	// Message is for people.
	Message string
	// Reason and Metadata are the ErrorInfo detail: the rule or condition
	// that refused the request, for programs.
	Reason   string
	Metadata map[string]string
	// FieldViolations are the BadRequest detail: every field that broke a
	// rule.
	FieldViolations []FieldViolation
	// RetryDelay is the RetryInfo detail of a 429: how long until the
	// same request is taken; zero without one.
	RetryDelay time.Duration
}

// FieldViolation is one field that broke a rule.
type FieldViolation struct {
	Field       string `json:"field"`
	Description string `json:"description"`
	Reason      string `json:"reason,omitempty"`
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Code)
	}
	return fmt.Sprintf("%d %s: %s", e.Code, e.Status, msg)
}

// IsNotFound reports whether err is the API's 404.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == http.StatusNotFound
}

// errorBody is the JSON of an API error; details are decoded by type.
type errorBody struct {
	Error struct {
		Code    int               `json:"code"`
		Status  string            `json:"status"`
		Message string            `json:"message"`
		Details []json.RawMessage `json:"details"`
	} `json:"error"`
}

const (
	typeBadRequest = "type.googleapis.com/google.rpc.BadRequest"
	typeErrorInfo  = "type.googleapis.com/google.rpc.ErrorInfo"
	typeRetryInfo  = "type.googleapis.com/google.rpc.RetryInfo"
)

// decodeError makes an Error of a non-2xx answer. A body that is not the
// API's (a load balancer's page, Cloud Run's own 403) keeps its first
// line as the message, so the caller still learns what answered.
func decodeError(resp *http.Response, body []byte) *Error {
	e := &Error{Code: resp.StatusCode}
	var b errorBody
	if json.Unmarshal(body, &b) != nil || b.Error.Code == 0 {
		line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
		e.Message = line
		return e
	}
	e.Status, e.Message = b.Error.Status, b.Error.Message
	for _, raw := range b.Error.Details {
		var d struct {
			Type            string            `json:"@type"`
			Reason          string            `json:"reason"`
			Metadata        map[string]string `json:"metadata"`
			FieldViolations []FieldViolation  `json:"fieldViolations"`
			RetryDelay      string            `json:"retryDelay"`
		}
		if json.Unmarshal(raw, &d) != nil {
			continue
		}
		switch d.Type {
		case typeBadRequest:
			e.FieldViolations = append(e.FieldViolations, d.FieldViolations...)
		case typeErrorInfo:
			e.Reason, e.Metadata = d.Reason, d.Metadata
		case typeRetryInfo:
			// A google.protobuf.Duration in JSON: seconds, "540s".
			if delay, err := time.ParseDuration(d.RetryDelay); err == nil && delay > 0 {
				e.RetryDelay = delay
			}
		}
	}
	return e
}

// call sends one request and decodes a 2xx answer's body into out (when
// out is not nil), returning the status code; any other answer is an
// *Error.
func (c *Client) call(ctx context.Context, method, path string, query url.Values, in, out any) (int, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, err
		}
		body = bytes.NewReader(b)
	}
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return 0, err
	}
	if _, patch := in.(mergePatch); patch {
		req.Header.Set("Content-Type", "application/merge-patch+json")
	} else if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, decodeError(resp, b)
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: the answer is not the API's JSON: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

// mergePatch is a body sent as a JSON merge patch (RFC 7396).
type mergePatch map[string]any

// escape is one path segment.
func escape(s string) string { return url.PathEscape(s) }
