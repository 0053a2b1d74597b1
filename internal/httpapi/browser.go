package httpapi

import (
	"bufio"
	"io"
	"mime"
	"net/http"
)

// What a page of another site can make a signed-in browser send without
// a CORS preflight is a "simple" request: GET, HEAD or POST, with a body
// of a form's types (or none said, as a no-cors fetch of bytes sends).
// The API takes none of those from a browser on any route: every route is
// behind Go's CrossOriginProtection (Sec-Fetch-Site, or an Origin that is
// not the host), a body must say it is JSON (contentType), and a browser's
// IAP session is taken only by the console (browserSession). Each is
// enough alone against a cross-site form; together they hold also for a
// browser that sends no fetch metadata.

// crossOrigin wraps h in CrossOriginProtection, whose refusal is the
// API's JSON error. A request without Sec-Fetch-Site and Origin (the CLI,
// curl, a service) is not a browser's and passes.
func crossOrigin(h http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, newError(http.StatusForbidden, ReasonCrossOrigin,
			"a browser sent %s %s from a page of another origin: the API takes only same-origin requests from a browser (Sec-Fetch-Site, Origin)", r.Method, r.URL.Path))
	}))
	return cop.Handler(h)
}

// contentType holds a request to the rule that a body is JSON: a request
// that says a Content-Type must say application/json (a PATCH also
// application/merge-patch+json, RFC 7396), and a request with a body
// must say one. A form's types and text/plain, which a browser sends
// cross-site without asking, are refused (415) before any handler runs.
func contentType(r *http.Request) *apiError {
	ct := r.Header.Get("Content-Type")
	want := "application/json"
	if r.Method == http.MethodPatch {
		want += " or " + MergePatchType
	}
	if ct == "" {
		if hasBody(r) {
			return newError(http.StatusUnsupportedMediaType, ReasonContentType,
				"the request has a body and no Content-Type: a body must be sent as %s", want)
		}
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	switch {
	case err != nil:
	case mt == "application/json":
		return nil
	case mt == MergePatchType && r.Method == http.MethodPatch:
		return nil
	}
	return newError(http.StatusUnsupportedMediaType, ReasonContentType, "Content-Type %q: the body must be %s", ct, want)
}

// browserSession refuses an IAP identity that a browser sent to the API's
// routes itself. IAP's assertion comes with every request through IAP:
// a browser's (from its IAP cookie) and the CLI's (from its ID token). A
// browser is meant to be at /console/, whose pages call the API in
// process without the browser's fetch metadata; a browser's request that
// reaches a route with its own Sec-Fetch-* or Origin rides a session
// where no page of the API's sends it, so it is refused (403). The CLI
// through IAP sends none of those headers and is served.
func browserSession(r *http.Request, c caller) *apiError {
	if !c.iap {
		return nil
	}
	for _, h := range []string{"Sec-Fetch-Site", "Sec-Fetch-Mode", "Sec-Fetch-Dest", "Origin"} {
		if r.Header.Get(h) != "" {
			return newError(http.StatusForbidden, ReasonBrowserOutsideConsole,
				"a browser's IAP session is taken only by the console (%s): call the API with the CLI, or open the console", "/console/")
		}
	}
	return nil
}

// hasBody reports whether r carries a body of at least one byte. A body of
// unknown length (chunked, as some clients send even an empty one) is
// peeked at, and r.Body put back whole.
func hasBody(r *http.Request) bool {
	switch {
	case r.ContentLength > 0:
		return true
	case r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody:
		return false
	}
	br := bufio.NewReader(r.Body)
	_, err := br.Peek(1)
	r.Body = struct {
		io.Reader
		io.Closer
	}{br, r.Body}
	return err == nil
}
