package imagetest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Targets of make image-bench: the bench fails on these alone.
const (
	minThroughputRatio = 0.5
	tunnelsTried       = 2000
	rssTunnels         = 1000
	maxRSSMiB          = 64
	bulkBytes          = 1 << 30
	requests           = 300
)

// benchResult is what make image-bench prints and writes to
// IMAGE_BENCH_OUT.
type benchResult struct {
	Engine          string       `json:"engine"`
	Release         string       `json:"release"`
	ProxiedMBps     float64      `json:"proxiedMBps"`
	DirectMBps      float64      `json:"directMBps"`
	ThroughputRatio float64      `json:"throughputRatio"`
	RequestMs       percentiles  `json:"requestMs"`
	DirectRequestMs percentiles  `json:"directRequestMs"`
	TunnelsHeld     int          `json:"tunnelsHeld"`
	TunnelsTried    int          `json:"tunnelsTried"`
	RSSMiBAt1000    float64      `json:"rssMiBAt1000"`
	BulkBytes       int64        `json:"bulkBytes"`
	Requests        int          `json:"requests"`
	Runs            []bulkSample `json:"bulkRuns"`
}

type percentiles struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

type bulkSample struct {
	ProxiedMBps float64 `json:"proxiedMBps"`
	DirectMBps  float64 `json:"directMBps"`
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
	switch os.Getenv("IMAGE_BENCH_ENGINE") {
	case "", "egress-proxy":
		proxyAddr, rss = bootEngine(t, ctx, rel, runDir)
	case "tinyproxy":
		res.Engine, res.Release = "tinyproxy", "host"
		proxyAddr, rss = runTinyproxy(t, ctx, runDir)
	default:
		t.Fatalf("IMAGE_BENCH_ENGINE=%q: want egress-proxy or tinyproxy", os.Getenv("IMAGE_BENCH_ENGINE"))
	}
	b := newBench(t, proxyAddr)

	// Throughput: three rounds of one download each way, alternating, the
	// best of each path (the one least disturbed by the rest of the
	// machine).
	for range 3 {
		direct := b.bulk(ctx, false)
		proxied := b.bulk(ctx, true)
		res.Runs = append(res.Runs, bulkSample{ProxiedMBps: proxied, DirectMBps: direct})
		res.DirectMBps, res.ProxiedMBps = max(res.DirectMBps, direct), max(res.ProxiedMBps, proxied)
	}
	res.ThroughputRatio = res.ProxiedMBps / res.DirectMBps

	res.DirectRequestMs = b.requests(ctx, false)
	res.RequestMs = b.requests(ctx, true)

	// Tunnels: 1000, the memory then, and 1000 more; held means answered
	// 200 and echoing a byte once all are open.
	var tunnels []net.Conn
	defer func() {
		for _, c := range tunnels {
			c.Close()
		}
	}()
	tunnels = append(tunnels, b.openTunnels(ctx, rssTunnels)...)
	time.Sleep(time.Second)
	if res.RSSMiBAt1000, err = rss(); err != nil {
		t.Error(err)
	}
	tunnels = append(tunnels, b.openTunnels(ctx, tunnelsTried-rssTunnels)...)
	res.TunnelsHeld = echoAll(tunnels)

	line := fmt.Sprintf("image-bench: proxied %.0f MB/s, direct %.0f MB/s (ratio %.2f), p50/p99 new-connection request %.2f/%.2f ms (direct %.2f/%.2f), %d of %d tunnels held, RSS %.1f MiB at 1000 tunnels",
		res.ProxiedMBps, res.DirectMBps, res.ThroughputRatio, res.RequestMs.P50, res.RequestMs.P99,
		res.DirectRequestMs.P50, res.DirectRequestMs.P99, res.TunnelsHeld, res.TunnelsTried, res.RSSMiBAt1000)
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
	if res.ThroughputRatio < minThroughputRatio {
		t.Errorf("throughput through the proxy is %.2f of the direct path, want at least %.2f", res.ThroughputRatio, minThroughputRatio)
	}
	if res.TunnelsHeld != tunnelsTried {
		t.Errorf("%d of %d concurrent tunnels held, want all", res.TunnelsHeld, tunnelsTried)
	}
	if res.RSSMiBAt1000 >= maxRSSMiB || res.RSSMiBAt1000 == 0 {
		t.Errorf("the engine's resident memory at %d tunnels is %.1f MiB, want under %d", rssTunnels, res.RSSMiBAt1000, maxRSSMiB)
	}
}

// bootEngine boots rel with the startup script in the benchmark's
// topology and returns the proxy's address as the client dials it, and a
// reader of the engine's resident memory.
func bootEngine(t *testing.T, ctx context.Context, rel Release, runDir string) (string, func() (float64, error)) {
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
	r := setUp(t, ctx, rel, engine, NewBenchTopology, asProxy)
	dir := filepath.Join(runDir, rel.Suite)
	if err := Copy(ctx, rootfs, dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	c, ready := boot(t, ctx, r, dir, filepath.Join(runDir, rel.Suite+"-console.log"))
	t.Logf("%s: egress/ready %.1f s after nspawn started", rel.Family, ready.Time.Sub(c.Started).Seconds())
	benchServers(t, r.topo)
	rss := func() (float64, error) {
		out, err := c.Exec(ctx, "sh", "-c", "grep VmRSS /proc/$(systemctl show -p MainPID --value egress-proxy.service)/status")
		if err != nil {
			return 0, err
		}
		return parseRSS(string(out))
	}
	creds := r.creds
	return "http://" + creds.Username + ":" + creds.Password + "@" + HostPort(BenchVMClientSide.Addr(), ProxyPort), rss
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
	addr := HostPort(BenchVMClientSide.Addr(), ProxyPort)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := topo.Client.Dialer(BenchClientPrefix.Addr())(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tinyproxy does not answer on %s: %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	rss := func() (float64, error) {
		// tinyproxy 1.11 is one process with a thread per client; ip and
		// sh exec it, so the command's PID is tinyproxy's.
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
		if err != nil {
			return 0, err
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "VmRSS:") {
				return parseRSS(l)
			}
		}
		return 0, fmt.Errorf("no VmRSS for tinyproxy")
	}
	return "http://" + user + ":" + password + "@" + addr, rss
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
// namespace: bulk (on a line "N\n", N bytes), a small HTTP answer, and an
// echo that holds its connections.
func benchServers(t *testing.T, topo *Topology) {
	l, err := topo.Internet.Listen(HostPort(BulkAddr, TLSPort))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		chunk := make([]byte, 256<<10)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				line, err := bufio.NewReader(c).ReadString('\n')
				n, perr := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
				if err != nil || perr != nil {
					return
				}
				for n > 0 {
					k, err := c.Write(chunk[:min(n, int64(len(chunk)))])
					if err != nil {
						return
					}
					n -= int64(k)
				}
			}()
		}
	}()
	serve(t, topo.Internet, HostPort(BenchHTTPAddr, HTTPPort), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok\n")
	}))
	e, err := topo.Internet.Listen(HostPort(EchoAddr, TLSPort))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	t.Cleanup(func() {
		e.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	})
	go func() {
		for {
			c, err := e.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
			go io.Copy(c, c)
		}
	}()
}

// bench is the client side: the client namespace's dialer and the proxy.
type bench struct {
	t     *testing.T
	dial  DialFunc
	proxy *url.URL
}

func newBench(t *testing.T, proxyURL string) *bench {
	u, err := url.Parse(proxyURL)
	if err != nil {
		t.Fatal(err)
	}
	// The topology's namespaces are named by the fixed prefix, so the
	// client's is found by name.
	ns := &Netns{Name: prefix + "cli"}
	return &bench{t: t, dial: ns.Dialer(BenchClientPrefix.Addr()), proxy: u}
}

func (b *bench) client() ProxyClient {
	pw, _ := b.proxy.User.Password()
	return ProxyClient{Dial: b.dial, Proxy: b.proxy.Host, User: b.proxy.User.Username(), Password: pw}
}

// bulk downloads bulkBytes from the bulk server, directly or through a
// tunnel, and returns MB/s (10^6 bytes).
func (b *bench) bulk(ctx context.Context, proxied bool) float64 {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	target := HostPort(BulkAddr, TLSPort)
	start := time.Now()
	var conn net.Conn
	var err error
	if proxied {
		var status int
		status, conn, err = b.client().Connect(ctx, target)
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("CONNECT %s: %d", target, status)
		}
	} else {
		conn, err = b.dial(ctx, "tcp", target)
	}
	if err != nil {
		b.t.Fatalf("bulk download (proxied %t): %v", proxied, err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "%d\n", bulkBytes)
	// Read in large pieces, as loadtest.Download does: io.Discard's own
	// ReadFrom reads 8 KiB at a time, and the client's CPU would then be
	// taken from the proxy's on these two cores.
	n, err := io.CopyBuffer(struct{ io.Writer }{io.Discard}, conn, make([]byte, 1<<20))
	elapsed := time.Since(start)
	if err != nil || n != bulkBytes {
		b.t.Fatalf("bulk download (proxied %t): %d of %d bytes: %v", proxied, n, bulkBytes, err)
	}
	return float64(n) / 1e6 / elapsed.Seconds()
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

// openTunnels opens n CONNECT tunnels to the echo server, 50 at a time,
// and returns those answered 200.
func (b *bench) openTunnels(ctx context.Context, n int) []net.Conn {
	var mu sync.Mutex
	var out []net.Conn
	sem := make(chan struct{}, 50)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			status, conn, err := b.client().Connect(cctx, HostPort(EchoAddr, TLSPort))
			if err != nil || status != http.StatusOK {
				return
			}
			mu.Lock()
			out = append(out, conn)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// echoAll counts the tunnels that echo a byte now that all are open.
func echoAll(conns []net.Conn) int {
	var held int
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 100)
	for _, c := range conns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			if _, err := c.Write([]byte{'x'}); err != nil {
				return
			}
			buf := make([]byte, 1)
			if _, err := io.ReadFull(c, buf); err != nil || buf[0] != 'x' {
				return
			}
			mu.Lock()
			held++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return held
}
