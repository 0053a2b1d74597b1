package imagetest

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/provider/gcp"
	"github.com/egress-proxies/egress/internal/provider/gcp/computefake"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/queue"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	// prefix names every namespace and container a run makes, so that a
	// later run can find what a dead one left behind.
	prefix = "egress-it-"

	project   = "demo-proxies"
	zone      = "us-central1-b"
	topic     = "projects/" + project + "/topics/" + queue.CallHomeTopic
	namespace = "team-a"
	proxyName = "egress-1"
	uid       = "3f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098"

	// The warm pool's member the pool test boots, which the proxy above
	// then claims.
	poolName   = "us-central1-small"
	memberName = "warm-1"
	memberUID  = "8a7b6c5d-4e3f-4a1b-9c8d-7e6f5a4b3c2d"

	// probeMarker is in every request the checks send towards the
	// metadata server through the proxy: should one arrive, the stand-in's
	// record shows it.
	probeMarker = "egress-image-test-probe"

	bootTimeout = 3 * time.Minute

	// metadataAlias and privateAlias are public-looking names the
	// resolver stand-in resolves to the metadata server and to the private
	// host: a filter on names, not addresses, would let them through.
	metadataAlias = "metadata.example.net"
	privateAlias  = "intranet.example.net"
)

// The guest attributes the script writes, as the metadata stand-in keys them.
var (
	guestReady = vmconfig.GuestNamespace + "/" + vmconfig.GuestReady
	guestError = vmconfig.GuestNamespace + "/" + vmconfig.GuestError
	trafficKey = vmconfig.GuestNamespace + "/" + vmconfig.GuestTraffic
)

// run is what one boot of one release set up.
type run struct {
	rel      Release
	topo     *Topology
	metadata *Metadata
	pubsub   *PubSub
	storage  *Storage
	tlsHost  *Host
	httpHost *Host
	roots    *x509.CertPool
	dns      *DNS
	// upstreamDNS is a resolver on the internet, which SOCKS5 UDP asks.
	upstreamDNS *DNS
	private     *Sink // 10.99.0.1:443, a host of the private network
	refused     *Sink // the TLS host's port 8443, not one the proxy may CONNECT to
	creds       proxy.Credentials
	token       string

	provider   *gcp.Provider
	compute    *computefake.Server
	providerID string
	instance   string // the VM's name

	// cloud is a cloud-init boot's part (Hetzner's, EC2's), nil on GCE's.
	cloud *cloudRun

	// engine is the engine's configuration the VM was last given.
	engine vmconfig.Config
	// bandwidth is the bandwidth limit the next handOver gives, as a
	// spec says it ("200Mbit"; empty: none).
	bandwidth string
	// ipv6Egress is the mode the next configuration the test renders
	// asks for, with VMIPv6Prefix (withIPv6); empty: no prefix.
	ipv6Egress string
	// ipv6Host is the IPv6 host, on a topology with RouteIPv6;
	// ipv6Sessions the address each session ID left from
	// (IPv6PerSession).
	ipv6Host     *SourceHost
	ipv6Sessions map[string]netip.Addr
	// ipv6Prefix is the prefix the topology routes the VM when it is not
	// VMIPv6Prefix: the /80 the EC2 fake delegated (ipv6Prefix()).
	ipv6Prefix netip.Prefix
}

// Socks5Port is the SOCKS5 port of the test's proxy.
const Socks5Port = 1080

// withDataPlane adds to a proxy's bootstrap configuration what the test's
// proxy's spec asks for besides its port, ranges and credentials: SOCKS5
// on Socks5Port, with UDP ASSOCIATE, and the bench's bandwidth limit (the access log is on, as
// a spec has it unless a tenant turns it off). A warm pool's member
// (generation 0) serves no one and gets neither.
func (r *run) withDataPlane(c *bootstrap.Config) {
	if c.Generation == 0 {
		return
	}
	c.Socks5Port = Socks5Port
	c.Socks5UDP = true
	c.BandwidthLimit = r.bandwidth
}

// result is what the summary line says of one release.
type result struct {
	family               string
	passed, failed       int
	bootToReady, install time.Duration
}

// TestImage boots the proxy VM's startup script on a real Debian 13 and a
// real Debian 12, each root file system shaped like Google's image of that
// release (nothing of the project in it), under systemd-nspawn, and checks,
// from outside, what a user and an attacker would see.
//
// The gcp provider's Create, against the Compute fake, gives the metadata;
// the metadata stand-in serves it; the container boots; and Debian's
// google-guest-agent runs the script as on Compute Engine:
// google-startup-scripts.service starts google_metadata_script_runner,
// which reads startup-script from the stand-in and runs it as root. The
// script downloads the proxy engine (built from the tree) from the storage
// stand-in with the VM's token and checks its SHA-256. Both the runner and
// the full guest agent work in the container, so nothing is masked and no
// unit of the test's own replaces them. (The agent logs that it cannot set
// an IO scheduler or reconfigure an sshd the image lacks; neither touches
// the proxy.)
//
// Each check is a subtest of its own, so a broken rule fails the check
// that names it: the provider (Get reports Running from the guest
// attributes the VM wrote), the runner (the script ran to exit status 0),
// credentials (a CONNECT to a TLS host, one by name through the VM's
// resolver, a plain GET; 407 with Proxy-Authenticate without credentials
// and with a wrong password, WrongPassword407), ingress (a source outside
// allowedSourceRanges cannot open a connection; InboundOnlyProxyPorts:
// port 22 and any other port with a listener get no answer from outside,
// while the proxy port serves), egress (CONNECT to the
// metadata server, to a private address and to a port not allowed is
// refused, and the metadata server never sees a request through the
// proxy), readiness (egress/ready after both guest attributes were
// cleared, never egress/error), the call-home (the token and the proxy's
// names reach Pub/Sub), traffic (egress/traffic grows with the bytes and
// connections sent), secrets (the password in no metadata value and no
// log line) and, after a reboot from inside of the same root, readiness
// and service again with the same credentials and nothing installed. The
// last line printed is the summary:
//
//	image-test: debian-13 N checks passed, boot to ready S s (install I s); debian-12 …
func TestImage(t *testing.T) {
	requireHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()

	cache, err := CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	runDir := claimWorkDir(t, cache)
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	engine, err := BuildEngine(root, runDir)
	if err != nil {
		t.Fatal(err)
	}

	var results []result
	for _, rel := range Releases {
		if !imageOnly(rel.Family) {
			continue
		}
		res, ran := result{family: rel.Family}, false
		t.Run(rel.Family, func(t *testing.T) { ran = true; res = testRelease(t, ctx, rel, runDir, engine) })
		if ran { // -run 'TestImage/debian-13' boots one release
			results = append(results, res)
		}
	}
	// The cloud-init clouds' boots: the user-data, read by the cloud's
	// datasource from its metadata service (cloudinit_test.go's
	// the shapes of the clouds' own folders, then its cloudShapes).
	var shapes []cloudShape
	for _, s := range PluginShapes {
		shapes = append(shapes, shapeOf(s))
	}
	shapes = append(shapes, cloudShapes...)
	for _, shape := range shapes {
		if !imageOnly(shape.rel.Family) {
			continue
		}
		res, ran := result{family: shape.rel.Family}, false
		t.Run(shape.rel.Family, func(t *testing.T) { ran = true; res = testCloudInit(t, ctx, runDir, engine, shape) })
		if ran {
			results = append(results, res)
		}
	}
	var parts []string
	failed := false
	for _, r := range results {
		if r.failed > 0 || r.passed == 0 {
			failed = true
			parts = append(parts, fmt.Sprintf("%s %d of %d checks failed", r.family, r.failed, r.passed+r.failed))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %d checks passed, boot to ready %.1f s (install %.1f s)",
			r.family, r.passed, r.bootToReady.Seconds(), r.install.Seconds()))
	}
	if failed {
		t.Error("a release failed its checks")
	}
	fmt.Printf("image-test: %s\n", strings.Join(parts, "; "))
}

// testRelease boots one release twice and runs every check.
func testRelease(t *testing.T, ctx context.Context, rel Release, runDir string, engine []byte) (res result) {
	res.family = rel.Family
	start := time.Now()
	rootfs, built, err := Rootfs(ctx, rel, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if built {
		t.Logf("root file system: built in %.1f s (%s)", time.Since(start).Seconds(), rootfs)
	} else {
		t.Logf("root file system: cached (%s), %.1f s", rootfs, time.Since(start).Seconds())
	}
	checks := &checklist{t: t}
	defer func() { res.passed, res.failed = checks.passed, checks.failed }()

	// The warm pool's VM first, in a subtest, so that its network and
	// stand-ins are gone before the proxy's are made.
	start = time.Now()
	pool := &checklist{}
	if !t.Run("warm pool", func(t *testing.T) {
		pool.t = t
		testWarmPool(pool, ctx, rel, rootfs, runDir, engine)
	}) && pool.failed == 0 {
		pool.failed++ // it stopped outside a check
	}
	checks.passed += pool.passed
	checks.failed += pool.failed
	t.Logf("warm pool: a member booted, checked, claimed and checked in %.1f s", time.Since(start).Seconds())

	topology := NewTopology
	if ipv6Families[rel.Family] {
		topology = newIPv6Topology
	}
	r := setUp(t, ctx, rel, engine, topology, asProxy)
	root := filepath.Join(runDir, rel.Suite)
	start = time.Now()
	if err := Copy(ctx, rootfs, root); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(root); err != nil {
			t.Errorf("removing %s: %v", root, err)
		}
	})
	t.Logf("throwaway copy of the root file system: %.1f s", time.Since(start).Seconds())

	console1 := filepath.Join(runDir, rel.Suite+"-console-1.log")
	c, ready := boot(t, ctx, r, root, console1)
	res.bootToReady = ready.Time.Sub(c.Started)
	res.install = installTime(ctx, c)
	t.Logf("boot 1: egress/ready %.1f s after nspawn started, the install %.1f s of it", res.bootToReady.Seconds(), res.install.Seconds())

	checks.run("ready is written, says generation 1, and no error", func(t *testing.T) { checkReady(t, r, c.Started, ready, 1) })
	checks.run("call-home reaches Pub/Sub with the token and the proxy's names", func(t *testing.T) { checkCallHome(t, ctx, r, proxyReady) })
	checks.run("the gcp provider reads the VM's guest attributes as Running", func(t *testing.T) { checkProviderRunning(t, ctx, r, 1) })
	checks.run("the guest agent's runner ran the script to exit status 0", func(t *testing.T) { checkRunner(t, ctx, c) })
	checks.run("the engine was downloaded once, with the VM's token, and is the one the metadata names", func(t *testing.T) {
		checkEngineInstalled(t, ctx, r, c, 1)
	})
	checks.run("nothing but the proxy listens beyond loopback", func(t *testing.T) { checkListeners(t, ctx, c) })
	checks.run("CONNECT with credentials reaches a TLS host", func(t *testing.T) { checkConnectTLS(t, ctx, r) })
	checks.run("CONNECT by host name resolves through the VM's resolver", func(t *testing.T) { checkConnectByName(t, ctx, r) })
	checks.run("plain GET with credentials is proxied", func(t *testing.T) { checkGet(t, ctx, r) })
	checks.run("no credentials: 407", func(t *testing.T) { checkAuth(t, ctx, r, "", "") })
	checks.run("WrongPassword407", func(t *testing.T) { checkAuth(t, ctx, r, r.creds.Username, r.creds.Password+"x") })
	checks.run("a source outside allowedSourceRanges cannot connect", func(t *testing.T) { checkIngress(t, ctx, r) })
	checks.run("InboundOnlyProxyPorts", func(t *testing.T) { checkInboundOnlyProxyPorts(t, ctx, r) })
	checks.run("CONNECT to the metadata server is refused", func(t *testing.T) {
		// By address, by the name the VM's /etc/hosts gives it, as an
		// IPv4-mapped IPv6 address, and by a public name that resolves to it.
		checkRefused(t, ctx, r, nil, HostPort(MetadataAddr, MetadataPort), "metadata.google.internal:80",
			"[::ffff:"+MetadataAddr.String()+"]:80", metadataAlias+":80")
	})
	checks.run("GET of the metadata server is refused", func(t *testing.T) { checkMetadataGet(t, ctx, r) })
	checks.run("CONNECT to a private address is refused", func(t *testing.T) {
		checkRefused(t, ctx, r, r.private, r.private.Addr(), privateAlias+":443")
	})
	checks.run("CONNECT to a port not allowed is refused", func(t *testing.T) {
		checkRefused(t, ctx, r, r.refused, r.refused.Addr())
	})
	checks.run("the metadata server saw no request through the proxy", func(t *testing.T) { checkMetadataUntouched(t, r) })
	checks.run("the traffic report grows with the bytes and connections sent", func(t *testing.T) { checkTraffic(t, ctx, r, c) })
	checks.run("Socks5Through", func(t *testing.T) { checkSocks5Through(t, ctx, r) })
	checks.run("Socks5WrongPassword", func(t *testing.T) { checkSocks5WrongPassword(t, ctx, r) })
	checks.run("Socks5UDPThrough", func(t *testing.T) { checkSocks5UDPThrough(t, ctx, r, c) })
	checks.run("ZoneIDRefused", func(t *testing.T) { checkZoneIDRefused(t, ctx, r) })
	checks.run("PipelinedSmugglingRefused", func(t *testing.T) { checkPipelinedSmugglingRefused(t, ctx, r) })
	checks.run("Socks4Refused", func(t *testing.T) { checkSocks4Refused(t, ctx, r) })
	checks.run("AccessLogLine", func(t *testing.T) { checkAccessLogLine(t, ctx, r, c) })
	checks.run("the password is in no metadata value and no log line", func(t *testing.T) { checkNoSecret(t, ctx, r, c, console1) })

	// A reboot from inside: nspawn exits 133 and the same root boots
	// again, as a VM's disk survives its reboot.
	if err := c.Reboot(ctx); err != nil {
		t.Fatalf("reboot: %v\n%s", err, c.Journal(ctx, 100))
	}
	console2 := filepath.Join(runDir, rel.Suite+"-console-2.log")
	c2, ready2 := boot(t, ctx, r, root, console2)
	t.Logf("boot 2: egress/ready %.1f s after nspawn started", ready2.Time.Sub(c2.Started).Seconds())
	checks.run("after a reboot the script starts clean and is ready again", func(t *testing.T) { checkReboot(t, r, c2.Started, ready2) })
	checks.run("after a reboot nothing is installed", func(t *testing.T) { checkEngineInstalled(t, ctx, r, c2, 1) })
	checks.run("after a reboot the proxy serves with the same credentials", func(t *testing.T) { checkConnectTLS(t, ctx, r) })
	checks.run("after a reboot WrongPassword407", func(t *testing.T) { checkAuth(t, ctx, r, r.creds.Username, r.creds.Password+"x") })
	checks.run("after a reboot the password is in no log line", func(t *testing.T) { checkNoSecret(t, ctx, r, c2, console2) })
	testReconfigure(checks, ctx, r)
	next := int64(4)
	if ipv6Families[rel.Family] {
		// After the rotation: generation 3 admits the outsider's range.
		testIPv6Reconfigured(checks, ctx, r, c2, "outsider", []string{outsiderRange}, next)
		next += 3 // per connection, per session, and back
	}
	testTrafficQuota(checks, ctx, r, c2, "outsider", []string{outsiderRange}, next)
	return res
}

// imageOnly says whether the boot of family runs: every one, unless
// EGRESS_IMAGE_ONLY names some, comma-separated (EGRESS_IMAGE_ONLY=do-debian-13
// make image-test boots the DigitalOcean shape alone; "fresh-machine"
// names TestFreshMachine). The Makefile's -run stays as it is, so a
// narrowed run is the same command.
func imageOnly(family string) bool {
	only := os.Getenv("EGRESS_IMAGE_ONLY")
	if only == "" {
		return true
	}
	for _, f := range strings.Split(only, ",") {
		if strings.TrimSpace(f) == family {
			return true
		}
	}
	return false
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
	for _, tool := range [][2]string{{"debootstrap", "debootstrap"}, {"systemd-nspawn", "systemd-container"}, {"ip", "iproute2"}, {"nsenter", "util-linux"}} {
		if _, err := exec.LookPath(tool[0]); err != nil {
			missing = append(missing, tool[0]+" (package "+tool[1]+")")
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := "the image test needs " + strings.Join(missing, ", ") + "; scripts/install-deps.sh installs the packages"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
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
