package app

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	secretmanager "cloud.google.com/go/secretmanager/apiv1"

	"golang.org/x/oauth2"
	"google.golang.org/api/idtoken"
	"google.golang.org/api/option"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"

	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/provider"
	awsprovider "github.com/egress-proxies/egress/internal/provider/aws"
	"github.com/egress-proxies/egress/internal/provider/gcp"
	"github.com/egress-proxies/egress/internal/provider/hetzner"
	"github.com/egress-proxies/egress/internal/provider/vmside"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/queue"
	"github.com/egress-proxies/egress/internal/secrets"
)

// Linked is a provider type a binary links beside the ones every
// deployment may use (gcp): the local stack and the tests link the mock
// (package app/mockprovider), which the deployed functions do not contain.
type Linked struct {
	Type      string
	Validator provider.Validator
	// InPlace says the provider's VMs take live changes in place
	// (provider.InPlace).
	InPlace bool
	// New makes the provider's constructor for env.
	New func(env ProviderEnv) provider.Constructor
}

// ProviderEnv is what a linked provider is built from.
type ProviderEnv struct {
	Config Config
	Log    *slog.Logger
	// CallHome publishes what the VM named instance says when it calls
	// home, as a real VM does on the call-home topic, with an identity
	// token the app signs for it as Google's metadata server would; nil
	// when the process serves no function that publishes.
	CallHome func(ctx context.Context, msg proxy.ReconcileMessage, instance string) error
}

// registry builds the registry of every enabled provider type, each behind
// the metering decorator, so every backend's calls count in the
// invocation's usage without its knowing, and each with its rules (the
// forms and the operator's policy of what a spec may ask of it) beside its
// constructor. Each provider's settings were read and checked by Load only
// when it is enabled, so a missing GCP_* setting never stops a mock run and
// always stops a gcp one at start-up.
func (a *App) registry(linked []Linked, vm HetznerVM, awsVM CloudInitVM) (*provider.Registry, error) {
	c := a.Config
	ctors := map[string]provider.Constructor{gcp.Type: c.gcpConstructor()}
	rules := map[string]provider.Validator{gcp.Type: gcp.Validator(c.GCPPolicy)}
	inPlace := map[string]bool{gcp.Type: true}
	if hetznerEnabled(&c) {
		if missing := vm.missing("servers'", "hetzner"); missing != "" {
			return nil, fmt.Errorf("config: PROVIDERS names %q, but this build has no %s: the VM side of the hetzner provider (its cloud-init bootstrap and its readiness) is not built yet, so a server could neither boot the proxy nor be seen serving (docs/operations/hetzner.md)", hetzner.Type, missing)
		}
		ctors[hetzner.Type] = a.hetznerConstructor(vm)
		rules[hetzner.Type] = hetzner.Validator(c.HetznerPolicy)
	}
	if awsEnabled(&c) {
		if missing := awsVM.missing("instances'", "vmside"); missing != "" {
			return nil, fmt.Errorf("config: PROVIDERS names %q, but this build has no %s: the VM side of the aws provider (its cloud-init bootstrap and its readiness) is not built yet, so an instance could neither boot the proxy nor be seen serving (docs/operations/aws.md)", awsprovider.Type, missing)
		}
		ctors[awsprovider.Type] = a.awsConstructor(awsVM)
		rules[awsprovider.Type] = awsprovider.Validator(c.AWSPolicy)
	}
	env := ProviderEnv{Config: c, Log: a.Log}
	if a.callHome != nil && a.issuer != nil {
		env.CallHome = a.publishCallHome
	}
	for _, l := range linked {
		ctors[l.Type], rules[l.Type], inPlace[l.Type] = l.New(env), l.Validator, l.InPlace
	}
	reg := provider.NewRegistry()
	for _, typ := range c.Providers {
		if ctors[typ] == nil {
			return nil, fmt.Errorf("config: PROVIDERS names %q, which this binary does not link: the mock is the local stack's and the tests' only, and the deployed functions serve %s, %s and %s", typ, gcp.Type, hetzner.Type, awsprovider.Type)
		}
		opts := []provider.Option{provider.WithValidator(rules[typ])}
		if inPlace[typ] {
			opts = append(opts, provider.InPlace())
		}
		if err := reg.Register(typ, metered(ctors[typ]), opts...); err != nil {
			return nil, fmt.Errorf("config: PROVIDERS: %w", err)
		}
	}
	return reg, nil
}

func metered(ctor provider.Constructor) provider.Constructor {
	return func(ctx context.Context) (provider.Provider, error) {
		p, err := ctor(ctx)
		if err != nil {
			return nil, err
		}
		return metering.Provider(p), nil
	}
}

// gcpConstructor dials Compute when the provider is first used. The VMs
// call home on the call-home topic of the functions' project.
func (c Config) gcpConstructor() provider.Constructor {
	cfg := c.GCP
	cfg.CallHomeTopic = "projects/" + c.Project + "/topics/" + queue.CallHomeTopic
	endpoint := c.ComputeEndpoint
	return func(ctx context.Context) (provider.Provider, error) {
		var opts []option.ClientOption
		if endpoint != "" {
			opts = append(opts, option.WithEndpoint(endpoint), option.WithoutAuthentication())
		}
		clients, err := gcp.NewClients(context.WithoutCancel(ctx), opts...)
		if err != nil {
			return nil, err
		}
		return gcp.New(clients, cfg)
	}
}

// CloudInitVM is what a provider of a cloud whose VMs boot by cloud-init
// (hetzner, aws) needs of the VM side (package vmside): the renderer of
// a VM's user-data from the request's engine configuration and startup
// script, and the prober that asks a VM's proxy whether it serves. The
// VM side provides both; until it does, a deployment cannot enable such
// a provider.
type CloudInitVM struct {
	Renderer vmside.Renderer
	Prober   vmside.Prober
}

// HetznerVM is the hetzner provider's CloudInitVM.
type HetznerVM = CloudInitVM

// missing names what is missing, or "": the VMs are what the provider
// calls them (servers', instances'), the interfaces named as pkg does.
func (vm CloudInitVM) missing(vms, pkg string) string {
	var out []string
	if vm.Renderer == nil {
		out = append(out, "renderer of the "+vms+" user-data ("+pkg+".Renderer)")
	}
	if vm.Prober == nil {
		out = append(out, "prober of their readiness ("+pkg+".Prober)")
	}
	return strings.Join(out, " and no ")
}

// hetznerConstructor reads the API token from Secret Manager when the
// provider is first used, and makes the provider with it; a failed read
// is not remembered (provider.Set), so the next use tries again. Against
// HETZNER_ENDPOINT (a fake) without a HETZNER_TOKEN_SECRET it sends
// LocalHetznerToken, and reads no secret.
func (a *App) hetznerConstructor(vm HetznerVM) provider.Constructor {
	cfg := a.Config.Hetzner
	log := a.Log.With(slog.String("provider", hetzner.Type))
	return func(ctx context.Context) (provider.Provider, error) {
		token := LocalHetznerToken
		if cfg.TokenSecret != "" {
			var err error
			if token, err = a.hetznerToken(ctx, cfg.TokenSecret); err != nil {
				return nil, err
			}
		}
		return hetzner.New(hetzner.NewClient(token, cfg.Endpoint, nil), hetzner.Config{
			Deployment: cfg.Deployment, Locations: cfg.Locations, Renderer: vm.Renderer, Prober: vm.Prober, Log: log,
		})
	}
}

// hetznerToken reads the API token from its Secret Manager version,
// dialling the client for that read alone. Errors name the version,
// never the token.
func (a *App) hetznerToken(ctx context.Context, version string) (string, error) {
	if a.readSecret != nil {
		return a.readSecret(ctx, version)
	}
	c, err := secretmanager.NewClient(context.WithoutCancel(ctx))
	if err != nil {
		return "", fmt.Errorf("hetzner: secret manager client: %w", err)
	}
	defer c.Close()
	token, err := secrets.New(c).Access(ctx, version)
	if err != nil {
		return "", fmt.Errorf("hetzner: the API token (HETZNER_TOKEN_SECRET): %w", err)
	}
	if token = strings.TrimSpace(token); token == "" {
		return "", fmt.Errorf("hetzner: the API token (HETZNER_TOKEN_SECRET) %s is empty", version)
	}
	return token, nil
}

// awsConstructor makes the aws provider when it is first used, with
// credentials by federation: the function's Google ID token for
// AWS_AUDIENCE (from the metadata server on Cloud Run), exchanged with
// STS for AWS_ROLE_ARN's short-lived credentials, renewed before they
// expire. No AWS key is read from anywhere. Against AWS_EC2_ENDPOINT (a
// fake) without a role it signs with LocalAWSAccessKey, which no account
// has.
func (a *App) awsConstructor(vm CloudInitVM) provider.Constructor {
	cfg := a.Config.AWS
	log := a.Log.With(slog.String("provider", awsprovider.Type))
	return func(ctx context.Context) (provider.Provider, error) {
		var creds sdkaws.CredentialsProvider = awsLocalCredentials
		if cfg.RoleARN != "" {
			tokens, err := a.awsTokens(context.WithoutCancel(ctx), cfg.Audience)
			if err != nil {
				return nil, fmt.Errorf("aws: a source of Google ID tokens for AWS_AUDIENCE %q: %w", cfg.Audience, err)
			}
			if creds, err = awsprovider.WebIdentity(awsprovider.Federation{
				RoleARN: cfg.RoleARN, SessionName: "egress-" + cfg.Deployment, Tokens: tokens, Region: cfg.Regions[0], Endpoint: cfg.STSEndpoint,
			}); err != nil {
				return nil, err
			}
		}
		return awsprovider.New(awsprovider.NewClient(awsprovider.ClientOptions{Credentials: creds, Endpoint: cfg.Endpoint}), awsprovider.Config{
			Deployment: cfg.Deployment, Regions: cfg.Regions, Zones: cfg.Zones, Renderer: vm.Renderer, Prober: vm.Prober, Log: log,
		})
	}
}

// awsTokens is the source of the function's Google ID tokens for
// audience: the metadata server's on Cloud Run, a test's where it set
// one.
func (a *App) awsTokens(ctx context.Context, audience string) (oauth2.TokenSource, error) {
	if a.idTokens != nil {
		return a.idTokens(ctx, audience)
	}
	return idtoken.NewTokenSource(ctx, audience)
}

// awsLocalCredentials sign the requests to an AWS_EC2_ENDPOINT (a fake:
// the local stack's and the tests') when no role is set: a key of no
// account, written here, never read from the environment.
var awsLocalCredentials = sdkaws.CredentialsProviderFunc(func(context.Context) (sdkaws.Credentials, error) {
	return sdkaws.Credentials{AccessKeyID: LocalAWSAccessKey, SecretAccessKey: "egress-local-aws-fake", Source: "egress local fake"}, nil
})

// LocalAWSAccessKey is the access key id the aws provider signs with
// against an AWS_EC2_ENDPOINT without AWS_ROLE_ARN: a fake's, no
// account's.
const LocalAWSAccessKey = "EGRESS-LOCAL-FAKE-KEY"
