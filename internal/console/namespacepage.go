package console

// A namespace's page: its proxies' rows (refreshed as a fragment), its
// members and quota, and the form that creates a proxy in it.

import (
	"cmp"
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
	// Month is the namespace's month at a glance, nil where the API
	// costs nothing.
	Month *monthView
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
		CreateForm: newForm(), MemberForm: newForm(), QuotaForm: newForm(), Month: monthOf(n)}
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
