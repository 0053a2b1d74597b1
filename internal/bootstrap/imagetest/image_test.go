package imagetest

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"golang.org/x/sys/unix"
	"google.golang.org/api/option"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/gcp"
	"github.com/egress-proxies/egress/internal/provider/gcp/computefake"
	"github.com/egress-proxies/egress/internal/proxy"
)

const (
	// prefix names every namespace and container a run makes, so that a
	// later run can find what a dead one left behind.
	prefix = "egress-it-"

	project   = "demo-proxies"
	zone      = "us-central1-b"
	topic     = "projects/" + project + "/topics/proxy-reconcile"
	namespace = "team-a"
	proxyName = "egress-1"
	uid       = "3f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098"

	// probeMarker is in every request the checks send towards the
	// metadata server through the proxy: should one arrive, the stand-in's
	// record shows it.
	probeMarker = "egress-image-test-probe"

	bootTimeout = 3 * time.Minute
)

// The guest attributes the script writes, as the metadata stand-in keys them.
var (
	guestReady = bootstrap.GuestNamespace + "/" + bootstrap.GuestReady
	guestError = bootstrap.GuestNamespace + "/" + bootstrap.GuestError
)

// run is what one test run set up.
type run struct {
	topo     *Topology
	metadata *Metadata
	pubsub   *PubSub
	tlsHost  *Host
	httpHost *Host
	roots    *x509.CertPool
	dns      *DNS
	private  *Sink // 10.99.0.1:443, a host of the private network
	refused  *Sink // the TLS host's port 8443, not one the proxy may CONNECT to
	creds    proxy.Credentials
	token    string
}

// TestImage boots the proxy VM's startup script on a real Debian 12 under
// systemd-nspawn and checks, from outside, what a user and an attacker
// would: see the package doc.
func TestImage(t *testing.T) {
	requireHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	start := time.Now()
	rootfs, built, err := Rootfs(ctx, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if built {
		t.Logf("root file system: built in %.1f s (%s)", time.Since(start).Seconds(), rootfs)
	} else {
		t.Logf("root file system: cached (%s), %.1f s", rootfs, time.Since(start).Seconds())
	}

	runDir := claimWorkDir(t, filepath.Dir(rootfs))
	r := setUp(t, ctx)
	root := filepath.Join(runDir, "root")
	start = time.Now()
	if err := Copy(ctx, rootfs, root); err != nil {
		t.Fatal(err)
	}
	t.Logf("throwaway copy of the root file system: %.1f s", time.Since(start).Seconds())

	checks := &checklist{t: t}

	c, ready := boot(t, ctx, r, root, filepath.Join(runDir, "console-1.log"))
	bootToReady := ready.Time.Sub(c.Started)
	t.Logf("boot 1: egress/ready %.1f s after nspawn started", bootToReady.Seconds())

	checks.run("ready is written and no error", func(t *testing.T) { checkReady(t, r, c.Started, ready) })
	checks.run("call-home reaches Pub/Sub with the token and the proxy's names", func(t *testing.T) { checkCallHome(t, ctx, r) })
	checks.run("CONNECT with credentials reaches a TLS host", func(t *testing.T) { checkConnectTLS(t, ctx, r) })
	checks.run("CONNECT by host name resolves through the VM's resolver", func(t *testing.T) { checkConnectByName(t, ctx, r) })
	checks.run("plain GET with credentials is proxied", func(t *testing.T) { checkGet(t, ctx, r) })
	checks.run("no credentials: 407", func(t *testing.T) {
		checkAuth(t, ctx, r, "", "", http.StatusProxyAuthRequired)
	})
	checks.run("wrong password: refused (407, or tinyproxy's 401)", func(t *testing.T) {
		checkAuth(t, ctx, r, r.creds.Username, r.creds.Password+"x", http.StatusProxyAuthRequired, http.StatusUnauthorized)
	})
	checks.run("a source outside allowedSourceRanges cannot connect", func(t *testing.T) { checkIngress(t, ctx, r) })
	checks.run("CONNECT to the metadata server is refused", func(t *testing.T) {
		checkRefused(t, ctx, r, HostPort(MetadataAddr, MetadataPort), nil)
	})
	checks.run("GET of the metadata server is refused", func(t *testing.T) { checkMetadataGet(t, ctx, r) })
	checks.run("CONNECT to a private address is refused", func(t *testing.T) {
		checkRefused(t, ctx, r, r.private.Addr(), r.private)
	})
	checks.run("CONNECT to a port not allowed is refused", func(t *testing.T) {
		checkRefused(t, ctx, r, r.refused.Addr(), r.refused)
	})
	checks.run("the metadata server saw no request through the proxy", func(t *testing.T) { checkMetadataUntouched(t, r) })

	// A reboot from inside: nspawn exits 133 and the same root boots
	// again, as a VM's disk survives its reboot.
	if err := c.Reboot(ctx); err != nil {
		t.Fatalf("reboot: %v\n%s", err, c.Journal(ctx, 100))
	}
	c2, ready2 := boot(t, ctx, r, root, filepath.Join(runDir, "console-2.log"))
	t.Logf("boot 2: egress/ready %.1f s after nspawn started", ready2.Time.Sub(c2.Started).Seconds())
	checks.run("after a reboot the script starts clean and is ready again", func(t *testing.T) { checkReboot(t, r, c2.Started, ready2) })
	checks.run("after a reboot the proxy serves with the same credentials", func(t *testing.T) { checkConnectTLS(t, ctx, r) })

	if checks.failed > 0 {
		fmt.Printf("image-test: %d of %d checks failed\n", checks.failed, checks.passed+checks.failed)
		return
	}
	fmt.Printf("image-test: %d checks passed, boot to ready %.1f s\n", checks.passed, bootToReady.Seconds())
}

// requireHost skips, or under CI fails, when the test cannot run here.
// make test does not run it: make image-test does, with EGRESS_IMAGE_TEST=1,
// so that one `make test` does not boot a system twice over.
func requireHost(t *testing.T) {
	t.Helper()
	if os.Getenv("EGRESS_IMAGE_TEST") != "1" {
		t.Skip("boots a Debian system in a container; run it with `make image-test` (EGRESS_IMAGE_TEST=1)")
	}
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (it makes network namespaces and boots a container)")
	}
	for tool, pkg := range map[string]string{"debootstrap": "debootstrap", "systemd-nspawn": "systemd-container", "ip": "iproute2", "nsenter": "util-linux"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool+" (apt-get install "+pkg+", or scripts/install-deps.sh)")
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := "the image test needs " + strings.Join(missing, ", ")
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// claimWorkDir takes the lock that keeps runs of this test one at a time
// (they share namespace names), ends what a dead run left behind, and
// returns a fresh folder for this run's throwaway copies, removed at the
// end.
func claimWorkDir(t *testing.T, cache string) string {
	t.Helper()
	work := filepath.Join(cache, "runs")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(cache, "runs.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Close() })
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		t.Fatalf("locking %s: %v", lock.Name(), err)
	}
	if err := KillLeftovers(prefix, work); err != nil {
		t.Fatal(err)
	}
	if err := DeleteNetnsWithPrefix(prefix); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(work); err != nil {
		t.Fatalf("removing a dead run's copies: %v", err)
	}
	dir := filepath.Join(work, fmt.Sprintf("run-%d", os.Getpid()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing %s: %v", dir, err)
		}
	})
	return dir
}

// setUp makes the network and starts every stand-in in it.
func setUp(t *testing.T, ctx context.Context) *run {
	t.Helper()
	topo, err := NewTopology(prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := topo.Close(); err != nil {
			t.Error(err)
		}
	})
	creds, err := proxy.NewCredentials()
	if err != nil {
		t.Fatal(err)
	}
	r := &run{topo: topo, creds: creds, token: "ya29.image-test-" + randomHex(16)}
	r.pubsub = &PubSub{Token: r.token}
	r.tlsHost = &Host{Body: "hello from the TLS host " + randomHex(4)}
	r.httpHost = &Host{Body: "hello from the HTTP host " + randomHex(4)}

	attrs := insertMetadata(t, ctx, creds)
	r.metadata = NewMetadata(Instance{Project: project, Zone: zone, Name: provider.NameFromUID(uid), ID: "4711",
		ServiceAccount: "proxy-vm@" + project + ".iam.gserviceaccount.com", Attributes: attrs}, r.token)

	serve(t, topo.Internet, HostPort(MetadataAddr, MetadataPort), r.metadata)
	serve(t, topo.Internet, HostPort(HTTPHostAddr, HTTPPort), r.httpHost)
	serve(t, topo.Internet, HostPort(PubSubAddr, PubSubPort), r.pubsub)

	l, err := topo.Internet.Listen(HostPort(TLSHostAddr, TLSPort))
	if err != nil {
		t.Fatal(err)
	}
	tlsSrv := httptest.NewUnstartedServer(r.tlsHost)
	tlsSrv.Listener.Close()
	tlsSrv.Listener = l
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	r.roots = x509.NewCertPool()
	r.roots.AddCert(tlsSrv.Certificate())

	pc, err := topo.Internet.ListenPacket(HostPort(MetadataAddr, DNSPort))
	if err != nil {
		t.Fatal(err)
	}
	r.dns = NewDNS(pc, map[string]netip.Addr{TLSHostName: TLSHostAddr})
	t.Cleanup(func() { r.dns.Close() })

	r.private = sink(t, topo.Internet, HostPort(PrivateAddr, PrivatePort))
	r.refused = sink(t, topo.Internet, HostPort(TLSHostAddr, RefusedPort))
	return r
}

// insertMetadata is the metadata the gcp provider sends in its insert
// request for the test's proxy, read back from the Compute fake: the
// stand-in serves exactly what Compute Engine would have been told.
func insertMetadata(t *testing.T, ctx context.Context, creds proxy.Credentials) map[string]string {
	t.Helper()
	script, err := bootstrap.Render(bootstrap.Config{
		Port: ProxyPort, AllowedSourceRanges: []string{AllowedRange.String()}, Credentials: creds,
	})
	if err != nil {
		t.Fatal(err)
	}
	fake := computefake.New()
	t.Cleanup(fake.Close)
	client, err := compute.NewInstancesRESTClient(ctx, option.WithEndpoint(fake.URL), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	p, err := gcp.New(client, gcp.Config{
		Project: project, ServiceAccount: "proxy-vm@" + project + ".iam.gserviceaccount.com",
		// A name, as the production default is: the self-test then
		// resolves it through the VM's resolver, as a client's CONNECT does.
		ProbeTarget:    TLSHostName + ":" + strconv.Itoa(TLSPort),
		CallHomeTopic:  topic,
		PubSubEndpoint: "http://" + HostPort(PubSubAddr, PubSubPort),
	})
	if err != nil {
		t.Fatal(err)
	}
	req := provider.CreateRequest{
		Name: provider.NameFromUID(uid), UID: uid, Namespace: namespace, ProxyName: proxyName,
		Placement:     provider.Placement{Region: "us-central1", Zone: zone},
		Port:          ProxyPort,
		StartupScript: script,
	}
	if _, err := p.Create(ctx, req); err != nil {
		t.Fatalf("gcp provider Create: %v", err)
	}
	inserts := fake.Inserts()
	if len(inserts) != 1 {
		t.Fatalf("the Compute fake got %d inserts, want 1", len(inserts))
	}
	attrs := map[string]string{}
	for _, it := range inserts[0].Instance.GetMetadata().GetItems() {
		attrs[it.GetKey()] = it.GetValue()
	}
	return attrs
}

// boot boots root and waits for egress/ready, failing at once on
// egress/error or on a container that stops.
func boot(t *testing.T, ctx context.Context, r *run, root, consolePath string) (*Container, GuestWrite) {
	t.Helper()
	console, err := os.Create(consolePath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { console.Close() })
	c, err := Boot(prefix+"vm", root, r.topo.VM, console)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(30 * time.Second); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("journal of %s:\n%s", c.Name, c.Journal(context.Background(), 150))
		}
	})
	wctx, cancel := context.WithTimeout(ctx, bootTimeout)
	defer cancel()
	go func() {
		// A container that stops ends the wait at once.
		c.Wait(wctx)
		cancel()
	}()
	w, err := r.metadata.WaitGuest(wctx, c.Started, guestReady, guestError)
	if err != nil {
		done, code := c.Exited()
		t.Fatalf("no egress/ready within %s of boot (container stopped: %t, status %d): %v\nconsole tail:\n%s",
			bootTimeout, done, code, err, tailOf(consolePath))
	}
	if w.Key == guestError {
		t.Fatalf("the startup script wrote egress/error: %q", w.Value)
	}
	return c, w
}

// serve runs an HTTP handler on addr inside ns until the test ends.
func serve(t *testing.T, ns *Netns, addr string, h http.Handler) {
	t.Helper()
	l, err := ns.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
}

func sink(t *testing.T, ns *Netns, addr string) *Sink {
	t.Helper()
	l, err := ns.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	s := NewSink(l)
	t.Cleanup(func() { s.Close() })
	return s
}

// client is a proxy user at a source address of the test's internet.
func (r *run) client(from string, user, password string) ProxyClient {
	addr := ClientAddr
	if from == "outsider" {
		addr = OutsiderAddr
	}
	return ProxyClient{Dial: r.topo.Internet.Dialer(addr), Proxy: ProxyAddr(), User: user, Password: password}
}

// checklist runs each check as a subtest and counts the outcome.
type checklist struct {
	t              *testing.T
	passed, failed int
}

func (c *checklist) run(name string, fn func(t *testing.T)) {
	if c.t.Run(name, fn) {
		c.passed++
	} else {
		c.failed++
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func tailOf(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

func decodeJSON(b []byte) (map[string]any, error) {
	var m map[string]any
	return m, json.Unmarshal(b, &m)
}
