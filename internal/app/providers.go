package app

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	secretmanager "cloud.google.com/go/secretmanager/apiv1"

	"golang.org/x/oauth2"
	"google.golang.org/api/idtoken"
	"google.golang.org/api/option"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"

	"github.com/egress-proxies/egress/internal/accesspull"
	"github.com/egress-proxies/egress/internal/bootstrap/cloudinit"
	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/provider"
	awsprovider "github.com/egress-proxies/egress/internal/provider/aws"
	"github.com/egress-proxies/egress/internal/provider/gcp"
	"github.com/egress-proxies/egress/internal/provider/hetzner"
	"github.com/egress-proxies/egress/internal/provider/vmside"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/queue"
	"github.com/egress-proxies/egress/internal/secrets"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

// Cloud is a provider type a deployment may enable, and how Reconcile
// learns of its VMs.
type Cloud struct {
	Type string
	// Name is the cloud's own name for what the provider makes VMs on.
	Name string
	// CallsHome says its VMs publish on proxy-callhome with an identity
	// token of the cloud's own (GCE's metadata server); else Reconcile
	// reads each VM's readiness and access lines through the proxy port
	// (the status door), and the VM needs no right in the project.
	CallsHome bool
}

// Clouds are the provider types the deployed functions serve, in the order
// the docs name them: registry refuses a type PROVIDERS names that is not
// here nor linked, so a provider added to the registry is added here, and
// `make docs` draws the diagrams from this table.
var Clouds = []Cloud{
	{Type: gcp.Type, Name: "Compute Engine", CallsHome: true},
	{Type: hetzner.Type, Name: "Hetzner Cloud"},
	{Type: awsprovider.Type, Name: "Amazon EC2"},
}

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
		vm, err := a.cloudInitVM(vm, false)
		if err != nil {
			return nil, err
		}
		a.readsByPull(hetzner.Type, vm)
		ctors[hetzner.Type] = a.hetznerConstructor(vm)
		rules[hetzner.Type] = hetzner.Validator(c.HetznerPolicy)
	}
	if awsEnabled(&c) {
		awsVM, err := a.cloudInitVM(awsVM, true)
		if err != nil {
			return nil, err
		}
		a.readsByPull(awsprovider.Type, awsVM)
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
	var served []string
	for _, cl := range Clouds {
		served = append(served, cl.Type)
	}
	for _, typ := range c.Providers {
		isLinked := slices.ContainsFunc(linked, func(l Linked) bool { return l.Type == typ })
		if ctors[typ] == nil || !isLinked && !slices.Contains(served, typ) {
			return nil, fmt.Errorf("config: PROVIDERS names %q, which this binary does not link: the mock is the local stack's and the tests' only, and the deployed functions serve %s", typ, strings.Join(served[:len(served)-1], ", ")+" and "+served[len(served)-1])
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
// script, and the prober that asks a VM's proxy whether it serves. What
// is unset is the VM side's own (cloudInitVM); the simulation and the
// benchmark bring doubles.
type CloudInitVM struct {
	Renderer vmside.Renderer
	Prober   vmside.Prober
}

// HetznerVM is the hetzner provider's CloudInitVM.
type HetznerVM = CloudInitVM

// cloudInitVM fills what vm leaves unset with the VM side's own: the
// user-data of package cloudinit, with the engine binary's public URL and
// the status access of each VM's uid, and the prober of package
// vmstatus, both with the status key (statusKey). An EC2 instance's
// user-data (ec2) is compressed, within EC2's 16 KiB, and names the
// instance metadata service, which its agent asks which instance it is.
func (a *App) cloudInitVM(vm CloudInitVM, ec2 bool) (CloudInitVM, error) {
	cfg := a.Config.CloudInitVM
	if vm.Renderer == nil {
		r := cloudinit.Renderer{EngineURL: cfg.EngineURL, EngineSHA256: cfg.EngineSHA256, Gzip: ec2,
			Status: func(ctx context.Context, uid, id string) (*vmconfig.StatusAccess, error) {
				k, err := a.statusKey(ctx)
				if err != nil {
					return nil, err
				}
				return k.Access(uid, id, cfg.StatusSources)
			}}
		// Only the functions that make servers read the settings (the
		// ProxyAPI registers the provider for its rules alone, and never
		// renders a server).
		if a.Config.serves(Reconcile) || a.Config.serves(CollectGarbage) {
			if err := r.Check(); err != nil {
				return vm, fmt.Errorf("config: PROXY_ENGINE_PUBLIC_URL and PROXY_ENGINE_SHA256: %w", err)
			}
		}
		if ec2 {
			r.IMDS = vmconfig.EC2MetadataURL
		}
		vm.Renderer = r
	}
	if vm.Prober == nil {
		vm.Prober = &vmstatus.Prober{Key: a.statusKey}
	}
	return vm, nil
}

// readsByPull notes that the VMs of provider typ are read by pull: the
// collector asks for their access lines each tick, and Reconcile reads
// them with the VM side's prober, when it reads access lines too (the
// VM side's own, vmstatus.Prober, does; a double that does not leaves
// the lines unread).
func (a *App) readsByPull(typ string, vm CloudInitVM) {
	r, ok := vm.Prober.(accesspull.Reader)
	if !ok {
		return
	}
	if a.accessReaders == nil {
		a.accessReaders = map[string]accesspull.Reader{}
	}
	a.accessReaders[typ] = r
}

// statusKey is the key the VMs' status credentials are derived from: read
// from VM_STATUS_KEY_SECRET's version when first needed, and kept once
// read (a failed read is tried again at the next need); against a fake,
// a key this process makes. Errors name the version, never the key.
func (a *App) statusKey(ctx context.Context) (vmstatus.Key, error) {
	a.statusMu.Lock()
	defer a.statusMu.Unlock()
	if a.status != nil {
		return *a.status, nil
	}
	version := a.Config.CloudInitVM.StatusKeySecret
	var k vmstatus.Key
	if version == "" {
		b := make([]byte, vmstatus.MinKeyBytes)
		if _, err := rand.Read(b); err != nil {
			return k, err
		}
		var err error
		if k, err = vmstatus.NewKey(b); err != nil {
			return k, err
		}
	} else {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		text, err := a.readSecretVersion(ctx, version)
		if err != nil {
			return k, fmt.Errorf("the VM status key (VM_STATUS_KEY_SECRET): %w", err)
		}
		if k, err = vmstatus.ParseKey(strings.TrimSpace(text)); err != nil {
			return k, fmt.Errorf("the VM status key (VM_STATUS_KEY_SECRET) %s: %w", version, err)
		}
	}
	a.status = &k
	return k, nil
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

// hetznerToken reads the API token from its Secret Manager version.
// Errors name the version, never the token.
func (a *App) hetznerToken(ctx context.Context, version string) (string, error) {
	token, err := a.readSecretVersion(ctx, version)
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

// readSecretVersion reads a secret version the functions hold, dialling
// Secret Manager's client for that read alone.
func (a *App) readSecretVersion(ctx context.Context, version string) (string, error) {
	if a.readSecret != nil {
		return a.readSecret(ctx, version)
	}
	c, err := secretmanager.NewClient(context.WithoutCancel(ctx))
	if err != nil {
		return "", fmt.Errorf("secret manager client: %w", err)
	}
	defer c.Close()
	return secrets.New(c).Access(ctx, version)
}
