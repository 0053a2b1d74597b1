package app

import (
	"net/http"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/metering"
)

// proxyAPI is the ProxyAPI handler, metered as one invocation per request.
type proxyAPI struct{ http.Handler }

func newProxyAPI(a *App) *proxyAPI {
	api := httpapi.New(a.store, clock.Real{}, a.Log, httpapi.Options{
		Quota:           a.Config.API.Quota,
		DefaultProvider: a.Config.DefaultProvider,
		KnownProvider:   a.Providers.Has,
		Project:         a.Config.Project,
	})
	return &proxyAPI{metering.HTTP(string(ProxyAPI), a.Log, api)}
}

// ProxyAPI is the HTTP handler of the ProxyAPI function. It is nil when the
// App does not serve it.
func (a *App) ProxyAPI() http.Handler {
	if a.api == nil {
		return nil
	}
	return a.api
}
