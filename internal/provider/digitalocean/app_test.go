package digitalocean_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/bootstrap/cloudinit"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/digitalocean"
	"github.com/egress-proxies/egress/internal/provider/digitalocean/dofake"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// TestDigitalOceanStaticDropletsFollowTheirAnchor: the composition root
// (internal/app, which this external test package may import) gives the
// digitalocean provider the VM side's renderer with its boot's Follow, so
// a Static proxy's Droplet is told to route through its reserved IP (the
// setting egress-follow: DigitalOcean's VM-side part on its metadata
// document) and an Ephemeral proxy's is not.
func TestDigitalOceanStaticDropletsFollowTheirAnchor(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")
	t.Setenv("PUBSUB_EMULATOR_HOST", "127.0.0.1:1")
	fake := dofake.New(digitalocean.LocalToken)
	defer fake.Close()
	// The engine binary's public URL and SHA-256, as a deployment that
	// enables a cloud-init cloud names them.
	vars := map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": digitalocean.Type,
		digitalocean.Plugin.FakeEndpoint: fake.Endpoint(), "FIREWALL_SOURCE_RANGES": "203.0.113.0/24",
		"PROXY_ENGINE_SHA256":     "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"PROXY_ENGINE_PUBLIC_URL": "https://storage.googleapis.com/egress-engine-public/egress-proxy",
		// Firestore points nowhere here: no budget of calls to book in.
		"PACING_SCALE": "0"}
	a, err := app.New(context.Background(), func(k string) string { return vars[k] }, app.Options{Serve: []app.Function{app.Reconcile}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	p, err := a.Providers.Get(ctx, digitalocean.Type)
	if err != nil {
		t.Fatal(err)
	}
	got := map[bool]string{}
	for static, uid := range map[bool]string{false: "3f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098", true: "4f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098"} {
		req := engineRequest(t, uid, "ams")
		req.StaticIP = static
		if _, err := p.Create(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range fake.Droplets() {
		boot, err := cloudinit.Parse(fake.UserData(d.ID))
		if err != nil {
			t.Fatal(err)
		}
		got[digitalocean.Labels(d.Tags)["egress-static-ip"] == "true"] = boot.Setting(vmconfig.KeyFollow)
	}
	want := map[bool]string{false: "", true: "digitalocean " + digitalocean.MetadataURL}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the setting %s of an Ephemeral (false) and a Static (true) proxy's Droplet (-want +got):\n%s", vmconfig.KeyFollow, diff)
	}
}

// engineRequest is the create request of the proxy uid in region with
// the default bootstrap, as the reconciler makes it.
func engineRequest(t *testing.T, uid, region string) provider.CreateRequest {
	t.Helper()
	cfg := bootstrap.Config{Port: 3128, AllowedSourceRanges: []string{"203.0.113.0/24"}, Generation: 1,
		Credentials: proxy.Credentials{Username: "tenant", Password: "Tenantpassword0123456789"}}
	engine, err := bootstrap.EngineConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	script, err := bootstrap.Render(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return provider.CreateRequest{Name: "proxy-" + uid[:8], UID: uid, Port: 3128, StartupScript: script, Engine: &engine,
		Placement: provider.Placement{Region: region}}
}
