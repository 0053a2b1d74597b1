package ec2fake_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/bootstrap/cloudinit"
	"github.com/egress-proxies/egress/internal/provider"
	awsprovider "github.com/egress-proxies/egress/internal/provider/aws"
	"github.com/egress-proxies/egress/internal/provider/aws/ec2fake"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

// TestServe: with Serve, an instance the aws provider launches with the
// VM side's own user-data (compressed, as on EC2) runs its engine on its
// loopback address once it runs, and the provider, asking it through the
// proxy port with the status credential, sees it Running at its
// generation (the engine's own answer: the engine of the configuration
// in the user-data); terminated, it serves no more.
func TestServe(t *testing.T) {
	fake := ec2fake.New()
	t.Cleanup(fake.Close)
	fake.StartServing(ec2fake.Serve{Tick: time.Hour}) // settled by the test
	key, err := vmstatus.NewKey([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	renderer := cloudinit.Renderer{EngineURL: "https://example.com/egress-proxy", EngineSHA256: strings.Repeat("0", 64), Gzip: true, IMDS: vmconfig.EC2MetadataURL,
		Status: func(_ context.Context, uid, id string) (*vmconfig.StatusAccess, error) {
			return key.Access(uid, id, []string{"127.0.0.1/32"})
		}}
	creds := sdkaws.CredentialsProviderFunc(func(context.Context) (sdkaws.Credentials, error) {
		return sdkaws.Credentials{AccessKeyID: "EGRESS-SERVE-TEST", SecretAccessKey: "not-a-secret"}, nil
	})
	p, err := awsprovider.New(awsprovider.NewClient(awsprovider.ClientOptions{Credentials: creds, Endpoint: fake.Endpoint()}),
		awsprovider.Config{Regions: []string{"eu-west-1"}, Renderer: renderer,
			Prober: &vmstatus.Prober{Key: func(context.Context) (vmstatus.Key, error) { return key, nil }}})
	if err != nil {
		t.Fatal(err)
	}
	tenant := proxy.Credentials{Username: "tenant", Password: "Tenantpassword0123456789"}
	cfg := bootstrap.Config{Port: 3128, AllowedSourceRanges: []string{"127.0.0.1/32"}, Generation: 3, Credentials: tenant}
	engine, _ := bootstrap.EngineConfig(cfg)
	script, _ := bootstrap.Render(cfg)
	ctx := context.Background()
	id, err := p.Create(ctx, provider.CreateRequest{Name: "proxy-3f2c1b0a", UID: "3f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098", Port: 3128,
		StartupScript: script, Engine: &engine, Placement: provider.Placement{Region: "eu-west-1"}})
	if err != nil {
		t.Fatal(err)
	}
	before, err := p.Get(ctx, id)
	if err != nil || before.State != provider.StateProvisioning {
		t.Fatalf("a pending instance: %+v, %v; want Provisioning", before, err)
	}
	fake.Settle()
	inst, err := p.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if inst.State != provider.StateRunning || inst.Generation != 3 || !strings.HasPrefix(inst.IP, "127.0.") || inst.Traffic == nil {
		t.Fatalf("a running instance: %+v; want Running at generation 3 on a loopback address, with its traffic", inst)
	}
	endpoint := net.JoinHostPort(inst.IP, "3128")
	if inst.IP != fake.Instances()[0].PublicIP {
		t.Errorf("the provider reads the instance at %s, the fake serves it at %s", inst.IP, fake.Instances()[0].PublicIP)
	}
	if err := p.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	fake.Settle()
	if c, err := net.DialTimeout("tcp", endpoint, time.Second); err == nil {
		c.Close()
		t.Errorf("the terminated instance's proxy still accepts connections at %s", endpoint)
	}
}
