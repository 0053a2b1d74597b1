package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// authorize reads the namespace and decides whether c may do perm in it.
// It returns the namespace (nil when an admin acts where there is none,
// which only listing and creating namespaces do not refuse) or the answer
// to give instead.
func (a *API) authorize(ctx context.Context, c caller, name string, perm tenancy.Permission) (*tenancy.Namespace, *apiError) {
	ns, err := a.store.GetNamespace(ctx, name)
	switch {
	case errors.Is(err, tenancy.ErrNamespaceNotFound):
		ns = nil
	case err != nil:
		return nil, a.storeError(ctx, err)
	}
	if e := decide(c, name, ns, perm); e != nil {
		return nil, e
	}
	return ns, nil
}

// decide is the access rule for namespace name as ns says it is (nil:
// there is none):
//
//   - a caller outside the namespace — no role in it, not an admin — gets
//     403 for everything in it, with the same body whether the namespace or
//     the proxy exists or not, so nobody learns what exists where they may
//     not look;
//   - a member whose role does not grant perm gets 403 naming the role it
//     needs;
//   - members and admins get 404 for what does not exist: admins for a
//     namespace that does not exist, here; both for a proxy that does not,
//     from the handler.
func decide(c caller, name string, ns *tenancy.Namespace, perm tenancy.Permission) *apiError {
	role := ns.RoleOf(c.email)
	switch {
	case c.admin && ns == nil:
		return namespaceNotFound(name)
	case c.admin:
		return nil
	case role == "":
		return denied(c, name)
	case !tenancy.Allowed(perm, false, role):
		need := tenancy.Permissions[perm]
		if need == "" {
			return adminRequired(perm)
		}
		e := newError(http.StatusForbidden, ReasonRoleInsufficient, "%s is %s in namespace %s; %s needs %s", c.email, role, name, perm, need)
		e.metadata = map[string]string{"namespace": name, "permission": string(perm), "role": string(role), "required": string(need)}
		return e
	}
	return nil
}

// denied is the one answer to a caller outside a namespace.
func denied(c caller, name string) *apiError {
	e := newError(http.StatusForbidden, ReasonNamespaceDenied, "%s has no role in namespace %s; an owner of the namespace or a platform admin can add you", c.email, name)
	e.metadata = map[string]string{"namespace": name}
	return e
}

func adminRequired(perm tenancy.Permission) *apiError {
	e := newError(http.StatusForbidden, ReasonAdminRequired, "%s is for platform admins (API_ADMINS) only", perm)
	e.metadata = map[string]string{"permission": string(perm)}
	return e
}

func namespaceNotFound(name string) *apiError {
	e := newError(http.StatusNotFound, ReasonNamespaceNotFound, "namespace %s does not exist; a platform admin creates it with PUT /v1/namespaces/%s", name, name)
	e.metadata = map[string]string{"namespace": name}
	return e
}

func proxyNotFound(key proxy.Key) *apiError {
	e := newError(http.StatusNotFound, ReasonProxyNotFound, "proxy %s not found", key)
	e.metadata = map[string]string{"resource": key.Path()}
	return e
}

// storeError is the answer to a store that failed, logged with the error
// (the answer says no more than that the store failed).
func (a *API) storeError(ctx context.Context, err error) *apiError {
	var e *apiError
	if errors.As(err, &e) {
		return e
	}
	a.log.ErrorContext(ctx, "request failed", slog.Any("error", err))
	if errors.Is(err, proxy.ErrConflict) {
		// A transaction that kept losing: the client may simply retry.
		return newError(http.StatusServiceUnavailable, ReasonStoreUnavailable, "the store was too busy to serve the request; retry later")
	}
	return newError(http.StatusInternalServerError, ReasonInternal, "the store could not serve the request; retry later")
}
