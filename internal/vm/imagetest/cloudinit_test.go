package imagetest

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/bootstrap/cloudinit"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

// The boots of clouds whose VMs run cloud-init (Hetzner's, EC2's and
// Azure's here; others' in their folders, shape.go): the cloud's provider makes the VM against the cloud's
// fake, with the VM side's own renderer; Debian's cloud-init, finding
// the cloud's datasource, reads that user-data from the metadata service
// (a stand-in of the cloud's, or AWS's own mock of EC2's) and runs the bootstrap it carries; the control plane's prober reads Ready through the proxy
// port from the control plane's address; and the checks of the
// GCE-shaped boot that do not depend on Google's metadata server are
// made again, with those of the status's door.

// cloudBootTimeout bounds a cloud-init boot: cloud-init's stages come
// before the script.
const cloudBootTimeout = 5 * time.Minute

// cloudShapes are the boots of the cloud-init clouds whose shapes are
// still this package's, which TestImage boots last: one entry a cloud,
// its parts in its own files (the shape in CLOUD_test.go, the image in
// CLOUDimage.go, the metadata service's stand-in in CLOUDmetadata.go).
var cloudShapes = []cloudShape{azureShape}

// PluginShapes are the boots of the clouds whose shapes are in their own
// folders (a plugin's ImageTest), booted after Google's and before
// cloudShapes, in the order of internal/clouds.All: make docs writes their list (shapes_gen_test.go,
// of the external test package, which imports them), and shapes_test.go
// sets this from it before any test runs.
var PluginShapes []Shape

// shapeOf is the boot of a cloud's Shape: its parts in the form
// testCloudInit takes, its VM kept in the run's cloudRun.
func shapeOf(s Shape) cloudShape {
	return cloudShape{
		rel: s.Release, datasource: s.Datasource, userDataPath: s.UserDataPath, ipv6: s.IPv6, routeIPv6: s.RouteIPv6,
		create: func(t *testing.T, ctx context.Context, r *run, _ func(provider.Provider, provider.Placement) string) string {
			vm := s.Create(t, ctx, shapeHarness{t: t, ctx: ctx, r: r, static: s.Static})
			r.cloud.vm = vm
			r.cloud.userData, r.cloud.metadata, r.cloud.ready, r.cloud.anchor = vm.UserData, vm.Metadata, vm.Ready, vm.Anchor
			r.ipv6Prefix = vm.IPv6Prefix
			return vm.ID
		},
		firmware: func(string) map[string]string {
			// Set by create, which ran first: the VM's own.
			return nil
		},
		checks: func(checks *checklist, ctx context.Context, r *run, c *Container) {
			if r.cloud.vm.Checks != nil {
				r.cloud.vm.Checks(checks.run, ctx, c)
			}
		},
		rebootChecks: func(checks *checklist, ctx context.Context, r *run, c *Container) {
			if r.cloud.vm.RebootChecks != nil {
				r.cloud.vm.RebootChecks(checks.run, ctx, c)
			}
		},
		reboot: func(t *testing.T, r *run) {
			if r.cloud.vm.Reboot != nil {
				r.cloud.vm.Reboot(t)
			}
		},
	}
}

// shapeHarness is the Harness a Shape's Create gets: the run of its boot.
type shapeHarness struct {
	t      *testing.T
	ctx    context.Context
	r      *run
	static bool
}

func (b shapeHarness) Topology() *Topology { return b.r.topo }

func (b shapeHarness) VMSide(t *testing.T) (cloudinit.Renderer, *vmstatus.Prober) {
	renderer, prober := cloudVMSide(t, b.r)
	b.r.cloud.static = b.static
	return renderer, prober
}

func (b shapeHarness) Create(p provider.Provider, place provider.Placement) string {
	return createCloudVM(b.t, b.ctx, b.r, p, place)
}

func (b shapeHarness) Instance() string { return b.r.instance }

func (b shapeHarness) Status(ctx context.Context) (vmstatus.Status, error) {
	return b.r.cloud.status(ctx)
}

func (b shapeHarness) Client() ProxyClient {
	return b.r.client("client", b.r.creds.Username, b.r.creds.Password)
}

func (b shapeHarness) TLSHost() *Host { return b.r.tlsHost }

func (b shapeHarness) Roots() *x509.CertPool { return b.r.roots }

// cloudShape is what one cloud's boot brings to testCloudInit.
type cloudShape struct {
	// rel names the boot (its Family, in the summary line) and carries
	// what makes the tree the cloud's image (rel.Image: the datasource's
	// setup).
	rel Release
	// datasource starts the name of the datasource cloud-init must run
	// on, as /run/cloud-init/result.json gives it.
	datasource string
	// create makes the VM with the cloud's provider (create, in
	// createCloudVM; or renders its user-data from cloudCreateRequest,
	// while the cloud has no provider in the tree) and serves its
	// metadata (r.cloud.metadata); it returns the VM's id as cloud-init
	// sees it (its instance-id).
	create func(t *testing.T, ctx context.Context, r *run, create func(provider.Provider, provider.Placement) string) string
	// firmware are the files the boot's tree gets, what the cloud's
	// firmware would say (the DMI stand-in's, in DMIDir: CLOUDimage.go).
	firmware func(id string) map[string]string
	// userDataPath is the metadata service's path of the user-data.
	userDataPath string
	// checks are the cloud's own checks after the first boot, and
	// rebootChecks after the second.
	checks, rebootChecks func(checks *checklist, ctx context.Context, r *run, c *Container)
	// reboot, when set, takes away what a reboot of the cloud's VM
	// starts without and the test's namespace keeps (a route, an
	// address), between the two boots.
	reboot func(t *testing.T, r *run)
	// ipv6, when set, is the ipv6Egress mode of the boot's
	// configuration, on a topology that routes the VM a prefix: the
	// IPv6 checks run (ipv6_test.go). routeIPv6 gives the topology its
	// IPv6 part then; nil is RouteIPv6OnTheVM, a Hetzner server's.
	ipv6      string
	routeIPv6 func(*Topology) error
}

// cloudRun is what a cloud-init boot adds to a run.
type cloudRun struct {
	// metadata serves the cloud's metadata service and records what it
	// was asked.
	metadata interface {
		http.Handler
		Requests() []Request
	}
	// key is the control plane's status key; prober asks the VM from
	// ControlPlaneAddr with it.
	key      vmstatus.Key
	prober   *vmstatus.Prober
	userData string
	// vmID and zone are the VM's, which its status names (Azure's).
	vmID, zone string
	// statusID is the VM's status id, as the renderer derived its
	// status access from it (and its provider labelled it with).
	statusID string
	// static makes the VM a Static proxy's (cloudCreateRequest).
	static bool
	// ready, when set, is the cloud's provider's reading of the VM once
	// its status says Ready: "" once the provider reads it Running, or
	// why not yet. cloudBoot waits for both.
	ready func(ctx context.Context) (string, error)
	// anchor, when valid, is the address the VM's traffic reaches the
	// test's hosts from once the provider reads it Running (VM.Anchor).
	anchor netip.Prefix
	// media are files each boot's copy gets of what the cloud's
	// provisioning media carry (Azure's OVF environment), by path in the
	// tree.
	media map[string]string
	// resolver, when valid, is the VM's resolver's address in the
	// test's internet (Azure's: the wire server's), where the resolver's
	// stand-in answers; the metadata service's address otherwise.
	resolver netip.Addr
	// generation is the generation the VM serves as the boot's checks
	// read it: 1, the create's, until a change in place (Azure's)
	// serves another.
	generation int64
	// azure is what the Azure-shaped boot's own checks use (azure_test.go).
	azure *azureRun
	// vm is the VM a cloud's Shape made (shapeOf), nil for the shapes
	// of this package.
	vm *VM
}

// status asks the VM's proxy for its status, as the control plane does.
func (h *cloudRun) status(ctx context.Context) (vmstatus.Status, error) {
	return h.prober.Probe(ctx, VMPrefix.Addr().String(), ProxyPort, uid, h.statusID)
}

// testCloudInit boots the cloud's Debian 13 twice and runs every check.
func testCloudInit(t *testing.T, ctx context.Context, runDir string, engine []byte, shape cloudShape) (res result) {
	rel := shape.rel
	res.family = rel.Family
	start := time.Now()
	rootfs, built, err := Rootfs(ctx, rel, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("root file system: %s in %.1f s (built: %t)", rootfs, time.Since(start).Seconds(), built)
	checks := &checklist{t: t}
	defer func() { res.passed, res.failed = checks.passed, checks.failed }()

	topology := NewTopology
	if shape.ipv6 != "" {
		// A create names the mode, not the prefix, which the cloud
		// assigns with the VM: the VM finds it (cloudCreateRequest).
		topology = newIPv6OnTheVMTopology
		if shape.routeIPv6 != nil {
			topology = withIPv6Part(NewTopology, shape.routeIPv6)
		}
	}
	r := newRun(t, rel, engine, topology)
	r.ipv6Egress = shape.ipv6
	if err := r.topo.Internet.AddAddr("lo", netip.PrefixFrom(ControlPlaneAddr, 32)); err != nil {
		t.Fatal(err)
	}
	// A public object: the VM reads it with no credential.
	r.storage.Path = "/egress-engine-public/egress-proxy-" + r.storage.SHA256()
	vmID := shape.create(t, ctx, r, func(p provider.Provider, place provider.Placement) string { return createCloudVM(t, ctx, r, p, place) })
	r.serveInternet(t)
	serve(t, r.topo.Internet, HostPort(MetadataAddr, MetadataPort), r.cloud.metadata)

	root := filepath.Join(runDir, rel.Cloud)
	if err := Copy(ctx, rootfs, root); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(root); err != nil {
			t.Errorf("removing %s: %v", root, err)
		}
	})
	firmware := shape.firmware(vmID)
	if r.cloud.vm != nil {
		firmware = r.cloud.vm.Firmware
	}
	if err := WriteFiles(root, firmware); err != nil {
		t.Fatal(err)
	}
	if err := WriteFiles(root, r.cloud.media); err != nil {
		t.Fatal(err)
	}

	console1 := filepath.Join(runDir, rel.Cloud+"-console-1.log")
	c, readyAt := cloudBoot(t, ctx, r, root, console1)
	res.bootToReady = readyAt.Sub(c.Started)
	res.install = installTimeOf(ctx, c, "-t", "cloud-init")
	t.Logf("boot 1: Ready through the proxy port %.1f s after nspawn started, the install %.1f s of it", res.bootToReady.Seconds(), res.install.Seconds())

	checks.run("the control plane's prober reads Ready at generation 1 through the proxy port", func(t *testing.T) { checkCloudReady(t, ctx, r) })
	checks.run("cloud-init found the "+shape.datasource+" datasource and ran the user-data's script to exit status 0", func(t *testing.T) {
		checkCloudInit(t, ctx, c, shape.datasource, vmID)
	})
	checks.run("the engine was downloaded once, with no credential, and is the one the user-data names", func(t *testing.T) {
		checkEngineInstalled(t, ctx, r, c, 1)
	})
	checks.run("nothing but the proxy listens beyond loopback", func(t *testing.T) { checkListeners(t, ctx, c) })
	checks.run("CONNECT with credentials reaches a TLS host", func(t *testing.T) { checkConnectTLS(t, ctx, r) })
	checks.run("CONNECT by host name resolves through the VM's resolver", func(t *testing.T) { checkConnectByName(t, ctx, r) })
	checks.run("no credentials: 407", func(t *testing.T) { checkAuth(t, ctx, r, "", "") })
	checks.run("WrongPassword407", func(t *testing.T) { checkAuth(t, ctx, r, r.creds.Username, r.creds.Password+"x") })
	checks.run("a source outside allowedSourceRanges cannot connect", func(t *testing.T) { checkIngress(t, ctx, r) })
	checks.run("InboundOnlyProxyPorts", func(t *testing.T) { checkInboundOnlyProxyPorts(t, ctx, r) })
	checks.run("the control plane's address gets the status and nothing else", func(t *testing.T) { checkStatusOnly(t, ctx, r) })
	checks.run("the status needs the control plane's credential", func(t *testing.T) { checkStatusCredential(t, ctx, r) })
	checks.run("CONNECT to the metadata service is refused", func(t *testing.T) {
		checkRefused(t, ctx, r, nil, HostPort(MetadataAddr, MetadataPort), "[::ffff:"+MetadataAddr.String()+"]:80", metadataAlias+":80")
	})
	checks.run("GET of the metadata service's user-data is refused", func(t *testing.T) {
		checkMetadataGetOf(t, ctx, r, shape.userDataPath+"?"+probeMarker, nil)
	})
	checks.run("CONNECT to a private address is refused", func(t *testing.T) {
		checkRefused(t, ctx, r, r.private, r.private.Addr(), privateAlias+":443")
	})
	checks.run("the metadata service saw no request through the proxy", func(t *testing.T) { checkMetadataUntouched(t, r) })
	checks.run("Socks5UDPThrough", func(t *testing.T) { checkSocks5UDPThrough(t, ctx, r, c) })
	checks.run("the status's counters grow with the traffic", func(t *testing.T) { checkStatusTraffic(t, ctx, r) })
	checks.run("the access log is read through the proxy port", func(t *testing.T) { checkStatusAccess(t, ctx, r) })
	checks.run("no password in the user-data, the journal or the console", func(t *testing.T) { checkCloudNoSecret(t, ctx, r, c, console1) })
	if shape.checks != nil {
		shape.checks(checks, ctx, r, c)
	}
	if shape.ipv6 == vmconfig.IPv6EgressPerSession {
		// A plain user gets perConnection's fresh address.
		checks.run("IPv6PerConnection", func(t *testing.T) { checkIPv6PerConnection(t, ctx, r, "client") })
		checks.run("IPv6PerSession", func(t *testing.T) { r.ipv6Sessions = checkIPv6PerSession(t, ctx, r, c, "client") })
	}

	if err := c.Reboot(ctx); err != nil {
		t.Fatalf("reboot: %v\n%s", err, c.Journal(ctx, 100))
	}
	if shape.reboot != nil {
		// The first boot's system is gone: nothing in it puts back what
		// this takes away.
		shape.reboot(t, r)
	}
	if shape.ipv6 != "" {
		takeIPv6Route(t, r)
	}
	console2 := filepath.Join(runDir, rel.Cloud+"-console-2.log")
	c2, ready2 := cloudBoot(t, ctx, r, root, console2)
	t.Logf("boot 2: Ready %.1f s after nspawn started", ready2.Sub(c2.Started).Seconds())
	checks.run("after a reboot the script starts clean and is ready again", func(t *testing.T) { checkCloudReady(t, ctx, r) })
	checks.run("after a reboot nothing is installed", func(t *testing.T) { checkEngineInstalled(t, ctx, r, c2, 1) })
	checks.run("after a reboot the proxy serves with the same credentials", func(t *testing.T) { checkConnectTLS(t, ctx, r) })
	checks.run("after a reboot WrongPassword407", func(t *testing.T) { checkAuth(t, ctx, r, r.creds.Username, r.creds.Password+"x") })
	checks.run("after a reboot no password in the journal or the console", func(t *testing.T) { checkCloudNoSecret(t, ctx, r, c2, console2) })
	if shape.rebootChecks != nil {
		shape.rebootChecks(checks, ctx, r, c2)
	}
	if shape.ipv6 == vmconfig.IPv6EgressPerSession {
		checks.run("after a reboot IPv6PerSession keeps each session's address", func(t *testing.T) { checkIPv6SessionsKept(t, ctx, r, "client") })
	}
	return res
}

// createCloudVM makes the proxy's VM with p against its cloud's fake,
// its user-data rendered by the VM side's own renderer (package
// cloudinit, as the composition root makes it for that cloud: p's
// renderer) with the status access of the control plane's key, which
// r.cloud holds. It returns the providerID.
func createCloudVM(t *testing.T, ctx context.Context, r *run, p provider.Provider, place provider.Placement) string {
	t.Helper()
	req := cloudCreateRequest(t, r, place)
	id, err := p.Create(ctx, req)
	if err != nil {
		t.Fatalf("%s provider Create: %v", r.rel.Cloud, err)
	}
	return id
}

// cloudCreateRequest is the create request of the proxy's VM at place,
// as the reconciler makes it: its name, the proxy's names, port, SOCKS5
// port and engine configuration (which r.engine keeps); r.instance is its
// name.
func cloudCreateRequest(t *testing.T, r *run, place provider.Placement) provider.CreateRequest {
	t.Helper()
	cfg := bootstrap.Config{Port: ProxyPort, AllowedSourceRanges: []string{AllowedRange.String()}, Credentials: r.creds, Generation: 1}
	// SOCKS5 and its UDP ASSOCIATE, as on Compute Engine (Socks5UDPThrough).
	r.withDataPlane(&cfg)
	script, err := bootstrap.Render(cfg)
	if err != nil {
		t.Fatal(err)
	}
	engine, err := bootstrap.EngineConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// As the reconciler makes a create: the mode, and no prefix yet (the
	// renderer adds its length, cloudVMSide).
	engine.IPv6Egress = r.ipv6Egress
	r.engine = engine
	req := provider.CreateRequest{Name: provider.NameFromUID(uid), UID: uid, Namespace: namespace, ProxyName: proxyName,
		Port: ProxyPort, StartupScript: script, Engine: &engine, Placement: place, StaticIP: r.cloud != nil && r.cloud.static,
		IPv6Prefix: proxy.IPv6Egress(r.ipv6Egress).NeedsPrefix()}
	r.instance = req.Name
	return req
}

// cloudVMSide is the VM side a cloud's provider gets in the boot: the
// renderer of package cloudinit, its engine at the test's storage and
// its status access of a fresh control-plane key (with the prefix
// length of VMIPv6Prefix when the boot routes the VM one), and the
// prober from the control plane's address. r.cloud is set up with them.
func cloudVMSide(t *testing.T, r *run) (cloudinit.Renderer, *vmstatus.Prober) {
	t.Helper()
	key, err := vmstatus.NewKey([]byte(randomHex(32)))
	if err != nil {
		t.Fatal(err)
	}
	renderer := cloudinit.Renderer{
		EngineURL: "http://" + HostPort(StorageAddr, StoragePort) + r.storage.Path, EngineSHA256: r.storage.SHA256(),
		// A name, as the production default is: the self-test resolves it
		// through the VM's resolver.
		ProbeTarget: TLSHostName + ":" + strconv.Itoa(TLSPort),
		Status: func(_ context.Context, uid, id string) (*vmconfig.StatusAccess, error) {
			r.cloud.statusID = id
			return key.Access(uid, id, []string{netip.PrefixFrom(ControlPlaneAddr, 32).String()})
		},
	}
	if r.ipv6Egress != "" {
		// The cloud's prefix length, as the composition root passes the
		// plugin's: the VM finds its prefix with it.
		renderer.IPv6PrefixLength = VMIPv6Prefix.Bits()
	}
	prober := &vmstatus.Prober{Key: func(context.Context) (vmstatus.Key, error) { return key, nil }, Dial: r.topo.Internet.Dialer(ControlPlaneAddr)}
	r.cloud = &cloudRun{key: key, prober: prober, generation: 1}
	return renderer, prober
}

// cloudBoot boots root and waits until the control plane's prober reads
// Ready, failing at once on a reason the VM gives or a container that
// stops. It returns when Ready was first read.
func cloudBoot(t *testing.T, ctx context.Context, r *run, root, consolePath string) (*Container, time.Time) {
	t.Helper()
	c := startContainer(t, prefix+r.rel.Cloud, r, root, consolePath)
	wctx, cancel := context.WithTimeout(ctx, cloudBootTimeout)
	defer cancel()
	go func() {
		c.Wait(wctx)
		cancel()
	}()
	var last error
	for {
		st, err := r.cloud.status(wctx)
		switch {
		case err == nil && st.Ready && r.cloud.ready != nil:
			// The VM serves; the cloud's provider decides whether it is
			// Running.
			why, perr := r.cloud.ready(wctx)
			if perr == nil && why == "" {
				return c, time.Now()
			}
			last = errors.Join(perr, errors.New(why))
		case err == nil && st.Ready:
			return c, time.Now()
		case err == nil && st.Error != "":
			t.Fatalf("the VM says it cannot serve: %s", st.Error)
		case err != nil:
			last = err
		default:
			last = errors.New("answered, not ready yet")
		}
		select {
		case <-wctx.Done():
			done, code := c.Exited()
			t.Fatalf("not Ready through the proxy port within %s of boot (container stopped: %t, status %d): %v\nconsole tail:\n%s",
				cloudBootTimeout, done, code, last, tailOf(consolePath))
		case <-time.After(time.Second):
		}
	}
}

// checkCloudReady: the prober, from the control plane's address, reads
// the generation the VM serves (1, the create's, unless a change in place
// made it another) served and ready, with no reason.
func checkCloudReady(t *testing.T, ctx context.Context, r *run) {
	ctx, cancel := CheckTimeout(ctx)
	defer cancel()
	st, err := r.cloud.status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Generation != r.cloud.generation || !st.Ready || st.Error != "" || st.Traffic == nil {
		t.Errorf("status %+v, want generation %d, ready, no error, with traffic", st, r.cloud.generation)
	}
}

// checkCloudInit: cloud-init's own record says it ran on the datasource,
// with the VM's id as its instance id, with no error, and the per-boot
// script (cloud-init's scripts_per_boot) said the proxy is ready.
func checkCloudInit(t *testing.T, ctx context.Context, c *Container, datasource, vmID string) {
	// cloud-init writes it when its final stage ends, after the script:
	// a script that goes on once the VM is ready (Azure's starts the
	// watch of its user data) ends a moment after the status said so.
	var out []byte
	var err error
	for deadline := time.Now().Add(time.Minute); ; {
		if out, err = c.Exec(ctx, "cat", "/run/cloud-init/result.json"); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("no /run/cloud-init/result.json a minute after the VM was ready: %v", err)
	}
	var result struct {
		V1 struct {
			Datasource string   `json:"datasource"`
			Errors     []string `json:"errors"`
		} `json:"v1"`
	}
	if err := json.Unmarshal(out, &result); err != nil {
		t.Fatalf("result.json: %v\n%s", err, out)
	}
	if !strings.HasPrefix(result.V1.Datasource, datasource) || len(result.V1.Errors) > 0 {
		t.Errorf("cloud-init ran on %q with errors %v, want %s and none", result.V1.Datasource, result.V1.Errors, datasource)
	}
	id, err := c.Exec(ctx, "cat", "/run/cloud-init/.instance-id")
	if err != nil || strings.TrimSpace(string(id)) != vmID {
		t.Errorf("cloud-init's instance id %q (%v), want the VM's %s", strings.TrimSpace(string(id)), err, vmID)
	}
	// cloud-init's lines, the per-boot script's output among them
	// (cloud-init 25 runs its stages in cloud-init-main.service).
	journal, err := c.Exec(ctx, "journalctl", "-b", "--no-pager", "-o", "cat", "-t", "cloud-init")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(journal), "egress-bootstrap: proxy ready on port "+strconv.Itoa(ProxyPort)) {
		t.Errorf("cloud-init's journal does not say the script ended ready:\n%s", journal)
	}
}

// checkStatusOnly: a client at the control plane's address, with a
// tenant's credentials, is refused a tunnel: that address is the
// status's, and nothing else.
func checkStatusOnly(t *testing.T, ctx context.Context, r *run) {
	ctx, cancel := CheckTimeout(ctx)
	defer cancel()
	c := ProxyClient{Dial: r.topo.Internet.Dialer(ControlPlaneAddr), Proxy: ProxyAddr(), User: r.creds.Username, Password: r.creds.Password}
	before := len(r.tlsHost.Hits())
	status, tunnel, err := c.Connect(ctx, HostPort(TLSHostAddr, TLSPort))
	if tunnel != nil {
		tunnel.Close()
	}
	if err != nil || status != http.StatusForbidden {
		t.Errorf("a CONNECT from the control plane's address: %d (%v), want 403", status, err)
	}
	if n := len(r.tlsHost.Hits()) - before; n != 0 {
		t.Errorf("the TLS host was reached %d times from the control plane's address", n)
	}
}

// checkStatusCredential: a key that is not the control plane's reads
// nothing, from the control plane's own address, and neither does the
// control plane's key for another VM of the same proxy (a retired one's
// status id).
func checkStatusCredential(t *testing.T, ctx context.Context, r *run) {
	ctx, cancel := CheckTimeout(ctx)
	defer cancel()
	other, _ := vmstatus.NewKey([]byte(randomHex(32)))
	retired := vmstatus.StatusID(provider.CreateRequest{UID: uid, RequestID: "a-retired-VM's-attempt"})
	for what, k := range map[string]struct {
		key vmstatus.Key
		id  string
	}{"another key's": {other, r.cloud.statusID}, "a retired VM's": {r.cloud.key, retired}} {
		p := &vmstatus.Prober{Key: func(context.Context) (vmstatus.Key, error) { return k.key, nil }, Dial: r.topo.Internet.Dialer(ControlPlaneAddr)}
		if st, err := p.Probe(ctx, VMPrefix.Addr().String(), ProxyPort, uid, k.id); err == nil || !strings.Contains(err.Error(), "407") {
			t.Errorf("%s status request: %+v, %v; want 407", what, st, err)
		}
	}
}

// checkStatusTraffic: the counters the status carries grow with a tunnel.
func checkStatusTraffic(t *testing.T, ctx context.Context, r *run) {
	ctx, cancel := CheckTimeout(ctx)
	defer cancel()
	before, err := r.cloud.status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.client("client", r.creds.Username, r.creds.Password).GetTLS(ctx, HostPort(TLSHostAddr, TLSPort), TLSHostName, r.roots, "/counted"); err != nil {
		t.Fatal(err)
	}
	after, err := r.cloud.status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.Traffic.Connections <= before.Traffic.Connections || after.Traffic.BytesOut <= before.Traffic.BytesOut {
		t.Errorf("traffic before %+v, after a tunnel %+v: want more connections and bytes", before.Traffic, after.Traffic)
	}
}

// checkStatusAccess: the access log, read through the proxy port as the
// control plane reads it, has the tunnel to the TLS host, as the tenant.
func checkStatusAccess(t *testing.T, ctx context.Context, r *run) {
	ctx, cancel := CheckTimeout(ctx)
	defer cancel()
	page, err := r.cloud.prober.Access(ctx, VMPrefix.Addr().String(), ProxyPort, uid, r.cloud.statusID, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range page.Lines {
		if l.Protocol == vmconfig.ProtocolConnect && l.Host == TLSHostAddr.String() && l.User == r.creds.Username && l.Status == http.StatusOK {
			return
		}
	}
	t.Errorf("the access page has no line of a tunnel to %s as %s: %+v", TLSHostAddr, r.creds.Username, page)
}

// checkCloudNoSecret: neither the proxy's password nor the status's is
// in the user-data (which the cloud's API returns to any holder of the
// project's credentials), the journal or the console.
func checkCloudNoSecret(t *testing.T, ctx context.Context, r *run, c *Container, consolePath string) {
	secrets := map[string]string{
		"the proxy's password":          r.creds.Password,
		"the proxy's Basic credentials": base64.StdEncoding.EncodeToString([]byte(r.creds.Username + ":" + r.creds.Password)),
		"the status password":           r.cloud.key.Password(uid, r.cloud.statusID),
	}
	journal, err := c.Exec(ctx, "journalctl", "-b", "--no-pager", "-o", "cat")
	if err != nil {
		t.Fatal(err)
	}
	console, err := os.ReadFile(consolePath)
	if err != nil {
		t.Fatal(err)
	}
	// The user-data as cloud-init reads it: decompressed, if it is.
	boot, err := cloudinit.Parse(r.cloud.userData)
	if err != nil {
		t.Fatal(err)
	}
	var userData strings.Builder
	for _, content := range boot.Files {
		userData.WriteString(content)
	}
	for where, text := range map[string]string{"user-data": userData.String(), "journal": string(journal), "console": string(console)} {
		for what, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("the %s holds %s", where, what)
			}
		}
	}
	if len(journal) < 1000 || userData.Len() < 1000 {
		t.Errorf("the journal has %d bytes and the user-data %d: nothing to search", len(journal), userData.Len())
	}
}
