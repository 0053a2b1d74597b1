package imagetest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/vm/engine/loadtest"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// quotaHeadroom is how far above what the proxy carried this month the
// check sets its quota: more than the first download, less than two.
const quotaHeadroom = 4_000_000

// testTrafficQuota (issue 47's TrafficQuotaExceeded) gives the booted
// proxy, by a live change of generation gen, a traffic quota 4 MB above
// what it carried this month, from clients in ranges: a 3 MB download is
// carried, and so is the 3 MB one that crosses the quota (a running
// tunnel finishes); then a CONNECT is answered 403 quota-exceeded, a
// SOCKS5 CONNECT reply 2, each with an access line, and the origin sees
// neither. A restart of the engine keeps the month's count; a change
// without a quota (gen+1) carries again. It returns the next generation.
func testTrafficQuota(checks *checklist, ctx context.Context, r *run, c *Container, from string, ranges []string, gen int64) int64 {
	t := checks.t
	used := monthBytes(t, ctx, r, c)
	mb := (used.MonthBytes+quotaHeadroom)/1_000_000 + 1
	handOver(t, ctx, r, gen, bootstrap.Config{Port: ProxyPort, AllowedSourceRanges: ranges, Credentials: r.creds, TrafficQuota: strconv.FormatInt(mb, 10) + "MB"})
	client := r.client(from, r.creds.Username, r.creds.Password)
	socks := loadtest.Proxy{Addr: HostPort(VMPrefix.Addr(), Socks5Port), User: r.creds.Username, Password: r.creds.Password, Socks5: true,
		Dial: r.topo.Internet.Dialer(OutsiderAddr)}
	if from != "outsider" {
		socks.Dial = r.topo.Internet.Dialer(ClientAddr)
	}
	const size = 3_000_000
	download := func() (int, error) {
		rctx, cancel := CheckTimeout(ctx)
		defer cancel()
		body, err := client.GetTLS(rctx, HostPort(TLSHostAddr, TLSPort), TLSHostName, r.roots, "/bytes/"+strconv.Itoa(size))
		return len(body), err
	}
	refused := func(t *testing.T) {
		t.Helper()
		rctx, cancel := CheckTimeout(ctx)
		defer cancel()
		before := len(r.tlsHost.Hits())
		resp, tunnel, err := client.ConnectAnswer(rctx, HostPort(TLSHostAddr, TLSPort))
		if tunnel != nil {
			tunnel.Close()
		}
		type seen struct {
			Status int
			Error  string
		}
		var got seen
		if err == nil {
			got = seen{resp.StatusCode, resp.Header.Get("X-Egress-Error")}
		}
		if diff := cmp.Diff(seen{http.StatusForbidden, "quota-exceeded"}, got); diff != "" {
			t.Errorf("a CONNECT once the quota is spent (%v) (-want +got):\n%s", err, diff)
		}
		stunnel, err := socks.Connect(rctx, HostPort(TLSHostAddr, TLSPort))
		if stunnel != nil {
			stunnel.Close()
		}
		var se *loadtest.SocksError
		if !errors.As(err, &se) || se.Stage != "request" || se.Code != 2 {
			t.Errorf("a SOCKS5 CONNECT once the quota is spent: %v, want the request refused (reply 2)", err)
		}
		if n := len(r.tlsHost.Hits()) - before; n != 0 {
			t.Errorf("the TLS host was reached %d times past the quota", n)
		}
	}
	checks.run("TrafficQuotaExceeded", func(t *testing.T) {
		if n, err := download(); err != nil || n != size {
			t.Fatalf("the first download, under the quota: %d bytes, %v; want %d", n, err, size)
		}
		if n, err := download(); err != nil || n != size {
			t.Fatalf("the download that crosses the quota: %d bytes, %v; want all %d (a running tunnel finishes)", n, err, size)
		}
		if st := monthBytes(t, ctx, r, c); st.MonthBytes < mb*1_000_000 || st.TrafficQuotaBytes != mb*1_000_000 {
			t.Errorf("the engine's month: %d bytes against a quota of %d, want at least the quota of %d", st.MonthBytes, st.TrafficQuotaBytes, mb*1_000_000)
		}
		refused(t)
		lines := accessLines(t, ctx, r, c)
		n := 0
		for _, l := range lines {
			if l.Reason == "quota-exceeded" {
				n++
			}
		}
		if n != 2 {
			t.Errorf("%d access lines say quota-exceeded, want 2 (CONNECT and SOCKS5)", n)
		}
	})
	checks.run("TrafficQuotaKeptAcrossARestart", func(t *testing.T) {
		if out, err := c.Exec(ctx, "systemctl", "restart", "egress-proxy.service"); err != nil {
			t.Fatalf("restarting the engine: %v: %s", err, out)
		}
		waitServing(t, ctx, r, c)
		refused(t)
	})
	handOver(t, ctx, r, gen+1, bootstrap.Config{Port: ProxyPort, AllowedSourceRanges: ranges, Credentials: r.creds})
	checks.run("TrafficQuotaLifted", func(t *testing.T) {
		if n, err := download(); err != nil || n != size {
			t.Errorf("a download once the quota is lifted: %d bytes, %v; want %d", n, err, size)
		}
	})
	return gen + 2
}

// monthBytes reads the engine's counters on the VM.
func monthBytes(t *testing.T, ctx context.Context, r *run, c *Container) vmconfig.Stats {
	t.Helper()
	var st vmconfig.Stats
	statsGet(t, ctx, r, c, "/stats", &st)
	if st.Month != time.Now().UTC().Format("2006-01") {
		t.Errorf("the engine counts month %q", st.Month)
	}
	return st
}

// accessLines reads the engine's access log on the VM.
func accessLines(t *testing.T, ctx context.Context, r *run, c *Container) []vmconfig.AccessLine {
	t.Helper()
	var page vmconfig.AccessPage
	statsGet(t, ctx, r, c, "/access?after=0", &page)
	return page.Lines
}

func statsGet(t *testing.T, ctx context.Context, r *run, c *Container, path string, v any) {
	t.Helper()
	out, err := c.Exec(ctx, "curl", "-fsS", "--max-time", "5", "http://"+r.engine.StatsListen+path)
	if err != nil {
		t.Fatalf("GET %s on the VM: %v: %s", path, err, out)
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("GET %s on the VM: %v: %.200s", path, err, out)
	}
}

// waitServing waits until the engine answers its counters again.
func waitServing(t *testing.T, ctx context.Context, r *run, c *Container) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := c.Exec(ctx, "curl", "-fsS", "--max-time", "2", "http://"+r.engine.StatsListen+"/stats")
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the engine does not serve 30 s after its restart: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
