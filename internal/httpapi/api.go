package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/egress-proxies/egress/internal/account"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/logging"
	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/spend"
	"github.com/egress-proxies/egress/internal/tenancy"
	"github.com/egress-proxies/egress/internal/version"
)

// Store is the part of the document store the API uses. *store.Store and
// *storefake.Store satisfy it.
type Store interface {
	CreateInNamespace(ctx context.Context, p *proxy.Proxy, admit tenancy.Admission) (*proxy.Proxy, error)
	Get(ctx context.Context, key proxy.Key) (*proxy.Proxy, error)
	List(ctx context.Context, namespace string, pageSize int, pageToken string) ([]*proxy.Proxy, string, error)
	RequestDeletion(ctx context.Context, key proxy.Key, now time.Time) (*proxy.Proxy, error)
	RequestRotation(ctx context.Context, key proxy.Key, now time.Time, limits tenancy.Limits) (*proxy.Proxy, error)
	UpdateSpec(ctx context.Context, key proxy.Key, now time.Time, limits tenancy.Limits, update func(proxy.Spec) (proxy.Spec, error)) (*proxy.Proxy, error)
	RotateCredentials(ctx context.Context, key proxy.Key, now time.Time, limits tenancy.Limits) (*proxy.Proxy, error)

	GetNamespace(ctx context.Context, name string) (*tenancy.Namespace, error)
	ListNamespaces(ctx context.Context, member string, pageSize int, pageToken string) ([]*tenancy.Namespace, string, error)
	CreateNamespace(ctx context.Context, ns *tenancy.Namespace) (*tenancy.Namespace, error)
	UpdateNamespace(ctx context.Context, name string, update func(*tenancy.Namespace) error) (*tenancy.Namespace, error)
	DeleteNamespace(ctx context.Context, name string, check func(*tenancy.Namespace) error) error

	PutPool(ctx context.Context, name string, spec proxy.PoolSpec, now time.Time) (*proxy.Pool, bool, error)
	GetPool(ctx context.Context, name string) (*proxy.Pool, error)
	ListPools(ctx context.Context, pageSize int, pageToken string) ([]*proxy.Pool, string, error)
	RequestPoolDeletion(ctx context.Context, name string, now time.Time) (*proxy.Pool, error)

	PutAccount(ctx context.Context, a account.Account, now time.Time) (*account.Account, error)
	GetAccount(ctx context.Context, id string) (*account.Account, error)
	ListAccounts(ctx context.Context) ([]account.Account, error)
	DeleteAccount(ctx context.Context, id string) error
}

// Providers are the enabled provider types and their rules. *provider.Set
// satisfies it.
type Providers interface {
	Has(typ string) bool
	// InPlace reports whether the VMs of the type take a live change
	// without being replaced (provider.InPlace).
	InPlace(typ string) bool
	// IPv6Prefix is the length of the routed IPv6 prefix the type's VMs
	// get, 0 for none (provider.IPv6Prefix).
	IPv6Prefix(typ string) int
	Validate(typ string, req provider.ValidateRequest) ([]provider.Violation, error)
}

// Limits of requests.
const (
	DefaultPageSize = 50
	MaxPageSize     = 500
	// DefaultQuota is the default number of proxies a namespace may hold.
	DefaultQuota = 20
	// DefaultCreatesPerHour is the default bound of the VMs a namespace
	// causes in any hour.
	DefaultCreatesPerHour = 60
	// DefaultRotateMinInterval is the default least time between two VMs
	// a user asks for one proxy: the shortest maxAge too, since a VM
	// rotated more often would spend more of its life booting than
	// serving.
	DefaultRotateMinInterval = 10 * time.Minute
)

// Options configure the API.
type Options struct {
	// Function names the API in its invocation lines; default ProxyAPI.
	Function string
	// Quota is how many proxies a namespace created without a quota of its
	// own may hold.
	Quota int
	// DefaultProvider is the provider of a spec that names none.
	DefaultProvider string
	// Providers are the enabled provider types, with their rules.
	Providers Providers
	// AccountVars are, by provider type, the variables an account
	// document may set (plugin.Plugin.PerAccount): what a PUT of an
	// account is held to. Nil: none for every enabled type.
	AccountVars map[string][]string
	// Policy is what the operator allows of every spec.
	Policy proxy.Policy
	// Admins are the platform admins.
	Admins tenancy.Admins
	// CreatesPerHour bounds the VMs a namespace causes in any hour
	// (tenancy.Limits): the API counts its creates, rotations and live
	// changes that need a new VM, the reconciler its rotations by maxAge.
	CreatesPerHour int
	// RotateMinInterval is the least time between two VMs a user asks for
	// one proxy (rotations, live changes that need a new VM), and the
	// shortest maxAge a spec may have.
	RotateMinInterval time.Duration
	// LocalIdentity, set only by the local stack, is the email of a request
	// that carries no identity; empty, such a request is refused (401).
	LocalIdentity string
	// IAP, when set, verifies Identity-Aware Proxy's signed header as a
	// second source of identity beside the ID token (IAP_AUDIENCE); nil,
	// a request with that header is refused.
	IAP IAPVerifier
	// Project is used to link log lines to the request's trace.
	Project string
	// Costs are the price catalog and the rates a namespace's month is
	// costed from (GET of a namespace) and its budget held with (a
	// create). With no Catalog no month is shown and no budget is held.
	Costs spend.Costs
}

// API serves the namespaces and their proxies.
type API struct {
	store Store
	clock clock.Clock
	log   *slog.Logger
	opts  Options
	mux   *http.ServeMux
	// handler is mux behind CrossOriginProtection: every route, the
	// console's too.
	handler http.Handler
}

// New returns the API handler.
func New(store Store, clk clock.Clock, log *slog.Logger, opts Options) *API {
	if opts.Function == "" {
		opts.Function = "ProxyAPI"
	}
	if opts.Quota <= 0 {
		opts.Quota = DefaultQuota
	}
	if opts.CreatesPerHour <= 0 {
		opts.CreatesPerHour = DefaultCreatesPerHour
	}
	if opts.RotateMinInterval <= 0 {
		opts.RotateMinInterval = DefaultRotateMinInterval
	}
	if opts.Policy.MinPrefixIPv4 <= 0 {
		opts.Policy.MinPrefixIPv4 = proxy.DefaultMinPrefixIPv4
	}
	if opts.Policy.MinPrefixIPv6 <= 0 {
		opts.Policy.MinPrefixIPv6 = proxy.DefaultMinPrefixIPv6
	}
	a := &API{store: store, clock: clk, log: log, opts: opts, mux: http.NewServeMux()}
	a.route()
	a.handler = crossOrigin(a.mux)
	return a
}

// Handle serves h at pattern beside the API's routes, under the API's
// request line: the web console (package console) is mounted so.
func (a *API) Handle(pattern string, h http.Handler) { a.mux.Handle(pattern, h) }

// Routes is the API's routes without its request line, for a caller in
// the same process (the console): the outer request logs the one line,
// and an action's audit line goes on it too.
func (a *API) Routes() http.Handler { return a.mux }

// limits are what a request that may cause a VM is held to.
func (a *API) limits() tenancy.Limits {
	return tenancy.Limits{CreatesPerHour: a.opts.CreatesPerHour, RotateMinInterval: a.opts.RotateMinInterval, InPlace: a.opts.Providers.InPlace}
}

// note is what a request's handlers tell ServeHTTP for the audit line.
type note struct {
	action, resource, who string
}

type noteKey struct{}

// ServeHTTP serves a request and logs it as one line: the invocation line
// of package metering (message "invocation", function, outcome,
// latencyMs, usage — what deploy/terraform/metrics.tf reads) carrying the
// request in Cloud Logging's httpRequest shape. A request that changes
// something (or tried to) logs one more, the audit line.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := a.clock.Now()
	ctx, inv := metering.Start(r.Context(), a.opts.Function)
	ctx = logging.WithTrace(ctx, logging.TraceFromHeader(a.opts.Project, r.Header.Get("X-Cloud-Trace-Context")))
	n := &note{}
	// The release serving, on every answer (the console's pages too): a
	// caller can tell which release it talks to without a call of its own.
	w.Header().Set(version.Header, version.Version)
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	a.handler.ServeHTTP(rec, r.WithContext(context.WithValue(ctx, noteKey{}, n)))
	if n.action != "" {
		a.audit(ctx, n, rec.status)
	}
	outcome := metering.OK
	if rec.status >= 500 {
		outcome = metering.Failed
	}
	// Only the method, the path and the outcome: never a body (it may hold
	// a cloud-init) nor a header (it holds the identity token).
	inv.End(ctx, a.log, outcome, slog.Group("httpRequest",
		slog.String("requestMethod", r.Method),
		slog.String("requestUrl", r.URL.Path),
		slog.Int("status", rec.status),
		slog.Int64("responseSize", rec.size),
		slog.String("latency", fmt.Sprintf("%.6fs", a.clock.Now().Sub(start).Seconds())),
		slog.String("remoteIp", r.RemoteAddr),
		slog.String("userAgent", r.UserAgent()),
	))
}

// AuditMessage is the message of the audit lines.
const AuditMessage = "audit"

// audit logs one change asked for, allowed or refused: who (the verified
// email, "" for no identity), the action (the permission it needs), the
// resource's name and the outcome (the HTTP status). Never a body.
func (a *API) audit(ctx context.Context, n *note, status int) {
	a.log.LogAttrs(ctx, slog.LevelInfo, AuditMessage,
		slog.String("who", n.who),
		slog.String("action", n.action),
		slog.String("resource", n.resource),
		slog.Int("outcome", status),
	)
}

// exchange is one request as a handler serves it.
type exchange struct {
	w      http.ResponseWriter
	r      *http.Request
	ctx    context.Context
	caller caller
	note   *note
}

func (x *exchange) fail(e *apiError)       { writeError(x.w, e) }
func (x *exchange) reply(code int, v any)  { writeJSON(x.w, code, v) }
func (x *exchange) setResource(res string) { x.note.resource = res }

// now is the time of a write, to the microsecond: Firestore keeps no more,
// and the answer to a write must say what a later read will.
func (a *API) now() time.Time { return a.clock.Now().UTC().Truncate(time.Microsecond) }

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, "ok\n")
}

// recorder keeps the status and size of a response for the request line.
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

// Unwrap lets http.ResponseController reach the writer beneath.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
