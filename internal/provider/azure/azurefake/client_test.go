package azurefake_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/egress-proxies/egress/internal/provider/azure/azurefake"
)

// The ids the tests' fakes are started with.
const (
	testSubscription = "6f1c2a3b-0000-4000-8000-0000000000a1"
	testTenant       = "72f988bf-0000-4000-8000-0000000000b2"
	testClient       = "0c0ffee0-0000-4000-8000-0000000000c3"
	testSecret       = "not-a-secret"
	testGroup        = "egress-rg"
	// computeAPI and networkAPI are the api-versions the tests' own
	// client sends: those the provider's SDK modules send (armcompute
	// v8.4.0: 2026-04-01, armnetwork v7.2.0: 2025-01-01, as the fake
	// recorded them on 2026-12-07). The fake takes any; az 2.45 sends
	// its own, and APIVersions records each.
	computeAPI = "2026-04-01"
	networkAPI = "2025-01-01"
)

// newFake starts a fake with the deployment's network in two locations
// and the test's service principal.
func newFake(t *testing.T) (*azurefake.Server, map[string]string) {
	t.Helper()
	f := azurefake.New(testSubscription, testTenant)
	t.Cleanup(f.Close)
	subnets := f.SeedNetwork(testGroup, "westeurope", "northeurope")
	f.AddClientSecret(testClient, testSecret)
	return f, subnets
}

// armClient is the plain ARM client of the fake's own tests: what the
// provider's SDK calls do on the wire (a token from the token endpoint,
// JSON bodies, the long-running operation followed by its
// Azure-AsyncOperation), without the SDK.
type armClient struct {
	t     *testing.T
	f     *azurefake.Server
	http  *http.Client
	token string
}

func newARMClient(t *testing.T, f *azurefake.Server) *armClient {
	c := &armClient{t: t, f: f, http: f.Client()}
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {testClient}, "client_secret": {testSecret}, "scope": {azurefake.ARMAudience + ".default"}}
	resp, err := c.http.PostForm(f.AuthorityHost()+testTenant+"/oauth2/v2.0/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("token endpoint: %s, %v", resp.Status, err)
	}
	c.token = tok.AccessToken
	return c
}

// reply is an answer: status, headers, the JSON body.
type reply struct {
	status int
	header http.Header
	body   map[string]any
}

// do sends a request to a path of the fake's ARM (api-version added when
// the path has none) and returns the answer.
func (c *armClient) do(method, path string, body any, header ...string) reply {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	u := path
	if !strings.HasPrefix(u, "https://") {
		u = c.f.Endpoint() + path
	}
	if !strings.Contains(u, "api-version=") {
		v := computeAPI
		if strings.Contains(path, "Microsoft.Network") {
			v = networkAPI
		}
		u += map[bool]string{true: "&", false: "?"}[strings.Contains(u, "?")] + "api-version=" + v
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	out := reply{status: resp.StatusCode, header: resp.Header}
	raw, _ := io.ReadAll(resp.Body)
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &out.body); err != nil {
			c.t.Fatalf("%s %s answered no JSON object: %q", method, path, raw)
		}
	}
	return out
}

// wait follows a long-running operation's Azure-AsyncOperation until it
// is done, as the SDK's poller does, and returns its last status.
func (c *armClient) wait(r reply) map[string]any {
	c.t.Helper()
	op := r.header.Get("Azure-AsyncOperation")
	if op == "" {
		c.t.Fatalf("an answer %d without Azure-AsyncOperation: %v", r.status, r.body)
	}
	for range 100 {
		st := c.do(http.MethodGet, op, nil)
		if s, _ := st.body["status"].(string); s != "InProgress" {
			return st.body
		}
	}
	c.t.Fatalf("operation %s still in progress after 100 polls", op)
	return nil
}

// proxy is what the provider makes of a proxy: NAME-ip, NAME-nic, NAME
// in a location's subnet, tagged.
type proxy struct {
	name, location, zone string
	static               bool
	tags                 map[string]string
}

// create makes a proxy's public IP, NIC and VM as the contract says, and
// waits for each.
func (c *armClient) create(p proxy, subnet string) {
	c.t.Helper()
	c.createWith(p, subnet, "Delete", "Delete")
}

// createWith is create with the VM's deleteOptions of its NIC and OS
// disk.
func (c *armClient) createWith(p proxy, subnet, nicOption, diskOption string) {
	c.t.Helper()
	rg := "/subscriptions/" + testSubscription + "/resourceGroups/" + testGroup
	nicID := c.nicFor(p, subnet)
	vm := c.do(http.MethodPut, rg+"/providers/Microsoft.Compute/virtualMachines/"+p.name, vmBody(p, nicID, nicOption, diskOption), "If-None-Match", "*")
	if vm.status != http.StatusCreated {
		c.t.Fatalf("VM %s: %d %v", p.name, vm.status, vm.body)
	}
	if st := c.wait(vm); st["status"] != "Succeeded" {
		c.t.Fatalf("VM %s: operation %v", p.name, st)
	}
}

// nicFor makes a proxy's public IP and NIC and returns the NIC's id.
func (c *armClient) nicFor(p proxy, subnet string) string {
	c.t.Helper()
	rg := "/subscriptions/" + testSubscription + "/resourceGroups/" + testGroup
	ipDelete := "Delete"
	if p.static {
		ipDelete = "Detach"
	}
	var zones []string
	if p.zone != "" {
		zones = []string{p.zone}
	}
	ip := c.do(http.MethodPut, rg+"/providers/Microsoft.Network/publicIPAddresses/"+p.name+"-ip", map[string]any{
		"location": p.location, "tags": p.tags, "zones": zones, "sku": map[string]any{"name": "Standard", "tier": "Regional"},
		"properties": map[string]any{"publicIPAllocationMethod": "Static", "publicIPAddressVersion": "IPv4", "deleteOption": ipDelete},
	})
	if ip.status != http.StatusCreated && ip.status != http.StatusOK {
		c.t.Fatalf("public IP %s-ip: %d %v", p.name, ip.status, ip.body)
	}
	c.wait(ip)
	nic := c.do(http.MethodPut, rg+"/providers/Microsoft.Network/networkInterfaces/"+p.name+"-nic", map[string]any{
		"location": p.location, "tags": p.tags,
		"properties": map[string]any{"ipConfigurations": []any{map[string]any{"name": "ipconfig1", "properties": map[string]any{
			"subnet": map[string]any{"id": subnet}, "publicIPAddress": map[string]any{"id": ip.body["id"]}, "privateIPAllocationMethod": "Dynamic",
		}}}},
	})
	if nic.status != http.StatusCreated && nic.status != http.StatusOK {
		c.t.Fatalf("NIC %s-nic: %d %v", p.name, nic.status, nic.body)
	}
	c.wait(nic)
	return nic.body["id"].(string)
}

func vmBody(p proxy, nicID, nicOption, diskOption string) map[string]any {
	var zones []string
	if p.zone != "" {
		zones = []string{p.zone}
	}
	ud := "I2Nsb3VkLWNvbmZpZwo=" // base64 of "#cloud-config\n"
	return map[string]any{
		"location": p.location, "tags": p.tags, "zones": zones,
		"properties": map[string]any{
			"hardwareProfile": map[string]any{"vmSize": "Standard_B1s"},
			"storageProfile": map[string]any{
				"imageReference": map[string]any{"publisher": "Debian", "offer": "debian-13", "sku": "13-gen2", "version": "latest"},
				"osDisk":         map[string]any{"name": p.name + "-osdisk", "createOption": "FromImage", "deleteOption": diskOption, "managedDisk": map[string]any{"storageAccountType": "Standard_LRS"}},
			},
			"osProfile": map[string]any{"computerName": p.name, "adminUsername": "egress", "customData": ud,
				"linuxConfiguration": map[string]any{"disablePasswordAuthentication": true, "ssh": map[string]any{"publicKeys": []any{}}}},
			"networkProfile": map[string]any{"networkInterfaces": []any{map[string]any{"id": nicID, "properties": map[string]any{"primary": true, "deleteOption": nicOption}}}},
			"userData":       ud,
		},
	}
}

func groupPath(typ, name string) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/%s/%s", testSubscription, testGroup, typ, name)
}
