package azurefake_test

import (
	"context"
	"encoding/base64"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/bootstrap/cloudinit"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/azure/azurefake"
	egressproxy "github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

// TestServe: with Serve, a VM made with the VM side's own user-data
// runs its engine on its public IP's loopback address once its create
// ends: the status door answers its generation, the proxy the tenant's
// credentials. A PATCH of its userData lands in place when its operation
// ends: the same engine serves the new generation and the new
// credentials, the old ones refused. Deleted, it serves no more; a
// Static proxy's next VM serves at the same address.
func TestServe(t *testing.T) {
	f, subnets := newFake(t)
	f.StartServing(azurefake.Serve{Tick: time.Hour}) // operations end at their poll
	c := newARMClient(t, f)
	key, err := vmstatus.NewKey([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	prober := &vmstatus.Prober{Key: func(context.Context) (vmstatus.Key, error) { return key, nil }}
	renderer := cloudinit.Renderer{EngineURL: "https://example.com/egress-proxy", EngineSHA256: strings.Repeat("0", 64),
		Status: func(_ context.Context, uid, id string) (*vmconfig.StatusAccess, error) {
			return key.Access(uid, id, []string{"127.0.0.1/32"})
		}}
	uid := "3f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098"
	req := provider.CreateRequest{Name: provider.NameFromUID(uid), UID: uid, Port: 3128, StaticIP: true, Placement: provider.Placement{Region: "westeurope"}}
	userData := func(generation int64, creds egressproxy.Credentials) string {
		cfg := bootstrap.Config{Port: 3128, AllowedSourceRanges: []string{"127.0.0.1/32"}, Generation: generation, Credentials: creds}
		engine, _ := bootstrap.EngineConfig(cfg)
		script, _ := bootstrap.Render(cfg)
		r := req
		r.Engine, r.StartupScript = &engine, script
		text, err := renderer.UserData(r)
		if err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString([]byte(text))
	}
	first := egressproxy.Credentials{Username: "tenant", Password: "Tenantpassword0123456789"}
	second := egressproxy.Credentials{Username: "tenant", Password: "Rotatedpassword987654321"}
	p := proxy{name: req.Name, location: "westeurope", static: true, tags: tags}
	vmPath := groupPath("Microsoft.Compute/virtualMachines", p.name)
	boot := func(ud string) string {
		nicID := c.nicFor(p, subnets["westeurope"])
		body := vmBody(p, nicID, "Delete", "Delete")
		props := body["properties"].(map[string]any)
		props["userData"] = ud
		props["osProfile"].(map[string]any)["customData"] = ud
		if st := c.wait(c.do(http.MethodPut, vmPath, body, "If-None-Match", "*")); st["status"] != "Succeeded" {
			t.Fatalf("create: %v", st)
		}
		ip, _ := f.PublicIP(testGroup, p.name+"-ip")
		return ip.Address
	}
	status := func(addr string) int64 {
		st, err := prober.Probe(context.Background(), addr, 3128, uid, vmstatus.StatusID(req))
		if err != nil {
			t.Fatalf("the status door at %s: %v", addr, err)
		}
		return st.Generation
	}
	addr := boot(userData(3, first))
	if !strings.HasPrefix(addr, "127.0.") {
		t.Fatalf("a served VM's public IP is %s, want a loopback address", addr)
	}
	endpoint := net.JoinHostPort(addr, "3128")
	type seen struct {
		Generation    int64
		First, Second int
	}
	look := func() seen { return seen{status(addr), connect(t, endpoint, first), connect(t, endpoint, second)} }
	// The target is loopback, which the engine denies (403): the tenant
	// is past the credentials when the answer is that, not 407.
	got := []seen{look()}
	c.wait(c.do(http.MethodPatch, vmPath, map[string]any{"properties": map[string]any{"userData": userData(4, second)}}))
	got = append(got, look())
	if diff := cmp.Diff([]seen{{3, 403, 407}, {4, 407, 403}}, got); diff != "" {
		t.Errorf("generation and the answers to the first and the second credentials: booted, then after a PATCH of userData (-want +got):\n%s", diff)
	}
	if n := f.Calls("virtualMachines.put"); n != 1 {
		t.Errorf("%d VM PUTs, want the one create: the change lands in place", n)
	}

	// Deleted: no engine. The Static proxy's next VM: the same address.
	if st := c.wait(c.do(http.MethodDelete, vmPath, nil)); st["status"] != "Succeeded" {
		t.Fatalf("delete: %v", st)
	}
	if conn, err := net.DialTimeout("tcp", endpoint, time.Second); err == nil {
		conn.Close()
		t.Errorf("the deleted VM's proxy still accepts connections at %s", endpoint)
	}
	if again := boot(userData(5, first)); again != addr || status(again) != 5 {
		t.Errorf("the Static proxy's next VM serves at %s, want %s at generation 5", again, addr)
	}
}

// connect sends one CONNECT to 127.0.0.1:443 through the proxy with creds
// and returns the answer's status.
func connect(t *testing.T, proxyAddr string, creds egressproxy.Credentials) int {
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
