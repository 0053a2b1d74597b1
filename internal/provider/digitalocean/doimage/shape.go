// Package doimage is the DigitalOcean-shaped boot of the image test
// (internal/vm/imagetest, make image-test): a Debian 13 booted as a
// Droplet (Release, image.go), whose cloud-init reads the user-data the
// digitalocean provider made against the DigitalOcean fake from a stand-in
// of DigitalOcean's metadata service (Metadata, metadata.go), with the
// checks of a Static proxy's Droplet (Shape, shape.go). The plugin names
// it (ImageTest), and the image test finds it in the list make docs
// writes; nothing here is used by production code.
package doimage

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/digitalocean"
	"github.com/egress-proxies/egress/internal/provider/digitalocean/dofake"
	"github.com/egress-proxies/egress/internal/provider/digitalocean/dovm"
	"github.com/egress-proxies/egress/internal/vm/imagetest"
)

// The Droplet's placement in the boot: its metro and its region's slug.
// doDropletID (a number, as DigitalOcean's ids are: its documentation's
// example) is TestMetadata's; the boot's Droplet has the id the fake
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

// Shape is the DigitalOcean-shaped boot: Debian's cloud-init, finding
// its DigitalOcean datasource by the Droplet's SMBIOS, reads the
// user-data the digitalocean provider made (its Create against the
// DigitalOcean fake, of a Static proxy) from the stand-in of
// DigitalOcean's metadata service, /metadata/v1.json, and reports Ready
// through the status's door as a Hetzner server does. Once it does, the
// provider's Get (against the fake) assigns the proxy's reserved IP, the
// metadata says so from then on, the VM routes its outbound traffic
// through the anchor gateway and says so, and only then is the proxy
// Running, as the provider reads it.
var Shape = imagetest.Shape{
	Release:      Release,
	Datasource:   "DataSourceDigitalOcean",
	UserDataPath: "/metadata/v1/user-data",
	// A Static proxy, whose Droplet the renderer tells to run
	// DigitalOcean's VM-side part for its reserved IP (egress-follow).
	Static: true,
	Create: create,
}

// droplet is the boot's Droplet, as its checks read it.
type droplet struct {
	h imagetest.Harness
	// metadata is the stand-in's, which serves the Droplet as the fake
	// made it.
	metadata *Metadata
	// reservedIP is the address the provider read the proxy at once
	// Running.
	reservedIP string
}

// anchorChecks are the checks of a Static proxy's Droplet once the
// provider reads it Running: it leaves from its reserved IP.
func (d *droplet) anchorChecks(check imagetest.Check, ctx context.Context, c *imagetest.Container, when string) {
	check(when+"the status says the VM's traffic leaves from the reserved IP the provider assigned after the boot began", func(t *testing.T) {
		d.checkEgress(t, ctx)
	})
	check(when+"the default route goes through the anchor gateway from the anchor address", func(t *testing.T) {
		checkRoute(t, ctx, c)
	})
	check(when+"a tunnel through the proxy reaches its host from the anchor address", func(t *testing.T) {
		d.checkTunnelSource(t, ctx)
	})
}

// create makes the Droplet with the digitalocean provider against the
// DigitalOcean fake, and sets the metadata stand-in up to serve it: the
// user-data the fake's Droplet was created with, and its id, name and
// region as the fake made them. The provider is given what the
// composition root gives it for its plugin's boot (a BootCloudInit
// cloud's renderer, without compression, which a JSON document could not
// carry, and naming no IMDS) and the deployment's firewall of the test's
// settings, which it makes before the Droplet. The VM's id is the
// Droplet's, which the firmware's serial number is.
func create(t *testing.T, ctx context.Context, h imagetest.Harness) *imagetest.VM {
	t.Helper()
	fake := dofake.New(digitalocean.LocalToken)
	t.Cleanup(fake.Close)
	renderer, prober := h.VMSide(t)
	// The composition root's renderer for the plugin's boot
	// (internal/app's cloudInitVM).
	renderer.Gzip, renderer.IMDS, renderer.Follow = digitalocean.Plugin.Boot.Gzip, digitalocean.Plugin.Boot.MetadataURL, digitalocean.Plugin.Boot.Follow
	// The anchor gateway, on the internet's side of the VM's link, and
	// the anchor address on the VM's eth0, without a route, as
	// cloud-init's DigitalOcean datasource sets it on a Droplet (this
	// shape's network is set from outside: image.go).
	topo := h.Topology()
	if err := topo.Internet.AddAddr(imagetest.GatewayDev, doAnchorGateway); err != nil {
		t.Fatal(err)
	}
	if err := topo.VM.AddAddr(imagetest.VMDev, doAnchor); err != nil {
		t.Fatal(err)
	}
	c, err := digitalocean.NewClient(digitalocean.LocalToken, fake.Endpoint(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The firewall of the test's settings: the proxy port, open to the
	// allowed range and to the control plane's address, which asks the
	// status.
	fw := digitalocean.Firewall{ProxyPorts: []string{strconv.Itoa(imagetest.ProxyPort)}, SourceRanges: []string{imagetest.AllowedRange.String()},
		StatusSourceRanges: []string{netip.PrefixFrom(imagetest.ControlPlaneAddr, 32).String()}}
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
	id := h.Create(p, provider.Placement{Region: doMetro, Zone: doRegion})
	droplets := fake.Droplets()
	if len(droplets) != 1 {
		t.Fatalf("the DigitalOcean fake holds %d Droplets, want 1", len(droplets))
	}
	made := droplets[0]
	if want := "digitalocean://" + strconv.Itoa(made.ID); id != want {
		t.Fatalf("Create returned %s, want %s", id, want)
	}
	if made.Name != h.Instance() || made.Region == nil || made.Region.Slug != doRegion {
		t.Fatalf("the fake's Droplet is %q in %v, want %s in %s", made.Name, made.Region, h.Instance(), doRegion)
	}
	var mac string
	if err := topo.VM.Do(func() error {
		ifi, err := net.InterfaceByName(imagetest.VMDev)
		if err == nil {
			mac = ifi.HardwareAddr.String()
		}
		return err
	}); err != nil {
		t.Fatalf("reading the VM's interface: %v", err)
	}
	userData := fake.UserData(made.ID)
	// The interface is the VM's own, not the one the fake made up
	// (198.51.100.x): cloud-init matches it by its MAC in /sys/class/net
	// (image.go), and the container's address is the test's.
	d := &droplet{h: h, metadata: &Metadata{DropletID: int64(made.ID), Hostname: made.Name, Region: made.Region.Slug,
		UserData: userData, VendorData: doVendorData, Public: imagetest.VMPrefix, Gateway: imagetest.GatewayPrefix.Addr(), MAC: mac,
		// The VM's resolver, the test's stand-in (image.go).
		Nameservers: []string{imagetest.MetadataAddr.String()},
		// Its anchor, and the reserved IP the provider assigns it (the
		// fake's record of it, as the metadata service reads
		// DigitalOcean's).
		Anchor: doAnchor, AnchorGateway: doAnchorGateway.Addr(), ReservedIP: held}}
	serial := strconv.Itoa(made.ID)
	return &imagetest.VM{
		ID:       serial,
		UserData: userData,
		Metadata: d.metadata,
		// The SMBIOS a Droplet's firmware gives (image.go).
		Firmware: map[string]string{imagetest.DMIDir + "/sys_vendor": "DigitalOcean\n", imagetest.DMIDir + "/product_serial": serial + "\n"},
		// Its traffic leaves from the anchor address once Running: the
		// checks of the traffic's source expect it.
		Anchor: doAnchor,
		// Ready is the provider's Running, as the reconciler reads it:
		// the fake settles (the Droplet is active), and Get, at its first
		// read of the active Droplet, assigns the reserved IP, then asks
		// the VM whether it serves from it.
		Ready: func(ctx context.Context) (string, error) {
			fake.Settle()
			in, err := p.Get(ctx, id)
			if err != nil {
				return "", err
			}
			if in.State != provider.StateRunning {
				return fmt.Sprintf("the provider reads it %s (reserved IP %q)", in.State, held()), nil
			}
			d.reservedIP = in.IP
			return "", nil
		},
		Checks: func(check imagetest.Check, ctx context.Context, c *imagetest.Container) {
			check("cloud-init took the Droplet's hostname, region and vendor-data from /metadata/v1.json", func(t *testing.T) {
				d.checkInstanceData(t, ctx, c)
			})
			d.anchorChecks(check, ctx, c, "")
		},
		RebootChecks: func(check imagetest.Check, ctx context.Context, c *imagetest.Container) {
			d.anchorChecks(check, ctx, c, "after a reboot ")
		},
		// A reboot of a Droplet starts from a fresh kernel, whose network
		// cloud-init sets again: the anchor address on eth0, the default
		// route by the Droplet's own gateway. The test's namespace, which
		// outlives the container, is put back so.
		Reboot: func(t *testing.T) {
			if err := topo.VM.IP("route", "replace", "default", "via", imagetest.GatewayPrefix.Addr().String(), "dev", imagetest.VMDev); err != nil {
				t.Fatal(err)
			}
		},
	}
}

// checkEgress: the VM's status names the reserved IP the provider
// assigned (and reads the proxy at) as the address its traffic leaves
// from.
func (d *droplet) checkEgress(t *testing.T, ctx context.Context) {
	ctx, cancel := imagetest.CheckTimeout(ctx)
	defer cancel()
	st, err := d.h.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d.reservedIP == "" || st.Egress != d.reservedIP {
		t.Errorf("the status says the traffic leaves from %q, want the reserved IP %q", st.Egress, d.reservedIP)
	}
}

// checkRoute: the VM's default route, as ip(8) on the VM shows it, is
// through the anchor gateway with the anchor address as source.
func checkRoute(t *testing.T, ctx context.Context, c *imagetest.Container) {
	out, err := c.Exec(ctx, "ip", "-j", "-4", "route", "show", "default")
	if err != nil {
		t.Fatalf("ip route on the VM: %v", err)
	}
	got, err := dovm.ParseDefaultRoute(out)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := dovm.Route{Gateway: doAnchorGateway.Addr(), Dev: imagetest.VMDev, Src: doAnchor.Addr()}
	if diff := cmp.Diff(want, got, netipComparers); diff != "" {
		t.Errorf("the VM's default route (-want +got):\n%s", diff)
	}
}

// checkTunnelSource: a CONNECT through the proxy to the TLS host, a
// host in the test's internet namespace, reaches it from the anchor
// address, not from the Droplet's own.
func (d *droplet) checkTunnelSource(t *testing.T, ctx context.Context) {
	ctx, cancel := imagetest.CheckTimeout(ctx)
	defer cancel()
	host := d.h.TLSHost()
	before := len(host.Hits())
	if _, err := d.h.Client().GetTLS(ctx, imagetest.HostPort(imagetest.TLSHostAddr, imagetest.TLSPort), imagetest.TLSHostName, d.h.Roots(), "/from-the-anchor"); err != nil {
		t.Fatal(err)
	}
	hits := host.Hits()[before:]
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

// checkInstanceData: cloud-init's record of the instance (its
// instance-data.json) has the hostname and the region the metadata
// service gave, and the vendor-data it kept is DigitalOcean's.
func (d *droplet) checkInstanceData(t *testing.T, ctx context.Context, c *imagetest.Container) {
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
	// (create).
	m := d.metadata
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
