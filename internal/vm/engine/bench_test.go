package engine_test

import (
	"context"
	"github.com/egress-proxies/egress/internal/vm/engine"
	"github.com/egress-proxies/egress/internal/vm/engine/loadtest"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"net"
	"os"
	"strconv"
	"testing"
	"time"
)

const benchPassword = "benchPasswordOf24Chars00"

// serveOnLoopback starts an engine that lets loopback reach the targets.
func serveOnLoopback(tb testing.TB, targets *loadtest.Targets) loadtest.Proxy {
	tb.Helper()
	hash, err := vmconfig.NewPasswordHash(benchPassword)
	if err != nil {
		tb.Fatal(err)
	}
	var ports []int
	for _, a := range []string{targets.Source, targets.Echo} {
		ports = append(ports, a2port(tb, a))
	}
	s, err := engine.New(vmconfig.Config{
		Users:               []vmconfig.User{{Name: "bench", PasswordHash: hash}},
		AllowedSourceRanges: []string{"127.0.0.0/8"},
		ConnectPorts:        ports,
		DenyDestinations:    vmconfig.DefaultDenyDestinations,
		AllowDestinations:   []string{"127.0.0.1/32"},
	}, engine.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go s.Serve(ln)
	tb.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		s.Shutdown(ctx)
	})
	return loadtest.Proxy{Addr: ln.Addr().String(), User: "bench", Password: benchPassword}
}

func a2port(tb testing.TB, addr string) int {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		tb.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// BenchmarkTunnelThroughput downloads through a tunnel and directly, on
// loopback, and reports both rates and their ratio: the figure that says
// whether the kernel's splice path is taken (a copy through user space
// shows as a ratio well below 1).
func BenchmarkTunnelThroughput(b *testing.B) {
	targets, err := loadtest.Serve("127.0.0.1", 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer targets.Close()
	p := serveOnLoopback(b, targets)
	const size = 256 << 20
	ctx := context.Background()
	var proxied, direct float64
	for b.Loop() {
		d, err := loadtest.Download(ctx, nil, targets.Source, size)
		if err != nil {
			b.Fatal(err)
		}
		pr, err := loadtest.Download(ctx, &p, targets.Source, size)
		if err != nil {
			b.Fatal(err)
		}
		direct += d
		proxied += pr
	}
	b.ReportMetric(proxied/float64(b.N), "proxied-MB/s")
	b.ReportMetric(direct/float64(b.N), "direct-MB/s")
	b.ReportMetric(proxied/direct, "ratio")
}

// TestTunnelCapacity holds many tunnels open at once through one engine
// and checks every one still carries bytes. It opens 200 under go test (a
// count a CI runner's file limits and the race detector's goroutine limit
// allow) and EGRESS_ENGINE_TUNNELS of them when set (2000 for the
// figures in docs/development/benchmarks.md), logging this process's resident memory, which
// here includes the clients and the echo as well as the engine.
func TestTunnelCapacity(t *testing.T) {
	n := 200
	if v := os.Getenv("EGRESS_ENGINE_TUNNELS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatalf("EGRESS_ENGINE_TUNNELS=%q: %v", v, err)
		}
	}
	targets, err := loadtest.Serve("127.0.0.1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer targets.Close()
	p := serveOnLoopback(t, targets)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var rssAt1000 float64
	var rssErr error
	open, err := loadtest.Tunnels(ctx, p, targets.Echo, n, []int{1000}, func(int) { rssAt1000, rssErr = loadtest.RSSMiB(0) })
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	if len(open) != n {
		t.Fatalf("%d of %d tunnels held; first error: %v", len(open), n, err)
	}
	rss, err := loadtest.RSSMiB(0)
	t.Logf("%d of %d tunnels held; this process's RSS %.1f MiB at 1000 (%v), %.1f at %d (%v)", len(open), n, rssAt1000, rssErr, rss, n, err)
}

// BenchmarkNewConnection is a new connection's first request through the
// engine on loopback: a CONNECT to the echo target, a byte there and
// back, the close. `go test -run '^$' -bench NewConnection -cpuprofile`
// shows where a new connection's time goes.
func BenchmarkNewConnection(b *testing.B) {
	src, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	targets := loadtest.ServeListeners(src, echo)
	b.Cleanup(targets.Close)
	p := serveOnLoopback(b, targets)
	ctx := context.Background()
	one := []byte{'x'}
	b.ResetTimer()
	for range b.N {
		c, err := p.Connect(ctx, targets.Echo)
		if err != nil {
			b.Fatal(err)
		}
		c.Write(one)
		if _, err := c.Read(one); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}
