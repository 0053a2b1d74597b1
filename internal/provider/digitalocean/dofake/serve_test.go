package dofake_test

import (
	"context"
	"encoding/base64"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/bootstrap/cloudinit"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/digitalocean"
	"github.com/egress-proxies/egress/internal/provider/digitalocean/dofake"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

// TestServe: with Serve, a Droplet the digitalocean provider makes with
// the VM side's own user-data runs its engine on its loopback address,
// and the provider, asking it through the proxy port with the status
// credential, sees it Running at its generation once it is active; its
// proxy answers the tenant's credentials; a Static proxy's is reached at
// its reserved IP; destroyed, it serves no more.
func TestServe(t *testing.T) {
	const token = "t"
	fake := dofake.New(token)
	t.Cleanup(fake.Close)
	fake.StartServing(dofake.Serve{Tick: time.Hour}) // settled by the test
	key, err := vmstatus.NewKey([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	keyOf := func(context.Context) (vmstatus.Key, error) { return key, nil }
	// The composition root's renderer for DigitalOcean's boot: a Static
	// proxy's Droplet runs its VM-side part for its reserved IP, and says so.
	renderer := cloudinit.Renderer{EngineURL: "https://example.com/egress-proxy", EngineSHA256: strings.Repeat("0", 64), Follow: digitalocean.Plugin.Boot.Follow,
		Status: func(_ context.Context, uid, id string) (*vmconfig.StatusAccess, error) {
			return key.Access(uid, id, []string{"127.0.0.1/32"})
		}}
	c, err := digitalocean.NewClient(token, fake.Endpoint(), &http.Client{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p, err := digitalocean.New(c, digitalocean.Config{Renderer: renderer, Prober: &vmstatus.Prober{Key: keyOf},
		Firewall: digitalocean.Firewall{ProxyPorts: []string{"3128"}, SourceRanges: []string{"127.0.0.1/32"}, StatusSourceRanges: []string{"127.0.0.1/32"}}})
	if err != nil {
		t.Fatal(err)
	}
	creds := proxy.Credentials{Username: "tenant", Password: "Tenantpassword0123456789"}
	cfg := bootstrap.Config{Port: 3128, AllowedSourceRanges: []string{"127.0.0.1/32"}, Generation: 3, Credentials: creds}
	engine, _ := bootstrap.EngineConfig(cfg)
	script, _ := bootstrap.Render(cfg)
	ctx := context.Background()
	for _, static := range []bool{false, true} {
		uid := "3f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098"
		if static {
			uid = "4f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098"
		}
		id, err := p.Create(ctx, provider.CreateRequest{Name: provider.NameFromUID(uid), UID: uid, Port: 3128, StaticIP: static,
			StartupScript: script, Engine: &engine, Placement: provider.Placement{Region: "nyc"}})
		if err != nil {
			t.Fatal(err)
		}
		before, err := p.Get(ctx, id)
		if err != nil || before.State != provider.StateProvisioning {
			t.Fatalf("a Droplet not yet active: %+v, %v; want Provisioning", before, err)
		}
		fake.Settle()
		inst, err := p.Get(ctx, id)
		if static && err == nil && inst.State == provider.StateProvisioning {
			inst, err = p.Get(ctx, id) // the first reserved its address
		}
		if err != nil {
			t.Fatal(err)
		}
		if inst.State != provider.StateRunning || inst.Generation != 3 || !strings.HasPrefix(inst.IP, "127.0.") || inst.Traffic == nil || static != (inst.AddressID != "") {
			t.Fatalf("an active Droplet (static %v): %+v; want Running at generation 3 on a loopback address, with its traffic", static, inst)
		}
		endpoint := net.JoinHostPort(inst.IP, "3128")
		// The target is loopback, which the engine denies (403): the
		// tenant is past the credentials when the answer is that, not 407.
		if code := connect(t, endpoint, creds); code != 403 {
			t.Errorf("the tenant's credentials at %s: %d, want them accepted and the loopback target refused (403)", endpoint, code)
		}
		if err := p.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
		if c, err := net.DialTimeout("tcp", endpoint, time.Second); err == nil {
			c.Close()
			t.Errorf("the destroyed Droplet's proxy still accepts connections at %s", endpoint)
		}
	}
}

// connect sends one CONNECT to 127.0.0.1:443 through the proxy with creds
// and returns the answer's status.
func connect(t *testing.T, proxyAddr string, creds proxy.Credentials) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", proxyAddr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	req := "CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\nProxy-Authorization: Basic " +
		base64.StdEncoding.EncodeToString([]byte(creds.Username+":"+creds.Password)) + "\r\n\r\n"
	c.Write([]byte(req))
	buf := make([]byte, 12)
	if _, err := c.Read(buf); err != nil {
		t.Fatal(err)
	}
	code, _ := strconv.Atoi(string(buf[9:12]))
	return code
}
