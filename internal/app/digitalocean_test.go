package app_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/bootstrap/cloudinit"
	"github.com/egress-proxies/egress/internal/provider/digitalocean"
	"github.com/egress-proxies/egress/internal/provider/digitalocean/dofake"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// TestDigitalOceanStaticDropletsFollowTheirAnchor: the composition root
// gives the digitalocean provider the VM side's renderer with its boot's
// Follow, so a Static proxy's Droplet is told to route through its
// reserved IP (the setting egress-follow: DigitalOcean's VM-side part on
// its metadata document) and an Ephemeral proxy's is not.
func TestDigitalOceanStaticDropletsFollowTheirAnchor(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")
	t.Setenv("PUBSUB_EMULATOR_HOST", "127.0.0.1:1")
	fake := dofake.New(digitalocean.LocalToken)
	defer fake.Close()
	vars := withVars(engineVars, map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "digitalocean",
		"DIGITALOCEAN_ENDPOINT": fake.Endpoint(), "FIREWALL_SOURCE_RANGES": "203.0.113.0/24"})
	a, err := app.New(context.Background(), env(vars), app.Options{Serve: []app.Function{app.Reconcile}})
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
	for static, uid := range map[bool]string{false: bootUID, true: "4f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098"} {
		req := bootRequest("ams")
		req.UID, req.StaticIP = uid, static
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
