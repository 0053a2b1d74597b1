package aws

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	sdk "github.com/aws/aws-sdk-go-v2/aws"

	"github.com/egress-proxies/egress/internal/pacing"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/plugin"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// Plugin is Amazon EC2 as the house takes it (internal/clouds lists it):
// its variables, its constructor and its rules. Its instances boot by
// cloud-init with gzipped user-data (EC2's 16 KiB) and ask the instance
// metadata service which instance they are; they are read through the
// proxy port (the status door), and a change gets a new instance.
var Plugin = plugin.Plugin{
	Type:      Type,
	Name:      "Amazon EC2",
	Vars:      vars,
	New:       newFromEnv,
	Validator: validatorOf,
	Boot:      plugin.Boot{Kind: plugin.BootCloudInit, Gzip: true, MetadataURL: vmconfig.EC2MetadataURL},
	Readiness: plugin.StatusDoor,
	// EC2 meters an account's actions in a region by token buckets: the
	// mutating ones a bucket of 200 with 5 a second back, the
	// non-mutating 100 with 20. One budget over all of them at the
	// mutating refill: 100 in 20 s, so that a window spent at once is
	// half a full bucket and is back by the next.
	Rate: pacing.Rate{Calls: 100, Window: 20 * time.Second, Source: "https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-throttling.html"},
	// As the EC2 fake counted them for a warm process's instance
	// (awssim's TestCallsAsCounted): RunInstances; DescribeInstances;
	// TerminateInstances; DescribeInstances and DescribeAddresses.
	Calls: pacing.Calls{Create: 1, Get: 1, Delete: 1, ListByTag: 2},
	// A /80 delegated to the instance's interface at launch, for a spec
	// that draws from it (ipv6.go); the VM reads it from the instance
	// metadata (network/interfaces/macs/MAC/ipv6-prefix), since it is not
	// around the VM's own address. In a subnet without IPv6 the create is
	// refused, naming the subnet.
	IPv6Prefix:       PrefixBits,
	FakeEndpoint:     "AWS_EC2_ENDPOINT",
	Prices:           pricesFromEnv,
	PricedPlacements: pricedPlacements,
	Placement: plugin.Placement{
		Region:             "an AWS region (us-east-1, eu-central-1, …) among those the platform allows (AWS_ALLOWED_REGIONS)",
		Zone:               "one of its availability zones (its name and a letter)",
		MachineType:        "an instance type (x86)",
		DefaultMachineType: DefaultInstanceType,
		Image:              "a Debian release (debian-13, resolved in each region to Debian's newest official AMI) or an AMI id",
		Regions: []string{
			"us-east-1      N. Virginia    us-east-1a … us-east-1f",
			"us-west-2      Oregon         us-west-2a … us-west-2d",
			"eu-central-1   Frankfurt      eu-central-1a … eu-central-1c",
			"eu-west-1      Ireland        eu-west-1a … eu-west-1c",
			"ap-southeast-1 Singapore      ap-southeast-1a … ap-southeast-1c",
		},
		Example: "--provider aws --region us-east-1 --allowed-source-range 203.0.113.0/24 --ip-policy Static",
	},
	Images: plugin.Images{Default: DefaultImage, Allowed: DefaultAllowedImages, Var: "AWS_ALLOWED_IMAGES"},
	APIs:   []plugin.API{{Name: "Amazon EC2 API 2016-11-15 and STS", Module: "github.com/aws/aws-sdk-go-v2/service/ec2"}},
	Words:  []string{"ec2"},
	// The simulated cloud and the benchmark's phase, over the fake.
	Dev: "github.com/egress-proxies/egress/internal/provider/aws/awssim",
	// An instance booted by the image test (make image-test).
	ImageTest: "github.com/egress-proxies/egress/internal/provider/aws/awsimage",
	Terraform: plugin.Terraform{
		Module: "deploy/terraform/aws",
		// The role's permissions, held to the EC2 calls of this package
		// by deploy/aws_test.go.
		Policy: "deploy/terraform/aws/policy.json.tftpl",
	},
}

// LocalAccessKey is the access key id the provider signs with against an
// AWS_EC2_ENDPOINT without AWS_ROLE_ARN: a fake's, no account's.
const LocalAccessKey = "EGRESS-LOCAL-FAKE-KEY"

// roleARN is the form of an IAM role's ARN (any partition).
var roleARN = regexp.MustCompile(`^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]{1,512}$`)

// vars are EC2's variables: what the operator allows of a placement, then
// the endpoints of a fake and the role. No AWS key: the functions assume
// the role by federation. The regions are the collector's too: it lists
// these, and the reconciler's zones are chosen among the allowed ones.
var vars = []plugin.Var{
	{Name: "AWS_ALLOWED_REGIONS", Readers: plugin.ReadByAPI | plugin.ReadByCallers,
		Meaning: "the AWS regions a placement may name, comma-separated (us-east-1, eu-central-1, …): required with aws in PROVIDERS, since the collector lists each of them and no other; Terraform's aws module makes the security group in each",
		Check: func(v string, _ plugin.Settings) error {
			if len(plugin.SplitList(v)) == 0 {
				return fmt.Errorf("is required with aws in PROVIDERS: name the regions it may use, such as us-east-1,eu-central-1")
			}
			return nil
		}},
	{Name: "AWS_ALLOWED_ZONES", DefaultDoc: "every zone of the allowed regions", Readers: plugin.ReadByAPI | plugin.ReadByCallers,
		Meaning: "the availability zones a placement may name or be given, comma-separated (us-east-1a, …), each of an allowed region"},
	{Name: "AWS_ALLOWED_INSTANCE_TYPES", Default: strings.Join(DefaultAllowedInstanceTypes, ","), Readers: plugin.ReadByAPI | plugin.ReadByCallers,
		Meaning: "the EC2 instance types a placement may name, comma-separated; it must hold t3.micro, the type of a placement that names none (x86: the proxy engine is built for linux/amd64)"},
	{Name: "AWS_ALLOWED_IMAGES", Default: strings.Join(DefaultAllowedImages, ","), Readers: plugin.ReadByAPI,
		Meaning: "the images a placement may name, comma-separated: a Debian release (debian-13, debian-12), which each region resolves to Debian's newest official amd64 AMI (owner 136693071363), or an AMI id (one region's); it must hold debian-13, the image of a placement that names none"},

	{Name: "AWS_EC2_ENDPOINT", Readers: plugin.ReadByCallers, Local: true,
		Meaning: "an EC2 API to use instead of AWS's, for every region: tests against a fake only; without AWS_ROLE_ARN the provider signs with the key `" + LocalAccessKey + "`, which no account has",
		Check:   plugin.LoopbackURL("http://127.0.0.1:PORT")},
	{Name: "AWS_PRICING_ENDPOINT", Readers: plugin.ReadByCallers, Local: true,
		Meaning: "a Price List Query API to use instead of AWS's, for the daily price refresh: tests against a fake only",
		Check:   plugin.LoopbackURL("http://127.0.0.1:PORT")},
	{Name: "AWS_STS_ENDPOINT", Readers: plugin.ReadByCallers, Local: true,
		Meaning: "an STS API to use instead of AWS's for the exchange of the ID token: tests against a fake only",
		Check:   plugin.LoopbackURL("http://127.0.0.1:PORT")},
	{Name: "AWS_ROLE_ARN", Readers: plugin.ReadByCallers,
		Meaning: "the AWS role the two functions that call EC2 assume, `arn:aws:iam::ACCOUNT:role/NAME` (Terraform's aws module makes it): each exchanges its Google ID token for AWS_AUDIENCE with STS AssumeRoleWithWebIdentity for the role's credentials, which last an hour; no AWS key is in any variable, secret, log line or document",
		Check: func(v string, s plugin.Settings) error {
			switch {
			case v == "" && s.Get("AWS_EC2_ENDPOINT") == "":
				return fmt.Errorf("is required with aws in PROVIDERS: name the role the functions assume, such as arn:aws:iam::123456789012:role/egress-proxy-egress (deploy/terraform/aws makes it)")
			case v != "" && !roleARN.MatchString(v):
				return fmt.Errorf("is not a role ARN: want arn:aws:iam::ACCOUNT:role/NAME")
			}
			return nil
		}},
	{Name: "AWS_AUDIENCE", Readers: plugin.ReadByCallers,
		Meaning: "the audience of the Google ID token the functions exchange with STS: the role's trust policy accepts this audience only (Terraform's aws module writes both)",
		Check: func(v string, s plugin.Settings) error {
			if v == "" && s.Get("AWS_ROLE_ARN") != "" {
				return fmt.Errorf("is required with AWS_ROLE_ARN: the audience the role's trust policy names, such as https://egress.example.com/aws")
			}
			return nil
		}},
}

// newFromEnv makes the provider when it is first used, with credentials
// by federation: the function's Google ID token for AWS_AUDIENCE (from
// the metadata server on Cloud Run), exchanged with STS for
// AWS_ROLE_ARN's short-lived credentials, renewed before they expire. No
// AWS key is read from anywhere. Against AWS_EC2_ENDPOINT (a fake)
// without a role it signs with LocalAccessKey, which no account has.
func newFromEnv(env plugin.Env) provider.Constructor {
	s := env.Settings
	role, audience := s.Get("AWS_ROLE_ARN"), s.Get("AWS_AUDIENCE")
	endpoint, stsEndpoint := s.Get("AWS_EC2_ENDPOINT"), s.Get("AWS_STS_ENDPOINT")
	cfg := Config{Deployment: env.Deployment, Regions: s.List("AWS_ALLOWED_REGIONS"), Zones: s.List("AWS_ALLOWED_ZONES"),
		Renderer: env.VM.Renderer, Prober: env.VM.Prober, Log: env.Log.With(slog.String("provider", Type))}
	return func(ctx context.Context) (provider.Provider, error) {
		var creds sdk.CredentialsProvider = localCredentials
		if role != "" {
			tokens, err := env.IDTokens(context.WithoutCancel(ctx), audience)
			if err != nil {
				return nil, fmt.Errorf("aws: a source of Google ID tokens for AWS_AUDIENCE %q: %w", audience, err)
			}
			if creds, err = WebIdentity(Federation{
				RoleARN: role, SessionName: "egress-" + env.Deployment, Tokens: tokens, Region: cfg.Regions[0], Endpoint: stsEndpoint,
			}); err != nil {
				return nil, err
			}
		}
		return New(NewClient(ClientOptions{Credentials: creds, Endpoint: endpoint}), cfg)
	}
}

// localCredentials sign the requests to an AWS_EC2_ENDPOINT (a fake: the
// local stack's and the tests') when no role is set: a key of no
// account, written here, never read from the environment.
var localCredentials = sdk.CredentialsProviderFunc(func(context.Context) (sdk.Credentials, error) {
	return sdk.Credentials{AccessKeyID: LocalAccessKey, SecretAccessKey: "egress-local-aws-fake", Source: "egress local fake"}, nil
})

// PolicyOf is the operator's policy from the settings.
func PolicyOf(s plugin.Settings) Policy {
	return Policy{Regions: s.List("AWS_ALLOWED_REGIONS"), Zones: s.List("AWS_ALLOWED_ZONES"),
		InstanceTypes: s.List("AWS_ALLOWED_INSTANCE_TYPES"), Images: s.List("AWS_ALLOWED_IMAGES")}
}

func validatorOf(s plugin.Settings) (provider.Validator, error) {
	pol := PolicyOf(s)
	if err := pol.Check(); err != nil {
		return Validator(pol), fmt.Errorf("AWS_ALLOWED_REGIONS, AWS_ALLOWED_ZONES, AWS_ALLOWED_INSTANCE_TYPES and AWS_ALLOWED_IMAGES: the policy %w", err)
	}
	return Validator(pol), nil
}
