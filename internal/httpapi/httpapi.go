// Package httpapi is the ProxyAPI: the HTTP interface of DESIGN §3 over the
// store of proxy documents. It creates and deletes documents and reads
// them; it never calls a provider, since a document's events drive the
// reconciler.
//
// Errors are JSON in the Google API shape, {"error":{"code","status",
// "message","details":[{"field","description"}]}}, and bad input changes
// nothing: every rule is checked before the store is touched.
package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/logging"
	"github.com/egress-proxies/egress/internal/proxy"
)

// Store is the part of the document store the API uses. *store.Store
// satisfies it.
type Store interface {
	Create(ctx context.Context, p *proxy.Proxy, quota int) (*proxy.Proxy, error)
	Get(ctx context.Context, key proxy.Key) (*proxy.Proxy, error)
	List(ctx context.Context, namespace string, pageSize int, pageToken string) ([]*proxy.Proxy, string, error)
	RequestDeletion(ctx context.Context, key proxy.Key, now time.Time) (*proxy.Proxy, error)
}

// Limits of requests.
const (
	MaxBodyBytes    = 1 << 20
	DefaultPageSize = 50
	MaxPageSize     = 500
	// DefaultQuota is the default number of proxies a namespace may hold.
	DefaultQuota = 20
)

// Options configure the API.
type Options struct {
	// Quota is how many proxies one namespace may hold.
	Quota int
	// DefaultProvider is the provider of a spec that names none.
	DefaultProvider string
	// KnownProvider says whether a provider type is configured.
	KnownProvider func(string) bool
	// Project is used to link log lines to the request's trace.
	Project string
}

// API serves the proxy resources.
type API struct {
	store Store
	clock clock.Clock
	log   *slog.Logger
	opts  Options
	mux   *http.ServeMux
}

// New returns the API handler.
func New(store Store, clk clock.Clock, log *slog.Logger, opts Options) *API {
	if opts.Quota <= 0 {
		opts.Quota = DefaultQuota
	}
	a := &API{store: store, clock: clk, log: log, opts: opts, mux: http.NewServeMux()}
	const collection, resource = "/v1/namespaces/{namespace}/proxies", "/v1/namespaces/{namespace}/proxies/{name}"
	a.mux.HandleFunc("POST "+collection, a.create)
	a.mux.HandleFunc("GET "+collection, a.list)
	a.mux.HandleFunc("GET "+resource, a.get)
	a.mux.HandleFunc("DELETE "+resource, a.delete)
	a.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	// The method-less patterns take what the ones above do not: other
	// methods on known paths (405, naming the allowed ones) and unknown
	// paths (404), both as JSON errors.
	a.mux.HandleFunc(collection, methodNotAllowed("GET, POST"))
	a.mux.HandleFunc(resource, methodNotAllowed("GET, DELETE"))
	a.mux.HandleFunc("/healthz", methodNotAllowed("GET"))
	a.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, apiError{code: http.StatusNotFound, message: fmt.Sprintf("no such resource: %s", r.URL.Path)})
	})
	return a
}

// ServeHTTP serves a request and logs it as one structured line.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := a.clock.Now()
	ctx := logging.WithTrace(r.Context(), logging.TraceFromHeader(a.opts.Project, r.Header.Get("X-Cloud-Trace-Context")))
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	a.mux.ServeHTTP(rec, r.WithContext(ctx))
	level := slog.LevelInfo
	switch {
	case rec.status >= 500:
		level = slog.LevelError
	case rec.status >= 400:
		level = slog.LevelWarn
	}
	// Only the method, the path and the outcome: never a body (it may hold
	// a cloud-init) nor a header (it holds the identity token).
	a.log.Log(ctx, level, r.Method+" "+r.URL.Path+" "+strconv.Itoa(rec.status),
		slog.Group("httpRequest",
			slog.String("requestMethod", r.Method),
			slog.String("requestUrl", r.URL.Path),
			slog.Int("status", rec.status),
			slog.Int64("responseSize", rec.size),
			slog.String("latency", fmt.Sprintf("%.6fs", a.clock.Now().Sub(start).Seconds())),
			slog.String("remoteIp", r.RemoteAddr),
			slog.String("userAgent", r.UserAgent()),
		))
}

// createRequest is the body of a create.
type createRequest struct {
	Name string     `json:"name"`
	Spec proxy.Spec `json:"spec"`
}

func (a *API) create(w http.ResponseWriter, r *http.Request) {
	ns := r.PathValue("namespace")
	var req createRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	spec := req.Spec.WithDefaults(a.opts.DefaultProvider)
	var errs proxy.FieldErrors
	if fe := proxy.ValidateName("namespace", ns); fe != nil {
		errs = append(errs, *fe)
	}
	if fe := proxy.ValidateName("name", req.Name); fe != nil {
		errs = append(errs, *fe)
	}
	errs = append(errs, spec.Validate(a.opts.KnownProvider)...)
	if len(errs) > 0 {
		writeError(w, invalid(errs...))
		return
	}
	now := a.now()
	p := &proxy.Proxy{
		Name: req.Name, Namespace: ns, UID: uuid.NewString(), Generation: 1,
		Spec:        spec,
		Status:      proxy.Status{Phase: proxy.PhasePending},
		RequestedBy: requestedBy(r),
		CreateTime:  now,
		// A progress time from the start: if the create's own event is
		// lost, the sweep re-drives the document.
		Reconciler: proxy.Bookkeeping{ProgressTime: now},
	}
	created, err := a.store.Create(r.Context(), p, a.opts.Quota)
	switch {
	case errors.Is(err, proxy.ErrAlreadyExists) && created != nil:
		a.repeatedCreate(w, p, created)
		return
	case errors.Is(err, proxy.ErrQuotaExceeded):
		writeError(w, apiError{code: http.StatusTooManyRequests, message: fmt.Sprintf("namespace %q holds its quota of %d proxies; delete one first", ns, a.opts.Quota),
			details: proxy.FieldErrors{{Field: "namespace", Description: fmt.Sprintf("at its quota of %d proxies", a.opts.Quota)}}})
		return
	case err != nil:
		a.internal(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/"+created.Key().Path())
	writeJSON(w, http.StatusCreated, shown(created))
}

// repeatedCreate answers a create of a name that exists: the same request
// again gets the existing resource, another one a conflict.
func (a *API) repeatedCreate(w http.ResponseWriter, want, existing *proxy.Proxy) {
	switch {
	case existing.DeleteRequestTime != nil:
		writeError(w, apiError{code: http.StatusConflict, message: fmt.Sprintf("proxy %s is being deleted; create it again once it is gone", existing.Key()),
			details: proxy.FieldErrors{{Field: "name", Description: "names a proxy being deleted"}}})
	case reflect.DeepEqual(normalize(existing.Spec), normalize(want.Spec)):
		w.Header().Set("Location", "/v1/"+existing.Key().Path())
		writeJSON(w, http.StatusOK, shown(existing))
	default:
		writeError(w, apiError{code: http.StatusConflict, message: fmt.Sprintf("proxy %s exists with another spec", existing.Key()),
			details: proxy.FieldErrors{{Field: "spec", Description: "differs from the spec of the existing proxy of this name"}}})
	}
}

// normalize makes specs comparable: an empty list and a missing one are the
// same request.
func normalize(s proxy.Spec) proxy.Spec {
	if len(s.AllowedSourceRanges) == 0 {
		s.AllowedSourceRanges = nil
	}
	return s
}

func (a *API) get(w http.ResponseWriter, r *http.Request) {
	key, ok := pathKey(w, r)
	if !ok {
		return
	}
	p, err := a.store.Get(r.Context(), key)
	if errors.Is(err, proxy.ErrNotFound) {
		writeError(w, notFound(key))
		return
	}
	if err != nil {
		a.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, shown(p))
}

// listResponse is the body of a list.
type listResponse struct {
	Proxies       []*proxy.Proxy `json:"proxies"`
	NextPageToken string         `json:"nextPageToken,omitempty"`
}

func (a *API) list(w http.ResponseWriter, r *http.Request) {
	ns := r.PathValue("namespace")
	var errs proxy.FieldErrors
	if fe := proxy.ValidateName("namespace", ns); fe != nil {
		errs = append(errs, *fe)
	}
	size := DefaultPageSize
	if v := r.URL.Query().Get("pageSize"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageSize {
			errs = append(errs, proxy.FieldError{Field: "pageSize", Description: fmt.Sprintf("%q is not a whole number in 1-%d", v, MaxPageSize)})
		}
		size = n
	}
	if len(errs) > 0 {
		writeError(w, invalid(errs...))
		return
	}
	page, next, err := a.store.List(r.Context(), ns, size, r.URL.Query().Get("pageToken"))
	if errors.Is(err, proxy.ErrInvalidPageToken) {
		writeError(w, invalid(proxy.FieldError{Field: "pageToken", Description: "was not returned by a list of this namespace"}))
		return
	}
	if err != nil {
		a.internal(w, r, err)
		return
	}
	if page == nil {
		page = []*proxy.Proxy{}
	}
	for _, p := range page {
		shown(p)
	}
	writeJSON(w, http.StatusOK, listResponse{Proxies: page, NextPageToken: next})
}

func (a *API) delete(w http.ResponseWriter, r *http.Request) {
	key, ok := pathKey(w, r)
	if !ok {
		return
	}
	p, err := a.store.RequestDeletion(r.Context(), key, a.now())
	if errors.Is(err, proxy.ErrNotFound) {
		writeError(w, notFound(key))
		return
	}
	if err != nil {
		a.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, shown(p))
}

// shown fills in what the resource shows of the document's private part:
// the proxy URL with its credentials, once the proxy has an endpoint.
func shown(p *proxy.Proxy) *proxy.Proxy {
	p.Status.ProxyURL = p.Reconciler.Credentials.URL(p.Status.Endpoint)
	return p
}

// now is the time of a write, to the microsecond: Firestore keeps no more,
// and the answer to a write must say what a later read will.
func (a *API) now() time.Time { return a.clock.Now().UTC().Truncate(time.Microsecond) }

func (a *API) internal(w http.ResponseWriter, r *http.Request, err error) {
	a.log.ErrorContext(r.Context(), "request failed", slog.String("path", r.URL.Path), slog.Any("error", err))
	code := http.StatusInternalServerError
	if errors.Is(err, proxy.ErrConflict) {
		// A transaction that kept losing: the client may simply retry.
		code = http.StatusServiceUnavailable
	}
	writeError(w, apiError{code: code, message: "the proxy store could not serve the request; retry later"})
}

func pathKey(w http.ResponseWriter, r *http.Request) (proxy.Key, bool) {
	key := proxy.Key{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	var errs proxy.FieldErrors
	if fe := proxy.ValidateName("namespace", key.Namespace); fe != nil {
		errs = append(errs, *fe)
	}
	if fe := proxy.ValidateName("name", key.Name); fe != nil {
		errs = append(errs, *fe)
	}
	if len(errs) > 0 {
		writeError(w, invalid(errs...))
		return key, false
	}
	return key, true
}

// decodeBody reads a JSON body of at most MaxBodyBytes with no unknown
// fields and nothing after it.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return apiError{code: http.StatusUnsupportedMediaType, message: fmt.Sprintf("Content-Type %q: the body must be application/json", ct)}
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("data after the JSON object")
		}
	}
	if err == nil {
		return nil
	}
	var (
		tooBig  *http.MaxBytesError
		typeErr *json.UnmarshalTypeError
		syntax  *json.SyntaxError
	)
	switch {
	case errors.As(err, &tooBig):
		return apiError{code: http.StatusRequestEntityTooLarge, message: fmt.Sprintf("the body is over %d bytes", MaxBodyBytes),
			details: proxy.FieldErrors{{Field: "body", Description: fmt.Sprintf("larger than %d bytes", MaxBodyBytes)}}}
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "body"
		}
		return invalid(proxy.FieldError{Field: field, Description: fmt.Sprintf("must be a JSON %s, not %s", jsonType(typeErr.Type), typeErr.Value)})
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return invalid(proxy.FieldError{Field: "body", Description: "is not valid JSON: " + err.Error()})
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return invalid(proxy.FieldError{Field: name, Description: "is not a field of this resource"})
	default:
		return invalid(proxy.FieldError{Field: "body", Description: err.Error()})
	}
}

func jsonType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return "integer in range"
	case reflect.Slice:
		return "array"
	case reflect.Struct, reflect.Map:
		return "object"
	}
	return t.String()
}

// requestedBy reads the caller's email from the ID token Cloud Run has
// already verified (authentication is IAM's job: the function is not
// public). The token is only decoded, never trusted for anything else.
func requestedBy(r *http.Request) string {
	auth := r.Header.Get("X-Serverless-Authorization")
	if auth == "" {
		auth = r.Header.Get("Authorization")
	}
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok {
		return ""
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return ""
	}
	var claims struct {
		Email string `json:"email"`
	}
	if json.Unmarshal(payload, &claims) != nil {
		return ""
	}
	return claims.Email
}

// apiError is an error in the Google API shape.
type apiError struct {
	code    int
	message string
	details proxy.FieldErrors
}

func (e apiError) Error() string { return e.message }

func invalid(errs ...proxy.FieldError) apiError {
	return apiError{code: http.StatusBadRequest, message: proxy.FieldErrors(errs).Error(), details: errs}
}

func notFound(key proxy.Key) apiError {
	return apiError{code: http.StatusNotFound, message: fmt.Sprintf("proxy %s not found", key)}
}

// statusNames are the canonical codes of the Google API error shape.
var statusNames = map[int]string{
	http.StatusBadRequest:            "INVALID_ARGUMENT",
	http.StatusNotFound:              "NOT_FOUND",
	http.StatusConflict:              "ALREADY_EXISTS",
	http.StatusMethodNotAllowed:      "METHOD_NOT_ALLOWED",
	http.StatusRequestEntityTooLarge: "INVALID_ARGUMENT",
	http.StatusUnsupportedMediaType:  "INVALID_ARGUMENT",
	http.StatusTooManyRequests:       "RESOURCE_EXHAUSTED",
	http.StatusInternalServerError:   "INTERNAL",
	http.StatusServiceUnavailable:    "UNAVAILABLE",
}

func writeError(w http.ResponseWriter, err error) {
	var e apiError
	if !errors.As(err, &e) {
		e = apiError{code: http.StatusInternalServerError, message: err.Error()}
	}
	body := struct {
		Error struct {
			Code    int               `json:"code"`
			Status  string            `json:"status"`
			Message string            `json:"message"`
			Details proxy.FieldErrors `json:"details,omitempty"`
		} `json:"error"`
	}{}
	body.Error.Code, body.Error.Status, body.Error.Message, body.Error.Details = e.code, statusNames[e.code], e.message, e.details
	writeJSON(w, e.code, body)
}

func methodNotAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, apiError{code: http.StatusMethodNotAllowed, message: fmt.Sprintf("%s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, allow)})
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// recorder keeps the status and size of a response for the request log.
type recorder struct {
	http.ResponseWriter
	status int
	size   int64
}

func (r *recorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	n, err := r.ResponseWriter.Write(b)
	r.size += int64(n)
	return n, err
}
