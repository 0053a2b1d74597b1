package app_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/bootstrap/cloudinit"
	"github.com/egress-proxies/egress/internal/provider/azure"
	"github.com/egress-proxies/egress/internal/provider/azure/azurefake"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// TestAzureVMsWatchTheirUserData: the composition root gives the azure
// provider the VM side's renderer with its plugin's boot, so a VM's
// customData and userData (the same rendering) tell its agent to ask
// Azure's IMDS which instance it is and to watch its userData, which a
// live change rewrites in place.
func TestAzureVMsWatchTheirUserData(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:1")
	t.Setenv("PUBSUB_EMULATOR_HOST", "127.0.0.1:1")
	const sub, rg = "00000000-0000-0000-0000-0000000000a1", "egress-proxies"
	fake := azurefake.NewHTTP(sub, "00000000-0000-0000-0000-0000000000a2")
	defer fake.Close()
	fake.AcceptToken(azure.LocalToken)
	subnets := fake.SeedNetwork(rg, "westeurope")
	vars := withVars(engineVars, map[string]string{"GOOGLE_CLOUD_PROJECT": "demo-x", "PROVIDERS": "azure",
		"AZURE_ENDPOINT": fake.Endpoint(), "AZURE_LOCATIONS": "westeurope", "AZURE_SUBSCRIPTION_ID": sub,
		"AZURE_RESOURCE_GROUP": rg, "AZURE_SUBNET_IDS": "westeurope=" + subnets["westeurope"]})
	a, err := app.New(context.Background(), env(vars), app.Options{Serve: []app.Function{app.Reconcile}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	p, err := a.Providers.Get(ctx, azure.Type)
	if err != nil {
		t.Fatal(err)
	}
	req := bootRequest("westeurope")
	if _, err := p.Create(ctx, req); err != nil {
		t.Fatal(err)
	}
	vm, ok := fake.VM(rg, req.Name)
	if !ok {
		t.Fatalf("no VM %s in the fake: %v", req.Name, fake.Inventory(rg))
	}
	type boot struct {
		Same        bool
		IMDS, Watch string
	}
	raw, err := base64.StdEncoding.DecodeString(vm.UserData)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cloudinit.Parse(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	got := boot{Same: vm.UserData == vm.CustomData && vm.UserData != "", IMDS: b.Setting(vmconfig.KeyIMDS), Watch: b.Setting(vmconfig.KeyWatchUserData)}
	want := boot{Same: true, IMDS: vmconfig.AzureMetadataURL, Watch: vmconfig.AzureUserDataURL}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the VM's user data (-want +got):\n%s", diff)
	}
	if strings.Contains(string(raw), azure.LocalToken) {
		t.Errorf("the VM's user data holds the provider's token")
	}
}
