package httpapi

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/store/rules"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// namespaceResource is a namespace as the API shows it.
type namespaceResource struct {
	Name string `json:"name"`
	// Members are the callers with a role in it, by email.
	Members map[string]tenancy.Role `json:"members"`
	// Quota is how many proxies it may hold; ProxyCount how many it holds.
	Quota      int   `json:"quota"`
	ProxyCount int64 `json:"proxyCount"`
	// Budget is its monthly budget, if an admin gave it one; Month what
	// it costs this month (GET of one namespace, where the deployment
	// costs proxies).
	Budget *tenancy.Budget `json:"budget,omitempty"`
	Month  *pricing.Cost   `json:"month,omitempty"`
	// TrafficStopped is set while its proxies carry no new connection:
	// its budget stops traffic and its month reached it.
	TrafficStopped *tenancy.TrafficStopped `json:"trafficStopped,omitempty"`
	CreateTime     *time.Time              `json:"createTime,omitempty"`
	UpdateTime     time.Time               `json:"updateTime"`
}

func (a *API) resource(ns *tenancy.Namespace) namespaceResource {
	r := namespaceResource{Name: ns.Name, Members: ns.Members, Quota: ns.QuotaOr(a.opts.Quota), ProxyCount: ns.ProxyCount, Budget: ns.Budget,
		TrafficStopped: ns.TrafficStopped, UpdateTime: ns.UpdateTime}
	if r.Members == nil {
		r.Members = map[string]tenancy.Role{}
	}
	if !ns.CreateTime.IsZero() {
		t := ns.CreateTime
		r.CreateTime = &t
	}
	return r
}

// namespaceRequest is the body of a namespace's create: both optional.
type namespaceRequest struct {
	Members map[string]tenancy.Role `json:"members"`
	Quota   *int                    `json:"quota"`
}

// namespacePatch is the body of a namespace's update, a JSON merge patch
// (RFC 7396): a member with a role gets that role, a member set to null
// goes, and members the patch does not name keep theirs.
type namespacePatch struct {
	Members map[string]*tenancy.Role `json:"members"`
	Quota   *int                     `json:"quota"`
	// Budget replaces the namespace's budget whole (admins).
	Budget *tenancy.Budget `json:"budget"`
}

// validMembers checks the emails and roles of a body's members and returns
// them with lowercase emails; a nil role (a patch's removal) is kept nil.
func validMembers(members map[string]*tenancy.Role) (map[string]*tenancy.Role, proxy.FieldErrors) {
	var errs proxy.FieldErrors
	out := map[string]*tenancy.Role{}
	for _, raw := range slices.Sorted(maps.Keys(members)) {
		field := "members.`" + raw + "`"
		email, ok := tenancy.NormalizeEmail(raw)
		if !ok {
			errs = append(errs, proxy.FieldError{Field: field, Reason: ReasonMemberInvalid, Description: fmt.Sprintf("%q is not an email", raw)})
			continue
		}
		if r := members[raw]; r != nil && !r.Valid() {
			errs = append(errs, proxy.FieldError{Field: field, Reason: ReasonRoleInvalid, Description: fmt.Sprintf("%q is not a role: want %s, %s or %s", *r, tenancy.Viewer, tenancy.Editor, tenancy.Owner)})
			continue
		}
		out[email] = members[raw]
	}
	return out, errs
}

func validQuota(q *int) proxy.FieldErrors {
	if q != nil && *q < 1 {
		return proxy.FieldErrors{{Field: "quota", Reason: ReasonQuotaInvalid, Description: fmt.Sprintf("%d is not a number of proxies of at least 1", *q)}}
	}
	return nil
}

// needsOwner says the rule of tenancy.KeepsOwner.
const needsOwner = "a namespace with members keeps an owner, who manages them; name the new owner in the same request (a hand-over: {\"members\":{\"new@example.com\":\"owner\",\"old@example.com\":null}})"

// namespaceName is the namespace a request's path names, or the answer to
// a path that names none.
func namespaceName(x *exchange) (string, *apiError) {
	name := x.r.PathValue("namespace")
	if fe := proxy.ValidateName("namespace", name); fe != nil {
		return name, invalid(*fe)
	}
	return name, nil
}

// createNamespace: admins only, whatever exists. The same request again
// gets the namespace (200); another for an existing name, a conflict.
func (a *API) createNamespace(x *exchange) {
	name, e := namespaceName(x)
	if e == nil && !x.caller.admin {
		e = adminRequired(tenancy.CreateNamespace)
	}
	var req namespaceRequest
	if e == nil {
		e = decodeBody(x.w, x.r, &req)
	}
	if e != nil {
		x.fail(e)
		return
	}
	in := map[string]*tenancy.Role{}
	for k, v := range req.Members {
		in[k] = &v
	}
	valid, errs := validMembers(in)
	if errs = append(errs, validQuota(req.Quota)...); len(errs) > 0 {
		x.fail(invalid(errs...))
		return
	}
	members := map[string]tenancy.Role{}
	for k, v := range valid {
		members[k] = *v
	}
	if !tenancy.KeepsOwner(nil, members) {
		x.fail(invalid(proxy.FieldError{Field: "members", Reason: ReasonNamespaceNeedsOwner, Description: needsOwner}))
		return
	}
	quota := 0
	if req.Quota != nil {
		quota = *req.Quota
	}
	ns := rules.NewNamespace(name, members, quota, a.opts.Quota, a.now())
	created, err := a.store.CreateNamespace(x.ctx, ns)
	switch {
	case errors.Is(err, tenancy.ErrNamespaceExists) && created != nil:
		if maps.Equal(created.Members, ns.Members) && created.QuotaOr(a.opts.Quota) == ns.Quota {
			x.w.Header().Set("Location", "/v1/namespaces/"+name)
			x.reply(http.StatusOK, a.resource(created))
			return
		}
		x.fail(newError(http.StatusConflict, ReasonNamespaceExists, "namespace %s exists with other members or another quota; change it with PATCH /v1/namespaces/%s", name, name))
	case err != nil:
		x.fail(a.storeError(x.ctx, err))
	default:
		x.w.Header().Set("Location", "/v1/namespaces/"+name)
		x.reply(http.StatusCreated, a.resource(created))
	}
}

func (a *API) getNamespace(x *exchange) {
	name, e := namespaceName(x)
	var ns *tenancy.Namespace
	if e == nil {
		ns, e = a.authorize(x.ctx, x.caller, name, tenancy.GetNamespace)
	}
	if e != nil {
		x.fail(e)
		return
	}
	r := a.resource(ns)
	month, err := a.monthOf(x.ctx, ns)
	if err != nil {
		x.fail(a.storeError(x.ctx, err))
		return
	}
	r.Month = month
	x.reply(http.StatusOK, r)
}

// patchNamespace changes members (owners and admins) and the quota
// (admins; a patch that repeats the quota it has changes nothing and
// needs no admin), decided in the update's transaction on the namespace
// as it is.
func (a *API) patchNamespace(x *exchange) {
	name, e := namespaceName(x)
	if e != nil {
		x.fail(e)
		return
	}
	var req namespacePatch
	if _, e := decodePatch(x.w, x.r, &req, namespaceResource{}); e != nil {
		a.refuse(x, name, tenancy.UpdateMembers, e)
		return
	}
	members, errs := validMembers(req.Members)
	errs = append(errs, validQuota(req.Quota)...)
	if errs = append(errs, a.budgetFields(req.Budget)...); len(errs) > 0 {
		a.refuse(x, name, tenancy.UpdateMembers, invalid(errs...))
		return
	}
	updated, err := a.store.UpdateNamespace(x.ctx, name, func(ns *tenancy.Namespace) error {
		if e := decide(x.caller, name, ns, tenancy.UpdateMembers); e != nil {
			return e
		}
		if req.Quota != nil && *req.Quota != ns.QuotaOr(a.opts.Quota) {
			if !x.caller.admin {
				return adminRequired(tenancy.UpdateQuota)
			}
			ns.Quota = *req.Quota
		}
		if req.Budget != nil && (ns.Budget == nil || *req.Budget != *ns.Budget) {
			if !x.caller.admin {
				return adminRequired(tenancy.UpdateBudget)
			}
			b := *req.Budget
			ns.Budget = &b
		}
		before := maps.Clone(ns.Members)
		if ns.Members == nil {
			ns.Members = map[string]tenancy.Role{}
		}
		for email, role := range members {
			if role == nil {
				delete(ns.Members, email)
			} else {
				ns.Members[email] = *role
			}
		}
		if !tenancy.KeepsOwner(before, ns.Members) {
			e := failedPrecondition(ReasonNamespaceNeedsOwner, "namespace %s would have no owner: %s", name, needsOwner)
			e.metadata = map[string]string{"namespace": name}
			return e
		}
		return nil
	})
	if err != nil {
		x.fail(a.storeError(x.ctx, err))
		return
	}
	x.reply(http.StatusOK, a.resource(updated))
}

// deleteNamespace: admins only, and only an empty namespace.
func (a *API) deleteNamespace(x *exchange) {
	name, e := namespaceName(x)
	if e == nil && !x.caller.admin {
		e = adminRequired(tenancy.DeleteNamespace)
	}
	if e != nil {
		x.fail(e)
		return
	}
	var count int64
	err := a.store.DeleteNamespace(x.ctx, name, func(ns *tenancy.Namespace) error {
		if ns == nil {
			return namespaceNotFound(name)
		}
		count = ns.ProxyCount
		return nil
	})
	switch {
	case errors.Is(err, tenancy.ErrNamespaceNotEmpty):
		e := failedPrecondition(ReasonNamespaceNotEmpty, "namespace %s holds %d proxies; delete them first (each goes once its VM is gone)", name, count)
		e.metadata = map[string]string{"namespace": name, "proxyCount": fmt.Sprint(count)}
		x.fail(e)
	case err != nil:
		x.fail(a.storeError(x.ctx, err))
	default:
		x.reply(http.StatusOK, struct{}{})
	}
}

// listNamespacesResponse is the body of a list of namespaces.
type listNamespacesResponse struct {
	Namespaces    []namespaceResource `json:"namespaces"`
	NextPageToken string              `json:"nextPageToken,omitempty"`
}

// listNamespaces lists what the caller may see: every namespace for an
// admin, the caller's own for anyone else.
func (a *API) listNamespaces(x *exchange) {
	size, e := pageSize(x.r)
	if e != nil {
		x.fail(e)
		return
	}
	member := x.caller.email
	if x.caller.admin {
		member = ""
	}
	page, next, err := a.store.ListNamespaces(x.ctx, member, size, x.r.URL.Query().Get("pageToken"))
	if errors.Is(err, proxy.ErrInvalidPageToken) {
		x.fail(badPageToken("a list of namespaces"))
		return
	}
	if err != nil {
		x.fail(a.storeError(x.ctx, err))
		return
	}
	out := listNamespacesResponse{Namespaces: []namespaceResource{}, NextPageToken: next}
	for _, ns := range page {
		out.Namespaces = append(out.Namespaces, a.resource(ns))
	}
	x.reply(http.StatusOK, out)
}
