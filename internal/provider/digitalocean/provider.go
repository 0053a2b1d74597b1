// Package digitalocean is the DigitalOcean provider (type
// "digitalocean"): each proxy is one Droplet, created through
// DigitalOcean's API with its official Go client
// (github.com/digitalocean/godo), behind the deployment's cloud firewall,
// and, for a Static IP policy, one reserved IP kept across its Droplets.
//
// It keeps every rule the gcp and hetzner providers keep
// (docs/concepts/providers.md), in DigitalOcean's terms:
//
//   - Labels are tags. DigitalOcean's tags are plain names, so each label
//     is one tag KEY:VALUE that round-trips (tags.go), and ListByTag lists
//     the Droplets of one tag, proxy-operator-managed:true, choosing the
//     deployment after it (a tag filter cannot say "this value or none").
//     The tags are set in the create call itself, with one of the
//     Droplet's own that names its deployment and uid; a Droplet's uid tag
//     and its own go with it (DigitalOcean keeps a tag that tags nothing,
//     and every listing reads all of them).
//   - Create is idempotent by the deterministic name, without a request
//     token: DigitalOcean has none, and a Droplet's name is not unique, so
//     a create first lists the Droplets tagged with the proxy's uid and
//     adopts the one of its name; it creates only when there is none.
//     What a crash between that find and the create can leave is below.
//   - Delete is idempotent; a Droplet DigitalOcean is destroying
//     ("archive") is gone.
//   - Placement: a proxy's region is a DigitalOcean metro (nyc, sfo, ams,
//     …) and its zone one of the metro's regions (nyc1, nyc3). A placement
//     that names no region slug gets one of the operator's allowed regions
//     of the metro, chosen from the uid, past those found out of capacity,
//     as gcp chooses a zone; so capacity moves on to the next region.
//   - Errors are DigitalOcean's HTTP statuses and messages mapped onto the
//     contract's kinds, as one table (errors.go): the account's Droplet
//     limit is quota, with the limit in the message; a size or region not
//     available is capacity; 429 is rate limited with the wait its
//     ratelimit-reset header gives.
//   - The deployment's cloud firewall (firewall.go) is applied by the
//     deployment's tag, so every Droplet is behind it from its first boot:
//     the proxy ports from the allowed ranges, and from the functions'
//     fixed egress for the status request. The provider makes it, or puts
//     its rules back, before its first create.
//
// What gcp reads from guest attributes, this provider asks the VM, as
// hetzner does: a Droplet that runs the default bootstrap is Running only
// once its proxy answers the control plane's status request (Prober), and
// it boots with user-data made by a Renderer. Both are the VM side's
// (package vmside).
//
// It does not implement provider.Reconfigurer: a Droplet's user-data is
// fixed at create, so a change gets a new Droplet and a warm pool is
// refused (Validator).
//
// # Static addresses
//
// A Static proxy's address is a reserved IP. DigitalOcean's reserved IPs
// carry no name and no tag, so what owns one is written down in a tag of
// its own, a record (reservedip.go) that tags nothing:
// egress-reserved-ip:ADDRESS:CREATED:DEPLOYMENT:UID. A reserved IP is
// assigned only to an active Droplet, so Get, once the proxy's Droplet is
// active, assigns the proxy's (its record's) or reserves one straight onto
// the Droplet, and writes the record after. The Droplet is Running only
// once the reserved IP is its and the proxy answers through it. The
// reserved IP stays when the Droplet goes; a replacement goes to the
// region the address is in, and a Static proxy whose region is out of
// capacity waits for it. Delete of the address's providerID releases it
// and then its record; ListByTag lists an unassigned reserved IP that has
// a record, for the collector.
//
// A reserved IP is where the proxy is reached, and where the control
// plane asks it. What leaves the Droplet leaves by the Droplet's own
// address unless the VM routes it through the reserved IP's anchor
// gateway (DigitalOcean's metadata gives it, interfaces/public/0/
// anchor_ipv4/gateway). So a Static proxy's Droplet is made to: its
// user-data has the setting egress-follow (Plugin's Boot.Follow, which
// the renderer writes for a Static request only), and its agent runs
// DigitalOcean's VM-side part, which follows the metadata until the
// reserved IP is assigned, then routes the Droplet's outbound IPv4
// through the anchor gateway from the anchor address and says the
// reserved IP in its status's egress (package dovm, anchor.go). Get reads the Droplet Running only once that egress
// is the proxy's reserved IP (get.go, staticEgress), so a proxy is Ready
// only when its target sees the reserved IP from the first request.
//
// # What a crash can leave
//
// Create finds, then creates. A crash (or a lost answer) after the create
// was sent leaves a Droplet with every tag, which the next create's find
// adopts: never a second one. What the find cannot see is a create it
// races: a second reconciler creating the same proxy at the same moment
// (the reconciler's lease is what forbids that), or a create sent but not
// yet listed when the retry lists (the fake lists a new Droplet at once;
// DigitalOcean's reference does not say its list never lags a create,
// and where it does, the retry makes a second Droplet).
// Such a duplicate has the proxy's uid and the deployment's tags, so it
// is never untagged and never another proxy's: the reconciler serves the
// one its document names, and the garbage collector, which lists every
// managed Droplet, deletes the one no document names, as any orphan. A
// crash cannot leave a Droplet without tags (they are in the create), nor
// adopt another proxy's (the find is by the uid's tag).
//
// A Droplet's own tags (tags.go): Delete destroys the Droplet, then
// deletes its uid's tag, then its own tag. A crash (or a fault) after the
// destroy and before the deletes is tried again by the reconciler's next
// Delete while DigitalOcean still lists the Droplet as being destroyed;
// once the Droplet is gone, the own tag is left tagging nothing, and it
// names its deployment and uid: ListByTag lists it as a residue
// (residue.go), which the collector deletes once the uid is unclaimed and
// the grace period past, the uid's tag first. A crash between the two
// tag deletes leaves the own tag alone, a residue all the same. A Droplet
// someone else destroys leaves the same residue. So a crash leaves tags
// for a while, never for ever, and never makes the collector delete a tag
// of another deployment or a person's: only the own tag says whose it is,
// and a uid's tag is deleted only with it. A Droplet made before the own
// tag has none; its Delete deletes its uid's and status id tags all the
// same, but a crash between its destroy and those deletes leaves them.
//
// For a reserved IP: reserved onto the Droplet, it is the proxy's by the
// Droplet's tags until the record is written, in these windows:
//
//   - A crash between the reserve and the record: the next Get of the
//     Droplet writes the missing record; a Delete of the Droplet before
//     any Get (the proxy deleted or replaced) writes it before the
//     destroy, so the unassigned address that the destroy leaves has its
//     record, and the collector (or the proxy's next Droplet) finds it.
//     A Delete whose record write fails destroys nothing, and is tried
//     again.
//   - A crash between Delete's record and its destroy: the record is
//     there, and the next Delete destroys.
//   - A crash between releasing an address and deleting its record: the
//     record, whose address the account no longer has, is a residue the
//     collector deletes (a record costs nothing, but every listing reads
//     it).
//
// The one window no call of this provider can close: a Droplet destroyed
// by something else (a person, DigitalOcean) between the reserve and its
// record. The address is then unassigned, billed, and carries nothing that
// says whose it is (a reserved IP has no tag and no name, and its actions,
// in DigitalOcean's API description, name a resource and a time, not the
// Droplet it was assigned to), so it cannot be told from the account
// owner's own. ListByTag
// reports every unassigned reserved IP without a record, one line each
// that names the address and the rule, then their count, and never
// releases one: an operator does.
//
// providerIDs are digitalocean://DROPLET_ID for a Droplet,
// digitalocean-reserved-ip://ADDRESS for a reserved IP and
// digitalocean-tag://TAG for a residue.
//
// The files: provider.go (configuration, the client), tags.go (the
// labels as tags, a Droplet's own tag), create.go (the Droplet, its
// region), get.go (Get, states, readiness), delete.go (the Droplet and
// its tags), list.go (ListByTag), residue.go (tags a crash left),
// reservedip.go (Static addresses and their records), firewall.go (the deployment's
// firewall), readiness.go (the VM side's interfaces), ids.go
// (providerIDs), errors.go (classification), validate.go (placements and
// the operator's policy).
package digitalocean

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/digitalocean/godo"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

// Type is the registry type of this provider.
const Type = "digitalocean"

// Config is the provider's configuration (the composition root reads it
// from DIGITALOCEAN_* variables and the deployment's firewall settings).
type Config struct {
	// Deployment is the value of every Droplet's provider.LabelDeployment
	// tag, and the one ListByTag lists; empty is
	// provider.DefaultDeployment.
	Deployment string
	// Regions are the regions (nyc3, ams3) a placement without one may be
	// given; empty allows every region of the metro.
	Regions []string
	// Firewall is what the deployment's cloud firewall opens. Required: a
	// Droplet behind no firewall answers the whole Internet.
	Firewall Firewall
	// SSHKeys are the ids or fingerprints of SSH keys of the account to
	// put on every Droplet; DigitalOcean mails the account a root password
	// for each Droplet made without one.
	SSHKeys []string
	// Renderer makes the user-data of a Droplet that runs the default
	// bootstrap; Prober asks such a Droplet whether its proxy serves.
	// Both are required.
	Renderer Renderer
	Prober   Prober
	// Log receives the provider's decisions (an adopted Droplet, a rate
	// limit, a region out of capacity); nil discards them. It never
	// receives the token or a Droplet's user-data.
	Log *slog.Logger
	// Now is the clock a rate limit's wait and a record's time are read
	// against; nil is time.Now.
	Now func() time.Time
}

// Provider is the DigitalOcean provider.
type Provider struct {
	c   *godo.Client
	cfg Config

	// firewallMu guards firewallOK: whether the deployment's firewall was
	// made or checked by this provider, once, before its first create.
	firewallMu sync.Mutex
	firewallOK bool
}

// NewClient is godo's client for token, against endpoint (DigitalOcean's
// own when empty; a fake in tests). It does not retry by itself: a rate
// limit or a 5xx goes back to the caller classified, so the reconciler's
// backoff (and the wait the rate limit asks for) decides, and every call
// is metered once. A nil httpClient is http.DefaultClient's kind.
func NewClient(token, endpoint string, httpClient *http.Client) (*godo.Client, error) {
	if httpClient == nil {
		httpClient = &http.Client{Timeout: 30 * time.Second}
	}
	base := *httpClient
	base.Transport = bearer{token: token, next: httpClient.Transport}
	opts := []godo.ClientOpt{godo.SetUserAgent("egress-proxies")}
	if endpoint != "" {
		if _, err := url.Parse(endpoint); err != nil {
			return nil, fmt.Errorf("digitalocean endpoint %q: %w", endpoint, err)
		}
		opts = append(opts, godo.SetBaseURL(endpoint))
	}
	return godo.New(&base, opts...)
}

// bearer sends the token on every request, as godo's examples do with
// oauth2, without its token source.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	next := b.next
	if next == nil {
		next = http.DefaultTransport
	}
	return next.RoundTrip(r)
}

// New returns a provider over the client (NewClient).
func New(c *godo.Client, cfg Config) (*Provider, error) {
	if c == nil {
		return nil, errors.New("digitalocean provider: no client")
	}
	if cfg.Renderer == nil || cfg.Prober == nil {
		return nil, errors.New("digitalocean provider: a Renderer (the Droplets' user-data) and a Prober (their readiness) are required")
	}
	if cfg.Deployment == "" {
		cfg.Deployment = provider.DefaultDeployment
	}
	if err := provider.ValidateDeployment(cfg.Deployment); err != nil {
		return nil, fmt.Errorf("digitalocean provider: %w", err)
	}
	for _, r := range cfg.Regions {
		if _, ok := metroOf[r]; !ok {
			return nil, fmt.Errorf("digitalocean provider: %q is not a DigitalOcean region (%s)", r, regionList())
		}
	}
	if err := cfg.Firewall.Check(); err != nil {
		return nil, fmt.Errorf("digitalocean provider: the firewall %w", err)
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

// DefaultPollInterval is how often the reconciler asks a booting Droplet
// whether its proxy serves (provider.Polled): a Droplet boots the proxy
// in about a minute, and each ask is one API read of the account's 5,000
// an hour and one status request to the Droplet.
const DefaultPollInterval = 10 * time.Second

// PollInterval makes the provider a provider.Polled: its Droplets cannot
// call home.
func (p *Provider) PollInterval() time.Duration { return DefaultPollInterval }

// statusID is the id the Droplet's status credential and sign key are
// derived from, the same the Renderer puts in its user-data.
func statusID(req provider.CreateRequest) string { return vmstatus.StatusID(req) }

// perPage is the page size of every list: DigitalOcean's largest.
const perPage = 200
