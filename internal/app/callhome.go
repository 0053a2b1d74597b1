package app

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"google.golang.org/api/option"

	"github.com/egress-proxies/egress/internal/accesslog"
	"github.com/egress-proxies/egress/internal/callhome"
	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/provider/plugin"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/queue"
	"github.com/egress-proxies/egress/internal/vmidentity"
)

// callHomeHandler checks the VMs' messages on proxy-callhome: their
// identity tokens against Google's keys, and the proxy VMs' account (the
// variable a call-home cloud's plugin names as its CallHomeAccount); the
// access lines go to Cloud Logging. A process
// that links a provider of its own (the local stack, the tests) trusts
// the tokens its issuer signs for that provider's VMs instead, and logs
// the access lines itself.
func (a *App) callHomeHandler(ctx context.Context, now clock.Clock) (*callhome.Handler, error) {
	aud := vmidentity.Audience(a.Config.Project, queue.CallHomeTopic)
	h := &callhome.Handler{Limiter: a.store, Docs: a.store, Clock: now, Log: a.Log}
	var err error
	if a.issuer != nil {
		h.Verifier, err = vmidentity.NewVerifier(ctx, aud, a.Config.Project, "", option.WithHTTPClient(a.issuer.KeysClient()))
		// At Info whatever LOG_LEVEL says: the lines are the proxies'
		// account, not the functions' log, and LOG_LEVEL does not hide
		// Cloud Logging's entries either.
		info := a.Config
		info.LogLevel = slog.LevelInfo
		h.Sink = accesslog.Local{Log: newLogger(info, a.logOutput)}
	} else {
		h.Verifier, err = vmidentity.NewVerifier(ctx, aud, a.Config.Project, a.callHomeAccount())
		h.Sink = accesslog.NewCloudLogging(a.Config.Project)
	}
	return h, err
}

// IdentityToken is the identity token a linked provider's VM named
// instance gets from its metadata server, for its call-home: what the
// local stack's VMs and the tests sign with.
func (a *App) IdentityToken(instance string) (string, error) {
	if a.issuer == nil {
		return "", errors.New("this process links no provider whose VMs it signs for: its VMs' tokens are Google's")
	}
	return a.issuer.Token(vmidentity.Audience(a.Config.Project, queue.CallHomeTopic),
		vmidentity.Instance{Project: a.Config.Project, Zone: "local", Name: instance, ID: instance}, time.Now())
}

// publishCallHome publishes a linked provider's VM's call-home with an
// identity token for it, as the VM's metadata server would give it.
func (a *App) publishCallHome(ctx context.Context, msg proxy.ReconcileMessage, instance string) error {
	tok, err := a.IdentityToken(instance)
	if err != nil {
		return err
	}
	return a.callHome.PublishWith(ctx, msg, map[string]string{queue.IdentityAttribute: tok})
}

// callHomeAccount is the service account the call-home tokens of the
// enabled clouds' VMs name: the value of the CallHomeAccount variable of
// the first enabled cloud that calls home and names one ("" when none
// does, which checks no account).
func (a *App) callHomeAccount() string {
	c := &a.Config
	for _, p := range enabledClouds(c, func(p plugin.Plugin) bool { return p.Readiness == plugin.CallsHome && p.CallHomeAccount != "" }) {
		if account := c.Clouds[p.Type].Get(p.CallHomeAccount); account != "" {
			return account
		}
	}
	return ""
}
