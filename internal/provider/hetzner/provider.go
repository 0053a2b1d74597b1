// Package hetzner is the Hetzner Cloud provider (type "hetzner"): each
// proxy is one server, created through Hetzner's API with its official Go
// SDK (github.com/hetznercloud/hcloud-go/v2), and, for a Static IP
// policy, one Primary IP kept across its servers.
//
// It keeps every rule the gcp provider keeps (docs/concepts/providers.md):
//
//   - Create is idempotent by the deterministic name. Hetzner has no
//     request id, but a server's name is unique in a project: a repeated
//     create is answered uniqueness_error, and the server of that name is
//     adopted when its uid label is the request's, and refused otherwise;
//     never a second server.
//   - The three labels (provider.LabelManaged, LabelUID, LabelDeployment)
//     are set in the create call itself.
//   - ListByTag lists by label selector, and keeps this deployment's
//     resources and those without a deployment label.
//   - Delete is idempotent.
//   - Placement: a proxy's region is a Hetzner network zone (eu-central,
//     us-east, us-west, ap-southeast) and its zone a location of it (fsn1,
//     nbg1, hel1, ash, hil, sin). A placement that names no location gets
//     one of the operator's allowed locations of the zone, chosen from the
//     uid, past those found out of capacity, as gcp chooses a zone.
//   - Errors are Hetzner's codes mapped to the contract's kinds, as one
//     table (errors.go): resource_unavailable and placement_error are
//     capacity (the next location is tried), resource_limit_exceeded is
//     quota, rate_limit_exceeded is rate limited with the wait the
//     RateLimit-* headers give.
//
// What gcp reads from guest attributes, this provider asks the VM: a
// server that runs the default bootstrap is Running only once its proxy
// answers the control plane's status request (Prober), and what it boots
// with is user-data made by a Renderer (readiness.go). Both are the VM
// side's; the composition root enables the provider only with both.
//
// It does not implement provider.Reconfigurer: Hetzner's user-data is
// fixed at create and its metadata service carries no labels, so there
// is no channel to hand a running server a new configuration; the
// reconciler replaces the server for a change, and the API refuses a warm
// pool of this provider (Validator), whose claims need one.
//
// Nor does it implement provider.QuotaReader: Hetzner publishes no API
// for a project's limits (they show in its Console only, and a create past
// one answers 403 resource_limit_exceeded), so placement reads the limits
// an account's document holds.
//
// providerIDs are hcloud://SERVER_ID for a server and
// hcloud-primary-ip://ID for a Primary IP.
//
// The files: provider.go (configuration, the client), create.go (the
// server, its location, its Primary IP), get.go (Get, states, readiness),
// delete.go, list.go (ListByTag), readiness.go (the Prober and Renderer
// the VM side provides), ids.go (providerIDs), errors.go
// (classification), validate.go (placements and the operator's policy).
package hetzner

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"github.com/egress-proxies/egress/internal/provider"
)

// Type is the registry type of this provider.
const Type = "hetzner"

// Config is the provider's configuration (internal/app reads it from
// HETZNER_* variables).
type Config struct {
	// Deployment is the value of every resource's
	// provider.LabelDeployment, and the one ListByTag lists; empty is
	// provider.DefaultDeployment.
	Deployment string
	// Locations are the locations a placement without one may be given
	// (HETZNER_ALLOWED_LOCATIONS); empty allows every location of the
	// network zone.
	Locations []string
	// Renderer makes the user-data of a server that runs the default
	// bootstrap; Prober asks such a server whether its proxy serves.
	// Both are required.
	Renderer Renderer
	Prober   Prober
	// Log receives the provider's decisions (an adopted server, a rate
	// limit, a location out of capacity); nil discards them. It never
	// receives the token or a server's user-data.
	Log *slog.Logger
	// Now is the clock the rate limit's wait is read against; nil is
	// time.Now.
	Now func() time.Time
}

// Provider is the Hetzner Cloud provider.
type Provider struct {
	c   *hcloud.Client
	cfg Config
}

// NewClient is the SDK's client for token, against endpoint (Hetzner's
// own when empty; a fake in tests). It does not retry by itself: a rate
// limit, a conflict or a 5xx goes back to the caller classified, so the
// reconciler's backoff (and the wait the rate limit asks for) decides,
// and every call is metered once. A nil httpClient is http.DefaultClient's
// kind.
func NewClient(token, endpoint string, httpClient *http.Client) *hcloud.Client {
	opts := []hcloud.ClientOption{
		hcloud.WithToken(token),
		hcloud.WithApplication("egress-proxies", ""),
		hcloud.WithRetryOpts(hcloud.RetryOpts{MaxRetries: 0}),
	}
	if endpoint != "" {
		opts = append(opts, hcloud.WithEndpoint(endpoint))
	}
	if httpClient != nil {
		opts = append(opts, hcloud.WithHTTPClient(httpClient))
	}
	return hcloud.NewClient(opts...)
}

// New returns a provider over the client (NewClient).
func New(c *hcloud.Client, cfg Config) (*Provider, error) {
	if c == nil {
		return nil, errors.New("hetzner provider: no client")
	}
	if cfg.Renderer == nil || cfg.Prober == nil {
		return nil, errors.New("hetzner provider: a Renderer (the servers' user-data) and a Prober (their readiness) are required")
	}
	if cfg.Deployment == "" {
		cfg.Deployment = provider.DefaultDeployment
	}
	if err := provider.ValidateDeployment(cfg.Deployment); err != nil {
		return nil, fmt.Errorf("hetzner provider: %w", err)
	}
	for _, l := range cfg.Locations {
		if _, ok := networkZoneOf[l]; !ok {
			return nil, fmt.Errorf("hetzner provider: %q is not a Hetzner location (%s)", l, locationList())
		}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Provider{c: c, cfg: cfg}, nil
}

var _ provider.Provider = (*Provider)(nil)

// The labels this provider adds to the contract's three.
const (
	// labelStaticIP marks a server that uses its proxy's Primary IP, so
	// Get names the address without another call.
	labelStaticIP = "egress-static-ip"
	// labelProbePort marks a server that runs the default bootstrap, with
	// the port its proxy answers the control plane's status request on.
	labelProbePort = "egress-proxy-port"
)

// labels are the labels of every resource made for req: the garbage
// collection contract's.
func (p *Provider) labels(req provider.CreateRequest) map[string]string {
	return map[string]string{
		provider.LabelManaged:    provider.LabelManagedYes,
		provider.LabelUID:        req.UID,
		provider.LabelDeployment: p.cfg.Deployment,
	}
}

// FirewallSelector is the label selector of the servers of deployment:
// the one Hetzner firewall of the deployment (deploy/terraform) is
// applied by it, so every proxy server is behind it from its first boot.
func FirewallSelector(deployment string) string {
	return provider.LabelManaged + "=" + provider.LabelManagedYes + "," + provider.LabelDeployment + "=" + deployment
}

// DefaultPollInterval is how often the reconciler asks a booting server
// whether its proxy serves (provider.Polled): a Hetzner server boots
// the proxy in about a minute, and each ask is one API read of the
// project's 3600 an hour and one status request to the server.
const DefaultPollInterval = 10 * time.Second

// PollInterval makes the provider a provider.Polled: its servers cannot
// call home.
func (p *Provider) PollInterval() time.Duration { return DefaultPollInterval }
