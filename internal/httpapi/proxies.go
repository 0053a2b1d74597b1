package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/spend"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// createRequest is the body of a proxy's create.
type createRequest struct {
	Name string     `json:"name"`
	Spec proxy.Spec `json:"spec"`
}

func (a *API) createProxy(x *exchange) {
	ns := x.r.PathValue("namespace")
	if fe := proxy.ValidateName("namespace", ns); fe != nil {
		x.fail(invalid(*fe))
		return
	}
	var req createRequest
	if e := decodeBody(x.w, x.r, &req); e != nil {
		a.refuse(x, ns, tenancy.CreateProxy, e)
		return
	}
	key := proxy.Key{Namespace: ns, Name: req.Name}
	if proxy.IsLabel(req.Name) {
		x.setResource(key.Path())
	}
	spec := req.Spec.WithDefaults(a.opts.DefaultProvider, a.opts.Policy.DefaultPort())
	if spec.IPv6Egress == "" {
		// The default follows what the cloud gives: one address where its
		// VMs get a prefix (today's behaviour there), none where not.
		spec.IPv6Egress = proxy.DefaultIPv6Egress(a.opts.Providers.IPv6Prefix(spec.Provider))
	}
	var errs proxy.FieldErrors
	if fe := proxy.ValidateName("name", req.Name); fe != nil {
		errs = append(errs, *fe)
	}
	errs = append(errs, a.validateSpec(ns, spec)...)
	if len(errs) > 0 {
		a.refuse(x, ns, tenancy.CreateProxy, invalid(errs...))
		return
	}
	now := a.now()
	p := &proxy.Proxy{
		Name: req.Name, Namespace: ns, UID: uuid.NewString(), Generation: 1,
		Spec:        spec,
		Status:      proxy.Status{Phase: proxy.PhasePending},
		RequestedBy: x.caller.email,
		CreateTime:  now,
		// A progress time from the start: if the create's own event is
		// lost, the sweep re-drives the document.
		Reconciler: proxy.Bookkeeping{ProgressTime: now},
	}
	var (
		quota  int
		member view
		// read is the namespace's proxies' month, read when the
		// namespace turns out to have a budget (spend.Unread), and again
		// while a create of the namespace committed since; exists,
		// whether the proxy was among them (a repeated create).
		read   *spend.Read
		exists bool
	)
	admit := func(n *tenancy.Namespace) (tenancy.Limits, error) {
		if e := decide(x.caller, ns, n, tenancy.CreateProxy); e != nil {
			return tenancy.Limits{}, e
		}
		quota, member = n.QuotaOr(a.opts.Quota), viewOf(x.caller, n)
		if a.budgetHolds(n) && !exists {
			if err := a.overBudget(x.ctx, n, read, a.newProxyCost(x.ctx, p), "proxy "+p.Name); err != nil {
				return tenancy.Limits{}, err
			}
		}
		return tenancy.Limits{Quota: quota, CreatesPerHour: a.opts.CreatesPerHour}, nil
	}
	created, err := a.store.CreateInNamespace(x.ctx, p, admit)
	var unread *spend.Unread
	for reads := 0; errors.As(err, &unread); reads++ {
		if reads == budgetReads {
			// Creates of the namespace kept committing between a read
			// and the transaction: the client may simply retry.
			err = fmt.Errorf("namespace %s's month, outdated %d times by its creates: %w", ns, budgetReads, proxy.ErrConflict)
			break
		}
		m, found, merr := a.proxiesMonthBut(x.ctx, ns, p.Name)
		if merr != nil {
			x.fail(a.storeError(x.ctx, merr))
			return
		}
		read, exists = &spend.Read{Month: m, Creates: unread.Creates}, found
		created, err = a.store.CreateInNamespace(x.ctx, p, admit)
	}
	switch {
	case errors.Is(err, proxy.ErrAlreadyExists) && created != nil:
		a.repeatedCreate(x, p, created, member)
	case errors.Is(err, proxy.ErrCreatesPerHour):
		x.fail(a.tooManyCreates(ns, now, err))
	case errors.Is(err, proxy.ErrQuotaExceeded):
		e := newError(http.StatusTooManyRequests, ReasonQuotaExceeded, "namespace %q holds its quota of %d proxies; delete one first, or ask a platform admin for a larger quota", ns, quota)
		e.metadata = map[string]string{"namespace": ns, "quota": strconv.Itoa(quota)}
		x.fail(e)
	case errors.Is(err, tenancy.ErrNamespaceNotFound):
		x.fail(namespaceNotFound(ns))
	case err != nil:
		x.fail(a.storeError(x.ctx, err))
	default:
		x.w.Header().Set("Location", "/v1/"+created.Key().Path())
		x.reply(http.StatusCreated, shown(created, member))
	}
}

// validateSpec holds a spec to the neutral rules and the operator's policy
// (proxy.Spec.Validate), then to its provider's own rules, named as
// fields of the spec.
func (a *API) validateSpec(namespace string, spec proxy.Spec) proxy.FieldErrors {
	errs := spec.Validate(namespace, a.opts.Policy, a.opts.Providers.Has)
	// maxAge is floored at ROTATE_MIN_INTERVAL, which the API alone knows:
	// a rotation by age is one the spec asks for, held to the interval the
	// user's own are.
	if d, err := time.ParseDuration(spec.MaxAge); spec.MaxAge != "" && err == nil && d > 0 && d < a.opts.RotateMinInterval {
		errs = append(errs, proxy.FieldError{Field: "spec.maxAge", Reason: proxy.ReasonMaxAgeTooShort,
			Description: fmt.Sprintf("%s is shorter than ROTATE_MIN_INTERVAL (%s), the least time between two VMs of a proxy", d, a.opts.RotateMinInterval)})
	}
	// A mode that picks addresses of a prefix is refused here, by what
	// the cloud's plugin declares, rather than failing at the VM's boot.
	if bits := a.opts.Providers.IPv6Prefix(spec.Provider); spec.IPv6Egress.NeedsPrefix() && bits == 0 && a.opts.Providers.Has(spec.Provider) {
		errs = append(errs, proxy.FieldError{Field: "spec.ipv6Egress", Reason: provider.ReasonProviderNoIPv6Prefix,
			Description: fmt.Sprintf("%s picks source addresses of the VM's routed IPv6 prefix, and provider %q gives its VMs none: use %s or %s, or a provider whose VMs get a prefix (docs/concepts/providers.md)", spec.IPv6Egress, spec.Provider, proxy.IPv6Single, proxy.IPv6Off)})
	}
	return append(errs, a.providerRules("spec.", spec.Provider, spec.Placement, spec.CloudInit, false, spec.IPv6Egress.NeedsPrefix())...)
}

// validatePlacement holds a warm pool's provider and placement to the
// rules a proxy's are held to: the provider enabled, a region, and the
// provider's own rules, which may refuse a pool outright (one that cannot
// reconfigure a VM cannot hand a warm one to a proxy); fields are named
// under prefix.
func (a *API) validatePlacement(prefix, typ string, pl proxy.Placement, cloudInit string) proxy.FieldErrors {
	var errs proxy.FieldErrors
	if !a.opts.Providers.Has(typ) {
		errs = append(errs, proxy.FieldError{Field: prefix + "provider", Reason: proxy.ReasonProviderNotEnabled, Description: fmt.Sprintf("provider type %q is not enabled here", typ)})
	}
	if pl.Region == "" {
		errs = append(errs, proxy.FieldError{Field: prefix + "placement.region", Reason: proxy.ReasonRegionRequired, Description: "is required, e.g. us-central1"})
	}
	return append(errs, a.providerRules(prefix, typ, pl, cloudInit, true, false)...)
}

// providerRules are the rules of an enabled provider type (none for one
// not enabled: the neutral rules say so), fields named under prefix; pool
// says the placement is a warm pool's, ipv6Prefix that the spec's IPv6
// egress needs a prefix.
func (a *API) providerRules(prefix, typ string, pl proxy.Placement, cloudInit string, pool, ipv6Prefix bool) proxy.FieldErrors {
	if !a.opts.Providers.Has(typ) {
		return nil
	}
	violations, err := a.opts.Providers.Validate(typ, provider.ValidateRequest{
		Placement:  provider.Placement{Region: pl.Region, Zone: pl.Zone, MachineType: pl.MachineType, Image: pl.Image},
		CloudInit:  cloudInit,
		Pool:       pool,
		IPv6Prefix: ipv6Prefix,
	})
	if err != nil {
		return proxy.FieldErrors{{Field: prefix + "provider", Reason: proxy.ReasonProviderNotEnabled, Description: err.Error()}}
	}
	var errs proxy.FieldErrors
	for _, v := range violations {
		errs = append(errs, proxy.FieldError{Field: prefix + v.Field, Reason: v.Reason, Description: v.Description})
	}
	return errs
}

// refuse answers a request in a namespace that is invalid with e — unless
// the caller may not act there at all, which comes first: a caller
// outside a namespace gets the same answer to everything in it.
func (a *API) refuse(x *exchange, namespace string, perm tenancy.Permission, e *apiError) {
	if _, denied := a.authorize(x.ctx, x.caller, namespace, perm); denied != nil {
		x.fail(denied)
		return
	}
	x.fail(e)
}

// repeatedCreate answers a create of a name that exists: the same request
// again gets the existing resource, another one a conflict.
func (a *API) repeatedCreate(x *exchange, want, existing *proxy.Proxy, member view) {
	switch {
	case existing.DeleteRequestTime != nil:
		e := newError(http.StatusConflict, ReasonProxyBeingDeleted, "proxy %s is being deleted; create it again once it is gone", existing.Key())
		e.violations = proxy.FieldErrors{{Field: "name", Reason: ReasonProxyBeingDeleted, Description: "names a proxy being deleted"}}
		x.fail(e)
	case reflect.DeepEqual(a.normalize(existing.Spec), a.normalize(want.Spec)):
		x.w.Header().Set("Location", "/v1/"+existing.Key().Path())
		x.reply(http.StatusOK, shown(existing, member))
	default:
		e := newError(http.StatusConflict, ReasonProxyExists, "proxy %s exists with another spec", existing.Key())
		e.violations = proxy.FieldErrors{{Field: "spec", Reason: ReasonProxyExists, Description: "differs from the spec of the existing proxy of this name"}}
		x.fail(e)
	}
}

// normalize makes specs comparable: an empty list and a missing one are the
// same request, and so are an access log left out (a document from before
// the field) and one on, and an IPv6 egress left out (the same) and the
// provider's default.
func (a *API) normalize(s proxy.Spec) proxy.Spec {
	if s.IPv6Egress == "" {
		s.IPv6Egress = proxy.DefaultIPv6Egress(a.opts.Providers.IPv6Prefix(s.Provider))
	}
	if len(s.AllowedSourceRanges) == 0 {
		s.AllowedSourceRanges = nil
	}
	if len(s.ConnectPorts) == 0 {
		s.ConnectPorts = nil
	}
	on := s.AccessLogOn()
	s.AccessLog = &on
	return s
}

// proxyKey is the proxy a request's path names, or the answer to a path
// that names none.
func proxyKey(x *exchange) (proxy.Key, *apiError) {
	key := proxy.Key{Namespace: x.r.PathValue("namespace"), Name: x.r.PathValue("name")}
	var errs proxy.FieldErrors
	if fe := proxy.ValidateName("namespace", key.Namespace); fe != nil {
		errs = append(errs, *fe)
	}
	if fe := proxy.ValidateName("name", key.Name); fe != nil {
		errs = append(errs, *fe)
	}
	if len(errs) > 0 {
		return key, invalid(errs...)
	}
	return key, nil
}

// inNamespace serves a request on one proxy: its key, the caller's access
// to its namespace for perm, and what of the proxy's private part the
// caller sees.
func (a *API) inNamespace(x *exchange, perm tenancy.Permission) (proxy.Key, view, bool) {
	key, e := proxyKey(x)
	if e == nil {
		var ns *tenancy.Namespace
		if ns, e = a.authorize(x.ctx, x.caller, key.Namespace, perm); e == nil {
			return key, viewOf(x.caller, ns), true
		}
	}
	x.fail(e)
	return key, view{}, false
}

func (a *API) getProxy(x *exchange) {
	key, member, ok := a.inNamespace(x, tenancy.GetProxy)
	if !ok {
		return
	}
	p, err := a.store.Get(x.ctx, key)
	a.answer(x, key, p, err, http.StatusOK, member)
}

func (a *API) deleteProxy(x *exchange) {
	key, member, ok := a.inNamespace(x, tenancy.DeleteProxy)
	if !ok {
		return
	}
	p, err := a.store.RequestDeletion(x.ctx, key, a.now())
	a.answer(x, key, p, err, http.StatusAccepted, member)
}

// rotateProxy asks for a new VM (and a new address unless Static): the
// reconciler replaces a VM created before the request's time.
func (a *API) rotateProxy(x *exchange) {
	key, member, ok := a.inNamespace(x, tenancy.RotateProxy)
	if !ok {
		return
	}
	now := a.now()
	p, err := a.store.RequestRotation(x.ctx, key, now, a.limits())
	switch {
	case errors.Is(err, proxy.ErrBeingDeleted):
		x.fail(failedPrecondition(ReasonProxyBeingDeleted, "proxy %s is being deleted; a proxy on its way out is not rotated", key))
	case errors.Is(err, proxy.ErrNotReady):
		e := failedPrecondition(ReasonProxyNotReady, "proxy %s is not Ready; a proxy rotates once Ready: a VM still booting, or being replaced, is not replaced again", key)
		e.metadata = map[string]string{"resource": key.Path()}
		x.fail(e)
	case errors.Is(err, proxy.ErrRotatedRecently):
		x.fail(a.rotatedRecently(key, now, err))
	case errors.Is(err, proxy.ErrCreatesPerHour):
		x.fail(a.tooManyCreates(key.Namespace, now, err))
	default:
		a.answer(x, key, p, err, http.StatusAccepted, member)
	}
}

// rotatedRecently is the answer to a request for a new VM of a proxy (a
// rotation, a live change that needs one) within ROTATE_MIN_INTERVAL of
// the last, saying when the next may be.
func (a *API) rotatedRecently(key proxy.Key, now time.Time, err error) *apiError {
	e := newError(http.StatusTooManyRequests, ReasonRotatedRecently, "proxy %s was given a new VM at its users' request less than %s ago (ROTATE_MIN_INTERVAL)",
		key, a.opts.RotateMinInterval)
	e.metadata = map[string]string{"resource": key.Path(), "rotateMinInterval": a.opts.RotateMinInterval.String()}
	var retry *proxy.RetryError
	if errors.As(err, &retry) {
		e.message += "; retry in " + retryDelay(now, retry.At)
		e.retry = retry.At.Sub(now)
	}
	return e
}

// tooManyCreates is the answer to a request past the namespace's
// NAMESPACE_CREATES_PER_HOUR, saying when one more VM fits.
func (a *API) tooManyCreates(namespace string, now time.Time, err error) *apiError {
	e := newError(http.StatusTooManyRequests, ReasonCreatesPerHour,
		"namespace %s caused %d VMs (creates, rotations, live changes that need a new VM, rotations by maxAge) within the last hour, its bound (NAMESPACE_CREATES_PER_HOUR)", namespace, a.opts.CreatesPerHour)
	e.metadata = map[string]string{"namespace": namespace, "createsPerHour": strconv.Itoa(a.opts.CreatesPerHour)}
	var retry *proxy.RetryError
	if errors.As(err, &retry) {
		e.message += "; retry in " + retryDelay(now, retry.At)
		e.retry = retry.At.Sub(now)
	}
	return e
}

// answer is a proxy as a read or write left it, or its error.
func (a *API) answer(x *exchange, key proxy.Key, p *proxy.Proxy, err error, code int, member view) {
	switch {
	case errors.Is(err, proxy.ErrNotFound):
		x.fail(proxyNotFound(key))
	case err != nil:
		x.fail(a.storeError(x.ctx, err))
	default:
		x.reply(code, shown(p, member))
	}
}

// listResponse is the body of a list of proxies.
type listResponse struct {
	Proxies       []*proxy.Proxy `json:"proxies"`
	NextPageToken string         `json:"nextPageToken,omitempty"`
}

func (a *API) listProxies(x *exchange) {
	ns := x.r.PathValue("namespace")
	if fe := proxy.ValidateName("namespace", ns); fe != nil {
		x.fail(invalid(*fe))
		return
	}
	n, e := a.authorize(x.ctx, x.caller, ns, tenancy.ListProxies)
	if e != nil {
		x.fail(e)
		return
	}
	size, e := pageSize(x.r)
	if e != nil {
		x.fail(e)
		return
	}
	page, next, err := a.store.List(x.ctx, ns, size, x.r.URL.Query().Get("pageToken"))
	if errors.Is(err, proxy.ErrInvalidPageToken) {
		x.fail(badPageToken("a list of this namespace"))
		return
	}
	if err != nil {
		x.fail(a.storeError(x.ctx, err))
		return
	}
	member := viewOf(x.caller, n)
	out := listResponse{Proxies: []*proxy.Proxy{}, NextPageToken: next}
	for _, p := range page {
		out.Proxies = append(out.Proxies, shown(p, member))
	}
	x.reply(http.StatusOK, out)
}

// pageSize is a list's pageSize parameter, DefaultPageSize when absent.
func pageSize(r *http.Request) (int, *apiError) {
	v := r.URL.Query().Get("pageSize")
	if v == "" {
		return DefaultPageSize, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxPageSize {
		return 0, invalid(proxy.FieldError{Field: "pageSize", Reason: ReasonPageSizeInvalid, Description: fmt.Sprintf("%q is not a whole number in 1-%d", v, MaxPageSize)})
	}
	return n, nil
}

func badPageToken(of string) *apiError {
	return invalid(proxy.FieldError{Field: "pageToken", Reason: ReasonPageTokenInvalid, Description: "was not returned by " + of})
}

// view is what of a proxy's private part a caller may see.
type view struct {
	// credentials: status.proxyURL (tenancy.ReadProxyURL: editors and
	// owners).
	credentials bool
	// console: status.consoleTail (tenancy.ReadConsoleTail).
	console bool
}

// viewOf is what c may see of the proxies in ns.
func viewOf(c caller, ns *tenancy.Namespace) view {
	role := ns.RoleOf(c.email)
	return view{
		credentials: tenancy.Allowed(tenancy.ReadProxyURL, c.admin, role),
		console:     tenancy.Allowed(tenancy.ReadConsoleTail, c.admin, role),
	}
}

// shown is the resource as the caller may see it. The proxy URLs, with
// its credentials (HTTP, and SOCKS5 when the spec has a socks5Port), are
// filled in from the document's private part for members of the
// namespace only (tenancy.ReadProxyURL), once there is an endpoint; the
// console's last lines, the output of the VM's software, are kept for its
// editors and owners only (tenancy.ReadConsoleTail).
func shown(p *proxy.Proxy, v view) *proxy.Proxy {
	p.Status.ProxyURL, p.Status.Socks5URL = "", ""
	if v.credentials {
		p.Status.ProxyURL = p.Reconciler.Credentials.URL(p.Status.Endpoint)
		p.Status.Socks5URL = p.Reconciler.Credentials.Socks5URL(p.Socks5Endpoint())
	}
	if !v.console {
		p.Status.ConsoleTail = nil
	}
	return p
}
