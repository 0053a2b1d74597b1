package app

import (
	"net/http"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/httpapi"
)

// newProxyAPI is the ProxyAPI handler. It meters each request as one
// invocation itself, on the request's own line.
func newProxyAPI(a *App) http.Handler {
	c := a.Config
	policy := c.API.Policy
	policy.CloudInitSecretPrefix = c.CloudInitSecretPrefix
	return httpapi.New(a.store, clock.Real{}, a.Log, httpapi.Options{
		Function:          string(ProxyAPI),
		Quota:             c.API.Quota,
		DefaultProvider:   c.DefaultProvider,
		Providers:         a.Providers,
		Policy:            policy,
		Admins:            c.API.Admins,
		CreatesPerHour:    c.API.CreatesPerHour,
		RotateMinInterval: c.API.RotateMinInterval,
		LocalIdentity:     c.API.LocalIdentity,
		Project:           c.Project,
	})
}

// ProxyAPI is the HTTP handler of the ProxyAPI function. It is nil when the
// App does not serve it.
func (a *App) ProxyAPI() http.Handler {
	if a.api == nil {
		return nil
	}
	return a.api
}
