package console

import (
	"bytes"
	"errors"
	"io"
	"net/http"

	"github.com/egress-proxies/egress/internal/client"
	"github.com/egress-proxies/egress/internal/iap"
)

// identityHeaders are the browser's headers that say who it is: the API
// reads them, and only them, from the console's calls.
var identityHeaders = []string{"Authorization", "X-Serverless-Authorization", iap.Header}

// inProcess hands the client's requests to the API's routes in this
// process, as the browser that asked the console: its identity headers
// and its request's context (so that an action logs one audit line, on
// the console's own request).
type inProcess struct {
	api     http.Handler
	browser *http.Request
}

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	for _, h := range identityHeaders {
		for _, v := range t.browser.Header.Values(h) {
			req.Header.Add(h, v)
		}
	}
	req.RemoteAddr = t.browser.RemoteAddr
	rec := &recorder{header: http.Header{}, code: http.StatusOK}
	t.api.ServeHTTP(rec, req)
	return &http.Response{
		StatusCode: rec.code, Status: http.StatusText(rec.code), Header: rec.header,
		Body: io.NopCloser(&rec.body), Request: req, ContentLength: int64(rec.body.Len()),
	}, nil
}

// recorder is the API's answer to one in-process call.
type recorder struct {
	header http.Header
	code   int
	wrote  bool
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.code, r.wrote = code, true
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.body.Write(b)
}

// api is the API's client as the browser of r.
func (c *Console) api(r *http.Request) *client.Client {
	cl, _ := client.New("http://console.internal", &http.Client{Transport: inProcess{api: c.opts.API, browser: r}})
	return cl
}

// apiError is err as the API said it, or nil when err is not the API's
// answer.
func apiError(err error) *client.Error {
	var e *client.Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// message is what a page says of err: the API's message, never its JSON.
func message(err error) string {
	if e := apiError(err); e != nil && e.Message != "" {
		return e.Message
	}
	return err.Error()
}
