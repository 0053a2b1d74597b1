package app_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/provider"
	awsprovider "github.com/egress-proxies/egress/internal/provider/aws"
	"github.com/egress-proxies/egress/internal/provider/aws/ec2fake"
)

// TestAWSWaitsForItsVMSide: until the VM side gives the provider a
// renderer of user-data and a prober of readiness, a configuration that
// enables aws stops at start-up, naming what is missing.
func TestAWSWaitsForItsVMSide(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")
	t.Setenv("PUBSUB_EMULATOR_HOST", "127.0.0.1:1")
	getenv := env(map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "gcp,aws", "AWS_ALLOWED_REGIONS": "us-east-1",
		"AWS_ROLE_ARN": "arn:aws:iam::123456789012:role/egress-proxy-egress", "AWS_AUDIENCE": "https://egress.example.com/aws"})
	cases := map[string]struct {
		vm   app.CloudInitVM
		want string
	}{
		"Neither":    {want: "no renderer of the instances' user-data (vmside.Renderer) and no prober of their readiness (vmside.Prober)"},
		"NoProber":   {vm: app.CloudInitVM{Renderer: vmSide.Renderer}, want: "no prober of their readiness (vmside.Prober)"},
		"NoRenderer": {vm: app.CloudInitVM{Prober: vmSide.Prober}, want: "no renderer of the instances' user-data (vmside.Renderer)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := app.New(context.Background(), getenv, app.Options{Serve: []app.Function{app.Reconcile}, AWSVM: tc.vm})
			want := `config: PROVIDERS names "aws", but this build has ` + tc.want + `: the VM side of the aws provider (its cloud-init bootstrap and its readiness) is not built yet, so an instance could neither boot the proxy nor be seen serving (docs/operations/aws.md)`
			if err == nil || err.Error() != want {
				t.Errorf("error %v\nwant  %s", err, want)
			}
		})
	}
}

// TestAWSReachesEC2ByFederation: the aws provider the composition root
// makes (behind the metering decorator) has no key: it gets the
// function's Google ID token for AWS_AUDIENCE, exchanges it with STS
// for AWS_ROLE_ARN's credentials, and signs its EC2 calls with those
// alone; nothing of the token or the credentials is logged.
func TestAWSReachesEC2ByFederation(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")
	t.Setenv("PUBSUB_EMULATOR_HOST", "127.0.0.1:1")
	const (
		role     = "arn:aws:iam::123456789012:role/egress-proxy-egress"
		audience = "https://egress.example.com/aws"
		subject  = "104729384756102938475"
	)
	is, err := ec2fake.NewIssuer()
	if err != nil {
		t.Fatal(err)
	}
	defer is.Close()
	fake := ec2fake.New()
	defer fake.Close()
	fake.TrustWebIdentity(ec2fake.Trust{RoleARN: role, Issuer: ec2fake.GoogleIssuer, Audience: audience, Subjects: []string{subject},
		JWKSURL: is.JWKSURL(), HTTPClient: is.Client(), Exclusive: true})
	var logs bytes.Buffer
	a, err := app.New(context.Background(), env(map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "aws",
		"AWS_ALLOWED_REGIONS": "us-east-1,eu-west-1", "AWS_ROLE_ARN": role, "AWS_AUDIENCE": audience,
		"AWS_EC2_ENDPOINT": fake.Endpoint(), "AWS_STS_ENDPOINT": fake.Endpoint(), "LOG_LEVEL": "debug"}),
		app.Options{Serve: []app.Function{app.CollectGarbage}, AWSVM: vmSide, LogOutput: &logs})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var token string
	var audiences []string
	app.SetIDTokens(a, func(_ context.Context, aud string) (oauth2.TokenSource, error) {
		audiences = append(audiences, aud)
		now := time.Now()
		var err error
		token, err = is.Sign(is.Key, map[string]any{"iss": ec2fake.GoogleIssuer, "aud": aud, "sub": subject, "azp": subject,
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
		return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: token}), err
	})
	ctx := context.Background()
	p, err := a.Providers.Get(ctx, awsprovider.Type)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := provider.Unwrap(p).(*awsprovider.Provider); !ok || p == provider.Unwrap(p) {
		t.Errorf("the registry hands out %T over %T, want the metering decorator over *aws.Provider", p, provider.Unwrap(p))
	}
	if _, err := p.ListByTag(ctx); err != nil {
		t.Fatalf("ListByTag with the role's credentials: %v", err)
	}
	if len(audiences) != 1 || audiences[0] != audience {
		t.Errorf("ID tokens asked for audiences %v, want AWS_AUDIENCE's", audiences)
	}
	regions := map[string]bool{}
	for _, c := range fake.Calls() {
		if c.Action == "AssumeRoleWithWebIdentity" {
			continue
		}
		regions[c.Region] = true
		if !strings.HasPrefix(c.AccessKeyID, "ASIA") {
			t.Errorf("%s in %s was signed with %q, not the role's session key", c.Action, c.Region, c.AccessKeyID)
		}
	}
	if !regions["us-east-1"] || !regions["eu-west-1"] {
		t.Errorf("ListByTag reached regions %v, want both allowed ones", regions)
	}
	if fake.Actions()["AssumeRoleWithWebIdentity"] != 1 {
		t.Errorf("%d exchanges with STS, want 1: the credentials are kept until they near their expiry", fake.Actions()["AssumeRoleWithWebIdentity"])
	}
	if token == "" || strings.Contains(logs.String(), token) || strings.Contains(logs.String(), "ASIA") {
		t.Errorf("the function logged the ID token or the session's key:\n%s", logs.String())
	}
}
