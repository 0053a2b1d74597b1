package console

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/tenancy"
)

func (c *Console) route() {
	m := c.mux
	m.HandleFunc("GET /console/assets/{name}", c.serveAsset)
	m.HandleFunc("GET /console/{$}", c.home)
	m.HandleFunc("GET /console", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, Prefix, http.StatusMovedPermanently) })
	m.HandleFunc("POST /console/namespaces", c.createNamespace)
	m.HandleFunc("GET /console/pools", c.pools)
	ns := "/console/namespaces/{ns}"
	m.HandleFunc("GET "+ns, c.namespace)
	m.HandleFunc("GET "+ns+"/rows", c.rows)
	m.HandleFunc("POST "+ns+"/add-member", c.addMember)
	m.HandleFunc("POST "+ns+"/remove-member", c.removeMember)
	m.HandleFunc("POST "+ns+"/set-quota", c.setQuota)
	m.HandleFunc("POST "+ns+"/proxies", c.createProxy)
	px := ns + "/proxies/{name}"
	m.HandleFunc("GET "+px, c.proxyPage)
	m.HandleFunc("GET "+px+"/status", c.status)
	m.HandleFunc("GET "+px+"/url", c.proxyURL)
	m.HandleFunc("POST "+px+"/update", c.update)
	m.HandleFunc("POST "+px+"/rotate", c.rotate)
	m.HandleFunc("POST "+px+"/rotate-credentials", c.rotateCredentials)
	m.HandleFunc("GET "+px+"/delete", c.confirmDelete)
	m.HandleFunc("POST "+px+"/delete", c.deleteProxy)
	m.HandleFunc("/console/", func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, httpapi.Caller{}, http.StatusNotFound, "There is no such page in the console: "+r.URL.Path)
	})
}

// page is what every page shows around its body.
type page struct {
	Title  string
	Caller httpapi.Caller
	IAP    bool
	// Flash says what the last action did; Error why a request was
	// refused, as the API said it.
	Flash, Error string
	Crumbs       []crumb
	Body         any
}

type crumb struct{ Name, URL string }

// who identifies the browser, or answers the page itself.
func (c *Console) who(w http.ResponseWriter, r *http.Request) (httpapi.Caller, bool) {
	caller, err := c.opts.Identity.Identify(r)
	if err != nil {
		code := http.StatusUnauthorized
		var e interface{ HTTPStatus() int }
		if errors.As(err, &e) {
			code = e.HTTPStatus()
		}
		c.fail(w, r, caller, code, err.Error())
		return caller, false
	}
	return caller, true
}

// fail answers with the error page.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, caller httpapi.Caller, code int, msg string) {
	c.render(w, code, "error", "", page{Title: "Not available", Caller: caller, IAP: c.opts.IAP, Error: msg,
		Crumbs: []crumb{{"Namespaces", Prefix}}})
}

// failAPI answers with the error page for err, the API's answer.
func (c *Console) failAPI(w http.ResponseWriter, r *http.Request, caller httpapi.Caller, err error) {
	code := http.StatusBadGateway
	if e := apiError(err); e != nil {
		code = e.Code
	}
	c.fail(w, r, caller, code, message(err))
}

// namespaceRow is a namespace as the home page lists it.
type namespaceRow struct {
	Name        string
	Role        string
	Quota       int
	ProxyCount  int64
	PercentUsed int
}

type homeBody struct {
	Namespaces []namespaceRow
	Form       *form
}

func (c *Console) home(w http.ResponseWriter, r *http.Request) {
	c.renderHome(w, r, http.StatusOK, nil)
}

func (c *Console) renderHome(w http.ResponseWriter, r *http.Request, code int, f *form) {
	caller, ok := c.who(w, r)
	if !ok {
		return
	}
	list, err := c.api(r).AllNamespaces(r.Context())
	if err != nil {
		c.failAPI(w, r, caller, err)
		return
	}
	body := homeBody{Form: f}
	if body.Form == nil {
		body.Form = newForm()
	}
	for _, n := range list {
		row := namespaceRow{Name: n.Name, Role: n.Members[caller.Email], Quota: n.Quota, ProxyCount: n.ProxyCount}
		if row.Role == "" && caller.Admin {
			row.Role = "platform admin"
		}
		if n.Quota > 0 {
			row.PercentUsed = int(min(100, n.ProxyCount*100/int64(n.Quota)))
		}
		body.Namespaces = append(body.Namespaces, row)
	}
	c.render(w, code, "home", "", page{Title: "Namespaces", Caller: caller, IAP: c.opts.IAP, Flash: flashOf(r), Body: body})
}

func (c *Console) createNamespace(w http.ResponseWriter, r *http.Request) {
	f := formOf(r, "namespace", "owner")
	name, owner := f.Values["namespace"], strings.TrimSpace(f.Values["owner"])
	members := map[string]string{}
	if owner != "" {
		members[owner] = string(tenancy.Owner)
	}
	_, _, err := c.api(r).CreateNamespace(r.Context(), name, members, nil)
	if err != nil {
		f.take(err, map[string]string{"namespace": "namespace", "name": "namespace", "members": "owner"})
		c.renderHome(w, r, statusOf(err), f)
		return
	}
	http.Redirect(w, r, nsURL(name)+"?done=namespaces-create", http.StatusSeeOther)
}

type poolsBody struct{ Pools []proxy.Pool }

func (c *Console) pools(w http.ResponseWriter, r *http.Request) {
	caller, ok := c.who(w, r)
	if !ok {
		return
	}
	list, err := c.api(r).AllPools(r.Context())
	if err != nil {
		c.failAPI(w, r, caller, err)
		return
	}
	c.render(w, http.StatusOK, "pools", "", page{Title: "Warm pools", Caller: caller, IAP: c.opts.IAP, Body: poolsBody{list},
		Crumbs: []crumb{{"Namespaces", Prefix}}})
}

// flashes are what a page says after an action, by the action's key in
// ?done= (a fixed text: a link cannot make the console say anything).
var flashes = map[string]string{
	"namespaces-create":          "Namespace created.",
	"namespaces-add-member":      "Member saved.",
	"namespaces-remove-member":   "Member removed.",
	"namespaces-set-quota":       "Quota changed.",
	"proxies-create":             "Proxy asked for. This page follows it until it is Ready.",
	"proxies-update":             "Change sent. The proxy keeps its endpoint and is Ready again once its VM serves the change.",
	"proxies-rotate":             "Rotation asked for: a new VM replaces this one. This page follows it until it is Ready.",
	"proxies-rotate-credentials": "New credentials asked for: the old password stops working once the VM serves the new one. Show the URL again for the new one.",
	"proxies-delete":             "Deletion asked for: the proxy goes once its VM is gone. This page follows it.",
}

func flashOf(r *http.Request) string { return flashes[r.URL.Query().Get("done")] }

func nsURL(ns string) string { return "/console/namespaces/" + url.PathEscape(ns) }

func proxyURLOf(ns, name string) string { return nsURL(ns) + "/proxies/" + url.PathEscape(name) }

func statusOf(err error) int {
	if e := apiError(err); e != nil {
		return e.Code
	}
	return http.StatusBadGateway
}
