package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/egress-proxies/egress/internal/pricing/pricestore"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

// priceClouds are the enabled clouds as the daily price refresh reads
// them: each one's price source (plugin.Plugin.Prices, made with the
// same identity and secrets as its provider) and the placements its
// operator allows (plugin.Plugin.PricedPlacements); a cloud that declares
// no source is listed without one.
func (a *App) priceClouds() []pricestore.Cloud {
	c := a.Config
	var out []pricestore.Cloud
	for _, typ := range c.Providers {
		p, ok := pluginOf(c.plugins, typ)
		if !ok {
			continue
		}
		cl := pricestore.Cloud{Type: typ}
		if p.Prices != nil {
			env := plugin.Env{Settings: c.Clouds[typ], Project: c.Project, Deployment: c.Deployment,
				Log: a.Log.With(slog.String("provider", typ)), ReadSecret: a.readSecretVersion, IDTokens: a.idTokenSource}
			cl.Source = p.Prices(env)
			if p.PricedPlacements != nil {
				cl.Keys = p.PricedPlacements(c.Clouds[typ])
			}
		}
		out = append(out, cl)
	}
	return out
}

// NoPrices are the enabled clouds that declare no price source: the
// catalog answers their prices unknown without a read
// (pricestore.NewCatalog).
func (a *App) NoPrices() []string {
	var out []string
	for _, typ := range a.Config.Providers {
		if p, ok := pluginOf(a.Config.plugins, typ); ok && p.Prices == nil {
			out = append(out, typ)
		}
	}
	return out
}

// refreshPrices runs the daily price refresh on a collector's tick: at
// most one read of each cloud a day (pricestore.Every), whose failure is
// logged (with the cloud and why) and keeps the last prices, and never
// fails the tick: the next tick tries again within the hour.
func (a *App) refreshPrices(ctx context.Context, log *slog.Logger, now time.Time) {
	if a.prices == nil {
		return
	}
	if _, err := a.prices.Refresh(ctx, now); err != nil {
		log.WarnContext(ctx, "CollectGarbage: the price refresh failed for some clouds; their last prices are kept", slog.Any("error", err))
	}
}
