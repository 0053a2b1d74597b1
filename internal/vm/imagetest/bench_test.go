package imagetest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/vm/engine/loadtest"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// Targets of make image-bench: the bench fails on these alone. The
// yardstick is the bare splice relay started beside the engine in every
// round (docs/development/benchmarks.md says why): the direct path is
// reported, never judged.
const (
	minEngineToRelayRatio = 0.95
	minSocks5ToRelayRatio = 0.9
	// maxNewConnectionToRelayRatio bounds a new connection's first
	// request (CONNECT and a GET in the tunnel), p50 through the engine
	// over p50 through the relay.
	maxNewConnectionToRelayRatio = 1.3
	// maxPerConnectionToSingleRatio bounds what a fresh IPv6 source per
	// connection adds to a new connection (issue 46): p50 under
	// perConnection over p50 under single, to the same IPv6 host.
	maxPerConnectionToSingleRatio = 1.2
	maxBandwidthLimitError        = 0.1
	tunnelsTried                  = 2000
	rssTunnels                    = 1000
	maxRSSMiB                     = 64
	requests                      = 300
	// bulkRounds is how many rounds each throughput figure is the
	// median of, the paths through the VM taking turns at going first,
	// and bulkBytes what each path downloads in a round. On two cores
	// one round's engine/relay ratio moves by ±0.1 and more with what
	// else runs (0.64–1.40 in one run of nine rounds of 1 GiB, 0.94–1.04
	// in another), while the engine's own code is 1.6 % of the
	// machine's cycles during the downloads and the kernel's splice the
	// rest, as it is the relay's (perf, 2026-12-07; a CPU profile of
	// BenchmarkTunnelThroughput shows the same: 91 % in syscalls). The
	// noise is the scheduler's, not the paths': so the same 9 GiB a path
	// are cut into four times as many rounds, which halves the spread of
	// their median (six runs of nine rounds of 1 GiB, beside other
	// work, gave medians of 0.82–0.97).
	bulkRounds = 36
	bulkBytes  = 256 << 20
	// rounds is how many rounds the new-connection samples are spread
	// over, alternating the engine with the relay.
	rounds = 5
	// bandwidthLimit is the limit the bench gives the proxy by a reload,
	// and downloads 8 s of through it.
	bandwidthLimit = 200_000_000
)

// benchResult is what make image-bench prints and writes to
// IMAGE_BENCH_OUT.
type benchResult struct {
	Engine          string      `json:"engine"`
	Release         string      `json:"release"`
	ProxiedMBps     float64     `json:"proxiedMBps"`
	DirectMBps      float64     `json:"directMBps"`
	ThroughputRatio float64     `json:"throughputRatio"`
	RequestMs       percentiles `json:"requestMs"`
	DirectRequestMs percentiles `json:"directRequestMs"`
	// Socks5ThroughputRatio is the median of the rounds' ratios of a
	// download through a SOCKS5 tunnel to the direct path's.
	Socks5ThroughputRatio float64 `json:"socks5ThroughputRatio"`
	// RelayThroughputRatio is the same median for a bare splice relay
	// (serveRelay) run as a process of its own in the booted VM's
	// namespace, beside the engine, in the same rounds; EngineToRelayRatio
	// is the median of the rounds' engine/relay ratios. They say what the
	// topology allows any proxy placed as the engine is, and how much of it
	// the engine takes; neither is a target. Booted runs only.
	RelayThroughputRatio float64 `json:"relayThroughputRatio,omitempty"`
	EngineToRelayRatio   float64 `json:"engineToRelayRatio,omitempty"`
	// Socks5ToRelayRatio is the median of the rounds' SOCKS5/relay
	// ratios. Booted runs only.
	Socks5ToRelayRatio float64 `json:"socks5ToRelayRatio,omitempty"`
	// NewConnectionMs and RelayNewConnectionMs are a new connection's
	// first request (a CONNECT, then a GET in the tunnel) through the
	// engine and through the relay; NewConnectionToRelayRatio is the
	// ratio of their p50s. Booted runs only.
	NewConnectionMs percentiles `json:"newConnectionMs"`
	// PerConnectionSetupMs is a new connection to the IPv6 host (a
	// CONNECT and the host's one line back) under ipv6Egress
	// perConnection, a fresh source of the VM's prefix each time;
	// SingleSourceSetupMs the same under single, the kernel's source, as
	// before the prefix; PerConnectionToSingleRatio the ratio of their
	// p50s.
	PerConnectionSetupMs       percentiles `json:"perConnectionSetupMs"`
	SingleSourceSetupMs        percentiles `json:"singleSourceSetupMs"`
	PerConnectionToSingleRatio float64     `json:"perConnectionToSingleRatio,omitempty"`
	RelayNewConnectionMs       percentiles `json:"relayNewConnectionMs"`
	NewConnectionToRelayRatio  float64     `json:"newConnectionToRelayRatio,omitempty"`
	// BandwidthLimitError is |measured/limit − 1| of a download through
	// the proxy once a reload gave it BandwidthLimitBitsPerSecond.
	BandwidthLimitError         float64      `json:"bandwidthLimitError"`
	BandwidthLimitBitsPerSecond int64        `json:"bandwidthLimitBitsPerSecond"`
	BandwidthMeasuredMBps       float64      `json:"bandwidthMeasuredMBps"`
	TunnelsHeld                 int          `json:"tunnelsHeld"`
	TunnelsTried                int          `json:"tunnelsTried"`
	RSSMiBAt1000                float64      `json:"rssMiBAt1000"`
	BulkBytes                   int64        `json:"bulkBytes"`
	Requests                    int          `json:"requests"`
	Runs                        []bulkSample `json:"bulkRuns"`
}

type percentiles struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

type bulkSample struct {
	ProxiedMBps float64 `json:"proxiedMBps"`
	DirectMBps  float64 `json:"directMBps"`
	Socks5MBps  float64 `json:"socks5MBps,omitempty"`
	RelayMBps   float64 `json:"relayMBps,omitempty"`
}

// median is the median of three or more values.
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// TestImageBench is make image-bench: the proxy's own data path on the
// image test's topology, client, proxy VM and upstream servers in three
// network namespaces, against the direct path the VM's namespace forwards,
// in one run (absolute figures move with the machine's load; the ratio
// is what is judged). The VM is a booted Debian 13 with the engine, set up
// by the startup script from metadata as in make image-test.
//
// With IMAGE_BENCH_ENGINE=tinyproxy it measures, on the same harness, the
// host's tinyproxy (Debian's, as the VMs ran it before the engine) with
// the configuration the startup script used to write, run in the VM's
// namespace without a boot: figures for the comparison in docs/development/benchmarks.md, judged
// against no target.
//
// It prints one line:
//
//	image-bench: proxied X MB/s, direct Y MB/s (ratio R), p50/p99 new-connection request A/B ms (direct C/D), N of N tunnels held, RSS M MiB at 1000 tunnels
func TestImageBench(t *testing.T) {
	if os.Getenv("EGRESS_IMAGE_BENCH") != "1" {
		t.Skip("boots a Debian system and measures its proxy; run it with `make image-bench` (EGRESS_IMAGE_BENCH=1)")
	}
	requireHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()

	cache, err := CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	runDir := claimWorkDir(t, cache)
	rel := Releases[0]
	res := benchResult{Engine: "egress-proxy", Release: rel.Family, BulkBytes: bulkBytes, Requests: requests, TunnelsTried: tunnelsTried}
	var proxyAddr string
	var rss func() (float64, error)
	var r *run
	var startRelay func(addr string)
	switch os.Getenv("IMAGE_BENCH_ENGINE") {
	case "", "egress-proxy":
		r, proxyAddr, rss, startRelay = bootEngine(t, ctx, rel, runDir)
	case "tinyproxy":
		res.Engine, res.Release = "tinyproxy", "host"
		proxyAddr, rss = runTinyproxy(t, ctx, runDir)
	case "egress-proxy-netns":
		res.Engine, res.Release = "egress-proxy-netns", "host"
		proxyAddr, rss = runEngineInNetns(t, ctx, runDir)
	case "relay":
		res.Engine, res.Release = "relay", "host"
		proxyAddr, rss = runRelay(t, ctx)
	case "relay-process":
		res.Engine, res.Release = "relay-process", "host"
		proxyAddr, rss = runRelayProcess(t, ctx)
	default:
		t.Fatalf("IMAGE_BENCH_ENGINE=%q: want egress-proxy, egress-proxy-netns, relay, relay-process or tinyproxy", os.Getenv("IMAGE_BENCH_ENGINE"))
	}
	b := newBench(t, proxyAddr)
	var relay *loadtest.Proxy
	if r != nil {
		addr := HostPort(BenchVMClientSide.Addr(), relayPort)
		startRelay(addr)
		waitListening(t, ctx, r.topo, addr)
		relay = &loadtest.Proxy{Addr: addr, Dial: b.dial}
	}

	// Throughput: rounds of one download each way (and through SOCKS5 and
	// the relay), alternating; the ratio of each round is its own, judged
	// against the direct path in the same moment, and the median of the
	// rounds is the figure (the one least disturbed by the rest of the
	// machine, either way).
	var ratios, socksRatios, relayRatios, toRelay, socksToRelay []float64
	for round := range bulkRounds {
		var sample bulkSample
		sample.DirectMBps = b.bulk(ctx, b.direct)
		// The paths through the VM take turns at going first: each
		// finds the machine as the download before it left it, and a
		// fixed order would give one path the same place every round.
		paths := []func(){func() { sample.ProxiedMBps = b.bulk(ctx, b.http) }}
		if r != nil || res.Engine == "egress-proxy-netns" {
			paths = append(paths, func() { sample.Socks5MBps = b.bulk(ctx, b.socks5()) })
		}
		if relay != nil {
			paths = append(paths, func() { sample.RelayMBps = b.bulk(ctx, *relay) })
		}
		for i := range paths {
			paths[(round+i)%len(paths)]()
		}
		ratios = append(ratios, sample.ProxiedMBps/sample.DirectMBps)
		if sample.Socks5MBps > 0 {
			socksRatios = append(socksRatios, sample.Socks5MBps/sample.DirectMBps)
		}
		if relay != nil {
			relayRatios = append(relayRatios, sample.RelayMBps/sample.DirectMBps)
			toRelay = append(toRelay, sample.ProxiedMBps/sample.RelayMBps)
			socksToRelay = append(socksToRelay, sample.Socks5MBps/sample.RelayMBps)
		}
		res.Runs = append(res.Runs, sample)
		res.DirectMBps, res.ProxiedMBps = max(res.DirectMBps, sample.DirectMBps), max(res.ProxiedMBps, sample.ProxiedMBps)
	}
	res.ThroughputRatio = median(ratios)
	res.Socks5ThroughputRatio = median(socksRatios)
	res.RelayThroughputRatio, res.EngineToRelayRatio = median(relayRatios), median(toRelay)
	res.Socks5ToRelayRatio = median(socksToRelay)
	if relay != nil {
		// Alternating, so that neither side gets the quieter moment.
		var engine, bare []float64
		for range rounds {
			engine = append(engine, b.newConnections(ctx, b.http)...)
			bare = append(bare, b.newConnections(ctx, *relay)...)
		}
		res.NewConnectionMs, res.RelayNewConnectionMs = percentilesOf(engine), percentilesOf(bare)
		res.NewConnectionToRelayRatio = res.NewConnectionMs.P50 / res.RelayNewConnectionMs.P50
	}

	if !strings.HasPrefix(res.Engine, "relay") { // it carries CONNECT only
		res.DirectRequestMs = b.requests(ctx, false)
		res.RequestMs = b.requests(ctx, true)
	}

	// Tunnels: 1000, the memory then, and 1000 more; held means answered
	// 200 and echoing a byte once all are open.
	tunnels, err := loadtest.Tunnels(ctx, b.http, HostPort(EchoAddr, TLSPort), tunnelsTried, []int{rssTunnels}, func(int) {
		time.Sleep(time.Second)
		var err error
		if res.RSSMiBAt1000, err = rss(); err != nil {
			t.Error(err)
		}
	})
	res.TunnelsHeld = len(tunnels)
	for _, c := range tunnels {
		c.Close()
	}
	if err != nil {
		t.Logf("tunnels: %d held, first error: %v", len(tunnels), err)
	}

	// The bandwidth limit: a reload gives the proxy bandwidthLimit, and a
	// download of 8 s of it measures what the proxy lets through.
	if r != nil {
		r.bandwidth = strconv.Itoa(bandwidthLimit/1_000_000) + "Mbit"
		handOver(t, ctx, r, 2, bootstrap.Config{Port: ProxyPort, AllowedSourceRanges: []string{AllowedRange.String()}, Credentials: r.creds})
		limitMBps := float64(bandwidthLimit) / 8 / 1e6
		mbps, err := loadtest.Download(ctx, &b.http, HostPort(BulkAddr, TLSPort), int64(limitMBps*1e6*8))
		if err != nil {
			t.Fatalf("the download under the bandwidth limit: %v", err)
		}
		res.BandwidthLimitBitsPerSecond, res.BandwidthMeasuredMBps = bandwidthLimit, mbps
		res.BandwidthLimitError = math.Abs(mbps/limitMBps - 1)

		// A fresh IPv6 source per connection against the kernel's: the
		// two modes in turn, twice each, handed over as a PATCH would.
		var single, fresh []float64
		for i, mode := range []string{vmconfig.IPv6EgressSingle, vmconfig.IPv6EgressPerConnection, vmconfig.IPv6EgressSingle, vmconfig.IPv6EgressPerConnection} {
			r.ipv6Egress = mode
			handOver(t, ctx, r, int64(3+i), bootstrap.Config{Port: ProxyPort, AllowedSourceRanges: []string{AllowedRange.String()}, Credentials: r.creds})
			ms := b.ipv6Connections(ctx, r, mode, requests/4)
			if mode == vmconfig.IPv6EgressSingle {
				single = append(single, ms...)
			} else {
				fresh = append(fresh, ms...)
			}
		}
		res.SingleSourceSetupMs, res.PerConnectionSetupMs = percentilesOf(single), percentilesOf(fresh)
		res.PerConnectionToSingleRatio = res.PerConnectionSetupMs.P50 / res.SingleSourceSetupMs.P50
	}

	line := fmt.Sprintf("image-bench: proxied %.0f MB/s, direct %.0f MB/s (ratio %.2f, median of %d; SOCKS5 %.2f; a bare relay beside it %.2f, the engine %.2f of it, SOCKS5 %.2f of it), p50/p99 new-connection request %.2f/%.2f ms (direct %.2f/%.2f; CONNECT+GET %.2f ms, %.2f of the relay's %.2f), %d of %d tunnels held, RSS %.1f MiB at 1000 tunnels, bandwidth limit %d bit/s held within %.3f, IPv6 new connection %.2f/%.2f ms with a fresh source each (%.2f/%.2f ms with one, ratio %.2f)",
		res.ProxiedMBps, res.DirectMBps, res.ThroughputRatio, bulkRounds, res.Socks5ThroughputRatio, res.RelayThroughputRatio, res.EngineToRelayRatio, res.Socks5ToRelayRatio, res.RequestMs.P50, res.RequestMs.P99,
		res.DirectRequestMs.P50, res.DirectRequestMs.P99, res.NewConnectionMs.P50, res.NewConnectionToRelayRatio, res.RelayNewConnectionMs.P50, res.TunnelsHeld, res.TunnelsTried, res.RSSMiBAt1000, res.BandwidthLimitBitsPerSecond, res.BandwidthLimitError,
		res.PerConnectionSetupMs.P50, res.PerConnectionSetupMs.P99, res.SingleSourceSetupMs.P50, res.SingleSourceSetupMs.P99, res.PerConnectionToSingleRatio)
	if res.Engine != "egress-proxy" {
		line = strings.Replace(line, "image-bench:", "image-bench ("+res.Engine+"):", 1)
	}
	fmt.Println(line)
	if out := os.Getenv("IMAGE_BENCH_OUT"); out != "" {
		js, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(out, append(js, '\n'), 0o644); err != nil {
			t.Error(err)
		}
	}
	if res.Engine != "egress-proxy" {
		return
	}
	if res.EngineToRelayRatio < minEngineToRelayRatio {
		t.Errorf("throughput through the engine is %.2f of the bare relay's beside it (the median of %d rounds), want at least %.2f", res.EngineToRelayRatio, bulkRounds, minEngineToRelayRatio)
	}
	if res.Socks5ToRelayRatio < minSocks5ToRelayRatio {
		t.Errorf("throughput through SOCKS5 is %.2f of the bare relay's, want at least %.2f", res.Socks5ToRelayRatio, minSocks5ToRelayRatio)
	}
	if r != nil && (res.PerConnectionToSingleRatio > maxPerConnectionToSingleRatio || res.PerConnectionToSingleRatio == 0) {
		t.Errorf("a new connection to the IPv6 host takes %.2f ms (p50) with a fresh source each, %.2f of the %.2f ms with one, want at most %.2f",
			res.PerConnectionSetupMs.P50, res.PerConnectionToSingleRatio, res.SingleSourceSetupMs.P50, maxPerConnectionToSingleRatio)
	}
	if res.NewConnectionToRelayRatio > maxNewConnectionToRelayRatio || res.NewConnectionToRelayRatio == 0 {
		t.Errorf("a new connection's first request takes %.2f ms (p50) through the engine, %.2f of the relay's %.2f ms, want at most %.2f",
			res.NewConnectionMs.P50, res.NewConnectionToRelayRatio, res.RelayNewConnectionMs.P50, maxNewConnectionToRelayRatio)
	}
	if res.BandwidthLimitError > maxBandwidthLimitError {
		t.Errorf("under a limit of %d bit/s the proxy carried %.1f MB/s: off by %.3f, want at most %.2f", bandwidthLimit, res.BandwidthMeasuredMBps, res.BandwidthLimitError, maxBandwidthLimitError)
	}
	if res.TunnelsHeld != tunnelsTried {
		t.Errorf("%d of %d concurrent tunnels held, want all", res.TunnelsHeld, tunnelsTried)
	}
	if res.RSSMiBAt1000 >= maxRSSMiB || res.RSSMiBAt1000 == 0 {
		t.Errorf("the engine's resident memory at %d tunnels is %.1f MiB, want under %d", rssTunnels, res.RSSMiBAt1000, maxRSSMiB)
	}
}

// bootEngine boots rel with the startup script in the benchmark's
// topology and returns the proxy's address as the client dials it, a
// reader of the engine's resident memory, and the engine's user, as whom
// the bare relay beside it runs.
func bootEngine(t *testing.T, ctx context.Context, rel Release, runDir string) (*run, string, func() (float64, error), func(addr string)) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	engine, err := BuildEngine(root, runDir)
	if err != nil {
		t.Fatal(err)
	}
	rootfs, _, err := Rootfs(ctx, rel, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	r := setUp(t, ctx, rel, engine, newIPv6BenchTopology, asProxy)
	dir := filepath.Join(runDir, rel.Suite)
	if err := Copy(ctx, rootfs, dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	c, ready := boot(t, ctx, r, dir, filepath.Join(runDir, rel.Suite+"-console.log"))
	t.Logf("%s: egress/ready %.1f s after nspawn started", rel.Family, ready.Time.Sub(c.Started).Seconds())
	// The bare relay the bench runs beside the engine listens in the VM's
	// namespace, whose filter drops every port but the proxy's: one rule,
	// in the agent's own table (an accept in a table of the bench's would
	// not outvote that table's drop), lets the clients reach it. It sits
	// right after the rules that admit the proxy's clients, so the relay's
	// packets walk the same rules as the engine's (two more); where it
	// runs, and as whom, startRelayInVM says.
	after, err := ruleHandle(ctx, c, "ip6 saddr @allowed6 accept")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := c.Exec(ctx, "nft", "add", "rule", "inet", "egress_proxy", "input", "position", after, "tcp", "dport", strconv.Itoa(relayPort), "ip", "saddr", "@allowed4", "accept"); err != nil {
		t.Fatalf("opening the relay's port %d in the VM's filter: %v: %s", relayPort, err, out)
	}
	benchServers(t, r.topo)
	rss := func() (float64, error) {
		out, err := c.Exec(ctx, "sh", "-c", "grep VmRSS /proc/$(systemctl show -p MainPID --value egress-proxy.service)/status")
		if err != nil {
			return 0, err
		}
		return parseRSS(string(out))
	}
	creds := r.creds
	return r, "http://" + creds.Username + ":" + creds.Password + "@" + benchProxyAddr, rss, func(addr string) { startRelayInVM(t, ctx, c, dir, addr) }
}

// startRelayInVM starts this test binary as the bare relay alone, inside
// the booted VM, listening on addr: a unit of the VM's systemd beside the
// engine's, as the engine's user. So the two differ in their code alone:
// the same namespaces and cgroup tree, the same user and so the same
// output chain of the VM's filter (meta skuid … jump proxy_egress), and
// the same seccomp filters. Every process of the VM carries five of them
// (systemd-nspawn's and systemd's), and each syscall of a tunnel, a
// splice at a time, passes them; a relay started from the host into the
// VM's network namespace carried none. Against that one the engine's
// median came to 0.957–1.003 in six runs; against this one, 0.979–0.990
// in seven (2026-12-07).
func startRelayInVM(t *testing.T, ctx context.Context, c *Container, rootfs, addr string) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const inVM = "/usr/local/lib/egress-bench-relay"
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, inVM), b, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := c.Exec(ctx, "systemd-run", "--unit=egress-bench-relay", "--uid=egress-proxy", "--gid=egress-proxy",
		"--property=LimitNOFILE=65536", "--setenv="+relayProcessEnv+"="+addr, inVM, "-test.run=^$"); err != nil {
		t.Fatalf("starting the bare relay in the VM: %v: %s", err, out)
	}
}

// ruleHandle is the handle of the first rule of the VM's input chain
// whose text contains match.
func ruleHandle(ctx context.Context, c *Container, match string) (string, error) {
	out, err := c.Exec(ctx, "nft", "-a", "list", "chain", "inet", "egress_proxy", "input")
	if err != nil {
		return "", fmt.Errorf("listing the VM's input chain: %v: %s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		if before, handle, ok := strings.Cut(line, "# handle "); ok && strings.Contains(before, match) {
			return strings.TrimSpace(handle), nil
		}
	}
	return "", fmt.Errorf("the VM's input chain has no rule with %q:\n%s", match, out)
}

// runTinyproxy runs the host's tinyproxy in the VM's namespace of the
// benchmark's topology, configured as the startup script configured it
// before the engine (BasicAuth, CONNECT to 443 and 80, the client's range,
// warnings only), with MaxClients raised to the tunnels tried, so that its
// own limit is not what is measured.
func runTinyproxy(t *testing.T, ctx context.Context, runDir string) (string, func() (float64, error)) {
	bin, err := exec.LookPath("tinyproxy")
	if err != nil {
		t.Fatalf("tinyproxy is not installed: %v (scripts/install-deps.sh installs it)", err)
	}
	topo := benchTopology(t)
	user, password := "bench", "benchpassword0123456789"
	conf := filepath.Join(runDir, "tinyproxy.conf")
	body := fmt.Sprintf("Port %d\nTimeout 600\nMaxClients %d\nLogLevel Warning\nDisableViaHeader Yes\nBasicAuth %s %s\nAllow %s\nConnectPort 443\nConnectPort 80\n",
		ProxyPort, tunnelsTried+100, user, password, BenchClientPrefix.Masked())
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	// Its file limit raised to the hard one, as the engine's unit raises
	// the engine's (LimitNOFILE): a thread per client, two descriptors each.
	cmd := exec.Command("ip", "netns", "exec", topo.VM.Name, "sh", "-c", `ulimit -n "$(ulimit -Hn)" && exec "$0" -d -c "$1"`, bin, conf)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := waitListening(t, ctx, topo, benchProxyAddr)
	// tinyproxy 1.11 is one process with a thread per client; ip and sh
	// exec it, so the command's PID is tinyproxy's.
	rss := func() (float64, error) { return loadtest.RSSMiB(cmd.Process.Pid) }
	return "http://" + user + ":" + password + "@" + addr, rss
}

// runEngineInNetns runs the engine binary built from the tree in the VM's
// namespace of the benchmark's topology, without a boot (no container, no
// systemd unit, no nftables): the same engine as the booted VM's, so that
// the two runs' difference is what the booted VM adds.
func runEngineInNetns(t *testing.T, ctx context.Context, runDir string) (string, func() (float64, error)) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := BuildEngine(root, runDir); err != nil {
		t.Fatal(err)
	}
	topo := benchTopology(t)
	user, password := "bench", "benchpassword0123456789"
	hash, err := vmconfig.NewPasswordHash(password)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(vmconfig.Config{Generation: 1, Listen: ":" + strconv.Itoa(ProxyPort), Socks5Listen: ":" + strconv.Itoa(Socks5Port),
		Users: []vmconfig.User{{Name: user, PasswordHash: hash}}, AllowedSourceRanges: []string{BenchClientPrefix.Masked().String()},
		ConnectPorts: []int{443, 80}, DenyDestinations: []string{"169.254.0.0/16", "10.0.0.0/8"}})
	conf := filepath.Join(runDir, "engine.json")
	if err := os.WriteFile(conf, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", topo.VM.Name, "sh", "-c", `ulimit -n "$(ulimit -Hn)" && exec "$0" -config "$1"`, filepath.Join(runDir, "egress-proxy"), conf)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := waitListening(t, ctx, topo, benchProxyAddr)
	return "http://" + user + ":" + password + "@" + addr, func() (float64, error) { return loadtest.RSSMiB(cmd.Process.Pid) }
}

// runRelay serves, in the VM's namespace, the least a CONNECT proxy can
// be: no credentials, no rule, the head read byte by byte, a 200, then
// io.Copy both ways between the two *net.TCPConn (splice). It is the
// yardstick of what the topology allows a spliced tunnel, for the
// engine's figures beside it.
func runRelay(t *testing.T, ctx context.Context) (string, func() (float64, error)) {
	topo := benchTopology(t)
	ln, err := topo.VM.Listen(benchProxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go serveRelay(ctx, ln, topo.VM.Dialer(netip.Addr{}))
	return "http://" + waitListening(t, ctx, topo, benchProxyAddr), func() (float64, error) { return loadtest.RSSMiB(0) }
}

// relayProcessEnv makes this test binary the relay alone, listening on
// the address it holds (see TestMain).
const relayProcessEnv = "EGRESS_IMAGE_BENCH_RELAY_LISTEN"

// runRelayProcess is runRelay in a process of its own in the VM's
// namespace, as the engine runs (IMAGE_BENCH_ENGINE=relay-process): in
// the test's own process the relay shares one Go scheduler with the
// bench's client and servers, which a proxy in another process does not,
// so only this one compares with the engine.
func runRelayProcess(t *testing.T, ctx context.Context) (string, func() (float64, error)) {
	topo := benchTopology(t)
	cmd := startRelayProcess(t, topo, benchProxyAddr)
	return "http://" + waitListening(t, ctx, topo, benchProxyAddr), func() (float64, error) { return loadtest.RSSMiB(cmd.Process.Pid) }
}

// benchProxyAddr is the proxy's address as the bench's client dials it.
var benchProxyAddr = HostPort(BenchVMClientSide.Addr(), ProxyPort)

// relayPort is the port of the bare relay make image-bench runs beside
// the booted engine: one the VM's filter leaves alone, as it filters
// only the proxy's ports and the proxy's own user.
const relayPort = ProxyPort + 1

// startRelayProcess starts this test binary as the bare relay alone, in
// topo's VM namespace, listening on addr, until the test ends.
func startRelayProcess(t *testing.T, topo *Topology, addr string) *exec.Cmd {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", topo.VM.Name, self, "-test.run=^$")
	cmd.Env = append(os.Environ(), relayProcessEnv+"="+addr)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// serveRelay serves ln as the least a CONNECT proxy can be, dialling
// with dial, until ln closes.
func serveRelay(ctx context.Context, ln net.Listener, dial func(ctx context.Context, network, addr string) (net.Conn, error)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			var head []byte
			one := make([]byte, 1)
			for !strings.HasSuffix(string(head), "\r\n\r\n") && len(head) < 4096 {
				if _, err := c.Read(one); err != nil {
					return
				}
				head = append(head, one[0])
			}
			f := strings.Fields(string(head))
			if len(f) < 2 || f[0] != http.MethodConnect {
				return
			}
			up, err := dial(ctx, "tcp", f[1])
			if err != nil {
				return
			}
			defer up.Close()
			io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
			go func() { io.Copy(up, c); up.(*net.TCPConn).CloseWrite() }()
			io.Copy(c, up)
		}()
	}
}

// TestMain runs the relay alone when runRelayProcess started this binary
// for it, and the tests otherwise.
func TestMain(m *testing.M) {
	if addr := os.Getenv(relayProcessEnv); addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "relay:", err)
			os.Exit(1)
		}
		var d net.Dialer
		serveRelay(context.Background(), ln, d.DialContext)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// benchTopology makes the benchmark's namespaces and its upstream
// servers, for a proxy run without a boot.
func benchTopology(t *testing.T) *Topology {
	topo, err := NewBenchTopology(prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := topo.Close(); err != nil {
			t.Error(err)
		}
	})
	benchServers(t, topo)
	return topo
}

// waitListening waits for addr in the VM's namespace to answer the
// client, and returns it.
func waitListening(t *testing.T, ctx context.Context, topo *Topology, addr string) string {
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := topo.Client.Dialer(BenchClientPrefix.Addr())(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing answers on %s: %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// parseRSS reads "VmRSS:   12345 kB" as MiB.
func parseRSS(line string) (float64, error) {
	f := strings.Fields(strings.TrimSpace(line))
	if len(f) < 3 || f[0] != "VmRSS:" {
		return 0, fmt.Errorf("not a VmRSS line: %q", line)
	}
	kb, err := strconv.ParseFloat(f[1], 64)
	return kb / 1024, err
}

// benchServers starts the benchmark's upstream servers in the internet
// namespace: loadtest's byte source (on BulkAddr) and echo (on EchoAddr),
// and a small HTTP answer.
func benchServers(t *testing.T, topo *Topology) {
	src, err := topo.Internet.Listen(HostPort(BulkAddr, TLSPort))
	if err != nil {
		t.Fatal(err)
	}
	echo, err := topo.Internet.Listen(HostPort(EchoAddr, TLSPort))
	if err != nil {
		src.Close()
		t.Fatal(err)
	}
	targets := loadtest.ServeListeners(src, echo)
	t.Cleanup(targets.Close)
	serve(t, topo.Internet, HostPort(BenchHTTPAddr, HTTPPort), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok\n")
	}))
}

// bench is the client side: the client namespace's dialer and the proxy,
// as loadtest's paths: direct, through HTTP CONNECT and through SOCKS5.
type bench struct {
	t      *testing.T
	dial   DialFunc
	proxy  *url.URL
	direct loadtest.Proxy
	http   loadtest.Proxy
}

func newBench(t *testing.T, proxyURL string) *bench {
	u, err := url.Parse(proxyURL)
	if err != nil {
		t.Fatal(err)
	}
	// The topology's namespaces are named by the fixed prefix, so the
	// client's is found by name.
	ns := &Netns{Name: prefix + "cli"}
	dial := ns.Dialer(BenchClientPrefix.Addr())
	pw, _ := u.User.Password()
	return &bench{t: t, dial: dial, proxy: u, direct: loadtest.Proxy{Dial: dial},
		http: loadtest.Proxy{Addr: u.Host, User: u.User.Username(), Password: pw, Dial: dial}}
}

// socks5 is the path through the proxy's SOCKS5 port.
func (b *bench) socks5() loadtest.Proxy {
	p := b.http
	p.Addr, p.Socks5 = HostPort(BenchVMClientSide.Addr(), Socks5Port), true
	return p
}

// bulk downloads bulkBytes from the byte source by path p, and returns
// MB/s (10^6 bytes).
func (b *bench) bulk(ctx context.Context, p loadtest.Proxy) float64 {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	mbps, err := loadtest.Download(ctx, &p, HostPort(BulkAddr, TLSPort), bulkBytes)
	if err != nil {
		b.t.Fatalf("bulk download (proxy %q, SOCKS5 %t): %v", p.Addr, p.Socks5, err)
	}
	return mbps
}

// newConnections opens requests/3 new connections to p one after another,
// each a CONNECT to the HTTP host and one GET in the tunnel, and returns
// their times in ms: a new connection's first request, the same for the
// engine and the bare relay (which carries CONNECT only).
func (b *bench) newConnections(ctx context.Context, p loadtest.Proxy) []float64 {
	target := HostPort(BenchHTTPAddr, HTTPPort)
	var ms []float64
	for i := range requests / rounds {
		start := time.Now()
		c, err := p.Connect(ctx, target)
		if err != nil {
			b.t.Fatalf("new connection %d (proxy %q): %v", i, p.Addr, err)
		}
		c.SetDeadline(time.Now().Add(15 * time.Second))
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: "+target+"\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			b.t.Fatalf("new connection %d (proxy %q): %v", i, p.Addr, err)
		}
		io.Copy(io.Discard, resp.Body)
		c.Close()
		if resp.StatusCode != http.StatusOK {
			b.t.Fatalf("new connection %d (proxy %q): status %d", i, p.Addr, resp.StatusCode)
		}
		ms = append(ms, float64(time.Since(start).Microseconds())/1000)
	}
	return ms
}

// ipv6Connections opens n new connections to the IPv6 host through the
// proxy one after another, each a CONNECT and the host's one line (the
// source it saw), and returns their times in ms. Under perConnection each
// source must be a fresh address of the VM's prefix, or the figure would
// not be the one it says.
func (b *bench) ipv6Connections(ctx context.Context, r *run, mode string, n int) []float64 {
	target := HostPort(IPv6HostAddr, IPv6HostPort)
	seen := map[netip.Addr]bool{}
	var ms []float64
	for i := range n {
		start := time.Now()
		c, err := b.http.Connect(ctx, target)
		if err != nil {
			b.t.Fatalf("IPv6 connection %d under %s: %v", i, mode, err)
		}
		c.SetDeadline(time.Now().Add(15 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if err != nil {
			b.t.Fatalf("IPv6 connection %d under %s: the host's line: %v", i, mode, err)
		}
		ms = append(ms, float64(time.Since(start).Microseconds())/1000)
		src, err := netip.ParseAddr(strings.TrimSpace(line))
		if err != nil {
			b.t.Fatalf("IPv6 connection %d under %s: the host saw %q", i, mode, line)
		}
		seen[src] = true
	}
	if mode == vmconfig.IPv6EgressPerConnection {
		for a := range seen {
			if !VMIPv6Prefix.Contains(a) {
				b.t.Fatalf("under perConnection the IPv6 host saw %s, outside the VM's prefix %s", a, VMIPv6Prefix)
			}
		}
		if len(seen) < n*95/100 {
			b.t.Fatalf("under perConnection %d connections came from %d sources, want at least %d", n, len(seen), n*95/100)
		}
	}
	return ms
}

// percentilesOf is the p50 and p99 of ms.
func percentilesOf(ms []float64) percentiles {
	s := slices.Clone(ms)
	slices.Sort(s)
	return percentiles{P50: s[len(s)/2], P99: s[len(s)*99/100]}
}

// requests sends requests plain GETs one after another, each on a new
// connection, directly or through the proxy, and returns the percentiles
// of their times.
func (b *bench) requests(ctx context.Context, proxied bool) percentiles {
	tr := &http.Transport{DialContext: b.dial, DisableKeepAlives: true}
	if proxied {
		tr.Proxy = http.ProxyURL(b.proxy)
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 15 * time.Second}
	target := "http://" + HostPort(BenchHTTPAddr, HTTPPort) + "/"
	var ms []float64
	for i := range requests {
		start := time.Now()
		resp, err := client.Get(target)
		if err != nil {
			b.t.Fatalf("request %d (proxied %t): %v", i, proxied, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.t.Fatalf("request %d (proxied %t): status %d", i, proxied, resp.StatusCode)
		}
		ms = append(ms, float64(time.Since(start).Microseconds())/1000)
	}
	slices.Sort(ms)
	return percentiles{P50: ms[len(ms)/2], P99: ms[len(ms)*99/100]}
}
