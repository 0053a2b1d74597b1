package imagetest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/digitalocean"
	"github.com/egress-proxies/egress/internal/provider/digitalocean/dofake"
	"github.com/egress-proxies/egress/internal/provider/digitalocean/dovm"
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

// The Droplet's anchor (the public interface's anchor_ipv4), as
// DigitalOcean gives every Droplet one in 10.0.0.0/8 with a /16, and the
// anchor gateway, on the internet's side of the VM's link: what the VM
// sends from the anchor address through it reaches the test's hosts from
// that address. (DigitalOcean's gateway would send it on from the
// reserved IP; the test's network has no such NAT, so a host seeing the
// anchor address is the proof that the VM routes through the anchor.)
var (
	doAnchor        = netip.MustParsePrefix("10.19.0.5/16")
	doAnchorGateway = netip.MustParsePrefix("10.19.0.1/16")
)

// netipComparers compare netip's values, whose fields are unexported.
var netipComparers = cmp.Options{
	cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
	cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }),
}

// doShape is the DigitalOcean-shaped boot (testCloudInit): Debian's
// cloud-init, finding its DigitalOcean datasource by the Droplet's
// SMBIOS, reads the user-data the digitalocean provider made (its Create
// against the DigitalOcean fake, of a Static proxy) from the stand-in of
// DigitalOcean's metadata service, /metadata/v1.json, and reports Ready
// through the status's door as a Hetzner server does. Once it does, the
// provider's Get (against the fake) assigns the proxy's reserved IP, the
// metadata says so from then on, the VM routes its outbound traffic
// through the anchor gateway and says so, and only then is the proxy
// Running, as the provider reads it.
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
		doAnchorChecks(checks, ctx, r, c, "")
	},
	rebootChecks: func(checks *checklist, ctx context.Context, r *run, c *Container) {
		doAnchorChecks(checks, ctx, r, c, "after a reboot ")
	},
	// A reboot of a Droplet starts from a fresh kernel, whose network
	// cloud-init sets again: the anchor address on eth0, the default route
	// by the Droplet's own gateway. The test's namespace, which outlives
	// the container, is put back so.
	reboot: func(t *testing.T, r *run) {
		if err := r.topo.VM.IP("route", "replace", "default", "via", GatewayPrefix.Addr().String(), "dev", vmDev); err != nil {
			t.Fatal(err)
		}
	},
}

// doAnchorChecks are the checks of a Static proxy's Droplet once the
// provider reads it Running: it leaves from its reserved IP.
func doAnchorChecks(checks *checklist, ctx context.Context, r *run, c *Container, when string) {
	checks.run(when+"the status says the VM's traffic leaves from the reserved IP the provider assigned after the boot began", func(t *testing.T) {
		checkDOEgress(t, ctx, r)
	})
	checks.run(when+"the default route goes through the anchor gateway from the anchor address", func(t *testing.T) {
		checkDORoute(t, ctx, c)
	})
	checks.run(when+"a tunnel through the proxy reaches its host from the anchor address", func(t *testing.T) {
		checkDOTunnelSource(t, ctx, r)
	})
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
	renderer.Gzip, renderer.IMDS, renderer.Follow = digitalocean.Plugin.Boot.Gzip, digitalocean.Plugin.Boot.MetadataURL, digitalocean.Plugin.Boot.Follow
	// A Static proxy, whose Droplet the renderer tells to run
	// DigitalOcean's VM-side part for its reserved IP (egress-follow).
	r.cloud.static = true
	// The anchor gateway, on the internet's side of the VM's link, and
	// the anchor address on the VM's eth0, without a route, as
	// cloud-init's DigitalOcean datasource sets it on a Droplet (this
	// shape's network is set from outside: doimage.go).
	if err := r.topo.Internet.AddAddr(gateDev, doAnchorGateway); err != nil {
		t.Fatal(err)
	}
	if err := r.topo.VM.AddAddr(vmDev, doAnchor); err != nil {
		t.Fatal(err)
	}
	c, err := digitalocean.NewClient(digitalocean.LocalToken, fake.Endpoint(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The firewall of the test's settings: the proxy port, open to the
	// allowed range and to the control plane's address, which asks the
	// status.
	fw := digitalocean.Firewall{ProxyPorts: []string{strconv.Itoa(ProxyPort)}, SourceRanges: []string{AllowedRange.String()},
		StatusSourceRanges: []string{netip.PrefixFrom(controlPlaneAddr, 32).String()}}
	// DigitalOcean's network delivers what reaches a reserved IP to the
	// Droplet's anchor address; the test's has no such NAT, so where the
	// provider asks the reserved IP the control plane's prober asks the
	// anchor address.
	held := func() string {
		for _, ip := range fake.ReservedIPs() {
			if ip.Droplet != 0 {
				return ip.IP
			}
		}
		return ""
	}
	doProber := digitalocean.ProberFunc(func(ctx context.Context, ip string, port int32, uid, id string) (digitalocean.Status, error) {
		if ip != "" && ip == held() {
			ip = doAnchor.Addr().String()
		}
		return prober.Probe(ctx, ip, port, uid, id)
	})
	p, err := digitalocean.New(c, digitalocean.Config{Firewall: fw, Renderer: renderer, Prober: doProber})
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
		Nameservers: []string{MetadataAddr.String()},
		// Its anchor, and the reserved IP the provider assigns it (the
		// fake's record of it, as the metadata service reads
		// DigitalOcean's).
		Anchor: doAnchor, AnchorGateway: doAnchorGateway.Addr(), ReservedIP: held}
	// Its traffic leaves from the anchor address once Running: the
	// checks of the traffic's source expect it (run.egressAddr).
	r.cloud.anchor = doAnchor
	// Ready is the provider's Running, as the reconciler reads it: the
	// fake settles (the Droplet is active), and Get, at its first read
	// of the active Droplet, assigns the reserved IP, then asks the VM
	// whether it serves from it.
	r.cloud.ready = func(ctx context.Context) (string, error) {
		fake.Settle()
		in, err := p.Get(ctx, id)
		if err != nil {
			return "", err
		}
		if in.State != provider.StateRunning {
			return fmt.Sprintf("the provider reads it %s (reserved IP %q)", in.State, held()), nil
		}
		r.cloud.reservedIP = in.IP
		return "", nil
	}
	return strconv.Itoa(d.ID)
}

// checkDOEgress: the VM's status names the reserved IP the provider
// assigned (and reads the proxy at) as the address its traffic leaves
// from.
func checkDOEgress(t *testing.T, ctx context.Context, r *run) {
	ctx, cancel := checkTimeout(ctx)
	defer cancel()
	st, err := r.cloud.status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.cloud.reservedIP == "" || st.Egress != r.cloud.reservedIP {
		t.Errorf("the status says the traffic leaves from %q, want the reserved IP %q", st.Egress, r.cloud.reservedIP)
	}
}

// checkDORoute: the VM's default route, as ip(8) on the VM shows it, is
// through the anchor gateway with the anchor address as source.
func checkDORoute(t *testing.T, ctx context.Context, c *Container) {
	out, err := c.Exec(ctx, "ip", "-j", "-4", "route", "show", "default")
	if err != nil {
		t.Fatalf("ip route on the VM: %v", err)
	}
	got, err := dovm.ParseDefaultRoute(out)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := dovm.Route{Gateway: doAnchorGateway.Addr(), Dev: vmDev, Src: doAnchor.Addr()}
	if diff := cmp.Diff(want, got, netipComparers); diff != "" {
		t.Errorf("the VM's default route (-want +got):\n%s", diff)
	}
}

// checkDOTunnelSource: a CONNECT through the proxy to the TLS host, a
// host in the test's internet namespace, reaches it from the anchor
// address, not from the Droplet's own.
func checkDOTunnelSource(t *testing.T, ctx context.Context, r *run) {
	ctx, cancel := checkTimeout(ctx)
	defer cancel()
	before := len(r.tlsHost.Hits())
	if _, err := r.client("client", r.creds.Username, r.creds.Password).GetTLS(ctx, HostPort(TLSHostAddr, TLSPort), TLSHostName, r.roots, "/from-the-anchor"); err != nil {
		t.Fatal(err)
	}
	hits := r.tlsHost.Hits()[before:]
	var from []netip.Addr
	for _, h := range hits {
		if ap, err := netip.ParseAddrPort(h.RemoteAddr); err == nil {
			from = append(from, ap.Addr())
		}
	}
	if diff := cmp.Diff([]netip.Addr{doAnchor.Addr()}, from, netipComparers); diff != "" {
		t.Errorf("the TLS host saw the tunnel's request from (-want +got):\n%s", diff)
	}
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
// interfaces by type, dns.nameservers a list), and those the agent reads
// of a Static proxy's Droplet (the public interface's anchor_ipv4, the
// reserved IP, inactive until one is assigned, as dovm.ParseAnchorMetadata
// reads them), the user-data and vendor-data as given at their own
// paths, 404 elsewhere, and records every request. It needs no root and
// runs in make test.
func TestDOMetadata(t *testing.T) {
	var mu sync.Mutex
	reserved := ""
	m := &DOMetadata{DropletID: doDropletID, Hostname: "egress-3f2c1b0a", Region: doRegion, UserData: "#cloud-config\n{}",
		VendorData: doVendorData, Public: VMPrefix, Gateway: GatewayPrefix.Addr(), MAC: "04:01:2a:0f:2a:01",
		Nameservers: []string{MetadataAddr.String()}, Anchor: doAnchor, AnchorGateway: doAnchorGateway.Addr(),
		ReservedIP: func() string { mu.Lock(); defer mu.Unlock(); return reserved }}
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
			"ipv4":        map[string]any{"ip_address": "192.0.2.2", "netmask": "255.255.255.0", "gateway": "192.0.2.1"},
			"anchor_ipv4": map[string]any{"ip_address": "10.19.0.5", "netmask": "255.255.0.0", "gateway": "10.19.0.1"},
			"mac":         "04:01:2a:0f:2a:01", "type": "public",
		}}},
		"dns":         map[string]any{"nameservers": []any{"169.254.169.254"}},
		"reserved_ip": map[string]any{"ipv4": map[string]any{"active": false}},
	}
	if diff := cmp.Diff(want, doc); diff != "" {
		t.Errorf("/metadata/v1.json (-want +got):\n%s", diff)
	}
	// As the agent reads it: no reserved IP yet, then the one assigned.
	read := func() dovm.AnchorMetadata {
		t.Helper()
		_, body := get("/metadata/v1.json")
		am, err := dovm.ParseAnchorMetadata([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return am
	}
	anchorOf := dovm.AnchorMetadata{Anchor: doAnchor, AnchorGateway: doAnchorGateway.Addr(), PublicGateway: GatewayPrefix.Addr()}
	before := read()
	mu.Lock()
	reserved = "203.0.113.2"
	mu.Unlock()
	after := read()
	assigned := anchorOf
	assigned.Active, assigned.ReservedIP = true, netip.MustParseAddr("203.0.113.2")
	if diff := cmp.Diff([2]dovm.AnchorMetadata{anchorOf, assigned}, [2]dovm.AnchorMetadata{before, after}, netipComparers); diff != "" {
		t.Errorf("the document as the agent reads it, before and after the reserved IP is assigned (-want +got):\n%s", diff)
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
	if len(uris) != 3+len(cases) || uris[0] != "/metadata/v1.json" || !strings.HasPrefix(m.Requests()[0].RemoteAddr, "127.0.0.1:") {
		t.Errorf("the stand-in recorded %v, want the document's three requests and the %d others", uris, len(cases))
	}
}
