package httpapi

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// MaxPoolSize bounds a pool's size: each warm VM costs the deployment
// whether anyone claims it or not, and a pool larger than this is a typo
// (or belongs in a talk with the Compute quotas first).
const MaxPoolSize = 100

// poolSpecBody is a pool's spec as a PUT gives it.
type poolSpecBody struct {
	Provider  string          `json:"provider"`
	Placement proxy.Placement `json:"placement"`
	Size      *int            `json:"size"`
	// ClaimsPerNamespacePerHour is the pool's bound of claims by one
	// namespace's proxies in any hour; left out, none.
	ClaimsPerNamespacePerHour int `json:"claimsPerNamespacePerHour"`
}

// poolRequest is the body of a pool's PUT: the spec's fields at the top
// ({provider, placement, size}, as an admin writes it), or under spec, as
// the resource shows them; not both.
type poolRequest struct {
	poolSpecBody
	Spec *poolSpecBody `json:"spec"`
}

// poolsPage is the body of a list of pools.
type poolsPage struct {
	Pools         []*proxy.Pool `json:"pools"`
	NextPageToken string        `json:"nextPageToken,omitempty"`
}

// poolName is the pool a request's path names, after the caller is found
// an admin: pools are the platform's.
func poolName(x *exchange, perm tenancy.Permission) (string, *apiError) {
	if !x.caller.admin {
		return "", adminRequired(perm)
	}
	name := x.r.PathValue("pool")
	if fe := proxy.ValidateName("pool", name); fe != nil {
		return name, invalid(*fe)
	}
	return name, nil
}

// putPool creates a pool or changes its size and its bound of claims per
// namespace (claimsPerNamespacePerHour). Its provider and placement
// are held to the rules of a proxy's (the provider enabled, a region, the
// provider's own rules of the placement), and stay what they are once it
// exists (400 naming the field: a pool of another placement is another
// pool).
func (a *API) putPool(x *exchange) {
	name, e := poolName(x, tenancy.PutPool)
	var req poolRequest
	if e == nil {
		e = decodeBody(x.w, x.r, &req)
	}
	var spec proxy.PoolSpec
	if e == nil {
		spec, e = a.poolSpec(req)
	}
	if e != nil {
		x.fail(e)
		return
	}
	p, created, err := a.store.PutPool(x.ctx, name, spec, a.now())
	var fe proxy.FieldErrors
	switch {
	case errors.As(err, &fe):
		x.fail(invalid(fe...))
	case errors.Is(err, proxy.ErrBeingDeleted):
		e := failedPrecondition(ReasonPoolBeingDeleted, "pool %s is being deleted; put it again once it is gone", name)
		e.metadata = map[string]string{"pool": name}
		x.fail(e)
	case err != nil:
		x.fail(a.storeError(x.ctx, err))
	case created:
		x.w.Header().Set("Location", "/v1/"+p.Path())
		x.reply(http.StatusCreated, p)
	default:
		x.reply(http.StatusOK, p)
	}
}

// poolSpec is the spec a PUT asks for, with the provider's default, or
// every rule it breaks, each field named as the body gave it.
func (a *API) poolSpec(req poolRequest) (proxy.PoolSpec, *apiError) {
	body, prefix := req.poolSpecBody, ""
	if req.Spec != nil {
		if body != (poolSpecBody{}) {
			return proxy.PoolSpec{}, invalid(proxy.FieldError{Field: "spec", Reason: ReasonPoolSpecTwice,
				Description: "is given beside provider, placement, size or claimsPerNamespacePerHour at the top: give the spec one way, {provider, placement, size, …} or {spec: {…}}"})
		}
		body, prefix = *req.Spec, "spec."
	}
	spec := proxy.PoolSpec{Provider: body.Provider, Placement: body.Placement, ClaimsPerNamespacePerHour: body.ClaimsPerNamespacePerHour}
	if spec.Provider == "" {
		spec.Provider = a.opts.DefaultProvider
	}
	var errs proxy.FieldErrors
	switch {
	case body.Size == nil:
		errs = append(errs, proxy.FieldError{Field: prefix + "size", Reason: ReasonPoolSizeInvalid, Description: fmt.Sprintf("is required: how many warm VMs to keep, 0-%d", MaxPoolSize)})
	case *body.Size < 0 || *body.Size > MaxPoolSize:
		errs = append(errs, proxy.FieldError{Field: prefix + "size", Reason: ReasonPoolSizeInvalid, Description: fmt.Sprintf("%d is outside 0-%d", *body.Size, MaxPoolSize)})
	default:
		spec.Size = *body.Size
	}
	if n := body.ClaimsPerNamespacePerHour; n < 0 || n > MaxPoolSize*60 {
		errs = append(errs, proxy.FieldError{Field: prefix + "claimsPerNamespacePerHour", Reason: ReasonPoolClaimsBoundInvalid,
			Description: fmt.Sprintf("%d is outside 0-%d: how many VMs one namespace's proxies may claim from the pool in any hour (0: no bound)", n, MaxPoolSize*60)})
	}
	errs = append(errs, a.validatePlacement(prefix, spec.Provider, spec.Placement, "")...)
	if len(errs) > 0 {
		return spec, invalid(errs...)
	}
	return spec, nil
}

func (a *API) getPool(x *exchange) {
	name, e := poolName(x, tenancy.GetPool)
	if e != nil {
		x.fail(e)
		return
	}
	p, err := a.store.GetPool(x.ctx, name)
	a.answerPool(x, name, p, err, http.StatusOK)
}

// deletePool asks for the pool's deletion: its reconcile deletes the
// unclaimed VMs, then the pool.
func (a *API) deletePool(x *exchange) {
	name, e := poolName(x, tenancy.DeletePool)
	if e != nil {
		x.fail(e)
		return
	}
	p, err := a.store.RequestPoolDeletion(x.ctx, name, a.now())
	a.answerPool(x, name, p, err, http.StatusAccepted)
}

func (a *API) answerPool(x *exchange, name string, p *proxy.Pool, err error, code int) {
	switch {
	case errors.Is(err, proxy.ErrNotFound):
		e := newError(http.StatusNotFound, ReasonPoolNotFound, "pool %s not found", name)
		e.metadata = map[string]string{"pool": name}
		x.fail(e)
	case err != nil:
		x.fail(a.storeError(x.ctx, err))
	default:
		x.reply(code, p)
	}
}

func (a *API) listPools(x *exchange) {
	if !x.caller.admin {
		x.fail(adminRequired(tenancy.ListPools))
		return
	}
	size, e := pageSize(x.r)
	if e != nil {
		x.fail(e)
		return
	}
	page, next, err := a.store.ListPools(x.ctx, size, x.r.URL.Query().Get("pageToken"))
	switch {
	case errors.Is(err, proxy.ErrInvalidPageToken):
		x.fail(badPageToken("a list of pools"))
	case err != nil:
		x.fail(a.storeError(x.ctx, err))
	default:
		if page == nil {
			page = []*proxy.Pool{}
		}
		x.reply(http.StatusOK, poolsPage{Pools: page, NextPageToken: next})
	}
}
