package app_test

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/bootstrap/cloudinit"
	"github.com/egress-proxies/egress/internal/provider"
	awsprovider "github.com/egress-proxies/egress/internal/provider/aws"
	"github.com/egress-proxies/egress/internal/provider/aws/ec2fake"
	"github.com/egress-proxies/egress/internal/provider/plugin"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// TestAWSInstancesBootTheVMSide: the aws provider gets the VM side's own
// renderer and prober, as hetzner does: an instance's user-data is the
// cloud-init bootstrap, compressed within EC2's 16 KiB, with the status
// access of its uid and the setting that sends its agent to IMDS; an
// instance whose proxy answers nothing is Provisioning, and is asked again
// while it boots (provider.Polled). A deployment that
// leaves out what the VMs need stops at start-up naming it.
func TestAWSInstancesBootTheVMSide(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")
	t.Setenv("PUBSUB_EMULATOR_HOST", "127.0.0.1:1")
	fake := ec2fake.New()
	defer fake.Close()
	vars := withVars(engineVars, map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "aws", "AWS_ALLOWED_REGIONS": "eu-west-1",
		"AWS_EC2_ENDPOINT": fake.Endpoint()})
	for _, unset := range []string{"PROXY_ENGINE_PUBLIC_URL", "PROXY_ENGINE_SHA256"} {
		v := maps.Clone(vars)
		delete(v, unset)
		if a, err := app.New(context.Background(), env(v), app.Options{Serve: []app.Function{app.Reconcile}}); err == nil || !strings.Contains(err.Error(), unset) {
			if a != nil {
				a.Close()
			}
			t.Errorf("aws without %s: %v, want an error naming it", unset, err)
		}
	}
	a, err := app.New(context.Background(), env(vars), app.Options{Serve: []app.Function{app.Reconcile}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	p, err := a.Providers.Get(ctx, awsprovider.Type)
	if err != nil {
		t.Fatal(err)
	}
	// An instance cannot call home: the reconciler asks it while it boots.
	if d := provider.PollInterval(p); d <= 0 {
		t.Errorf("the aws provider's poll interval is %v: want it a provider.Polled, or a booting instance is asked again only when something else wakes the reconciler", d)
	}
	id, err := p.Create(ctx, bootRequest("eu-west-1"))
	if err != nil {
		t.Fatal(err)
	}
	instances := fake.Instances()
	if len(instances) != 1 {
		t.Fatalf("%d instances, want 1", len(instances))
	}
	ud := instances[0].UserData
	if len(ud) > awsprovider.MaxUserDataBytes || !strings.HasPrefix(ud, "\x1f\x8b") {
		t.Errorf("the user-data is %d bytes, starting %q: want gzip within %d", len(ud), ud[:min(len(ud), 2)], awsprovider.MaxUserDataBytes)
	}
	boot, err := cloudinit.Parse(ud)
	if err != nil {
		t.Fatal(err)
	}
	got, err := boot.Engine()
	if err != nil {
		t.Fatal(err)
	}
	if got.Status == nil || !slices.Equal(got.Status.Sources, []string{"127.0.0.1/32"}) {
		t.Errorf("the instance's status access %+v: want one from 127.0.0.1/32 (the fake's default)", got.Status)
	}
	if boot.Setting(vmconfig.KeyIMDS) != vmconfig.EC2MetadataURL || boot.Setting(vmconfig.KeyEngineURL) != engineVars["PROXY_ENGINE_PUBLIC_URL"] {
		t.Errorf("the instance's settings %s=%q and %s=%q, want EC2's metadata service and PROXY_ENGINE_PUBLIC_URL",
			vmconfig.KeyIMDS, boot.Setting(vmconfig.KeyIMDS), vmconfig.KeyEngineURL, boot.Setting(vmconfig.KeyEngineURL))
	}
	fake.Settle()
	inst, err := p.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if inst.State != provider.StateProvisioning {
		t.Errorf("an instance whose proxy answers nothing is %s, want Provisioning", inst.State)
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
	a, err := app.New(context.Background(), env(withVars(engineVars, map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "aws",
		"AWS_ALLOWED_REGIONS": "us-east-1,eu-west-1", "AWS_ROLE_ARN": role, "AWS_AUDIENCE": audience,
		"AWS_EC2_ENDPOINT": fake.Endpoint(), "AWS_STS_ENDPOINT": fake.Endpoint(), "LOG_LEVEL": "debug"})),
		app.Options{Serve: []app.Function{app.CollectGarbage}, VM: map[string]plugin.VMSide{awsprovider.Type: vmSide}, LogOutput: &logs})
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
