package digitalocean

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/egress-proxies/egress/internal/pacing"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/plugin"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// Plugin is DigitalOcean as the house takes it (internal/clouds lists it):
// its variables, its constructor and its rules. Its Droplets boot by
// cloud-init and are read through the proxy port (the status door); their
// user-data cannot change after the create, so a change gets a new
// Droplet and no warm pool is served. A Static proxy's Droplet is
// told to run DigitalOcean's VM-side part (Boot.Follow: package dovm,
// on MetadataURL) so that what it sends leaves from its reserved IP,
// through the address's anchor gateway, once the provider assigned it. The provider makes the deployment's
// cloud firewall itself (MakesFirewall), from the house's settings.
// MetadataURL is DigitalOcean's metadata document on every Droplet: the
// whole of its metadata, reserved_ip and the public interface's
// anchor_ipv4 among it, in one JSON answer (what cloud-init's
// DigitalOcean datasource reads too), which a Static proxy's Droplet
// follows (package dovm). It is the control plane's to name, in the
// boot's setting: dovm reads whatever URL the setting gives, and this
// package links no VM code.
const MetadataURL = "http://169.254.169.254/metadata/v1.json"

var Plugin = plugin.Plugin{
	Type:             Type,
	Name:             "DigitalOcean Droplets",
	Vars:             vars,
	New:              newFromEnv,
	Validator:        validatorOf,
	Prices:           pricesFromEnv,
	PricedPlacements: pricedPlacements,
	Boot:             plugin.Boot{Kind: plugin.BootCloudInit, Follow: vmconfig.Follow(Type, MetadataURL)},
	Readiness:        plugin.StatusDoor,
	// 5,000 requests an hour and 250 a minute per token, both at once:
	// 83 a minute holds the hour's, and is within the minute's.
	Rate: pacing.Rate{Calls: 83, Window: time.Minute, Source: "https://docs.digitalocean.com/reference/api/digitalocean/#section/Introduction/Rate-Limit"},
	// As the DigitalOcean fake counted them for a warm process's Droplet
	// (dosim's TestCallsAsCounted), its firewall's and tag's requests
	// included.
	Calls: pacing.Calls{Create: 2, Get: 1, Delete: 5, ListByTag: 3},
	// A Droplet made with ipv6 true gets 16 addresses, a /124, of which
	// networks.v6 names the first.
	IPv6Prefix:    124,
	MakesFirewall: true,
	FakeEndpoint:  "DIGITALOCEAN_ENDPOINT",
	Placement: plugin.Placement{
		Region:             "a metro (nyc, sfo, tor, ams, lon, fra, sgp, blr, syd)",
		Zone:               "a region of it (nyc1, nyc3, sfo2, sfo3, ams3, …)",
		MachineType:        "a Droplet size slug (s-1vcpu-1gb, s-1vcpu-2gb, …)",
		DefaultMachineType: DefaultSize,
		Image:              "a DigitalOcean image slug (debian-13-x64)",
		Regions: []string{
			"nyc   nyc1, nyc3 (New York)",
			"sfo   sfo2, sfo3 (San Francisco)",
			"tor   tor1 (Toronto)",
			"ams   ams3 (Amsterdam)",
			"lon   lon1 (London)",
			"fra   fra1 (Frankfurt)",
			"sgp   sgp1 (Singapore)",
			"blr   blr1 (Bangalore)",
			"syd   syd1 (Sydney)",
		},
		Example: "--provider digitalocean --region ams --zone ams3 --allowed-source-range 203.0.113.0/24 --ip-policy Static",
	},
	Images: plugin.Images{Default: DefaultImage, Allowed: DefaultAllowedImages, Var: "DIGITALOCEAN_ALLOWED_IMAGES"},
	APIs:   []plugin.API{{Name: "DigitalOcean API v2", Module: "github.com/digitalocean/godo"}},
	Words:  []string{"droplet"},
	// The simulated cloud and the benchmark's phase, over the fake.
	Dev: "github.com/egress-proxies/egress/internal/provider/digitalocean/dosim",
	// What a Static proxy's Droplet runs to leave by its reserved IP
	// (Boot.Follow).
	VM: "github.com/egress-proxies/egress/internal/provider/digitalocean/dovm",
	// A Droplet booted by the image test (make image-test).
	ImageTest: "github.com/egress-proxies/egress/internal/provider/digitalocean/doimage",
	Terraform: plugin.Terraform{
		// The API token, of the scopes docs/operations/digitalocean.md
		// lists: DigitalOcean's custom scopes are per resource kind, not
		// per resource, so the token is the grant.
		Secrets: []string{"google_secret_manager_secret.digitalocean_token"},
	},
}

// LocalToken is the token the provider sends to a DIGITALOCEAN_ENDPOINT
// (a fake: the local stack's and the tests'), which holds no secret of
// anyone's.
const LocalToken = "egress-local-digitalocean-token"

// vars are DigitalOcean's variables: what the operator allows of a
// placement, then the API and its token. The regions are the
// reconciler's too: it chooses among them for a placement that names
// none.
var vars = []plugin.Var{
	{Name: "DIGITALOCEAN_ALLOWED_REGIONS", DefaultDoc: "every region", Readers: plugin.ReadByAPI | plugin.ReadByCallers,
		Meaning: "the DigitalOcean regions a placement may name or be given, comma-separated (" + regionList() + "); a placement's region is a metro (" + metroList() + ")",
		Check: func(v string, _ plugin.Settings) error {
			return Policy{Regions: plugin.SplitList(v), Sizes: []string{DefaultSize}, Images: []string{DefaultImage}}.Check()
		}},
	{Name: "DIGITALOCEAN_ALLOWED_SIZES", Default: strings.Join(DefaultAllowedSizes, ","), Readers: plugin.ReadByAPI | plugin.ReadByCallers,
		Meaning: "the Droplet sizes a placement may name, comma-separated; it must hold " + DefaultSize + ", the size of a placement that names none"},
	{Name: "DIGITALOCEAN_ALLOWED_IMAGES", Default: strings.Join(DefaultAllowedImages, ","), Readers: plugin.ReadByAPI,
		Meaning: "the DigitalOcean images a placement may name, comma-separated; it must hold " + DefaultImage + ", the image of a placement that names none"},

	{Name: "DIGITALOCEAN_ENDPOINT", Readers: plugin.ReadByCallers, Local: true,
		Meaning: "a DigitalOcean API to use instead of DigitalOcean's, sent the token `" + LocalToken + "` and no other: tests against a fake only",
		Check:   plugin.LoopbackURL("http://127.0.0.1:PORT/")},
	{Name: "DIGITALOCEAN_TOKEN_SECRET", Readers: plugin.ReadByCallers,
		Meaning: "the Secret Manager version that holds the DigitalOcean API token (custom scopes: droplet, reserved_ip, firewall and tag, account read), `projects/P/secrets/S/versions/latest`; the two functions that call DigitalOcean read it when they first do, and no environment variable, log line or document holds the token (Terraform makes the secret, you add its version)",
		Check: func(v string, s plugin.Settings) error {
			if v == "" && s.Get("DIGITALOCEAN_ENDPOINT") == "" {
				return fmt.Errorf("is required with digitalocean in PROVIDERS: name the secret version of the API token, such as projects/P/secrets/egress-digitalocean-token/versions/latest")
			}
			return plugin.SecretVersion(v)
		}},
	{Name: "DIGITALOCEAN_SSH_KEYS", DefaultDoc: "none", Readers: plugin.ReadByCallers,
		Meaning: "ids or fingerprints of the account's SSH keys to put on every Droplet, comma-separated; without one DigitalOcean mails the account a root password for each Droplet (the VM's filter admits no SSH either way)"},
}

// newFromEnv reads the API token from Secret Manager when the provider is
// first used, and makes the provider with it; a failed read is not
// remembered (provider.Set), so the next use tries again. Against
// DIGITALOCEAN_ENDPOINT (a fake) without a DIGITALOCEAN_TOKEN_SECRET it
// sends LocalToken, and reads no secret.
func newFromEnv(env plugin.Env) provider.Constructor {
	s := env.Settings
	secret, endpoint := s.Get("DIGITALOCEAN_TOKEN_SECRET"), s.Get("DIGITALOCEAN_ENDPOINT")
	cfg := Config{Deployment: env.Deployment, Regions: s.List("DIGITALOCEAN_ALLOWED_REGIONS"), SSHKeys: s.List("DIGITALOCEAN_SSH_KEYS"),
		Firewall: Firewall{ProxyPorts: env.Firewall.ProxyPorts, SourceRanges: env.Firewall.SourceRanges, StatusSourceRanges: env.Firewall.StatusSourceRanges},
		Renderer: env.VM.Renderer, Prober: env.VM.Prober, Log: env.Log.With(slog.String("provider", Type))}
	return func(ctx context.Context) (provider.Provider, error) {
		token := LocalToken
		if secret != "" {
			var err error
			if token, err = env.ReadToken(ctx, "DIGITALOCEAN_TOKEN_SECRET", secret); err != nil {
				return nil, err
			}
		}
		c, err := NewClient(token, endpoint, nil)
		if err != nil {
			return nil, err
		}
		return New(c, cfg)
	}
}

// PolicyOf is the operator's policy from the settings.
func PolicyOf(s plugin.Settings) Policy {
	return Policy{Regions: s.List("DIGITALOCEAN_ALLOWED_REGIONS"), Sizes: s.List("DIGITALOCEAN_ALLOWED_SIZES"), Images: s.List("DIGITALOCEAN_ALLOWED_IMAGES")}
}

func validatorOf(s plugin.Settings) (provider.Validator, error) {
	pol := PolicyOf(s)
	if err := pol.Check(); err != nil {
		return Validator(pol), fmt.Errorf("DIGITALOCEAN_ALLOWED_REGIONS, DIGITALOCEAN_ALLOWED_SIZES and DIGITALOCEAN_ALLOWED_IMAGES: the policy %w", err)
	}
	return Validator(pol), nil
}
