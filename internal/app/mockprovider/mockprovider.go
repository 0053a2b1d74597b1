// Package mockprovider links the mock provider into an App: the local stack
// and the tests pass Linked() in app.Options, and the deployed functions do
// not, so they contain no mock (a deploy test holds `go list -deps
// ./functions` to that) and refuse PROVIDERS=mock at start-up.
package mockprovider

import (
	"context"
	"log/slog"

	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
)

// Linked is the mock provider as app.Options.Linked takes it.
func Linked() app.Linked {
	return app.Linked{Type: mock.Type, Validator: mock.Validate, InPlace: true, New: constructor}
}

// Options are the mock's options from the configuration's MOCK_ settings,
// on the wall clock.
func Options(c app.MockConfig) mock.Options {
	return mock.Options{
		Clock:             clock.Real{},
		ProvisioningDelay: c.ProvisioningDelay,
		ReconfigureDelay:  c.ReconfigureDelay,
		Deployment:        c.Deployment,
	}
}

// constructor makes the mock provider, whose VMs call home on the
// call-home topic as real ones do, so the local stack takes the
// production path: the message's run, not a poll, sees the VM ready.
func constructor(env app.ProviderEnv) provider.Constructor {
	c := env.Config.Mock
	opts := Options(c)
	if env.CallHome != nil && c.CallHome {
		log, publish := env.Log, env.CallHome
		opts.CallHome = func(h mock.CallHome) {
			msg := proxy.ReconcileMessage{Namespace: h.Namespace, Pool: h.Pool, Name: h.Name, UID: h.UID, Reason: proxy.ReasonReady}
			if h.BootError != "" {
				msg.Reason = proxy.ReasonBootFailed
			}
			if err := publish(context.Background(), msg, h.Instance); err != nil {
				log.Warn("mock VM could not call home; the sweep will find it", slog.String("uid", h.UID), slog.Any("error", err))
			}
		}
	}
	if c.Serve {
		opts.Serve = &mock.Serve{AllowDestinations: c.ServeAllow, Log: env.Log}
	}
	return func(context.Context) (provider.Provider, error) { return mock.New(opts), nil }
}
