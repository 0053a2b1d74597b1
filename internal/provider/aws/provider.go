// Package aws is the Amazon EC2 provider (type "aws"): each proxy is one
// EC2 instance, launched through EC2's API with AWS's official Go SDK
// (github.com/aws/aws-sdk-go-v2/service/ec2), and, for a Static IP
// policy, one Elastic IP kept across its instances.
//
// It keeps every rule the gcp provider keeps (docs/concepts/providers.md):
//
//   - Create is idempotent by EC2's own token: RunInstances carries a
//     ClientToken derived from the proxy's uid, its create attempt
//     (CreateRequest.RequestID) and the zone, so a retry of an attempt
//     answers the instance the first call made, and a new attempt makes
//     a new one. IdempotentParameterMismatch (the token's request asked
//     for something else: a newer AMI, another type) says the attempt
//     made an instance already: it is found by its token and adopted when
//     its uid tag is the request's; never a second instance.
//   - The three tags (provider.LabelManaged, LabelUID, LabelDeployment)
//     are set by RunInstances's TagSpecifications, on the instance, its
//     volume and its interface, in the launch itself: never by a separate
//     CreateTags a crash could miss.
//   - ListByTag lists with tag: filters, page by page, in every region
//     the operator allows (Config.Regions), and keeps this deployment's
//     resources and those without a deployment tag.
//   - Delete is TerminateInstances, idempotent.
//   - Placement: a proxy's region is an AWS region and its zone an
//     availability zone of it. A placement that names no zone gets one of
//     the region's (the operator's allowed ones), chosen from the uid,
//     past those found out of capacity: InsufficientInstanceCapacity and
//     Unsupported (the zone does not offer the type) move the proxy to
//     the next zone, as a GCE stockout does. The SDK would retry
//     InsufficientInstanceCapacity by itself, since EC2 answers it with
//     HTTP 500; the client's retryer (NewClient) refuses to.
//   - Errors are EC2's codes mapped to the contract's kinds as one table
//     (errors.go): InstanceLimitExceeded and VcpuLimitExceeded are quota,
//     surfaced in the proxy's status; RequestLimitExceeded is rate
//     limited at once, with the wait of EC2's slowest refill (errors.go),
//     and not retried by the SDK: the reconciler waits and calls again,
//     so every call is metered once.
//   - Static: the proxy's Elastic IP, allocated and tagged like its
//     instance before the first one, associated with each instance once
//     it runs (EC2 cannot associate one at launch), released by Delete of
//     its own providerID, and listed by ListByTag when no instance holds
//     it, for the collector.
//   - Instance metadata: IMDSv2 only (HttpTokens required), hop limit 1,
//     so no container or forwarded hop on the VM reaches it, and tags off
//     in IMDS: the VM reads its configuration from its user-data, and
//     from IMDS, with a token, only which instance it is.
//
// What gcp reads from guest attributes, this provider asks the VM, as
// hetzner does: an instance that runs the default bootstrap is Running
// only once its proxy answers the control plane's status request
// (vmside.Prober), and what it boots with is user-data made by a
// vmside.Renderer. Both are the VM side's, the same as hetzner's (the
// cloud-init bootstrap of package cloudinit, compressed within EC2's
// 16 KiB; the status through the proxy port of package vmstatus), which
// the composition root gives the provider.
//
// It does not implement provider.Reconfigurer: EC2 changes an
// instance's user-data only while it is stopped, and a running VM could
// follow a new configuration only by fetching it from somewhere with a
// credential it would have to hold; the reconciler replaces the instance
// for a change, and the API refuses a warm pool of this provider
// (Validator), whose claims need one.
//
// The provider holds no AWS key: its credentials are an
// aws.CredentialsProvider, which the composition root makes by
// federation (WebIdentity: a Google-signed ID token exchanged with STS
// for the role's short-lived credentials).
//
// providerIDs are aws://REGION/INSTANCE_ID for an instance and
// aws-eip://REGION/ALLOCATION_ID for an Elastic IP.
//
// The files: provider.go (configuration, the client), create.go (the
// instance, its zone, its image, its Elastic IP), ipv6.go (the
// delegated IPv6 prefix of a dual-stack interface), get.go (Get, states,
// readiness, the Elastic IP's association), delete.go, list.go
// (ListByTag), federation.go (credentials by web identity), ids.go
// (providerIDs), errors.go (classification), validate.go (placements
// and the operator's policy).
package aws

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	sdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/vmside"
)

// Type is the registry type of this provider.
const Type = "aws"

// Config is the provider's configuration (internal/app reads it from
// AWS_* variables).
type Config struct {
	// Deployment is the value of every resource's
	// provider.LabelDeployment, and the one ListByTag lists; empty is
	// provider.DefaultDeployment.
	Deployment string
	// Regions are the regions ListByTag lists, and the only ones a
	// placement may name (AWS_ALLOWED_REGIONS); at least one.
	Regions []string
	// Zones are the availability zones a placement without one may be
	// given (AWS_ALLOWED_ZONES); empty allows every zone of the region.
	Zones []string
	// SecurityGroup is the name of the security group every instance is
	// launched in, in its region's default VPC (deploy/terraform/aws
	// makes it in each allowed region); empty is
	// DefaultSecurityGroup(Deployment).
	SecurityGroup string
	// Renderer makes the user-data of an instance that runs the default
	// bootstrap; Prober asks such an instance whether its proxy serves.
	// Both are required.
	Renderer vmside.Renderer
	Prober   vmside.Prober
	// PageSize is the MaxResults of each DescribeInstances page of
	// ListByTag (5 to 1000); 0 is 500.
	PageSize int32
	// Log receives the provider's decisions (an adopted instance, a zone
	// out of capacity, a rate limit); nil discards them. It never
	// receives credentials or an instance's user-data.
	Log *slog.Logger
	// Now is the clock of the caches of images and zones; nil is
	// time.Now.
	Now func() time.Time
}

// DefaultSecurityGroup is the name of the deployment's security group,
// as deploy/terraform/aws names it.
func DefaultSecurityGroup(deployment string) string { return "egress-proxy-" + deployment }

// Provider is the EC2 provider.
type Provider struct {
	c   *ec2.Client
	cfg Config

	mu     sync.Mutex
	images map[string]cached // region/image → AMI id
	zones  map[string]cachedZones
}

type cached struct {
	id string
	at time.Time
}

type cachedZones struct {
	zones []string
	at    time.Time
}

// cacheFor is how long a resolved AMI and a region's zones are kept: a
// new Debian release is picked up within it, and a function instance
// asks EC2 once for each.
const cacheFor = time.Hour

// ClientOptions are how NewClient reaches EC2.
type ClientOptions struct {
	// Credentials sign every request: WebIdentity's, deployed; never a
	// key from the environment.
	Credentials sdk.CredentialsProvider
	// Endpoint replaces EC2's regional endpoints (a fake in tests): every
	// region's requests go there, signed for their region.
	Endpoint string
	// HTTPClient is nil for the SDK's own.
	HTTPClient *http.Client
	// MaxAttempts is how many times a call is tried (a 5xx but
	// InsufficientInstanceCapacity and RequestLimitExceeded, a broken
	// connection); 0 is the SDK's 3.
	MaxAttempts int
	// Backoff is the wait between attempts; nil is the SDK's exponential
	// backoff with jitter, up to 20 s.
	Backoff retry.BackoffDelayer
}

// noRetry are the codes the retryer must not retry although the SDK
// would: a zone without capacity (HTTP 500) answers the same on the next
// try, and the caller moves to another zone; RequestLimitExceeded (503,
// a throttle the SDK retries with backoff) goes back to the reconciler
// with its wait, as every cloud's rate limit does, so that no retry of
// the SDK's spends the account's tokens behind the reconciler's back.
var noRetry = []string{"InsufficientInstanceCapacity", "InsufficientAddressCapacity", "RequestLimitExceeded"}

// NewClient is the SDK's EC2 client over opts. Its region is set per
// call (inRegion); its retryer refuses to retry a capacity error or
// RequestLimitExceeded (noRetry).
func NewClient(opts ClientOptions) *ec2.Client {
	retryer := retry.NewStandard(func(o *retry.StandardOptions) {
		if opts.MaxAttempts > 0 {
			o.MaxAttempts = opts.MaxAttempts
		}
		if opts.Backoff != nil {
			o.Backoff = opts.Backoff
		}
		o.Retryables = append([]retry.IsErrorRetryable{retry.IsErrorRetryableFunc(func(err error) sdk.Ternary {
			if slices.Contains(noRetry, errorCode(err)) {
				return sdk.FalseTernary
			}
			return sdk.UnknownTernary
		})}, o.Retryables...)
	})
	o := ec2.Options{
		Region:      "us-east-1",
		Credentials: opts.Credentials,
		Retryer:     retryer,
		AppID:       "egress-proxies",
	}
	if opts.Endpoint != "" {
		o.BaseEndpoint = sdk.String(opts.Endpoint)
	}
	if opts.HTTPClient != nil {
		o.HTTPClient = opts.HTTPClient
	}
	return ec2.New(o)
}

// inRegion is the per-call option that sends a call to region.
func inRegion(region string) func(*ec2.Options) {
	return func(o *ec2.Options) { o.Region = region }
}

// New returns a provider over the client (NewClient).
func New(c *ec2.Client, cfg Config) (*Provider, error) {
	if c == nil {
		return nil, errors.New("aws provider: no client")
	}
	if cfg.Renderer == nil || cfg.Prober == nil {
		return nil, errors.New("aws provider: a Renderer (the instances' user-data) and a Prober (their readiness) are required")
	}
	if cfg.Deployment == "" {
		cfg.Deployment = provider.DefaultDeployment
	}
	if err := provider.ValidateDeployment(cfg.Deployment); err != nil {
		return nil, fmt.Errorf("aws provider: %w", err)
	}
	if len(cfg.Regions) == 0 {
		return nil, errors.New("aws provider: no region: name the regions it may use and list (AWS_ALLOWED_REGIONS)")
	}
	for _, r := range cfg.Regions {
		if !regionPattern.MatchString(r) {
			return nil, fmt.Errorf("aws provider: %q is not an AWS region name such as us-east-1", r)
		}
	}
	for _, z := range cfg.Zones {
		if !slices.Contains(cfg.Regions, regionOfZone(z)) {
			return nil, fmt.Errorf("aws provider: availability zone %q is not of an allowed region (%v)", z, cfg.Regions)
		}
	}
	if cfg.SecurityGroup == "" {
		cfg.SecurityGroup = DefaultSecurityGroup(cfg.Deployment)
	}
	if cfg.PageSize == 0 {
		cfg.PageSize = 500
	}
	if cfg.PageSize < 5 || cfg.PageSize > 1000 {
		return nil, fmt.Errorf("aws provider: page size %d is not 5 to 1000, what DescribeInstances takes", cfg.PageSize)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Provider{c: c, cfg: cfg, images: map[string]cached{}, zones: map[string]cachedZones{}}, nil
}

var (
	_ provider.Provider = (*Provider)(nil)
	_ provider.Scoped   = (*Provider)(nil)
)

// DefaultPollInterval is how often the reconciler asks a booting
// instance whether its proxy serves (provider.Polled): an EC2 instance
// boots the proxy in about a minute, and each ask is one
// DescribeInstances, from the account's non-mutating bucket (EC2 refills
// it at 20 a second), and one status request to the instance.
const DefaultPollInterval = 10 * time.Second

// PollInterval makes the provider a provider.Polled: its instances cannot
// call home, so without it a booting instance would be looked at again
// only when something else woke the reconciler.
func (p *Provider) PollInterval() time.Duration { return DefaultPollInterval }

// Lists reports whether ListByTag lists what providerID names: what is
// in a region the operator allows. An instance of a region removed from
// AWS_ALLOWED_REGIONS is still served, replaced and deleted through its
// providerID, and never listed.
func (p *Provider) Lists(providerID string) bool {
	id, err := parseID(providerID)
	return err == nil && slices.Contains(p.cfg.Regions, id.region)
}

// The tags this provider adds to the contract's three.
const (
	// tagName is EC2's console name of a resource: the deterministic
	// instance name.
	tagName = "Name"
	// tagProbePort marks an instance that runs the default bootstrap,
	// with the port its proxy answers the control plane's status request
	// on.
	tagProbePort = "egress-proxy-port"
	// tagEIP and tagEIPAddress mark an instance of a Static proxy: the
	// allocation id of its Elastic IP, and the address, so Get knows
	// whether the address is on it yet without another call.
	tagEIP        = "egress-eip"
	tagEIPAddress = "egress-eip-address"
)

// tags are the tags of every resource made for req: the garbage
// collection contract's, and its name.
func (p *Provider) tags(req provider.CreateRequest) map[string]string {
	return map[string]string{
		provider.LabelManaged:    provider.LabelManagedYes,
		provider.LabelUID:        req.UID,
		provider.LabelDeployment: p.cfg.Deployment,
		tagName:                  req.Name,
	}
}
