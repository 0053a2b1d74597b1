package mock_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// TestServe: with Serve, a Running instance's IP:port is a proxy that
// takes the credentials and ranges it was created with, reaches the
// allowed local target, and is gone with the VM; a static address serves
// again from the VM that replaces a lost one.
func TestServe(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "target reached") }))
	defer target.Close()
	targetPort := target.Listener.Addr().(*net.TCPAddr).Port
	port := freePort(t)
	hash, err := vmconfig.NewPasswordHash("mockPasswordOf24Chars000")
	if err != nil {
		t.Fatal(err)
	}
	engine := &vmconfig.Config{
		Listen:              ":3128",
		Users:               []vmconfig.User{{Name: "mockuser", PasswordHash: hash}},
		AllowedSourceRanges: []string{"127.0.0.1/32"},
		ConnectPorts:        []int{targetPort},
		DenyDestinations:    vmconfig.DefaultDenyDestinations,
	}
	ctx := context.Background()
	clk := clock.NewFake(epoch)
	p := mock.New(mock.Options{Clock: clk, Serve: &mock.Serve{AllowDestinations: []string{"127.0.0.1/32"}}})
	defer p.Close()

	get := func(t *testing.T, proxyURL string) string {
		t.Helper()
		u, _ := url.Parse(proxyURL)
		c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u)}, Timeout: 30 * time.Second}
		resp, err := c.Get(target.URL)
		if err != nil {
			return "error"
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.Status + " " + string(body)
	}
	for name, static := range map[string]bool{"ephemeral": false, "static": true} {
		t.Run(name, func(t *testing.T) {
			req := request("serve-" + name)
			req.Port, req.Engine, req.StaticIP = int32(port), engine, static
			id, err := p.Create(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			in, err := p.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			ip := netip.MustParseAddr(in.IP)
			endpoint := net.JoinHostPort(in.IP, itoa(port))
			type answers struct {
				Loopback            bool
				Right, None, Wrong  string
				AfterLoss, Replaced string
			}
			got := answers{
				Loopback: ip.IsLoopback() && ip != netip.MustParseAddr("127.0.0.1"),
				Right:    get(t, "http://mockuser:mockPasswordOf24Chars000@"+endpoint),
				None:     get(t, "http://"+endpoint),
				Wrong:    get(t, "http://mockuser:wrongPasswordOf24Chars00@"+endpoint),
			}
			p.Lose(id)
			got.AfterLoss = get(t, "http://mockuser:mockPasswordOf24Chars000@"+endpoint)
			want := answers{Loopback: true, Right: "200 OK target reached", None: "407 Proxy Authentication Required egress-proxy: credentials-missing: this proxy needs Basic credentials\n",
				Wrong: "407 Proxy Authentication Required egress-proxy: credentials-wrong: the credentials are not this proxy's\n", AfterLoss: "error"}
			if static {
				// The VM that replaces the lost one has the same address,
				// and serves there.
				if _, err := p.Create(ctx, req); err != nil {
					t.Fatal(err)
				}
				again, _ := p.Get(ctx, id)
				if again.IP != in.IP {
					t.Errorf("the static address moved from %s to %s", in.IP, again.IP)
				}
				got.Replaced = get(t, "http://mockuser:mockPasswordOf24Chars000@"+endpoint)
				want.Replaced = want.Right
				p.Delete(ctx, id)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("requests through the %s instance at %s: -want +got:\n%s", name, endpoint, diff)
			}
		})
	}
	t.Run("without serving", func(t *testing.T) {
		q := mock.New(mock.Options{Clock: clk})
		req := request("not-served")
		req.Engine = engine
		id, _ := q.Create(ctx, req)
		in, _ := q.Get(ctx, id)
		if in.IP != "192.0.2.1" {
			t.Errorf("an instance of a mock that does not serve: IP %s, want the documentation range's 192.0.2.1", in.IP)
		}
	})
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestServedConfiguration: a mock VM's engine runs its request's
// configuration on its own loopback address, SOCKS5 included (on the same
// address, its spec's port), with the VM's self-test sources dropped and
// the local test targets allowed; the rest (bandwidth, access log) as the
// reconciler rendered it.
func TestServedConfiguration(t *testing.T) {
	rendered := vmconfig.Config{
		Generation: 3, Listen: ":3128", Socks5Listen: ":1080", StatsListen: "127.0.0.1:9901",
		AllowedSourceRanges: []string{"127.0.0.1/32", "::1/128", "203.0.113.0/24"},
		DenyDestinations:    []string{"127.0.0.0/8"}, BandwidthBitsPerSecond: 100_000_000, AccessLog: true,
	}
	want := vmconfig.Config{
		Generation: 3, Listen: "127.0.16.7:3128", Socks5Listen: "127.0.16.7:1080",
		AllowedSourceRanges: []string{"203.0.113.0/24"}, DenyDestinations: []string{"127.0.0.0/8"},
		AllowDestinations: []string{"127.0.0.1/32"}, BandwidthBitsPerSecond: 100_000_000, AccessLog: true,
	}
	if diff := cmp.Diff(want, mock.OnLoopback(rendered, "127.0.16.7:3128", []string{"127.0.0.1/32"})); diff != "" {
		t.Errorf("a mock VM's engine configuration (-want +got):\n%s", diff)
	}
	rendered.Socks5Listen = ""
	if got := mock.OnLoopback(rendered, "127.0.16.7:3128", nil); got.Socks5Listen != "" {
		t.Errorf("no SOCKS5 asked for, but the mock VM's engine listens for it on %q", got.Socks5Listen)
	}
}
