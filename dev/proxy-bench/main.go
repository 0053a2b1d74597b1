// Command proxy-bench measures a forward proxy from outside, with package
// internal/vm/engine/loadtest: one download through a CONNECT tunnel and
// one direct, in the same run; requests on new connections, through the
// proxy and direct; concurrent tunnels held; and the proxy's resident
// memory at 1,000 of them. Any proxy that speaks CONNECT with Basic
// credentials can be measured (the engine, tinyproxy, squid), which is how
// the engine was chosen (docs/development/benchmarks.md, "Chosen by measurement").
//
//	proxy-bench -proxy 127.0.0.1:3128 -user U -password P -pid 1234
//
// It prints one line, the shape `make image-bench` prints, and writes the
// same as JSON to -json if set. By default it serves its targets itself on
// -targets-host; -source and -echo point it at targets served elsewhere
// (another network namespace), which `proxy-bench -serve-targets HOST`
// serves until it is stopped.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/egress-proxies/egress/internal/vm/engine/loadtest"
)

type percentiles struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

type result struct {
	ProxiedMBps     float64     `json:"proxiedMBps"`
	DirectMBps      float64     `json:"directMBps"`
	ThroughputRatio float64     `json:"throughputRatio"`
	RequestMs       percentiles `json:"requestMs"`
	DirectRequestMs percentiles `json:"directRequestMs"`
	TunnelsHeld     int         `json:"tunnelsHeld"`
	TunnelsTried    int         `json:"tunnelsTried"`
	RSSMiBAt1000    float64     `json:"rssMiBAt1000"`
	RSSMiBAtAll     float64     `json:"rssMiBAtAll"`
	TunnelError     string      `json:"tunnelError,omitempty"`
}

func main() {
	var p loadtest.Proxy
	flag.StringVar(&p.Addr, "proxy", "127.0.0.1:3128", "the proxy's host:port")
	flag.StringVar(&p.User, "user", "", "its Basic username")
	flag.StringVar(&p.Password, "password", "", "its Basic password")
	pids := flag.String("pid", "", "the proxy's process ids, comma-separated, whose VmRSS is summed; empty: no memory figure")
	size := flag.Int64("bytes", 1<<30, "bytes of each download")
	tunnels := flag.Int("tunnels", 2000, "concurrent tunnels to open")
	requests := flag.Int("requests", 200, "requests on new connections, each way")
	host := flag.String("targets-host", "127.0.0.1", "where to serve the targets")
	sourcePort := flag.Int("source-port", 0, "the port of the byte source it serves (0: any free one)")
	echoPort := flag.Int("echo-port", 0, "the port of the echo it serves (0: any free one)")
	source := flag.String("source", "", "a byte source served elsewhere (host:port), instead of serving one")
	echo := flag.String("echo", "", "an echo served elsewhere (host:port)")
	serveOnly := flag.String("serve-targets", "", "only serve the targets on this host, print their addresses, and wait")
	out := flag.String("json", "", "write the result as JSON to this file")
	flag.Parse()

	if *serveOnly != "" {
		t, err := loadtest.Serve(*serveOnly, *sourcePort, *echoPort)
		check(err)
		fmt.Printf("source %s echo %s\n", t.Source, t.Echo)
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		<-ctx.Done()
		return
	}
	if *source == "" || *echo == "" {
		t, err := loadtest.Serve(*host, *sourcePort, *echoPort)
		check(err)
		defer t.Close()
		*source, *echo = t.Source, t.Echo
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	var r result
	var err error
	r.DirectMBps, err = loadtest.Download(ctx, nil, *source, *size)
	check(err)
	r.ProxiedMBps, err = loadtest.Download(ctx, &p, *source, *size)
	check(err)
	r.ThroughputRatio = r.ProxiedMBps / r.DirectMBps

	var proxied, direct []time.Duration
	for range *requests {
		d, err := loadtest.Latency(ctx, nil, *echo)
		check(err)
		direct = append(direct, d)
		d, err = loadtest.Latency(ctx, &p, *echo)
		check(err)
		proxied = append(proxied, d)
	}
	r.RequestMs.P50, r.RequestMs.P99 = loadtest.Percentiles(proxied)
	r.DirectRequestMs.P50, r.DirectRequestMs.P99 = loadtest.Percentiles(direct)

	rss := func() float64 {
		var sum float64
		for _, s := range strings.Split(*pids, ",") {
			if s == "" {
				continue
			}
			pid, err := strconv.Atoi(s)
			check(err)
			m, err := loadtest.RSSMiB(pid)
			check(err)
			sum += m
		}
		return sum
	}
	open, terr := loadtest.Tunnels(ctx, p, *echo, *tunnels, []int{1000}, func(int) { r.RSSMiBAt1000 = rss() })
	r.TunnelsTried, r.TunnelsHeld = *tunnels, len(open)
	r.RSSMiBAtAll = rss()
	if terr != nil {
		r.TunnelError = terr.Error()
	}
	for _, c := range open {
		c.Close()
	}

	fmt.Printf("proxy-bench: proxied %.0f MB/s, direct %.0f MB/s (ratio %.2f), p50/p99 new-connection request %.2f/%.2f ms (direct %.2f/%.2f), %d of %d tunnels held, RSS %.1f MiB at 1000 tunnels (%.1f at %d)\n",
		r.ProxiedMBps, r.DirectMBps, r.ThroughputRatio, r.RequestMs.P50, r.RequestMs.P99, r.DirectRequestMs.P50, r.DirectRequestMs.P99,
		r.TunnelsHeld, r.TunnelsTried, r.RSSMiBAt1000, r.RSSMiBAtAll, r.TunnelsHeld)
	if r.TunnelError != "" {
		fmt.Printf("proxy-bench: first tunnel error: %s\n", r.TunnelError)
	}
	if *out != "" {
		b, _ := json.MarshalIndent(r, "", "  ")
		check(os.WriteFile(*out, append(b, '\n'), 0o644))
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "proxy-bench:", err)
		os.Exit(1)
	}
}
