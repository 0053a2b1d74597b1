package hetzner

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/egress-proxies/egress/internal/pacing"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

// Plugin is Hetzner Cloud as the house takes it (internal/clouds lists
// it): its variables, its constructor and its rules. Its servers boot by
// cloud-init and are read through the proxy port (the status door); their
// user-data cannot change after the create, so a change gets a new
// server and no warm pool is served.
var Plugin = plugin.Plugin{
	Type:             Type,
	Name:             "Hetzner Cloud",
	Vars:             vars,
	New:              newFromEnv,
	Validator:        validatorOf,
	Prices:           pricesFromEnv,
	PricedPlacements: pricedPlacements,
	Boot:             plugin.Boot{Kind: plugin.BootCloudInit},
	Readiness:        plugin.StatusDoor,
	// 3,600 requests an hour per project, a bucket refilled one a second
	// ("Rate Limiting"): a minute's 60, so that a window spent at once
	// is a minute's refill, never the hour's.
	Rate: pacing.Rate{Calls: 60, Window: time.Minute, Source: "https://docs.hetzner.cloud/reference/cloud#rate-limiting"},
	// As the Hetzner fake counted them for a warm process's server
	// (hetznersim's TestCallsAsCounted): a create; a get; a get and a
	// delete; the lists of servers and of Primary IPs.
	Calls: pacing.Calls{Create: 1, Get: 1, Delete: 2, ListByTag: 2},
	// Every server's public_net.ipv6.ip is a /64 of its own.
	IPv6Prefix:   64,
	FakeEndpoint: "HETZNER_ENDPOINT",
	Placement: plugin.Placement{
		Region:             "a network zone (eu-central, us-east, us-west, ap-southeast)",
		Zone:               "a location of it (fsn1, nbg1, hel1, ash, hil, sin)",
		MachineType:        "a server type (outside eu-central a CPX type such as cpx22)",
		DefaultMachineType: DefaultServerType,
		Image:              "a Hetzner image (debian-13)",
		Regions: []string{
			"eu-central     fsn1 (Falkenstein), nbg1 (Nuremberg), hel1 (Helsinki)",
			"us-east        ash (Ashburn, VA)",
			"us-west        hil (Hillsboro, OR)",
			"ap-southeast   sin (Singapore)",
		},
		Example: "--provider hetzner --region eu-central --zone fsn1 --allowed-source-range 203.0.113.0/24 --ip-policy Static",
	},
	Images: plugin.Images{Default: DefaultImage, Allowed: DefaultAllowedImages, Var: "HETZNER_ALLOWED_IMAGES"},
	APIs:   []plugin.API{{Name: "Hetzner Cloud API v1", Module: "github.com/hetznercloud/hcloud-go/v2"}},
	Words:  []string{"hcloud"},
	// The simulated cloud and the benchmark's phase, over the fake.
	Dev: "github.com/egress-proxies/egress/internal/provider/hetzner/hetznersim",
	// A server booted by the image test (make image-test).
	ImageTest: "github.com/egress-proxies/egress/internal/provider/hetzner/hetznerimage",
	Terraform: plugin.Terraform{
		Module: "deploy/terraform/hetzner-firewall",
		// The API token, read & write: Hetzner has no permission model
		// to derive a narrower grant from.
		Secrets: []string{"google_secret_manager_secret.hetzner_token"},
	},
}

// LocalToken is the token the provider sends to a HETZNER_ENDPOINT (a
// fake: the local stack's and the tests'), which holds no secret of
// anyone's.
const LocalToken = "egress-local-hetzner-token"

// vars are Hetzner's variables: what the operator allows of a placement,
// then the API and its token. The locations are the reconciler's too: it
// chooses among them for a placement that names none.
var vars = []plugin.Var{
	{Name: "HETZNER_ALLOWED_LOCATIONS", DefaultDoc: "every location", Readers: plugin.ReadByAPI | plugin.ReadByCallers,
		Meaning: "the Hetzner locations a placement may name or be given, comma-separated (fsn1, nbg1, hel1, ash, hil, sin); a placement's region is a network zone, eu-central, us-east, us-west or ap-southeast",
		Check: func(v string, _ plugin.Settings) error {
			for _, l := range plugin.SplitList(v) {
				if _, ok := Locations()[l]; !ok {
					return fmt.Errorf("holds %q, which is not a Hetzner location (fsn1, nbg1, hel1, ash, hil, sin)", l)
				}
			}
			return nil
		}},
	{Name: "HETZNER_ALLOWED_SERVER_TYPES", Default: strings.Join(DefaultAllowedServerTypes, ","), Readers: plugin.ReadByAPI | plugin.ReadByCallers,
		Meaning: "the server types a placement may name, comma-separated; it must hold cx23, the type of a placement that names none (CX types are sold in eu-central only: a US or Singapore placement names a CPX type)"},
	{Name: "HETZNER_ALLOWED_IMAGES", Default: strings.Join(DefaultAllowedImages, ","), Readers: plugin.ReadByAPI,
		Meaning: "the Hetzner images a placement may name, comma-separated; it must hold debian-13, the image of a placement that names none"},

	{Name: "HETZNER_ENDPOINT", Readers: plugin.ReadByCallers, Local: true,
		Meaning: "a Hetzner Cloud API to use instead of Hetzner's, sent the token `" + LocalToken + "` and no other: tests against a fake only",
		Check:   plugin.LoopbackURL("http://127.0.0.1:PORT/v1")},
	{Name: "HETZNER_TOKEN_SECRET", Readers: plugin.ReadByCallers,
		Meaning: "the Secret Manager version that holds the Hetzner Cloud API token (read & write), `projects/P/secrets/S/versions/latest`; the two functions that call Hetzner read it when they first do, and no environment variable, log line or document holds the token (Terraform makes the secret, you add its version)",
		Check: func(v string, s plugin.Settings) error {
			if v == "" && s.Get("HETZNER_ENDPOINT") == "" {
				return fmt.Errorf("is required with hetzner in PROVIDERS: name the secret version of the API token, such as projects/P/secrets/egress-hetzner-token/versions/latest")
			}
			return plugin.SecretVersion(v)
		}},
}

// newFromEnv reads the API token from Secret Manager when the provider is
// first used, and makes the provider with it; a failed read is not
// remembered (provider.Set), so the next use tries again. Against
// HETZNER_ENDPOINT (a fake) without a HETZNER_TOKEN_SECRET it sends
// LocalToken, and reads no secret.
func newFromEnv(env plugin.Env) provider.Constructor {
	s := env.Settings
	secret, endpoint := s.Get("HETZNER_TOKEN_SECRET"), s.Get("HETZNER_ENDPOINT")
	cfg := Config{Deployment: env.Deployment, Locations: s.List("HETZNER_ALLOWED_LOCATIONS"),
		Renderer: env.VM.Renderer, Prober: env.VM.Prober, Log: env.Log.With(slog.String("provider", Type))}
	return func(ctx context.Context) (provider.Provider, error) {
		token := LocalToken
		if secret != "" {
			var err error
			if token, err = env.ReadToken(ctx, "HETZNER_TOKEN_SECRET", secret); err != nil {
				return nil, err
			}
		}
		return New(NewClient(token, endpoint, nil), cfg)
	}
}

// PolicyOf is the operator's policy from the settings.
func PolicyOf(s plugin.Settings) Policy {
	return Policy{Locations: s.List("HETZNER_ALLOWED_LOCATIONS"), ServerTypes: s.List("HETZNER_ALLOWED_SERVER_TYPES"), Images: s.List("HETZNER_ALLOWED_IMAGES")}
}

func validatorOf(s plugin.Settings) (provider.Validator, error) {
	pol := PolicyOf(s)
	if err := pol.Check(); err != nil {
		return Validator(pol), fmt.Errorf("HETZNER_ALLOWED_LOCATIONS, HETZNER_ALLOWED_SERVER_TYPES and HETZNER_ALLOWED_IMAGES: the policy %w", err)
	}
	return Validator(pol), nil
}
