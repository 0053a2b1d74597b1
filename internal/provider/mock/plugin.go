package mock

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"time"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/plugin"
	"github.com/egress-proxies/egress/internal/proxy"
)

// Plugin is the mock as the house takes it: registered as a cloud is,
// but linked only by the local stack and the tests, which pass it beside
// the production list (internal/clouds); the deployed functions do not
// contain it, and refuse PROVIDERS=mock at start-up. Its VMs live in the
// process, call home on the call-home topic as real ones do (so the
// local stack takes the production path: the message's run, not a poll,
// sees the VM ready) and take live changes in place.
var Plugin = plugin.Plugin{
	Type:             Type,
	Name:             "the mock",
	Vars:             vars,
	New:              newFromEnv,
	Validator:        func(plugin.Settings) (provider.Validator, error) { return Validate, nil },
	Prices:           func(plugin.Env) pricing.Source { return Prices{} },
	PricedPlacements: pricedPlacements,
	Boot:             plugin.Boot{Kind: plugin.BootNone},
	Readiness:        plugin.CallsHome,
	InPlace:          true,
	// No IPv6Prefix: its VMs serve on the developer's loopback, with no
	// routed prefix to pick sources from.
}

func durationCheck(v string, _ plugin.Settings) error {
	if d, err := time.ParseDuration(v); err != nil || d < 0 {
		return fmt.Errorf("is not a duration: want Go's syntax, such as 2s or 10m")
	}
	return nil
}

func booleanCheck(v string, _ plugin.Settings) error {
	if _, err := strconv.ParseBool(v); err != nil {
		return fmt.Errorf("is not a boolean: want true or false")
	}
	return nil
}

// vars are the mock's variables: the local stack's and the tests'.
var vars = []plugin.Var{
	{Name: "MOCK_PROVISIONING_DELAY", Default: "5s", Readers: plugin.ReadByCallers, Local: true,
		Meaning: "how long a mock VM takes to boot", Check: durationCheck},
	{Name: "MOCK_RECONFIGURE_DELAY", Default: "1s", Readers: plugin.ReadByCallers, Local: true,
		Meaning: "how long a running mock VM takes to apply a reconfiguration (new credentials, ranges or ports, or a claim of a warm VM) and report its generation: the metadata server's notice, the engine's live apply and the self-test again",
		Check:   durationCheck},
	{Name: "MOCK_CALL_HOME", Default: "true", Readers: plugin.ReadByCallers, Local: true,
		Meaning: "whether mock VMs call home when they are ready, as real ones do; `false` leaves them to the sweep",
		Check:   booleanCheck},
	{Name: "MOCK_SERVE", Default: "false", LocalDefault: "true", Readers: plugin.ReadByCallers, Local: true,
		Meaning: "whether each mock VM runs the proxy engine on a loopback address of its own, its IP, with its proxy's credentials, ranges and ports, so a Ready proxy's `proxyURL` takes requests",
		Check:   booleanCheck},
	{Name: "MOCK_SERVE_ALLOW", Default: "127.0.0.1/32", Readers: plugin.ReadByCallers, Local: true,
		Meaning: "what a serving mock proxy may reach besides the internet, comma-separated CIDRs: the local test targets; its deny list, the VM's, refuses the rest of loopback and every private range",
		Check: func(v string, _ plugin.Settings) error {
			for _, s := range plugin.SplitList(v) {
				if _, err := netip.ParsePrefix(s); err != nil {
					return fmt.Errorf("holds %q, which is not a CIDR such as 127.0.0.1/32", s)
				}
			}
			return nil
		}},
}

// OptionsOf are the mock's options from its settings, on the wall clock,
// without the call home and the serving, which need the house
// (newFromEnv adds them).
func OptionsOf(s plugin.Settings, deployment string) Options {
	provisioning, _ := time.ParseDuration(s.Get("MOCK_PROVISIONING_DELAY"))
	reconfigure, _ := time.ParseDuration(s.Get("MOCK_RECONFIGURE_DELAY"))
	return Options{Clock: clock.Real{}, ProvisioningDelay: provisioning, ReconfigureDelay: reconfigure, Deployment: deployment}
}

// newFromEnv makes the mock provider, whose VMs call home through the
// house's publisher when MOCK_CALL_HOME is on and the process publishes,
// and serve on loopback when MOCK_SERVE is on.
func newFromEnv(env plugin.Env) provider.Constructor {
	s := env.Settings
	opts := OptionsOf(s, env.Deployment)
	callHome, _ := strconv.ParseBool(s.Get("MOCK_CALL_HOME"))
	if env.CallHome != nil && callHome {
		log, publish := env.Log, env.CallHome
		opts.CallHome = func(h CallHome) {
			msg := proxy.ReconcileMessage{Namespace: h.Namespace, Pool: h.Pool, Name: h.Name, UID: h.UID, Reason: proxy.ReasonReady}
			if h.BootError != "" {
				msg.Reason = proxy.ReasonBootFailed
			}
			if err := publish(context.Background(), msg, h.Instance); err != nil {
				log.Warn("mock VM could not call home; the sweep will find it", slog.String("uid", h.UID), slog.Any("error", err))
			}
		}
	}
	if serve, _ := strconv.ParseBool(s.Get("MOCK_SERVE")); serve {
		opts.Serve = &Serve{AllowDestinations: s.List("MOCK_SERVE_ALLOW"), Log: env.Log}
	}
	return func(context.Context) (provider.Provider, error) { return New(opts), nil }
}
