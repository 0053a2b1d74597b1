package azuresim

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/egress-proxies/egress/internal/bootstrap/cloudinit"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/azure"
	"github.com/egress-proxies/egress/internal/provider/azure/azurefake"
	"github.com/egress-proxies/egress/internal/provider/providerstack"
)

// Stack is Azure's part of the local stack's end-to-end test: the Azure
// fake (startAzure), which the stack's azure provider is pointed at
// (AZURE_ENDPOINT), and issue 45's flow over it
// (TestEndToEnd/Flows/Azure), checked on the fake itself.
var Stack = providerstack.New(azure.Type, "Azure", startAzure, flow)

// The stack's Azure: its fake's subscription and tenant, the resource
// group the deployment's Terraform would make, and the one location the
// stack allows.
const (
	azureSubscription = "00000000-0000-0000-0000-00000000e2e0"
	azureTenant       = "00000000-0000-0000-0000-00000000e2e1"
	azureGroup        = "egress-proxies-egress"
	azureLocation     = "westeurope"
	// azureDeployment is the stack's deployment, the value of the
	// egress-deployment tag of its VMs.
	azureDeployment = provider.DefaultDeployment
)

// startAzure starts the stack's Azure fake, plain HTTP on loopback (the
// stack's provider sends it azure.LocalToken: without
// AZURE_AUTHORITY_HOST it asks no token of anyone, since the local stack
// has no Google ID token to federate with), with the network the
// deployment's Terraform makes, its VMs booting their engines on loopback
// addresses from the user data the stack renders. It returns the fake
// and the stack's Azure variables.
func startAzure(t *testing.T) (*azurefake.Server, []string) {
	t.Helper()
	f := azurefake.NewHTTP(azureSubscription, azureTenant)
	f.AcceptToken(azure.LocalToken)
	subnets := f.SeedNetwork(azureGroup, azureLocation)
	f.StartServing(azurefake.Serve{AllowDestinations: []string{"127.0.0.1/32"}, Tick: 500 * time.Millisecond})
	t.Cleanup(f.Close)
	return f, []string{"AZURE_ENDPOINT=" + f.Endpoint(), "AZURE_LOCATIONS=" + azureLocation,
		"AZURE_SUBSCRIPTION_ID=" + azureSubscription, "AZURE_RESOURCE_GROUP=" + azureGroup,
		"AZURE_SUBNET_IDS=" + azureLocation + "=" + subnets[azureLocation]}
}

// flow is issue 45's local-stack flow on the Azure fake: the CLI
// makes an azure proxy that becomes Ready (its VM's engine answers the
// stack's status request through the proxy port) and serves a request;
// the fake holds its VM, NIC, public IP and OS disk, tagged with the
// three labels; a change of its allowed ranges lands in place (the
// provider PATCHes the VM's userData, the fake applies it to the running
// engine as the agent applies what it reads from IMDS) and the proxy is
// Ready at the new generation at the same endpoint, with no second VM
// PUT; deleted, it leaves no VM, NIC, disk or public IP; a VM made with
// the deployment's tags and no proxy is collected after the grace
// period, and one of another deployment is not.
func flow(t *testing.T, s providerstack.Stack, fake *azurefake.Server) {
	ns := []string{"--namespace", s.Namespace()}
	ready, _ := s.Create(t, "azure", azure.Type, azureLocation)

	inv := fake.Inventory(azureGroup)
	if len(inv["virtualMachines"]) != 1 {
		t.Fatalf("the fake's VMs after the create: %q, want the proxy's alone", inv["virtualMachines"])
	}
	name := inv["virtualMachines"][0]
	wantInv := azurefake.Inventory{"virtualMachines": {name}, "networkInterfaces": {name + "-nic"}, "publicIPAddresses": {name + "-ip"}}
	disks := inv["disks"]
	delete(inv, "disks")
	if diff := cmp.Diff(wantInv, inv); diff != "" || len(disks) != 1 {
		t.Errorf("the fake's resources after the create (-want +got), and disks %q (want one):\n%s", disks, diff)
	}
	vm, _ := fake.VM(azureGroup, name)
	uid := vm.Tags[provider.LabelUID]
	labels := map[string]string{}
	for _, k := range []string{provider.LabelManaged, provider.LabelUID, provider.LabelDeployment} {
		labels[k] = vm.Tags[k]
	}
	wantLabels := map[string]string{provider.LabelManaged: provider.LabelManagedYes, provider.LabelUID: uid, provider.LabelDeployment: azureDeployment}
	if diff := cmp.Diff(wantLabels, labels); diff != "" || uuid.Validate(uid) != nil || vm.Location != azureLocation || vm.Image != azure.DefaultImage {
		t.Errorf("the proxy's VM %s in %s of %s (-want +got labels):\n%s", name, vm.Location, vm.Image, diff)
	}

	// A live change: the VM's userData is rewritten, and the VM (the
	// fake's engine) takes it without a new VM.
	stdout := s.CLI(t, append([]string{"proxies", "update", "azure", "--allowed-source-range", "127.0.0.1/32,198.51.100.0/24",
		"--wait", "--timeout", "90s", "-o", "json"}, ns...)...)
	var changed struct {
		Generation int64
		Status     struct {
			Phase, Endpoint    string
			ObservedGeneration int64
		}
	}
	if err := json.Unmarshal([]byte(stdout), &changed); err != nil {
		t.Fatalf("update -o json printed no proxy: %v\n%s", err, stdout)
	}
	type change struct {
		Phase, Endpoint                string
		Generation, ObservedGeneration int64
		VMs                            []string
		VMPuts, VMPatches              int
		// Served is the generation of the engine's configuration in
		// the VM's userData.
		Served int64
	}
	after, _ := fake.VM(azureGroup, name)
	raw, _ := base64.StdEncoding.DecodeString(after.UserData)
	served := int64(-1)
	if boot, err := cloudinit.Parse(string(raw)); err == nil {
		if engine, err := boot.Engine(); err == nil {
			served = engine.Generation
		}
	}
	got := change{Phase: changed.Status.Phase, Endpoint: changed.Status.Endpoint, Generation: changed.Generation,
		ObservedGeneration: changed.Status.ObservedGeneration, VMs: fake.Inventory(azureGroup)["virtualMachines"],
		VMPuts: fake.Calls("virtualMachines.put"), VMPatches: fake.Calls("virtualMachines.patch"), Served: served}
	want := change{Phase: "Ready", Endpoint: ready.Status.Endpoint, Generation: 2, ObservedGeneration: 2, VMs: []string{name},
		VMPuts: 1, VMPatches: 1, Served: 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the live change of the azure proxy (-want +got):\n%s", diff)
	}
	if !fake.Serving(azureGroup, name) {
		t.Errorf("the VM %s runs no engine after the change", name)
	}

	s.CLI(t, append([]string{"proxies", "delete", "azure", "--wait", "--timeout", "90s"}, ns...)...)
	providerstack.WaitFor(t, time.Minute, "the fake's resource group to hold nothing of the proxy", func() bool { return len(fake.Inventory(azureGroup)) == 0 })

	// An orphan of this deployment, and a VM of another, each with its
	// NIC, public IP and disk, tagged as the provider tags its own.
	tags := func(deployment string) map[string]string {
		return map[string]string{provider.LabelManaged: provider.LabelManagedYes, provider.LabelUID: uuid.NewString(), provider.LabelDeployment: deployment}
	}
	fake.PutVM(azureGroup, "orphan-of-egress", azureLocation, tags(azureDeployment))
	fake.PutVM(azureGroup, "vm-of-staging", azureLocation, tags("staging"))
	providerstack.WaitFor(t, time.Minute, "the orphan to be collected", func() bool {
		return !slices.Contains(fake.Inventory(azureGroup)["virtualMachines"], "orphan-of-egress")
	})
	// Several collector runs later (GC_INTERVAL=1s), the other
	// deployment's VM is there still, and nothing of the orphan is.
	time.Sleep(3 * time.Second)
	left := fake.Inventory(azureGroup)
	var disks2 []string
	for _, d := range left["disks"] {
		disks2 = append(disks2, strings.SplitN(d, "_", 2)[0])
	}
	delete(left, "disks")
	wantLeft := azurefake.Inventory{"virtualMachines": {"vm-of-staging"}, "networkInterfaces": {"vm-of-staging-nic"}, "publicIPAddresses": {"vm-of-staging-ip"}}
	if diff := cmp.Diff(wantLeft, left); diff != "" || !slices.Equal(disks2, []string{"vm-of-staging"}) {
		t.Errorf("the fake's resources once the orphan is collected (-want +got), and the disks of %q (want vm-of-staging's):\n%s", disks2, diff)
	}
}
