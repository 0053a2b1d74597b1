package console

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/egress-proxies/egress/internal/client"
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

// namespaceBody is a namespace's page.
type namespaceBody struct {
	Namespace   client.Namespace
	Role        string
	Can         can
	Members     []member
	Rows        rowsBody
	Phases      []proxy.Phase
	CreateForm  *form
	MemberForm  *form
	QuotaForm   *form
	PercentUsed int
}

type member struct{ Email, Role string }

// rowsBody is the live table of a namespace's proxies.
type rowsBody struct {
	Namespace string
	Phase     string
	Proxies   []proxy.Proxy
	// Unsettled: a proxy shown is on its way, so the table refreshes
	// often.
	Unsettled bool
	PollURL   string
	Now       time.Time
}

func (c *Console) namespace(w http.ResponseWriter, r *http.Request) {
	c.renderNamespace(w, r, http.StatusOK, nil)
}

// forms are the namespace page's forms as a failed action left them.
type forms struct{ create, member, quota *form }

func (c *Console) renderNamespace(w http.ResponseWriter, r *http.Request, code int, fs *forms) {
	caller, ok := c.who(w, r)
	if !ok {
		return
	}
	name := r.PathValue("ns")
	api := c.api(r)
	n, err := api.GetNamespace(r.Context(), name)
	if err != nil {
		c.failAPI(w, r, caller, err)
		return
	}
	rows, err := c.rowsOf(r, name)
	if err != nil {
		c.failAPI(w, r, caller, err)
		return
	}
	role := n.Members[caller.Email]
	body := namespaceBody{Namespace: *n, Role: role, Can: permissions(caller.Admin, tenancy.Role(role)), Rows: rows, Phases: proxy.Phases,
		CreateForm: newForm(), MemberForm: newForm(), QuotaForm: newForm()}
	body.CreateForm.Values["spec.ipPolicy"] = string(proxy.IPEphemeral)
	body.MemberForm.Values["role"] = string(tenancy.Viewer)
	if fs != nil {
		body.CreateForm, body.MemberForm, body.QuotaForm = cmp.Or(fs.create, body.CreateForm), cmp.Or(fs.member, body.MemberForm), cmp.Or(fs.quota, body.QuotaForm)
	}
	if n.Quota > 0 {
		body.PercentUsed = int(min(100, n.ProxyCount*100/int64(n.Quota)))
	}
	for _, email := range slices.Sorted(maps.Keys(n.Members)) {
		body.Members = append(body.Members, member{email, n.Members[email]})
	}
	if body.Role == "" && caller.Admin {
		body.Role = "platform admin"
	}
	c.render(w, code, "namespace", "", page{Title: "Namespace " + name, Caller: caller, IAP: c.opts.IAP, Flash: flashOf(r), Body: body,
		Crumbs: []crumb{{"Namespaces", Prefix}}})
}

// rowsOf reads a namespace's proxies for its table, filtered by the
// request's phase.
func (c *Console) rowsOf(r *http.Request, ns string) (rowsBody, error) {
	list, err := c.api(r).AllProxies(r.Context(), ns)
	if err != nil {
		return rowsBody{}, err
	}
	phase := r.URL.Query().Get("phase")
	if !slices.Contains(proxy.Phases, proxy.Phase(phase)) {
		phase = ""
	}
	rows := rowsBody{Namespace: ns, Phase: phase, Now: c.opts.Clock.Now(), PollURL: nsURL(ns) + "/rows"}
	if phase != "" {
		rows.PollURL += "?phase=" + url.QueryEscape(phase)
	}
	for _, p := range list {
		c.history.Record(&p)
		if phase != "" && string(p.Status.Phase) != phase {
			continue
		}
		rows.Unsettled = rows.Unsettled || !p.Status.Phase.Settled()
		// The table never carries a proxy URL, whoever looks.
		p.Status.ProxyURL = ""
		rows.Proxies = append(rows.Proxies, p)
	}
	return rows, nil
}

func (c *Console) rows(w http.ResponseWriter, r *http.Request) {
	caller, ok := c.who(w, r)
	if !ok {
		return
	}
	rows, err := c.rowsOf(r, r.PathValue("ns"))
	if err != nil {
		c.fragmentError(w, caller, err)
		return
	}
	c.render(w, http.StatusOK, "namespace", "rows", rows)
}

// fragmentError answers a refresh the API refused: the message, in the
// place of the fragment.
func (c *Console) fragmentError(w http.ResponseWriter, caller httpapi.Caller, err error) {
	code := http.StatusBadGateway
	if e := apiError(err); e != nil {
		code = e.Code
	}
	c.render(w, code, "error", "fragment-error", page{Caller: caller, Error: message(err)})
}

func (c *Console) addMember(w http.ResponseWriter, r *http.Request) {
	f := formOf(r, "member", "role")
	role := f.Values["role"]
	_, err := c.api(r).UpdateNamespace(r.Context(), r.PathValue("ns"), map[string]*string{f.Values["member"]: &role}, nil)
	c.afterNamespaceAction(w, r, err, "namespaces-add-member", &forms{member: f}, f, map[string]string{"members": "member"})
}

func (c *Console) removeMember(w http.ResponseWriter, r *http.Request) {
	f := formOf(r, "member")
	_, err := c.api(r).UpdateNamespace(r.Context(), r.PathValue("ns"), map[string]*string{f.Values["member"]: nil}, nil)
	c.afterNamespaceAction(w, r, err, "namespaces-remove-member", &forms{}, f, nil)
}

func (c *Console) setQuota(w http.ResponseWriter, r *http.Request) {
	f := formOf(r, "quota")
	q, perr := strconv.Atoi(strings.TrimSpace(f.Values["quota"]))
	if perr != nil {
		f.Errors["quota"] = []string{fmt.Sprintf("%q is not a whole number", f.Values["quota"])}
		c.renderNamespace(w, r, http.StatusBadRequest, &forms{quota: f})
		return
	}
	_, err := c.api(r).UpdateNamespace(r.Context(), r.PathValue("ns"), nil, &q)
	c.afterNamespaceAction(w, r, err, "namespaces-set-quota", &forms{quota: f}, f, map[string]string{"quota": "quota"})
}

// afterNamespaceAction redirects to the namespace once an action is
// done, or shows the page again with why the API refused it.
func (c *Console) afterNamespaceAction(w http.ResponseWriter, r *http.Request, err error, done string, fs *forms, f *form, fields map[string]string) {
	if err == nil {
		http.Redirect(w, r, nsURL(r.PathValue("ns"))+"?done="+done, http.StatusSeeOther)
		return
	}
	f.take(err, fields)
	c.renderNamespace(w, r, statusOf(err), fs)
}

// createFields are the create form's inputs, named as the API's fields.
var createFields = []string{"name", "spec.placement.region", "spec.placement.zone", "spec.allowedSourceRanges", "spec.connectPorts", "spec.ipPolicy"}

func (c *Console) createProxy(w http.ResponseWriter, r *http.Request) {
	f := formOf(r, createFields...)
	spec := proxy.Spec{
		Placement:           proxy.Placement{Region: f.Values["spec.placement.region"], Zone: f.Values["spec.placement.zone"]},
		AllowedSourceRanges: list(f.Values["spec.allowedSourceRanges"]),
		IPPolicy:            proxy.IPPolicy(f.Values["spec.ipPolicy"]),
	}
	ports, bad := portList(f.Values["spec.connectPorts"])
	if bad != "" {
		f.Errors["spec.connectPorts"] = []string{bad}
		c.renderNamespace(w, r, http.StatusBadRequest, &forms{create: f})
		return
	}
	spec.ConnectPorts = ports
	ns, name := r.PathValue("ns"), f.Values["name"]
	_, _, err := c.api(r).CreateProxy(r.Context(), ns, name, spec)
	if err != nil {
		f.take(err, fieldsOf(createFields))
		c.renderNamespace(w, r, statusOf(err), &forms{create: f})
		return
	}
	http.Redirect(w, r, proxyURLOf(ns, name)+"?done=proxies-create", http.StatusSeeOther)
}

// proxyBody is a proxy's page.
type proxyBody struct {
	Proxy  proxy.Proxy
	Role   string
	Can    can
	Status statusBody
	Chart  *chart
	// ShowURL: the caller asked for the proxy URL and may read it.
	ShowURL    bool
	UpdateForm *form
}

// statusBody is the live part of a proxy's page.
type statusBody struct {
	Proxy     proxy.Proxy
	Can       can
	Unsettled bool
	PollURL   string
	Now       time.Time
	Chart     *chart
}

func (c *Console) proxyPage(w http.ResponseWriter, r *http.Request) {
	c.renderProxy(w, r, http.StatusOK, nil, "")
}

// readProxy reads the proxy of the request's path and the caller's role
// in its namespace.
func (c *Console) readProxy(r *http.Request, caller httpapi.Caller) (*proxy.Proxy, string, error) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	api := c.api(r)
	n, err := api.GetNamespace(r.Context(), ns)
	if err != nil {
		return nil, "", err
	}
	p, err := api.GetProxy(r.Context(), ns, name)
	if err != nil {
		return nil, "", err
	}
	return p, n.Members[caller.Email], nil
}

func (c *Console) renderProxy(w http.ResponseWriter, r *http.Request, code int, update *form, errMsg string) {
	caller, ok := c.who(w, r)
	if !ok {
		return
	}
	p, role, err := c.readProxy(r, caller)
	if client.IsNotFound(err) && r.URL.Query().Get("done") == "proxies-delete" {
		// The deletion finished before the page it redirects to was read
		// (a fast VM, or a slow browser): that is the outcome asked for,
		// not a refusal.
		name := r.PathValue("name")
		c.render(w, http.StatusNotFound, "error", "", page{Title: "Proxy " + name + " is gone", Caller: caller, IAP: c.opts.IAP,
			Flash:  flashOf(r) + " " + fmt.Sprintf("Proxy %s is gone: its VM was deleted.", name),
			Crumbs: []crumb{{"Namespaces", Prefix}, {r.PathValue("ns"), nsURL(r.PathValue("ns"))}}})
		return
	}
	if err != nil {
		c.failAPI(w, r, caller, err)
		return
	}
	perms := permissions(caller.Admin, tenancy.Role(role))
	body := proxyBody{Role: role, Can: perms, UpdateForm: update, Status: c.liveStatus(p, perms)}
	body.ShowURL = r.URL.Query().Get("show") == "url" && perms.Do(string(tenancy.ReadProxyURL)) && p.Status.ProxyURL != ""
	if !body.ShowURL {
		p.Status.ProxyURL = ""
	}
	body.Proxy = *p
	if body.UpdateForm == nil {
		body.UpdateForm = newForm()
		body.UpdateForm.Values["spec.allowedSourceRanges"] = strings.Join(p.Spec.AllowedSourceRanges, ", ")
		body.UpdateForm.Values["spec.connectPorts"] = joinPorts(p.Spec.ConnectPorts)
	}
	if role == "" && caller.Admin {
		body.Role = "platform admin"
	}
	c.render(w, code, "proxy", "", page{Title: "Proxy " + p.Name, Caller: caller, IAP: c.opts.IAP, Flash: flashOf(r), Error: errMsg, Body: body,
		Crumbs: []crumb{{"Namespaces", Prefix}, {p.Namespace, nsURL(p.Namespace)}}})
}

// liveStatus is the live part of p's page; it never carries the proxy URL.
func (c *Console) liveStatus(p *proxy.Proxy, perms can) statusBody {
	s := statusBody{Proxy: *p, Can: perms, Unsettled: !p.Status.Phase.Settled() || p.Status.ObservedGeneration < p.Generation && p.Status.Phase != proxy.PhaseFailed,
		PollURL: proxyURLOf(p.Namespace, p.Name) + "/status", Now: c.opts.Clock.Now(), Chart: drawChart(c.history.Record(p))}
	s.Proxy.Status.ProxyURL = ""
	return s
}

func (c *Console) status(w http.ResponseWriter, r *http.Request) {
	caller, ok := c.who(w, r)
	if !ok {
		return
	}
	p, role, err := c.readProxy(r, caller)
	if client.IsNotFound(err) {
		c.render(w, http.StatusNotFound, "error", "fragment-gone", page{Flash: fmt.Sprintf("Proxy %s is gone: its VM was deleted.", r.PathValue("name"))})
		return
	}
	if err != nil {
		c.fragmentError(w, caller, err)
		return
	}
	c.render(w, http.StatusOK, "proxy", "status", c.liveStatus(p, permissions(caller.Admin, tenancy.Role(role))))
}

// proxyURL answers the proxy URL alone, for the page's "Show" button: to
// the namespace's members who may read it, as the API shows it to them.
func (c *Console) proxyURL(w http.ResponseWriter, r *http.Request) {
	caller, ok := c.who(w, r)
	if !ok {
		return
	}
	p, _, err := c.readProxy(r, caller)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	switch {
	case err != nil:
		w.WriteHeader(statusOf(err))
		fmt.Fprintln(w, message(err))
	case p.Status.ProxyURL == "" && p.Status.Endpoint == "":
		w.WriteHeader(http.StatusConflict)
		fmt.Fprintf(w, "Proxy %s has no endpoint yet: its URL comes once it is Ready.\n", p.Name)
	case p.Status.ProxyURL == "":
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, "%s may not read the credentials of proxy %s: the namespace's editors and owners may.\n", caller.Email, p.Name)
	default:
		fmt.Fprint(w, p.Status.ProxyURL)
	}
}

func (c *Console) update(w http.ResponseWriter, r *http.Request) {
	f := formOf(r, "spec.allowedSourceRanges", "spec.connectPorts")
	ports, bad := portList(f.Values["spec.connectPorts"])
	if bad != "" {
		f.Errors["spec.connectPorts"] = []string{bad}
		c.renderProxy(w, r, http.StatusBadRequest, f, "")
		return
	}
	patch := client.SpecPatch{AllowedSourceRanges: list(f.Values["spec.allowedSourceRanges"]), ConnectPorts: ports, DefaultConnectPorts: ports == nil}
	if patch.AllowedSourceRanges == nil {
		patch.AllowedSourceRanges = []string{}
	}
	_, err := c.api(r).UpdateProxy(r.Context(), r.PathValue("ns"), r.PathValue("name"), patch)
	c.afterProxyAction(w, r, err, "proxies-update", f, fieldsOf([]string{"spec.allowedSourceRanges", "spec.connectPorts"}))
}

func (c *Console) rotate(w http.ResponseWriter, r *http.Request) {
	_, err := c.api(r).RotateProxy(r.Context(), r.PathValue("ns"), r.PathValue("name"))
	c.afterProxyAction(w, r, err, "proxies-rotate", nil, nil)
}

func (c *Console) rotateCredentials(w http.ResponseWriter, r *http.Request) {
	_, err := c.api(r).RotateCredentials(r.Context(), r.PathValue("ns"), r.PathValue("name"))
	c.afterProxyAction(w, r, err, "proxies-rotate-credentials", nil, nil)
}

// afterProxyAction redirects to the proxy once an action is taken (its
// page follows the proxy until it settles), or shows the page again with
// why the API refused it.
func (c *Console) afterProxyAction(w http.ResponseWriter, r *http.Request, err error, done string, f *form, fields map[string]string) {
	if err == nil {
		http.Redirect(w, r, proxyURLOf(r.PathValue("ns"), r.PathValue("name"))+"?done="+done, http.StatusSeeOther)
		return
	}
	if f != nil {
		f.take(err, fields)
	}
	c.renderProxy(w, r, statusOf(err), f, message(err))
}

type deleteBody struct{ Proxy proxy.Proxy }

func (c *Console) confirmDelete(w http.ResponseWriter, r *http.Request) {
	caller, ok := c.who(w, r)
	if !ok {
		return
	}
	p, role, err := c.readProxy(r, caller)
	if err != nil {
		c.failAPI(w, r, caller, err)
		return
	}
	if !tenancy.Allowed(tenancy.DeleteProxy, caller.Admin, tenancy.Role(role)) {
		c.fail(w, r, caller, http.StatusForbidden, fmt.Sprintf("%s may not delete proxies in namespace %s: its editors and owners may.", caller.Email, p.Namespace))
		return
	}
	p.Status.ProxyURL = ""
	c.render(w, http.StatusOK, "delete", "", page{Title: "Delete proxy " + p.Name, Caller: caller, IAP: c.opts.IAP, Body: deleteBody{*p},
		Crumbs: []crumb{{"Namespaces", Prefix}, {p.Namespace, nsURL(p.Namespace)}, {p.Name, proxyURLOf(p.Namespace, p.Name)}}})
}

func (c *Console) deleteProxy(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	if _, err := c.api(r).DeleteProxy(r.Context(), ns, name); err != nil {
		c.renderProxy(w, r, statusOf(err), nil, message(err))
		return
	}
	http.Redirect(w, r, proxyURLOf(ns, name)+"?done=proxies-delete", http.StatusSeeOther)
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
