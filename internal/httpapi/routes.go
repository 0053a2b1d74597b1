package httpapi

import (
	_ "embed"
	"net/http"
	"slices"
	"strings"

	"github.com/egress-proxies/egress/internal/account"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// Route is one call of the API.
type Route struct {
	Method string
	// Path is the route's pattern; a custom method follows the last
	// wildcard after a colon, as Google APIs write them (AIP-136):
	// /v1/namespaces/{namespace}/proxies/{name}:rotate.
	Path string
	// Permission is what the call needs of the caller (tenancy.Permissions
	// says who has it), and the action of its audit line.
	Permission tenancy.Permission
	// Audited calls change something: each, allowed or refused, logs an
	// audit line.
	Audited bool

	handle func(*API, *exchange)
}

// routes are every call of the API. A test holds the OpenAPI document
// (openapi.json) to them both ways, and `make docs` writes the API
// reference (docs/reference/api.md) from the document.
var routes = []Route{
	{Method: "GET", Path: "/v1/namespaces", Permission: tenancy.ListNamespaces, handle: (*API).listNamespaces},
	{Method: "PUT", Path: "/v1/namespaces/{namespace}", Permission: tenancy.CreateNamespace, Audited: true, handle: (*API).createNamespace},
	{Method: "GET", Path: "/v1/namespaces/{namespace}", Permission: tenancy.GetNamespace, handle: (*API).getNamespace},
	{Method: "PATCH", Path: "/v1/namespaces/{namespace}", Permission: tenancy.UpdateMembers, Audited: true, handle: (*API).patchNamespace},
	{Method: "DELETE", Path: "/v1/namespaces/{namespace}", Permission: tenancy.DeleteNamespace, Audited: true, handle: (*API).deleteNamespace},
	{Method: "POST", Path: "/v1/namespaces/{namespace}/proxies", Permission: tenancy.CreateProxy, Audited: true, handle: (*API).createProxy},
	{Method: "GET", Path: "/v1/namespaces/{namespace}/proxies", Permission: tenancy.ListProxies, handle: (*API).listProxies},
	{Method: "GET", Path: "/v1/namespaces/{namespace}/proxies/{name}", Permission: tenancy.GetProxy, handle: (*API).getProxy},
	{Method: "DELETE", Path: "/v1/namespaces/{namespace}/proxies/{name}", Permission: tenancy.DeleteProxy, Audited: true, handle: (*API).deleteProxy},
	{Method: "POST", Path: "/v1/namespaces/{namespace}/proxies/{name}:rotate", Permission: tenancy.RotateProxy, Audited: true, handle: (*API).rotateProxy},
	{Method: "PATCH", Path: "/v1/namespaces/{namespace}/proxies/{name}", Permission: tenancy.UpdateProxy, Audited: true, handle: (*API).patchProxy},
	{Method: "POST", Path: "/v1/namespaces/{namespace}/proxies/{name}:rotateCredentials", Permission: tenancy.RotateCredentials, Audited: true, handle: (*API).rotateCredentials},
	{Method: "GET", Path: "/v1/pools", Permission: tenancy.ListPools, handle: (*API).listPools},
	{Method: "PUT", Path: "/v1/pools/{pool}", Permission: tenancy.PutPool, Audited: true, handle: (*API).putPool},
	{Method: "GET", Path: "/v1/pools/{pool}", Permission: tenancy.GetPool, handle: (*API).getPool},
	{Method: "DELETE", Path: "/v1/pools/{pool}", Permission: tenancy.DeletePool, Audited: true, handle: (*API).deletePool},
	{Method: "GET", Path: "/v1/accounts", Permission: tenancy.ListAccounts, handle: (*API).listAccounts},
	{Method: "PUT", Path: "/v1/accounts/{account}", Permission: tenancy.PutAccount, Audited: true, handle: (*API).putAccount},
	{Method: "GET", Path: "/v1/accounts/{account}", Permission: tenancy.GetAccount, handle: (*API).getAccount},
	{Method: "DELETE", Path: "/v1/accounts/{account}", Permission: tenancy.DeleteAccount, Audited: true, handle: (*API).deleteAccount},
}

// OpenAPIPath is where the API serves its OpenAPI document, openapi.json,
// to anyone, as /healthz: it says what the calls are, not what exists. A
// test holds the document's paths and methods to routes.
const OpenAPIPath = "/v1/openapi.json"

//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the OpenAPI document the API serves.
func OpenAPI() []byte { return slices.Clone(openAPI) }

// Routes returns the API's calls, for documentation and tests.
func Routes() []Route {
	out := slices.Clone(routes)
	for i := range out {
		out[i].handle = nil
	}
	return out
}

// split cuts a route's path into what ServeMux matches and the custom
// method after the last wildcard ("" for none). ServeMux cannot match a
// wildcard and a literal in one segment, so the verb is cut from the
// wildcard's value when a request comes (dispatch).
func split(path string) (base, verb string) {
	if i := strings.LastIndex(path, "}:"); i >= 0 {
		return path[:i+1], path[i+2:]
	}
	return path, ""
}

// route registers the routes on the mux: one method-less pattern per path,
// whose dispatcher picks the route by custom method and HTTP method, so
// other methods on a known path get 405 naming the allowed ones and
// unknown paths 404, both as JSON errors.
func (a *API) route() {
	byBase := map[string][]Route{}
	var bases []string
	for _, rt := range routes {
		base, _ := split(rt.Path)
		if _, ok := byBase[base]; !ok {
			bases = append(bases, base)
		}
		byBase[base] = append(byBase[base], rt)
	}
	for _, base := range bases {
		a.mux.HandleFunc(base, a.dispatch(base, byBase[base]))
	}
	a.mux.HandleFunc("GET /healthz", healthz)
	a.mux.HandleFunc("GET "+OpenAPIPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(openAPI)
	})
	a.mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, methodNotAllowed(r, []string{"GET"}))
	})
	a.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, newError(http.StatusNotFound, ReasonRouteNotFound, "no such resource: %s", r.URL.Path))
	})
}

// dispatch serves the routes of one path: it cuts the custom method from
// the last wildcard, picks the route, identifies the caller (401 without
// an identity) and runs the handler.
func (a *API) dispatch(base string, rts []Route) http.HandlerFunc {
	wildcard := ""
	if strings.HasSuffix(base, "}") {
		wildcard = base[strings.LastIndex(base, "{")+1 : len(base)-1]
	}
	return func(w http.ResponseWriter, r *http.Request) {
		verb := ""
		if wildcard != "" {
			if name, v, ok := strings.Cut(r.PathValue(wildcard), ":"); ok {
				verb = v
				r.SetPathValue(wildcard, name)
			}
		}
		var (
			allow []string
			match *Route
		)
		for i, rt := range rts {
			if _, v := split(rt.Path); v == verb {
				allow = append(allow, rt.Method)
				if rt.Method == r.Method {
					match = &rts[i]
				}
			}
		}
		switch {
		case len(allow) == 0:
			writeError(w, newError(http.StatusNotFound, ReasonRouteNotFound, "no custom method :%s on %s", verb, r.URL.Path))
			return
		case match == nil:
			writeError(w, methodNotAllowed(r, allow))
			return
		}
		n, _ := r.Context().Value(noteKey{}).(*note)
		if n == nil {
			n = &note{}
		}
		x := &exchange{w: w, r: r, ctx: r.Context(), note: n}
		if match.Audited {
			n.action, n.resource = string(match.Permission), resourceName(r)
		}
		if e := contentType(r); e != nil {
			x.fail(e)
			return
		}
		c, e := a.identify(r)
		if e == nil {
			e = browserSession(r, c)
		}
		if e != nil {
			x.fail(e)
			return
		}
		x.caller, n.who = c, c.email
		match.handle(a, x)
	}
}

// resourceName is the name of what a request acts on, from its path.
func resourceName(r *http.Request) string {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	switch pool, acct := r.PathValue("pool"), r.PathValue("account"); {
	case acct != "":
		return account.Collection + "/" + acct
	case strings.HasPrefix(r.URL.Path, "/v1/accounts"):
		return account.Collection
	case pool != "":
		return proxy.PoolPath(pool)
	case strings.HasPrefix(r.URL.Path, "/v1/pools"):
		return proxy.PoolsCollection
	case ns == "":
		return "namespaces"
	case name != "":
		return "namespaces/" + ns + "/proxies/" + name
	case strings.HasSuffix(r.URL.Path, "/proxies"):
		return "namespaces/" + ns + "/proxies"
	}
	return "namespaces/" + ns
}

func methodNotAllowed(r *http.Request, allow []string) *apiError {
	list := strings.Join(allow, ", ")
	e := newError(http.StatusMethodNotAllowed, ReasonMethodNotAllowed, "%s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, list)
	e.metadata = map[string]string{"allow": list}
	return e
}
