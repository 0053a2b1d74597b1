package azurefake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider/azure/azurefake"
	"github.com/egress-proxies/egress/internal/testenv"
)

// TestAzureCLIAgainstTheFake holds the fake to a client the project did
// not write: Azure's own CLI (Debian's azure-cli, 2.45 in Debian 12),
// offline, against a custom cloud registered with `az cloud register`
// whose resource manager is the fake and whose active directory is the
// fake's token endpoint. az logs in as a service principal, lists the
// VMs of the resource group (page by page, by nextLink), shows one (and
// its details: power state, NIC and public IP), lists the public IPs of the
// deployment by tag, deletes a VM, and lists again: the VM is gone with
// what its deleteOptions take along (an Ephemeral proxy's NIC, public IP
// and disk), a Static proxy's public IP stays, free. Each command's exit
// status is checked and what it prints compared with what the fake
// keeps.
//
// How az is kept offline:
//   - MSAL Python (1.21, Debian's python3-msal) asks
//     https://login.microsoftonline.com/common/discovery/instance about
//     any authority host it does not know (msal/authority.py,
//     Authority.__init__), unless the authority is ADFS's; so the custom
//     cloud's --endpoint-active-directory is the fake's URL + "/adfs"
//     (az then discards the tenant, azure/cli/core/auth/identity.py
//     _get_authority_url), and the fake's OpenID configuration there
//     names its tenant's v2.0 token endpoint.
//   - The fake's TLS certificate is az's CA bundle (REQUESTS_CA_BUNDLE),
//     and any connection to elsewhere goes to a proxy that refuses it and
//     fails the test (HTTPS_PROXY, with NO_PROXY=127.0.0.1). az's check
//     for a newer az (https://azure.microsoft.com, then GitHub) is kept
//     from starting by a fresh cache of it (skipUpdateCheck).
//   - The custom cloud's API profile is 2020-09-01-hybrid (Azure Stack
//     Hub's), not "latest": Debian 12's azure-cli 2.45 asks, under
//     "latest", for Microsoft.Compute 2022-11-01, which Debian's
//     python3-azure (azure-mgmt-compute 29.0.0) does not ship, so `az vm
//     list` fails against any cloud, Azure's own too, with "API version
//     2022-11-01 does not have operation group 'virtual_machines'"
//     (azure/mgmt/compute/_compute_management_client.py, line 2308).
//     Under the hybrid profile az's VM commands speak compute 2020-06-01;
//     its public-ip commands (atomic commands) speak network 2022-07-01.
//   - Every endpoint az register needs is given, so it does not read
//     the resource manager's /metadata/endpoints (msrestazure's
//     _populate_from_metadata_endpoint); telemetry is off
//     (AZURE_CORE_COLLECT_TELEMETRY); AZURE_CONFIG_DIR is the test's.
//
// The planted cases change what the fake writes as ARM never would
// (provisioningState under another name, a tag key misspelled) and
// check that the listing then no longer matches: the comparison is what
// fails when the fake is wrong.
func TestAzureCLIAgainstTheFake(t *testing.T) {
	az := newAzureCLI(t)
	f, subnets := newFake(t)
	c := newARMClient(t, f)
	az.login(t, f)

	tags := func(uid string) map[string]string {
		return map[string]string{"proxy-operator-managed": "true", "egress-deployment": "egress", "proxy-operator-uid": uid}
	}
	ephemeral := proxy{name: "egress-7d1e0c4a", location: "westeurope", zone: "1", tags: tags("7d1e0c4a-0000-4000-8000-000000000001")}
	static := proxy{name: "egress-5c4b3a29", location: "northeurope", static: true, tags: tags("5c4b3a29-0000-4000-8000-000000000002")}
	for _, p := range []proxy{ephemeral, static} {
		c.create(p, subnets[p.location])
	}
	f.PutVM(testGroup, "other-team", "westeurope", map[string]string{"team": "other"})
	// Two a page: az follows nextLink.
	f.SetPageSize(2)

	// az vm list -g: every VM of the resource group, with its location,
	// tags and provisioningState, as az reads them through its models.
	type listed struct {
		Location, ProvisioningState string
		Tags                        map[string]string
	}
	wantVMs := map[string]listed{
		ephemeral.name: {"westeurope", "Succeeded", ephemeral.tags},
		static.name:    {"northeurope", "Succeeded", static.tags},
		"other-team":   {"westeurope", "Succeeded", map[string]string{"team": "other"}},
	}
	vmList := func(t *testing.T) map[string]listed {
		var vms []struct {
			Name, Location, ProvisioningState string
			Tags                              map[string]string
		}
		az.json(t, &vms, "vm", "list", "-g", testGroup)
		got := map[string]listed{}
		for _, vm := range vms {
			got[vm.Name] = listed{vm.Location, vm.ProvisioningState, vm.Tags}
		}
		return got
	}
	cases := map[string]struct {
		reason string
		plant  func(body map[string]any)
		differ bool
	}{
		"as ARM writes it": {
			reason: "az reads the fake's VMs as the fake keeps them",
		},
		"provisioningState under another name": {
			reason: "az's model knows properties.provisioningState only: the listing shows none",
			plant: func(vm map[string]any) {
				p := vm["properties"].(map[string]any)
				p["state"] = p["provisioningState"]
				delete(p, "provisioningState")
			},
			differ: true,
		},
		"a tag key written wrong": {
			reason: "a tag is the deployment's only by its exact key",
			plant: func(vm map[string]any) {
				tags, _ := vm["tags"].(map[string]any)
				if v, ok := tags["egress-deployment"]; ok {
					delete(tags, "egress-deployment")
					tags["egress_deployment"] = v
				}
			},
			differ: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.plant != nil {
				f.Tamper("virtualMachines.list", func(body map[string]any) {
					for _, vm := range body["value"].([]any) {
						tc.plant(vm.(map[string]any))
					}
				})
				defer f.Tamper("", nil)
			}
			before := f.Calls("virtualMachines.list")
			diff := cmp.Diff(wantVMs, vmList(t))
			if pages := f.Calls("virtualMachines.list") - before; pages != 2 {
				t.Errorf("az vm list asked for %d pages of 3 VMs two a page, want 2 (it follows nextLink)", pages)
			}
			if tc.differ && diff == "" {
				t.Errorf("%s: az vm list matches what the fake keeps although the fake wrote a wrong shape", tc.reason)
			}
			if !tc.differ && diff != "" {
				t.Errorf("%s: az vm list -g %s (-want +got):\n%s", tc.reason, testGroup, diff)
			}
		})
	}

	// az vm show: one VM's size, image, OS disk and its deleteOption,
	// NIC, and no customData (ARM never writes it back). The NIC
	// reference's deleteOption is not read: the profile's model
	// (compute 2020-06-01) predates it, and az drops it from the
	// reference's flattened properties.
	var shown struct {
		Name, Location  string
		Zones           []string
		HardwareProfile struct{ VMSize string }
		StorageProfile  struct {
			ImageReference struct{ Publisher, Offer, SKU, Version string }
			OSDisk         struct{ Name, DeleteOption string }
		}
		OSProfile      struct{ ComputerName, CustomData string }
		NetworkProfile struct {
			NetworkInterfaces []struct{ ID string }
		}
	}
	az.json(t, &shown, "vm", "show", "-g", testGroup, "-n", ephemeral.name)
	kept, _ := f.VM(testGroup, ephemeral.name)
	nic, _ := f.NIC(testGroup, ephemeral.name+"-nic")
	gotShown := []string{shown.Name, shown.Location, strings.Join(shown.Zones, ","), shown.HardwareProfile.VMSize,
		strings.Join([]string{shown.StorageProfile.ImageReference.Publisher, shown.StorageProfile.ImageReference.Offer, shown.StorageProfile.ImageReference.SKU, shown.StorageProfile.ImageReference.Version}, ":"),
		shown.StorageProfile.OSDisk.Name, shown.StorageProfile.OSDisk.DeleteOption, shown.OSProfile.ComputerName, shown.OSProfile.CustomData}
	for _, n := range shown.NetworkProfile.NetworkInterfaces {
		gotShown = append(gotShown, n.ID)
	}
	wantShown := []string{ephemeral.name, "westeurope", "1", "Standard_B1s", "Debian:debian-13:13-gen2:latest", kept.OSDisk, "Delete", ephemeral.name, "", nic.ID}
	if diff := cmp.Diff(wantShown, gotShown); diff != "" {
		t.Errorf("az vm show -g %s -n %s (-want +got):\n%s", testGroup, ephemeral.name, diff)
	}

	// az vm show -d: the instance view's power state, and the VM's NIC
	// and public IP as az reads them (its network models), beside what
	// the fake keeps.
	var details struct {
		PowerState, PublicIps, PrivateIps, MacAddresses string
	}
	az.json(t, &details, "vm", "show", "-d", "-g", testGroup, "-n", ephemeral.name)
	ip, _ := f.PublicIP(testGroup, ephemeral.name+"-ip")
	wantDetails := []string{"VM running", ip.Address, "10.0.0.4"}
	gotDetails := []string{details.PowerState, details.PublicIps, details.PrivateIps}
	if diff := cmp.Diff(wantDetails, gotDetails); diff != "" || details.MacAddresses == "" {
		t.Errorf("az vm show -d -g %s -n %s: power state, public IPs, private IPs (-want +got):\n%s\nMAC addresses %q", testGroup, ephemeral.name, diff, details.MacAddresses)
	}

	// az network public-ip list, the deployment's by tag: the two
	// proxies' addresses, each on its NIC.
	type address struct{ Address, Allocation, SKU, IPConfiguration string }
	ipList := func(t *testing.T) map[string]address {
		var ips []struct {
			Name                     string
			IPAddress                string `json:"ipAddress"`
			PublicIPAllocationMethod string `json:"publicIPAllocationMethod"`
			SKU                      struct{ Name string }
			IPConfiguration          *struct{ ID string } `json:"ipConfiguration"`
		}
		az.json(t, &ips, "network", "public-ip", "list", "-g", testGroup,
			"--query", "[?tags.\"egress-deployment\"=='egress' && tags.\"proxy-operator-managed\"=='true']")
		got := map[string]address{}
		for _, ip := range ips {
			a := address{ip.IPAddress, ip.PublicIPAllocationMethod, ip.SKU.Name, ""}
			if ip.IPConfiguration != nil {
				a.IPConfiguration = ip.IPConfiguration.ID
			}
			got[ip.Name] = a
		}
		return got
	}
	wantIPs := map[string]address{}
	for _, p := range []proxy{ephemeral, static} {
		ip, _ := f.PublicIP(testGroup, p.name+"-ip")
		nic, _ := f.NIC(testGroup, p.name+"-nic")
		wantIPs[p.name+"-ip"] = address{ip.Address, "Static", "Standard", nic.ID + "/ipConfigurations/ipconfig1"}
	}
	if diff := cmp.Diff(wantIPs, ipList(t)); diff != "" {
		t.Errorf("az network public-ip list -g %s by the deployment's tags (-want +got):\n%s", testGroup, diff)
	}

	// az vm delete: each proxy's VM goes with what its deleteOptions
	// say; the Static proxy's address stays, free, for its next VM.
	for _, p := range []proxy{ephemeral, static} {
		az.run(t, "vm", "delete", "-g", testGroup, "-n", p.name, "--yes")
	}
	other, _ := f.VM(testGroup, "other-team")
	wantLeft := azurefake.Inventory{
		"virtualMachines":   {"other-team"},
		"networkInterfaces": {"other-team-nic"},
		"publicIPAddresses": {static.name + "-ip", "other-team-ip"},
		"disks":             {other.OSDisk},
	}
	if diff := cmp.Diff(wantLeft, f.Inventory(testGroup)); diff != "" {
		t.Errorf("what is left after az vm delete (-want +got):\n%s", diff)
	}
	wantVMsLeft := map[string]listed{"other-team": wantVMs["other-team"]}
	if diff := cmp.Diff(wantVMsLeft, vmList(t)); diff != "" {
		t.Errorf("az vm list -g %s after az vm delete (-want +got):\n%s", testGroup, diff)
	}
	staticIP := wantIPs[static.name+"-ip"]
	staticIP.IPConfiguration = ""
	if diff := cmp.Diff(map[string]address{static.name + "-ip": staticIP}, ipList(t)); diff != "" {
		t.Errorf("az network public-ip list after az vm delete: the Static proxy's address, free (-want +got):\n%s", diff)
	}

	// What az asked for: its own api-versions, through the fake's token.
	grants := f.Grants()
	if len(grants) == 0 || grants[len(grants)-1].Method != "client_secret" || grants[len(grants)-1].ClientID != testClient {
		t.Errorf("the token endpoint granted %+v, want az's client_secret grant for %s", grants, testClient)
	}
	// az's api-versions, as the fake saw them, for the record.
	t.Logf("api-versions seen: %v", f.APIVersions())
}

// azureCLI runs az with a configuration directory of the test's own,
// and every connection that would leave the machine sent to a proxy that
// refuses it and says so (a trap): az talks to the fake alone, and the
// test fails if it tried anything else.
type azureCLI struct {
	path, dir, ca, trapURL string

	mu   sync.Mutex
	trap []string // what was asked of the trap
}

func newAzureCLI(t *testing.T) *azureCLI {
	t.Helper()
	path := testenv.Require(t, testenv.AzureCLI)
	dir := t.TempDir()
	a := &azureCLI{path: path, dir: dir, ca: filepath.Join(dir, "fake-ca.pem")}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 256)
			n, _ := c.Read(buf)
			a.mu.Lock()
			a.trap = append(a.trap, strings.SplitN(string(buf[:n]), "\r\n", 2)[0])
			a.mu.Unlock()
			c.Close()
		}
	}()
	a.trapURL = "http://" + l.Addr().String()
	a.skipUpdateCheck(t)
	t.Cleanup(func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if len(a.trap) > 0 {
			t.Errorf("az tried to leave the machine: %s", strings.Join(a.trap, "; "))
		}
	})
	return a
}

// skipUpdateCheck writes the version check's cache az keeps in its
// configuration directory, fresh: without it, az's first command asks
// https://azure.microsoft.com whether it can reach GitHub to look for a
// newer az (azure/cli/core/util.py, handle_version_update,
// get_cached_latest_versions, check_connectivity), which the trap would
// catch. The versions are az's own, as az reads them
// (_get_local_versions), through the Python its script names.
func (a *azureCLI) skipUpdateCheck(t *testing.T) {
	t.Helper()
	script, err := os.ReadFile(a.path)
	if err != nil {
		t.Fatal(err)
	}
	python, _, _ := strings.Cut(strings.TrimPrefix(string(script), "#!"), "\n")
	python = strings.TrimSpace(python)
	out, err := exec.Command(python, "-c", "from azure.cli.core.util import _get_local_versions; import json; print(json.dumps(_get_local_versions()))").Output()
	if err != nil {
		t.Fatalf("az's versions, through %s: %v", python, err)
	}
	var versions map[string]map[string]string
	if err := json.Unmarshal(out, &versions); err != nil || versions["azure-cli"]["local"] == "" {
		t.Fatalf("az's versions: %q, %v", out, err)
	}
	for _, v := range versions {
		v["pypi"] = v["local"]
	}
	now := time.Now().Format("2006-01-02 15:04:05.000000")
	b, _ := json.Marshal(map[string]any{"versions": versions, "update_time": now, "check_time": now})
	if err := os.WriteFile(filepath.Join(a.dir, "versionCheck.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// login registers the custom cloud that points at f, sets it and logs in
// as the test's service principal.
func (a *azureCLI) login(t *testing.T, f *azurefake.Server) {
	t.Helper()
	if err := f.CAFile(a.ca); err != nil {
		t.Fatal(err)
	}
	a.run(t, "cloud", "register", "--name", "AzureFake", "--profile", cliProfile,
		"--endpoint-resource-manager", f.Endpoint()+"/",
		"--endpoint-management", f.Endpoint()+"/",
		"--endpoint-active-directory", f.Endpoint()+"/adfs",
		"--endpoint-active-directory-resource-id", azurefake.ARMAudience,
		"--endpoint-active-directory-graph-resource-id", f.Endpoint()+"/graph/",
		"--endpoint-gallery", f.Endpoint()+"/gallery/",
		"--endpoint-sql-management", f.Endpoint()+"/sql/",
		"--endpoint-vm-image-alias-doc", f.Endpoint()+"/aliases.json",
		"--suffix-storage-endpoint", "core.azurefake.invalid",
		"--suffix-keyvault-dns", ".vault.azurefake.invalid")
	a.run(t, "cloud", "set", "--name", "AzureFake")
	a.run(t, "login", "--service-principal", "-u", testClient, "-p", testSecret, "--tenant", testTenant)
}

// run runs az and fails the test unless it exits 0; it returns what it
// printed. A generous bound keeps a hung command from holding the test;
// it is no measure.
func (a *azureCLI) run(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, a.path, append(args, "--output", "json", "--only-show-errors")...)
	cmd.Env = append(os.Environ(), "AZURE_CONFIG_DIR="+a.dir, "REQUESTS_CA_BUNDLE="+a.ca, "AZURE_CORE_COLLECT_TELEMETRY=false",
		"AZURE_CORE_NO_COLOR=true", "AZURE_CORE_SURVEY_MESSAGE=false", "AZURE_EXTENSION_DIR="+filepath.Join(a.dir, "extensions"),
		"HOME="+a.dir, "HTTPS_PROXY="+a.trapURL, "HTTP_PROXY="+a.trapURL, "https_proxy="+a.trapURL, "http_proxy="+a.trapURL,
		"NO_PROXY=127.0.0.1", "no_proxy=127.0.0.1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("az %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func (a *azureCLI) json(t *testing.T, v any, args ...string) {
	t.Helper()
	out := a.run(t, args...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("az %s printed no JSON of %T: %v\n%s", strings.Join(args, " "), v, err, out)
	}
}

// cliProfile is the API profile of the custom cloud: see
// TestAzureCLIAgainstTheFake's doc comment.
const cliProfile = "2020-09-01-hybrid"

// TestAzureCLIReadsTheUsages: Azure's CLI reads a location's quotas from
// the fake's usages of Microsoft.Compute (az vm list-usage), with what
// the location holds counted: a VM of one vCPU (Standard_B1s). Its
// network list-usages is not asked: under the custom cloud's profile
// (cliProfile) it loads azure.mgmt.network's 2018-11-01 module, which
// Debian's azure-cli does not ship; the SDK reads Microsoft.Network's
// usages in the azure provider's TestQuotas.
func TestAzureCLIReadsTheUsages(t *testing.T) {
	az := newAzureCLI(t)
	f, subnets := newFake(t)
	c := newARMClient(t, f)
	az.login(t, f)
	f.SetQuotas("westeurope", azurefake.Quotas{Cores: 20, VirtualMachines: 25000, PublicIPAddresses: 60})
	c.create(proxy{name: "egress-7d1e0c4a", location: "westeurope", tags: map[string]string{"proxy-operator-managed": "true"}}, subnets["westeurope"])
	type entry struct {
		CurrentValue, Limit any
		Name                struct{ Value string }
	}
	read := func(args ...string) map[string]string {
		var es []entry
		az.json(t, &es, args...)
		out := map[string]string{}
		for _, e := range es {
			// az writes the figures as numbers or as strings by command.
			out[e.Name.Value] = fmt.Sprintf("%v of %v", e.CurrentValue, e.Limit)
		}
		return out
	}
	got := read("vm", "list-usage", "--location", "westeurope")
	want := map[string]string{"cores": "1 of 20", "virtualMachines": "1 of 25000"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("what az vm list-usage reads (-want +got):\n%s", diff)
	}
}
