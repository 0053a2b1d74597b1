package hetznerfake_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/bootstrap/cloudinit"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/hetzner"
	"github.com/egress-proxies/egress/internal/provider/hetzner/hetznerfake"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

// TestServe: with Serve, a server the hetzner provider makes with the VM
// side's own user-data runs its engine on its loopback address, and the
// provider, asking it through the proxy port with the status credential,
// sees it Running at its generation once it runs; its proxy answers the
// tenant's credentials; deleted, it serves no more.
func TestServe(t *testing.T) {
	const token = "t"
	fake := hetznerfake.New(token)
	t.Cleanup(fake.Close)
	fake.StartServing(hetznerfake.Serve{Tick: time.Hour}) // settled by the test
	key, err := vmstatus.NewKey([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	keyOf := func(context.Context) (vmstatus.Key, error) { return key, nil }
	renderer := cloudinit.Renderer{EngineURL: "https://example.com/egress-proxy", EngineSHA256: strings.Repeat("0", 64),
		Status: func(_ context.Context, uid, id string) (*vmconfig.StatusAccess, error) {
			return key.Access(uid, id, []string{"127.0.0.1/32"})
		}}
	p, err := hetzner.New(hetzner.NewClient(token, fake.Endpoint(), nil), hetzner.Config{Renderer: renderer, Prober: &vmstatus.Prober{Key: keyOf}})
	if err != nil {
		t.Fatal(err)
	}
	creds := proxy.Credentials{Username: "tenant", Password: "Tenantpassword0123456789"}
	cfg := bootstrap.Config{Port: 3128, AllowedSourceRanges: []string{"127.0.0.1/32"}, Generation: 3, Credentials: creds}
	engine, _ := bootstrap.EngineConfig(cfg)
	script, _ := bootstrap.Render(cfg)
	ctx := context.Background()
	id, err := p.Create(ctx, provider.CreateRequest{Name: "proxy-3f2c1b0a", UID: "3f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098", Port: 3128,
		StartupScript: script, Engine: &engine, Placement: provider.Placement{Region: "eu-central"}})
	if err != nil {
		t.Fatal(err)
	}
	before, err := p.Get(ctx, id)
	if err != nil || before.State != provider.StateProvisioning {
		t.Fatalf("a server not yet running: %+v, %v; want Provisioning", before, err)
	}
	fake.Settle()
	inst, err := p.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if inst.State != provider.StateRunning || inst.Generation != 3 || !strings.HasPrefix(inst.IP, "127.0.") || inst.Traffic == nil {
		t.Fatalf("a running server: %+v; want Running at generation 3 on a loopback address, with its traffic", inst)
	}
	endpoint := net.JoinHostPort(inst.IP, "3128")
	// The target is loopback, which the engine denies (403): the tenant
	// is past the credentials when the answer is that, not 407.
	if code, why := connect(t, endpoint, creds); code != 403 || why != "destination-denied" {
		t.Errorf("the tenant's credentials at %s: %d %s, want them accepted and the loopback target refused (403 destination-denied)", endpoint, code, why)
	}
	// The budget's stop, handed to the running server through its status
	// door (provider.TrafficStopper), refuses the tenant's next CONNECT
	// before its destination is looked at; its end carries again. The
	// stop is of the engine's own month, which its traffic names.
	stop := &vmconfig.TrafficStop{Month: inst.Traffic.Month, Reason: "the namespace's month reached its budget"}
	for _, step := range []struct {
		stop *vmconfig.TrafficStop
		why  string
	}{{stop, "budget-exceeded"}, {nil, "destination-denied"}} {
		if err := p.StopTraffic(ctx, id, step.stop); err != nil {
			t.Fatalf("StopTraffic(%+v): %v", step.stop, err)
		}
		if code, why := connect(t, endpoint, creds); code != 403 || why != step.why {
			t.Errorf("after StopTraffic(%+v): %d %s, want 403 %s", step.stop, code, why, step.why)
		}
	}
	if err := p.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", endpoint, time.Second); err == nil {
		c.Close()
		t.Errorf("the deleted server's proxy still accepts connections at %s", endpoint)
	}
}

// connect sends one CONNECT to 127.0.0.1:443 through the proxy with creds
// and returns the answer's status and reason (X-Egress-Error).
func connect(t *testing.T, proxyAddr string, creds proxy.Credentials) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", proxyAddr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	req := "CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\nProxy-Authorization: Basic " + basic(creds) + "\r\n\r\n"
	c.Write([]byte(req))
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("X-Egress-Error")
}

func basic(c proxy.Credentials) string {
	return base64.StdEncoding.EncodeToString([]byte(c.Username + ":" + c.Password))
}
