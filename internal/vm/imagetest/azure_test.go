package imagetest

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/bootstrap/cloudinit"
	"github.com/egress-proxies/egress/internal/provider"
	azureprovider "github.com/egress-proxies/egress/internal/provider/azure"
	"github.com/egress-proxies/egress/internal/provider/azure/azurefake"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// The Azure VM of the boot: its location and availability zone, its
// vmId (also its SMBIOS system-uuid, cloud-init's instance id), its
// admin user, its subscription and resource group.
const (
	azureLocation      = "westeurope"
	azureZone          = "2"
	azureVMID          = "5c0e9b27-3f4a-4d8e-9b1c-7a2e6f8d0c13"
	azureAdmin         = "egress"
	azureSubscription  = "00000000-0000-4000-8000-0000000e6e55"
	azureResourceGroup = "egress-imagetest"
	azureTenant        = "00000000-0000-4000-8000-0000000e6e56"
)

// azureRun is what the Azure-shaped boot's own checks use.
type azureRun struct {
	md   *AzureMetadata
	wire *AzureWireServer
	// renderer and req make the VM's user-data, as the Azure provider
	// makes it at the create and at a change (its Reconfigure renders
	// the request with the new configuration).
	renderer cloudinit.Renderer
	req      provider.CreateRequest
	// fresh are the credentials the live change added, once it did.
	fresh proxy.Credentials
}

// azureShape is the Azure-shaped boot (testCloudInit): Debian's
// cloud-init, running its Azure datasource, reads the VM's customData
// from the OVF environment (in the seed folder, where the provisioning
// media would be), asks the stand-in of Azure's IMDS for the instance
// document and reports ready to the stand-in of the wire server
// (azureimage.go says what is stood in for and what the test cannot
// show); the user-data's script runs, and the agent follows the VM's
// userData on IMDS, where the test changes it to a new generation, which
// the VM serves without a reboot (LiveChangeWithoutReboot). The user-data
// is rendered by the VM side's own renderer as the composition root
// makes it for the Azure plugin's boot (no compression; IMDS named for
// the agent's identity and for its watch), and sent by the Azure
// provider's Create over the Azure fake (azureCreate).
var azureShape = cloudShape{
	rel:          AzureRelease,
	datasource:   "DataSourceAzure",
	create:       azureCreate,
	userDataPath: "/metadata/instance/compute/userData",
	firmware:     azureFirmware,
	checks: func(checks *checklist, ctx context.Context, r *run, c *Container) {
		checks.run("the status names the VM's vmId, location and zone the agent read from IMDS", func(t *testing.T) { CheckIdentity(t, ctx, shapeHarness{r: r}, r.cloud.vmID, r.cloud.zone) })
		checks.run("cloud-init reported ready to the wire server, once", func(t *testing.T) { checkAzureReported(t, r) })
		checks.run("cloud-init and the agent asked IMDS from the VM with Metadata: true", func(t *testing.T) { checkAzureIMDSAsked(t, r) })
		checks.run("IMDS refuses a read without Metadata: true on the VM, and answers one with it", func(t *testing.T) { checkAzureIMDSHeader(t, ctx, r, c) })
		checks.run("the wire server is refused through the proxy", func(t *testing.T) { checkAzureWireServerRefused(t, ctx, r) })
		checks.run("LiveChangeWithoutReboot", func(t *testing.T) { checkLiveChange(t, ctx, r, c) })
	},
	rebootChecks: func(checks *checklist, ctx context.Context, r *run, c *Container) {
		checks.run("after a reboot the status names the VM again", func(t *testing.T) { CheckIdentity(t, ctx, shapeHarness{r: r}, r.cloud.vmID, r.cloud.zone) })
		checks.run("after a reboot the live change is served, with its new credentials", func(t *testing.T) {
			if r.cloud.azure.fresh.Username == "" {
				t.Skip("the live change did not land")
			}
			checkTLSAs(t, ctx, r, r.cloud.azure.fresh, "/after-reboot")
		})
		checks.run("after a reboot cloud-init did not provision again", func(t *testing.T) { checkAzureReported(t, r) })
	},
}

// azureCreate makes the VM with the Azure provider's Create over the
// Azure fake (azurefake), as the DigitalOcean and EC2 shapes make theirs
// over their fakes, with the renderer the composition root gives the
// Azure plugin's boot, and sets the stand-ins up to serve what the fake
// holds: IMDS with the VM's instance document and its userData (the
// base64 the provider sent as properties.userData), the wire server (also
// the VM's resolver) and the OVF environment with the customData the
// provider sent (the same user-data). It returns the VM's vmId: the
// stand-ins' own, as the boot's firmware says it (the fake's is another).
func azureCreate(t *testing.T, ctx context.Context, r *run, _ func(provider.Provider, provider.Placement) string) string {
	t.Helper()
	renderer, prober := cloudVMSide(t, r)
	// The composition root's renderer for the plugin's boot
	// (internal/app's cloudInitVM).
	renderer.Gzip, renderer.IMDS, renderer.WatchUserData = azureprovider.Plugin.Boot.Gzip, azureprovider.Plugin.Boot.MetadataURL, azureprovider.Plugin.Boot.WatchUserData
	fake := azurefake.NewHTTP(azureSubscription, azureTenant)
	t.Cleanup(fake.Close)
	fake.AcceptToken(azureprovider.LocalToken)
	subnets := fake.SeedNetwork(azureResourceGroup, azureLocation)
	c, err := azureprovider.NewClients(azureSubscription, azureLocalToken{}, fake.Endpoint(), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := azureprovider.New(c, azureprovider.Config{SubscriptionID: azureSubscription, ResourceGroup: azureResourceGroup,
		Subnets: subnets, Renderer: renderer, Prober: prober})
	if err != nil {
		t.Fatal(err)
	}
	// createCloudVM's create, with the request kept for the live change,
	// which renders it with a new configuration as Reconfigure does.
	req := cloudCreateRequest(t, r, provider.Placement{Region: azureLocation, Zone: azureLocation + "-" + azureZone})
	if _, err := p.Create(ctx, req); err != nil {
		t.Fatalf("azure provider Create: %v", err)
	}
	vm, ok := fake.VM(azureResourceGroup, r.instance)
	if !ok || vm.Location != azureLocation || !slices.Equal(vm.Zones, []string{azureZone}) || vm.UserData == "" || vm.CustomData != vm.UserData {
		t.Fatalf("the Azure fake's VM %s: %+v (present %t), want it in %s zone %s with its userData the same as its customData",
			r.instance, vm, ok, azureLocation, azureZone)
	}
	raw, err := base64.StdEncoding.DecodeString(vm.UserData)
	if err != nil {
		t.Fatalf("the VM's userData is not base64: %v", err)
	}
	ud := string(raw)
	md := &AzureMetadata{VMID: azureVMID, Name: vm.Name, Location: azureLocation, Zone: azureZone,
		SubscriptionID: azureSubscription, ResourceGroup: azureResourceGroup, VMSize: vm.Size,
		AdminUsername: azureAdmin, ComputerName: vm.Name, Tags: vm.Tags,
		Private: VMPrefix, Public: VMPrefix.Addr(), MAC: vmMAC(t, r)}
	md.SetUserData(vm.UserData)
	wire := &AzureWireServer{ContainerID: "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", InstanceID: azureVMID + "._" + vm.Name}
	if err := r.topo.Internet.AddAddr("lo", netip.PrefixFrom(WireServerAddr, 32)); err != nil {
		t.Fatal(err)
	}
	serve(t, r.topo.Internet, HostPort(WireServerAddr, 80), wire)
	r.cloud.userData, r.cloud.metadata = ud, md
	r.cloud.vmID, r.cloud.zone = azureVMID, azureLocation+"-"+azureZone
	r.cloud.resolver = WireServerAddr
	r.cloud.media = map[string]string{azureSeedOVF: azureOVF(vm.Name, azureAdmin, ud)}
	r.cloud.azure = &azureRun{md: md, wire: wire, renderer: renderer, req: req}
	return azureVMID
}

// azureLocalToken is the credential the provider sends the fake:
// azure.LocalToken, which the fake accepts and no account has.
type azureLocalToken struct{}

func (azureLocalToken) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: azureprovider.LocalToken, ExpiresOn: time.Now().Add(time.Hour)}, nil
}

// vmMAC is the MAC address of the VM's interface, as IMDS gives a NIC's:
// twelve upper-case hex digits.
func vmMAC(t *testing.T, r *run) string {
	t.Helper()
	var mac string
	if err := r.topo.VM.Do(func() error {
		ifi, err := net.InterfaceByName(VMDev)
		if err == nil {
			mac = strings.ToUpper(strings.ReplaceAll(ifi.HardwareAddr.String(), ":", ""))
		}
		return err
	}); err != nil {
		t.Fatalf("reading the VM's interface: %v", err)
	}
	return mac
}

// checkAzureReported: the wire server got one health report, Ready, the
// one that ends a VM's provisioning on Azure.
func checkAzureReported(t *testing.T, r *run) {
	if diff := cmp.Diff([]string{"Ready"}, r.cloud.azure.wire.Health()); diff != "" {
		t.Errorf("the wire server's health reports (-want +got):\n%s", diff)
	}
}

// checkAzureIMDSAsked: IMDS was asked, from the VM and with the header
// "Metadata: true" (the stand-in refuses a request without it), for the
// instance document by cloud-init's datasource, for the compute part by
// the agent (which VM it is) and for the userData by the agent's watch.
func checkAzureIMDSAsked(t *testing.T, r *run) {
	want := map[string]bool{
		"/metadata/instance?api-version=2021-08-01&extended=true":               true,
		"/metadata/instance/compute?api-version=2021-02-01":                     true,
		strings.TrimPrefix(vmconfig.AzureUserDataURL, "http://169.254.169.254"): true,
	}
	got := map[string]bool{}
	for _, q := range r.cloud.azure.md.Requests() {
		if q.Flavor == "true" && strings.HasPrefix(q.RemoteAddr, VMPrefix.Addr().String()+":") && want[q.URI] {
			got[q.URI] = true
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the reads of IMDS from the VM with Metadata: true (-want +got):\n%s", diff)
	}
}

// checkAzureIMDSHeader: on the VM, a GET of the userData without the
// header "Metadata: true" is refused with 400, and one with it answers
// the userData the VM has now.
func checkAzureIMDSHeader(t *testing.T, ctx context.Context, r *run, c *Container) {
	ctx, cancel := CheckTimeout(ctx)
	defer cancel()
	out, err := c.Exec(ctx, "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", vmconfig.AzureUserDataURL)
	if err != nil || strings.TrimSpace(string(out)) != "400" {
		t.Errorf("GET %s without Metadata: true on the VM: %q (%v), want 400", vmconfig.AzureUserDataURL, out, err)
	}
	body, err := c.Exec(ctx, "curl", "-sf", "-H", "Metadata: true", vmconfig.AzureUserDataURL)
	if err != nil || strings.TrimSpace(string(body)) != r.cloud.azure.md.UserData() {
		t.Errorf("GET %s with Metadata: true on the VM: %d bytes (%v), want the VM's userData", vmconfig.AzureUserDataURL, len(body), err)
	}
}

// checkAzureWireServerRefused: a tenant reaches the wire server neither
// by a plain GET of its goal state nor by CONNECT (its port 443 is an
// allowed CONNECT port: the refusal is the deny list's), and the wire
// server saw no request from the proxy.
func checkAzureWireServerRefused(t *testing.T, ctx context.Context, r *run) {
	checkRefused(t, ctx, r, nil, HostPort(WireServerAddr, 443))
	gctx, cancel := CheckTimeout(ctx)
	defer cancel()
	url := "http://" + WireServerAddr.String() + "/machine/?comp=goalstate&" + probeMarker
	status, body, err := r.client("client", r.creds.Username, r.creds.Password).Get(gctx, url, nil)
	if err != nil {
		t.Fatalf("GET %s: no answer from the proxy: %v", url, err)
	}
	if status == http.StatusOK {
		t.Errorf("GET %s through the proxy: 200 %q", url, body)
	}
	for _, q := range r.cloud.azure.wire.Requests() {
		if strings.Contains(q.URI, probeMarker) || q.Forwarded != "" {
			t.Errorf("the wire server got a request through the proxy: %+v", q)
		}
	}
}

// checkLiveChange (LiveChangeWithoutReboot): the VM's userData, changed
// as the Azure provider's Reconfigure changes it (a user-data rendered
// from the request with the new configuration: generation 2, a second
// user added), is served without a reboot: the control plane's prober
// reads Ready at generation 2, the new user's CONNECT is answered, the
// first user's too, a tunnel opened before the change carries a second
// request after it, the kernel's boot id is the one from before, and the
// boot's egress-config is generation 2's, for the next boot.
func checkLiveChange(t *testing.T, ctx context.Context, r *run, c *Container) {
	az := r.cloud.azure
	bootID := func() string {
		out, err := c.Exec(ctx, "cat", "/proc/sys/kernel/random/boot_id")
		if err != nil {
			t.Fatalf("the boot id: %v", err)
		}
		return strings.TrimSpace(string(out))
	}
	before := bootID()
	tunnel := openTLSTunnel(t, ctx, r)
	defer tunnel.Close()
	if err := tunnel.get("/before-the-change"); err != nil {
		t.Fatalf("the tunnel opened before the change: %v", err)
	}

	fresh := proxy.Credentials{Username: "azure-" + randomHex(3), Password: randomHex(16)}
	hash, err := vmconfig.NewPasswordHash(fresh.Password)
	if err != nil {
		t.Fatal(err)
	}
	engine := r.engine
	engine.Generation = 2
	engine.Users = append(slices.Clone(engine.Users), vmconfig.User{Name: fresh.Username, PasswordHash: hash})
	req := az.req
	req.Engine = &engine
	ud, err := az.renderer.UserData(req)
	if err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	az.md.SetUserData(base64.StdEncoding.EncodeToString([]byte(ud)))

	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		st, err := r.cloud.status(wctx)
		if err == nil && st.Generation == 2 && st.Ready {
			if st.Error != "" {
				t.Errorf("generation 2 is served with the reason %q", st.Error)
			}
			break
		}
		select {
		case <-wctx.Done():
			t.Fatalf("the VM did not serve generation 2 within 2 minutes of the change: %+v, %v\n%s", st, err, c.Journal(ctx, 60))
		case <-time.After(time.Second):
		}
	}
	t.Logf("generation 2 served %.1f s after the userData changed", time.Since(changed).Seconds())
	r.cloud.generation, r.engine, az.fresh = 2, engine, fresh

	checkTLSAs(t, ctx, r, fresh, "/new-credentials")
	checkTLSAs(t, ctx, r, r.creds, "/first-credentials")
	if err := tunnel.get("/after-the-change"); err != nil {
		t.Errorf("the tunnel opened before the change: %v", err)
	}
	if after := bootID(); after != before {
		t.Errorf("the boot id is %s after the change, %s before it: the VM rebooted", after, before)
	}
	conf, err := c.Exec(ctx, "cat", vmconfig.BootDir+"/"+vmconfig.KeyConfig)
	if err != nil || !strings.Contains(string(conf), `"generation":2`) {
		t.Errorf("the boot's egress-config after the change (%v) is not generation 2's:\n%.300s", err, conf)
	}
}

// checkTLSAs: a GET of the TLS host through a CONNECT tunnel with creds
// is answered.
func checkTLSAs(t *testing.T, ctx context.Context, r *run, creds proxy.Credentials, path string) {
	t.Helper()
	ctx, cancel := CheckTimeout(ctx)
	defer cancel()
	body, err := r.client("client", creds.Username, creds.Password).GetTLS(ctx, HostPort(TLSHostAddr, TLSPort), TLSHostName, r.roots, path)
	if err != nil || body != r.tlsHost.Body {
		t.Errorf("GET %s as %s through a tunnel: %q, %v; want the TLS host's answer", path, creds.Username, body, err)
	}
}

// tlsTunnel is a CONNECT tunnel to the TLS host with a TLS session over
// it, which asks one request after another.
type tlsTunnel struct {
	conn *tls.Conn
	br   *bufio.Reader
	want string
}

// openTLSTunnel opens a tunnel with the first credentials and its TLS
// session.
func openTLSTunnel(t *testing.T, ctx context.Context, r *run) *tlsTunnel {
	t.Helper()
	cctx, cancel := CheckTimeout(ctx)
	defer cancel()
	status, conn, err := r.client("client", r.creds.Username, r.creds.Password).Connect(cctx, HostPort(TLSHostAddr, TLSPort))
	if err != nil || status != http.StatusOK {
		t.Fatalf("CONNECT %s: %d, %v", HostPort(TLSHostAddr, TLSPort), status, err)
	}
	tc := tls.Client(conn, &tls.Config{RootCAs: r.roots, ServerName: TLSHostName})
	return &tlsTunnel{conn: tc, br: bufio.NewReader(tc), want: r.tlsHost.Body}
}

// get asks path over the session and reads the TLS host's answer.
func (tt *tlsTunnel) get(path string) error {
	tt.conn.SetDeadline(time.Now().Add(15 * time.Second))
	if _, err := fmt.Fprintf(tt.conn, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, TLSHostName); err != nil {
		return err
	}
	resp, err := http.ReadResponse(tt.br, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || string(body) != tt.want {
		return fmt.Errorf("answered %s %q", resp.Status, body)
	}
	return nil
}

func (tt *tlsTunnel) Close() error { return tt.conn.Close() }

// TestAzureStandIns: the instance document has the fields cloud-init's
// Azure datasource and the agent read, shaped as Microsoft documents
// them; the wire server's goal state has the three elements cloud-init
// reads, and a health report in cloud-init's own template is recorded
// with its state. (No root needed: it runs under make test.)
func TestAzureStandIns(t *testing.T) {
	md := &AzureMetadata{VMID: azureVMID, Name: "egress-3f2c1b0a", Location: azureLocation, Zone: azureZone,
		SubscriptionID: azureSubscription, ResourceGroup: azureResourceGroup, VMSize: "Standard_B1s",
		AdminUsername: azureAdmin, ComputerName: "egress-3f2c1b0a", Private: VMPrefix, Public: VMPrefix.Addr(), MAC: "000D3A1B2C3D"}
	md.SetUserData("I2Nsb3VkLWNvbmZpZwp7fQo=")
	mds := httptest.NewServer(md)
	defer mds.Close()
	req, _ := http.NewRequest("GET", mds.URL+"/metadata/instance?api-version=2021-08-01&extended=true", nil)
	req.Header.Set("Metadata", "true")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Compute struct {
			VMID      string `json:"vmId"`
			Location  string `json:"location"`
			Zone      string `json:"zone"`
			UserData  string `json:"userData"`
			OSProfile struct {
				AdminUsername string `json:"adminUsername"`
				ComputerName  string `json:"computerName"`
			} `json:"osProfile"`
		} `json:"compute"`
		Network struct {
			Interface []struct {
				MACAddress string `json:"macAddress"`
				IPv4       struct {
					IPAddress []struct {
						PrivateIPAddress string `json:"privateIpAddress"`
					} `json:"ipAddress"`
				} `json:"ipv4"`
			} `json:"interface"`
		} `json:"network"`
		Extended struct {
			Compute struct {
				PPSType string `json:"ppsType"`
			} `json:"compute"`
		} `json:"extended"`
	}
	err = json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	type read struct{ VMID, Location, Zone, UserData, Admin, Computer, MAC, Private, PPS string }
	got := read{doc.Compute.VMID, doc.Compute.Location, doc.Compute.Zone, doc.Compute.UserData, doc.Compute.OSProfile.AdminUsername,
		doc.Compute.OSProfile.ComputerName, "", "", doc.Extended.Compute.PPSType}
	if len(doc.Network.Interface) == 1 && len(doc.Network.Interface[0].IPv4.IPAddress) == 1 {
		got.MAC, got.Private = doc.Network.Interface[0].MACAddress, doc.Network.Interface[0].IPv4.IPAddress[0].PrivateIPAddress
	}
	want := read{azureVMID, azureLocation, azureZone, "I2Nsb3VkLWNvbmZpZwp7fQo=", azureAdmin, "egress-3f2c1b0a", "000D3A1B2C3D", VMPrefix.Addr().String(), "None"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the instance document (-want +got):\n%s", diff)
	}

	wire := &AzureWireServer{ContainerID: "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", InstanceID: azureVMID + "._vm"}
	ws := httptest.NewServer(wire)
	defer ws.Close()
	resp, err = http.Get(ws.URL + "/machine/?comp=goalstate")
	if err != nil {
		t.Fatal(err)
	}
	var gs struct {
		Incarnation string `xml:"Incarnation"`
		ContainerID string `xml:"Container>ContainerId"`
		InstanceID  string `xml:"Container>RoleInstanceList>RoleInstance>InstanceId"`
	}
	err = xml.NewDecoder(resp.Body).Decode(&gs)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	// cloud-init's HEALTH_REPORT_XML_TEMPLATE (cloudinit/sources/helpers/azure.py), filled.
	report := `<?xml version="1.0" encoding="utf-8"?>
<Health xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema">
  <GoalStateIncarnation>1</GoalStateIncarnation>
  <Container>
    <ContainerId>` + gs.ContainerID + `</ContainerId>
    <RoleInstanceList>
      <Role>
        <InstanceId>` + gs.InstanceID + `</InstanceId>
        <Health>
          <State>Ready</State>
        </Health>
      </Role>
    </RoleInstanceList>
  </Container>
</Health>
`
	resp, err = http.Post(ws.URL+"/machine?comp=health", "text/xml; charset=utf-8", strings.NewReader(report))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	type state struct {
		Incarnation, ContainerID, InstanceID string
		HealthStatus                         int
		Health                               []string
	}
	if diff := cmp.Diff(state{"1", wire.ContainerID, wire.InstanceID, http.StatusOK, []string{"Ready"}},
		state{gs.Incarnation, gs.ContainerID, gs.InstanceID, resp.StatusCode, wire.Health()}); diff != "" {
		t.Errorf("the wire server (-want +got):\n%s", diff)
	}
}
