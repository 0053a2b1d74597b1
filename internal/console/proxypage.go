package console

// A proxy's page: its spec and live status (refreshed as a fragment),
// its URL for those allowed to see it, and the update, rotation and
// delete actions.

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/egress-proxies/egress/internal/client"
	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/tenancy"
)

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

// statusBody is the live part of a proxy's page. It needs no role: what
// the caller may not read of the status (status.consoleTail) the API
// does not answer.
type statusBody struct {
	Proxy     proxy.Proxy
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
	body := proxyBody{Role: role, Can: perms, UpdateForm: update, Status: c.liveStatus(p)}
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
func (c *Console) liveStatus(p *proxy.Proxy) statusBody {
	s := statusBody{Proxy: *p, Unsettled: !p.Status.Phase.Settled() || p.Status.ObservedGeneration < p.Generation && p.Status.Phase != proxy.PhaseFailed,
		PollURL: proxyURLOf(p.Namespace, p.Name) + "/status", Now: c.opts.Clock.Now(), Chart: drawChart(c.history.Record(p))}
	s.Proxy.Status.ProxyURL = ""
	return s
}

func (c *Console) status(w http.ResponseWriter, r *http.Request) {
	caller, ok := c.who(w, r)
	if !ok {
		return
	}
	// The proxy alone, not its namespace: the fragment shows no action,
	// and a namespace's GET costs its proxies' month.
	p, err := c.api(r).GetProxy(r.Context(), r.PathValue("ns"), r.PathValue("name"))
	if client.IsNotFound(err) {
		c.render(w, http.StatusNotFound, "error", "fragment-gone", page{Flash: fmt.Sprintf("Proxy %s is gone: its VM was deleted.", r.PathValue("name"))})
		return
	}
	if err != nil {
		c.fragmentError(w, caller, err)
		return
	}
	c.render(w, http.StatusOK, "proxy", "status", c.liveStatus(p))
}

// proxyURL answers the proxy URL alone, for the page's "Show" button: to
// the namespace's members who may read it, as the API shows it to them.
func (c *Console) proxyURL(w http.ResponseWriter, r *http.Request) {
	caller, ok := c.who(w, r)
	if !ok {
		return
	}
	p, err := c.api(r).GetProxy(r.Context(), r.PathValue("ns"), r.PathValue("name"))
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
