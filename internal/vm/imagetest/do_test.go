package imagetest

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/digitalocean"
	"github.com/egress-proxies/egress/internal/provider/digitalocean/dofake"
)

// The Droplet's placement in the boot: its metro and its region's slug.
// doDropletID (a number, as DigitalOcean's ids are: its documentation's
// example) is TestDOMetadata's; the boot's Droplet has the id the fake
// gave it.
const (
	doMetro     = "fra"
	doRegion    = "fra1"
	doDropletID = 2756294
)

// doShape is the DigitalOcean-shaped boot (testCloudInit): Debian's
// cloud-init, finding its DigitalOcean datasource by the Droplet's
// SMBIOS, reads the user-data the digitalocean provider made (its Create
// against the DigitalOcean fake) from the stand-in of DigitalOcean's
// metadata service, /metadata/v1.json, and reports Ready through the
// status's door as a Hetzner server does.
var doShape = cloudShape{
	rel:          DORelease,
	datasource:   "DataSourceDigitalOcean",
	create:       doCreate,
	userDataPath: "/metadata/v1/user-data",
	// The SMBIOS a Droplet's firmware gives (doimage.go).
	firmware: func(id string) map[string]string {
		return map[string]string{dmiDir + "/sys_vendor": "DigitalOcean\n", dmiDir + "/product_serial": id + "\n"}
	},
	checks: func(checks *checklist, ctx context.Context, r *run, c *Container) {
		checks.run("cloud-init took the Droplet's hostname, region and vendor-data from /metadata/v1.json", func(t *testing.T) {
			checkDOInstanceData(t, ctx, c, r)
		})
	},
}

// doCreate makes the Droplet with the digitalocean provider against the
// DigitalOcean fake, and sets the metadata stand-in up to serve it: the
// user-data the fake's Droplet was created with, and its id, name and
// region as the fake made them. The provider is given what the
// composition root gives it for its plugin's boot (a BootCloudInit
// cloud's renderer, without compression, which a JSON document could not
// carry, and naming no IMDS) and the deployment's firewall of the test's
// settings, which it makes before the Droplet. It returns the Droplet's
// id, which the firmware's serial number is.
func doCreate(t *testing.T, ctx context.Context, r *run, create func(provider.Provider, provider.Placement) string) string {
	t.Helper()
	fake := dofake.New(digitalocean.LocalToken)
	t.Cleanup(fake.Close)
	renderer, prober := cloudVMSide(t, r, false)
	// The composition root's renderer for the plugin's boot
	// (internal/app's cloudInitVM).
	renderer.Gzip, renderer.IMDS = digitalocean.Plugin.Boot.Gzip, digitalocean.Plugin.Boot.MetadataURL
	c, err := digitalocean.NewClient(digitalocean.LocalToken, fake.Endpoint(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The firewall of the test's settings: the proxy port, open to the
	// allowed range and to the control plane's address, which asks the
	// status.
	fw := digitalocean.Firewall{ProxyPorts: []string{strconv.Itoa(ProxyPort)}, SourceRanges: []string{AllowedRange.String()},
		StatusSourceRanges: []string{netip.PrefixFrom(controlPlaneAddr, 32).String()}}
	p, err := digitalocean.New(c, digitalocean.Config{Firewall: fw, Renderer: renderer, Prober: prober})
	if err != nil {
		t.Fatal(err)
	}
	id := create(p, provider.Placement{Region: doMetro, Zone: doRegion})
	droplets := fake.Droplets()
	if len(droplets) != 1 {
		t.Fatalf("the DigitalOcean fake holds %d Droplets, want 1", len(droplets))
	}
	d := droplets[0]
	if want := "digitalocean://" + strconv.Itoa(d.ID); id != want {
		t.Fatalf("Create returned %s, want %s", id, want)
	}
	if d.Name != r.instance || d.Region == nil || d.Region.Slug != doRegion {
		t.Fatalf("the fake's Droplet is %q in %v, want %s in %s", d.Name, d.Region, r.instance, doRegion)
	}
	var mac string
	if err := r.topo.VM.Do(func() error {
		ifi, err := net.InterfaceByName(vmDev)
		if err == nil {
			mac = ifi.HardwareAddr.String()
		}
		return err
	}); err != nil {
		t.Fatalf("reading the VM's interface: %v", err)
	}
	r.cloud.userData = fake.UserData(d.ID)
	// The interface is the VM's own, not the one the fake made up
	// (198.51.100.x): cloud-init matches it by its MAC in /sys/class/net
	// (doimage.go), and the container's address is the test's.
	r.cloud.metadata = &DOMetadata{DropletID: int64(d.ID), Hostname: d.Name, Region: d.Region.Slug,
		UserData: r.cloud.userData, VendorData: doVendorData, Public: VMPrefix, Gateway: GatewayPrefix.Addr(), MAC: mac,
		// The VM's resolver, the test's stand-in (doimage.go).
		Nameservers: []string{MetadataAddr.String()}}
	return strconv.Itoa(d.ID)
}

// checkDOInstanceData: cloud-init's record of the instance (its
// instance-data.json) has the hostname and the region the metadata
// service gave, and the vendor-data it kept is DigitalOcean's.
func checkDOInstanceData(t *testing.T, ctx context.Context, c *Container, r *run) {
	out, err := c.Exec(ctx, "cat", "/run/cloud-init/instance-data.json")
	if err != nil {
		t.Fatalf("no /run/cloud-init/instance-data.json: %v", err)
	}
	var data struct {
		V1 struct {
			LocalHostname    string `json:"local_hostname"`
			AvailabilityZone string `json:"availability_zone"`
			InstanceID       string `json:"instance_id"`
		} `json:"v1"`
	}
	if err := json.Unmarshal(out, &data); err != nil {
		t.Fatalf("instance-data.json: %v", err)
	}
	// The Droplet as the fake made it, which the stand-in serves
	// (doCreate).
	m := r.cloud.metadata.(*DOMetadata)
	got := [3]string{data.V1.LocalHostname, data.V1.AvailabilityZone, data.V1.InstanceID}
	want := [3]string{m.Hostname, m.Region, strconv.FormatInt(m.DropletID, 10)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("instance-data.json's hostname, zone and instance id (-want +got):\n%s", diff)
	}
	vendor, err := c.Exec(ctx, "cat", "/var/lib/cloud/instance/vendor-data.txt")
	if err != nil || string(vendor) != doVendorData {
		t.Errorf("cloud-init's vendor-data %q (%v), want DigitalOcean's %q", vendor, err, doVendorData)
	}
}

// TestDOMetadata: the stand-in of DigitalOcean's metadata service serves
// /metadata/v1.json with every field cloud-init's DigitalOcean datasource
// reads, with the types it reads them as (droplet_id a number, the
// interfaces by type, dns.nameservers a list), the user-data and
// vendor-data as given at their own paths, 404 elsewhere, and records
// every request. It needs no root and runs in make test.
func TestDOMetadata(t *testing.T) {
	m := &DOMetadata{DropletID: doDropletID, Hostname: "egress-3f2c1b0a", Region: doRegion, UserData: "#cloud-config\n{}",
		VendorData: doVendorData, Public: VMPrefix, Gateway: GatewayPrefix.Addr(), MAC: "04:01:2a:0f:2a:01",
		Nameservers: []string{MetadataAddr.String()}}
	srv := httptest.NewServer(m)
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}

	status, body := get("/metadata/v1.json")
	if status != http.StatusOK {
		t.Fatalf("GET /metadata/v1.json: %d", status)
	}
	// Decoded into plain values, as Python's json.loads gives the
	// datasource: what it reads, by key.
	var doc map[string]any
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"droplet_id":  float64(doDropletID),
		"hostname":    "egress-3f2c1b0a",
		"user_data":   "#cloud-config\n{}",
		"vendor_data": doVendorData,
		"public_keys": []any{},
		"region":      doRegion,
		"interfaces": map[string]any{"public": []any{map[string]any{
			"ipv4": map[string]any{"ip_address": "192.0.2.2", "netmask": "255.255.255.0", "gateway": "192.0.2.1"},
			"mac":  "04:01:2a:0f:2a:01", "type": "public",
		}}},
		"dns": map[string]any{"nameservers": []any{"169.254.169.254"}},
	}
	if diff := cmp.Diff(want, doc); diff != "" {
		t.Errorf("/metadata/v1.json (-want +got):\n%s", diff)
	}

	cases := map[string]struct {
		path       string
		wantStatus int
		wantBody   string
	}{
		"the user-data as given":            {"/metadata/v1/user-data", http.StatusOK, "#cloud-config\n{}"},
		"DigitalOcean's vendor-data":        {"/metadata/v1/vendor-data", http.StatusOK, doVendorData},
		"an endpoint the VM does not read":  {"/metadata/v1/tags/", http.StatusNotFound, "404 page not found\n"},
		"another cloud's metadata service":  {"/hetzner/v1/userdata", http.StatusNotFound, "404 page not found\n"},
		"the document under another prefix": {"/metadata/v2.json", http.StatusNotFound, "404 page not found\n"},
	}
	for name, tc := range cases {
		status, body := get(tc.path)
		if diff := cmp.Diff([2]any{tc.wantStatus, tc.wantBody}, [2]any{status, body}); diff != "" {
			t.Errorf("%s: GET %s (-want +got):\n%s", name, tc.path, diff)
		}
	}

	var uris []string
	for _, q := range m.Requests() {
		uris = append(uris, q.URI)
	}
	if len(uris) != 1+len(cases) || uris[0] != "/metadata/v1.json" || !strings.HasPrefix(m.Requests()[0].RemoteAddr, "127.0.0.1:") {
		t.Errorf("the stand-in recorded %v, want the document's request and the %d others", uris, len(cases))
	}
}
