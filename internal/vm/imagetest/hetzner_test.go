package imagetest

import (
	"context"
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
	"github.com/egress-proxies/egress/internal/provider/hetzner"
	"github.com/egress-proxies/egress/internal/provider/hetzner/hetznerfake"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

// controlPlaneAddr is the control plane's egress address in the test's
// internet (its Cloud NAT's, in production): outside allowedSourceRanges,
// admitted by the server for the status request alone.
var controlPlaneAddr = netip.MustParseAddr("203.0.113.7")

// hetznerBootTimeout bounds a Hetzner-shaped boot: cloud-init's stages
// come before the script.
const hetznerBootTimeout = 5 * time.Minute

// hetznerRun is what the Hetzner-shaped boot adds to a run.
type hetznerRun struct {
	metadata *HetznerMetadata
	// key is the control plane's status key; prober asks the server from
	// controlPlaneAddr with it.
	key      vmstatus.Key
	prober   *vmstatus.Prober
	userData string
}

// status asks the server's proxy for its status, as the control plane
// does.
func (h *hetznerRun) status(ctx context.Context) (vmstatus.Status, error) {
	return h.prober.Probe(ctx, VMPrefix.Addr().String(), ProxyPort, uid)
}

// testHetzner boots the Hetzner-shaped Debian 13 twice: Debian's
// cloud-init, finding its Hetzner datasource, reads the user-data the
// hetzner provider made (its Create against the Hetzner fake, with the
// VM side's own renderer) from the stand-in of Hetzner's metadata
// service, and runs the bootstrap it carries; the control plane's prober
// reads Ready through the proxy port from the control plane's address;
// and the checks of the GCE-shaped boot that do not depend on Google's
// metadata server are made again, with those of the status's door.
func testHetzner(t *testing.T, ctx context.Context, runDir string, engine []byte) (res result) {
	rel := HetznerRelease
	res.family = rel.Family
	start := time.Now()
	rootfs, built, err := Rootfs(ctx, rel, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("root file system: %s in %.1f s (built: %t)", rootfs, time.Since(start).Seconds(), built)
	checks := &checklist{t: t}
	defer func() { res.passed, res.failed = checks.passed, checks.failed }()

	r := newRun(t, rel, engine, NewTopology)
	if err := r.topo.Internet.AddAddr("lo", netip.PrefixFrom(controlPlaneAddr, 32)); err != nil {
		t.Fatal(err)
	}
	// A public object: the server reads it with no credential.
	r.storage.Path = "/egress-engine-public/egress-proxy-" + r.storage.SHA256()
	serverID := hetznerCreate(t, ctx, r)
	r.serveInternet(t)
	serve(t, r.topo.Internet, HostPort(MetadataAddr, MetadataPort), r.hetzner.metadata)

	root := filepath.Join(runDir, "hetzner")
	if err := Copy(ctx, rootfs, root); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(root); err != nil {
			t.Errorf("removing %s: %v", root, err)
		}
	})
	// The SMBIOS a Hetzner server's firmware gives (hetznerimage.go).
	if err := writeFiles(root, map[string]string{hetznerDMIDir + "/sys_vendor": "Hetzner\n", hetznerDMIDir + "/product_serial": serverID + "\n"}); err != nil {
		t.Fatal(err)
	}

	console1 := filepath.Join(runDir, "hetzner-console-1.log")
	c, readyAt := hetznerBoot(t, ctx, r, root, console1)
	res.bootToReady = readyAt.Sub(c.Started)
	res.install = installTimeOf(ctx, c, "-t", "cloud-init")
	t.Logf("boot 1: Ready through the proxy port %.1f s after nspawn started, the install %.1f s of it", res.bootToReady.Seconds(), res.install.Seconds())

	checks.run("the control plane's prober reads Ready at generation 1 through the proxy port", func(t *testing.T) { checkHetznerReady(t, ctx, r) })
	checks.run("cloud-init found the Hetzner datasource and ran the user-data's script to exit status 0", func(t *testing.T) {
		checkCloudInit(t, ctx, c, serverID)
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
	checks.run("the control plane's address gets the status and nothing else", func(t *testing.T) { checkStatusOnly(t, ctx, r) })
	checks.run("the status needs the control plane's credential", func(t *testing.T) { checkStatusCredential(t, ctx, r) })
	checks.run("CONNECT to the metadata service is refused", func(t *testing.T) {
		checkRefused(t, ctx, r, nil, HostPort(MetadataAddr, MetadataPort), "[::ffff:"+MetadataAddr.String()+"]:80", metadataAlias+":80")
	})
	checks.run("GET of the metadata service's user-data is refused", func(t *testing.T) { checkHetznerMetadataGet(t, ctx, r) })
	checks.run("CONNECT to a private address is refused", func(t *testing.T) {
		checkRefused(t, ctx, r, r.private, r.private.Addr(), privateAlias+":443")
	})
	checks.run("the metadata service saw no request through the proxy", func(t *testing.T) { checkMetadataUntouched(t, r) })
	checks.run("the status's counters grow with the traffic", func(t *testing.T) { checkStatusTraffic(t, ctx, r) })
	checks.run("the access log is read through the proxy port", func(t *testing.T) { checkStatusAccess(t, ctx, r) })
	checks.run("no password in the user-data, the journal or the console", func(t *testing.T) { checkHetznerNoSecret(t, ctx, r, c, console1) })

	if err := c.Reboot(ctx); err != nil {
		t.Fatalf("reboot: %v\n%s", err, c.Journal(ctx, 100))
	}
	console2 := filepath.Join(runDir, "hetzner-console-2.log")
	c2, ready2 := hetznerBoot(t, ctx, r, root, console2)
	t.Logf("boot 2: Ready %.1f s after nspawn started", ready2.Sub(c2.Started).Seconds())
	checks.run("after a reboot the script starts clean and is ready again", func(t *testing.T) { checkHetznerReady(t, ctx, r) })
	checks.run("after a reboot nothing is installed", func(t *testing.T) { checkEngineInstalled(t, ctx, r, c2, 1) })
	checks.run("after a reboot the proxy serves with the same credentials", func(t *testing.T) { checkConnectTLS(t, ctx, r) })
	checks.run("after a reboot WrongPassword407", func(t *testing.T) { checkAuth(t, ctx, r, r.creds.Username, r.creds.Password+"x") })
	checks.run("after a reboot no password in the journal or the console", func(t *testing.T) { checkHetznerNoSecret(t, ctx, r, c2, console2) })
	return res
}

// hetznerCreate makes the server with the hetzner provider against the
// Hetzner fake, its user-data rendered by the VM side's own renderer
// (package cloudinit) with the status access of the control plane's key,
// and sets the metadata stand-in up to serve it. It returns the server's
// id, which the firmware's serial number is.
func hetznerCreate(t *testing.T, ctx context.Context, r *run) string {
	t.Helper()
	const token = "image-test-hetzner-token"
	fake := hetznerfake.New(token)
	t.Cleanup(fake.Close)
	key, err := vmstatus.NewKey([]byte(randomHex(32)))
	if err != nil {
		t.Fatal(err)
	}
	keyOf := func(context.Context) (vmstatus.Key, error) { return key, nil }
	renderer := cloudinit.Renderer{
		EngineURL: "http://" + HostPort(StorageAddr, StoragePort) + r.storage.Path, EngineSHA256: r.storage.SHA256(),
		// A name, as the production default is: the self-test resolves it
		// through the VM's resolver.
		ProbeTarget: TLSHostName + ":" + strconv.Itoa(TLSPort),
		Status: func(_ context.Context, uid string) (*vmconfig.StatusAccess, error) {
			return key.Access(uid, []string{netip.PrefixFrom(controlPlaneAddr, 32).String()})
		},
	}
	prober := &vmstatus.Prober{Key: keyOf, Dial: r.topo.Internet.Dialer(controlPlaneAddr)}
	p, err := hetzner.New(hetzner.NewClient(token, fake.Endpoint(), nil), hetzner.Config{Renderer: renderer, Prober: prober})
	if err != nil {
		t.Fatal(err)
	}
	cfg := bootstrap.Config{Port: ProxyPort, AllowedSourceRanges: []string{AllowedRange.String()}, Credentials: r.creds, Generation: 1}
	script, err := bootstrap.Render(cfg)
	if err != nil {
		t.Fatal(err)
	}
	engine, err := bootstrap.EngineConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.engine = engine
	req := provider.CreateRequest{Name: provider.NameFromUID(uid), UID: uid, Namespace: namespace, ProxyName: proxyName,
		Port: ProxyPort, StartupScript: script, Engine: &engine, Placement: provider.Placement{Region: "eu-central", Zone: "fsn1"}}
	r.instance = req.Name
	id, err := p.Create(ctx, req)
	if err != nil {
		t.Fatalf("hetzner provider Create: %v", err)
	}
	servers := fake.Servers()
	if len(servers) != 1 {
		t.Fatalf("the Hetzner fake holds %d servers, want 1", len(servers))
	}
	serverID := strconv.FormatInt(servers[0].ID, 10)
	if id != "hcloud://"+serverID {
		t.Fatalf("Create returned %s, want hcloud://%s", id, serverID)
	}
	userData := fake.UserData(servers[0].ID)
	r.hetzner = &hetznerRun{key: key, prober: prober, userData: userData,
		metadata: &HetznerMetadata{ID: serverID, Hostname: req.Name, UserData: userData}}
	return serverID
}

// hetznerBoot boots root and waits until the control plane's prober reads
// Ready, failing at once on a reason the server gives or a container that
// stops. It returns when Ready was first read.
func hetznerBoot(t *testing.T, ctx context.Context, r *run, root, consolePath string) (*Container, time.Time) {
	t.Helper()
	c := startContainer(t, prefix+"hetzner", r, root, consolePath)
	wctx, cancel := context.WithTimeout(ctx, hetznerBootTimeout)
	defer cancel()
	go func() {
		c.Wait(wctx)
		cancel()
	}()
	var last error
	for {
		st, err := r.hetzner.status(wctx)
		switch {
		case err == nil && st.Ready:
			return c, time.Now()
		case err == nil && st.Error != "":
			t.Fatalf("the server says it cannot serve: %s", st.Error)
		case err != nil:
			last = err
		default:
			last = errors.New("answered, not ready yet")
		}
		select {
		case <-wctx.Done():
			done, code := c.Exited()
			t.Fatalf("not Ready through the proxy port within %s of boot (container stopped: %t, status %d): %v\nconsole tail:\n%s",
				hetznerBootTimeout, done, code, last, tailOf(consolePath))
		case <-time.After(time.Second):
		}
	}
}

// checkHetznerReady: the prober, from the control plane's address, reads
// generation 1 served and ready, with no reason.
func checkHetznerReady(t *testing.T, ctx context.Context, r *run) {
	ctx, cancel := checkTimeout(ctx)
	defer cancel()
	st, err := r.hetzner.status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Generation != 1 || !st.Ready || st.Error != "" || st.Traffic == nil {
		t.Errorf("status %+v, want generation 1, ready, no error, with traffic", st)
	}
}

// checkCloudInit: cloud-init's own record says it ran on the Hetzner
// datasource, with the server's id as its instance id, with no error,
// and the per-boot script (cloud-init's scripts_per_boot) said the proxy
// is ready.
func checkCloudInit(t *testing.T, ctx context.Context, c *Container, serverID string) {
	out, err := c.Exec(ctx, "cat", "/run/cloud-init/result.json")
	if err != nil {
		t.Fatalf("no /run/cloud-init/result.json: %v", err)
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
	if !strings.HasPrefix(result.V1.Datasource, "DataSourceHetzner") || len(result.V1.Errors) > 0 {
		t.Errorf("cloud-init ran on %q with errors %v, want DataSourceHetzner and none", result.V1.Datasource, result.V1.Errors)
	}
	id, err := c.Exec(ctx, "cat", "/run/cloud-init/.instance-id")
	if err != nil || strings.TrimSpace(string(id)) != serverID {
		t.Errorf("cloud-init's instance id %q (%v), want the server's %s", strings.TrimSpace(string(id)), err, serverID)
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
	ctx, cancel := checkTimeout(ctx)
	defer cancel()
	c := ProxyClient{Dial: r.topo.Internet.Dialer(controlPlaneAddr), Proxy: ProxyAddr(), User: r.creds.Username, Password: r.creds.Password}
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
// nothing, from the control plane's own address.
func checkStatusCredential(t *testing.T, ctx context.Context, r *run) {
	ctx, cancel := checkTimeout(ctx)
	defer cancel()
	other, _ := vmstatus.NewKey([]byte(randomHex(32)))
	p := &vmstatus.Prober{Key: func(context.Context) (vmstatus.Key, error) { return other, nil }, Dial: r.topo.Internet.Dialer(controlPlaneAddr)}
	if st, err := p.Probe(ctx, VMPrefix.Addr().String(), ProxyPort, uid); err == nil || !strings.Contains(err.Error(), "407") {
		t.Errorf("another key's status request: %+v, %v; want 407", st, err)
	}
}

// checkHetznerMetadataGet: a plain GET, with credentials, of the user-data
// on Hetzner's metadata service (which needs no header) is refused, and
// never reaches it.
func checkHetznerMetadataGet(t *testing.T, ctx context.Context, r *run) {
	checkMetadataGetOf(t, ctx, r, "/hetzner/v1/userdata?"+probeMarker, nil)
}

// checkStatusTraffic: the counters the status carries grow with a tunnel.
func checkStatusTraffic(t *testing.T, ctx context.Context, r *run) {
	ctx, cancel := checkTimeout(ctx)
	defer cancel()
	before, err := r.hetzner.status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.client("client", r.creds.Username, r.creds.Password).GetTLS(ctx, HostPort(TLSHostAddr, TLSPort), TLSHostName, r.roots, "/counted"); err != nil {
		t.Fatal(err)
	}
	after, err := r.hetzner.status(ctx)
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
	ctx, cancel := checkTimeout(ctx)
	defer cancel()
	page, err := r.hetzner.prober.Access(ctx, VMPrefix.Addr().String(), ProxyPort, uid, 0)
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

// checkHetznerNoSecret: neither the proxy's password nor the status's is
// in the user-data (which Hetzner's API returns to any holder of the
// project's token), the journal or the console.
func checkHetznerNoSecret(t *testing.T, ctx context.Context, r *run, c *Container, consolePath string) {
	secrets := map[string]string{
		"the proxy's password":          r.creds.Password,
		"the proxy's Basic credentials": base64.StdEncoding.EncodeToString([]byte(r.creds.Username + ":" + r.creds.Password)),
		"the status password":           r.hetzner.key.Password(uid),
	}
	journal, err := c.Exec(ctx, "journalctl", "-b", "--no-pager", "-o", "cat")
	if err != nil {
		t.Fatal(err)
	}
	console, err := os.ReadFile(consolePath)
	if err != nil {
		t.Fatal(err)
	}
	for where, text := range map[string]string{"user-data": r.hetzner.userData, "journal": string(journal), "console": string(console)} {
		for what, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("the %s holds %s", where, what)
			}
		}
	}
	if len(journal) < 1000 || len(r.hetzner.userData) < 1000 {
		t.Errorf("the journal has %d bytes and the user-data %d: nothing to search", len(journal), len(r.hetzner.userData))
	}
}
