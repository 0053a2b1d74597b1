package app

import (
	"context"
	"fmt"
	"net/http"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/console"
	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/iap"
	"github.com/egress-proxies/egress/internal/spend"
)

// newProxyAPI is the ProxyAPI handler. It meters each request as one
// invocation itself, on the request's own line.
func newProxyAPI(ctx context.Context, a *App) (http.Handler, error) {
	c := a.Config
	policy := c.API.Policy
	policy.CloudInitSecretPrefix = c.CloudInitSecretPrefix
	var verifier httpapi.IAPVerifier
	if c.API.IAPAudience != "" {
		v, err := iap.New(ctx, c.API.IAPAudience, iap.Options{})
		if err != nil {
			return nil, err
		}
		verifier = v
	}
	// What an account of each enabled cloud may set, from its plugin.
	accountVars := map[string][]string{}
	for _, typ := range c.Providers {
		if p, ok := pluginOf(c.plugins, typ); ok {
			accountVars[typ] = p.PerAccount()
		}
	}
	api := httpapi.New(a.store, clock.Real{}, a.Log, httpapi.Options{
		Function:          string(ProxyAPI),
		Quota:             c.API.Quota,
		DefaultProvider:   c.DefaultProvider,
		Providers:         a.Providers,
		AccountVars:       accountVars,
		Policy:            policy,
		Admins:            c.API.Admins,
		CreatesPerHour:    c.API.CreatesPerHour,
		RotateMinInterval: c.API.RotateMinInterval,
		LocalIdentity:     c.API.LocalIdentity,
		IAP:               verifier,
		Project:           c.Project,
		// The store's catalog (App.Catalog): a namespace's month and its
		// budget are held to the prices last read.
		Costs: spend.Costs{Catalog: a.Catalog, Rates: c.CostRates},
	})
	// The web console, on the API's own URL, calling its routes in
	// process as the browser that asked.
	con, err := console.New(console.Options{API: api.Routes(), Identity: api, Log: a.Log, IAP: verifier != nil})
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	api.Handle(console.Prefix, con)
	api.Handle("/console", con)
	return api, nil
}

// ProxyAPI is the HTTP handler of the ProxyAPI function. It is nil when the
// App does not serve it.
func (a *App) ProxyAPI() http.Handler {
	if a.api == nil {
		return nil
	}
	return a.api
}
