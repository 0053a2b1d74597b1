package agent_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/vm/agent"
	"github.com/egress-proxies/egress/internal/vm/engine"
	"github.com/egress-proxies/egress/internal/vm/imagetest"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"github.com/egress-proxies/egress/internal/vmidentity"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/option"
)

// engineHost is the VM's system for the agent: the engine runs in this
// process, and a reload reads config.json again and applies it, as
// SIGHUP does in the binary.
type engineHost struct {
	t       *testing.T
	dir     string
	mu      sync.Mutex
	server  *engine.Server
	ln      net.Listener
	filters int
}

func (h *engineHost) LoadFilter(ctx context.Context, path string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.filters++
	_, err := os.Stat(path)
	return err
}

func (h *engineHost) ReloadEngine(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	data, err := os.ReadFile(filepath.Join(h.dir, agent.ConfigFile))
	if err != nil {
		return err
	}
	cfg, err := engine.ReadConfig(data)
	if err != nil {
		return err
	}
	if h.server != nil {
		return h.server.Apply(cfg)
	}
	s, err := engine.New(cfg, engine.Options{})
	if err != nil {
		return err
	}
	h.server = s
	go s.Serve(h.ln)
	h.t.Cleanup(func() { s.Shutdown(context.Background()) })
	return nil
}

// pubsub records the call-home messages.
type pubsub struct {
	mu    sync.Mutex
	msgs  []map[string]string
	data  [][]byte
	attrs []map[string]string
}

func (p *pubsub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Messages []struct {
			Data       string
			Attributes map[string]string
		}
	}
	json.NewDecoder(r.Body).Decode(&body)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range body.Messages {
		data, _ := base64.StdEncoding.DecodeString(m.Data)
		var msg map[string]string
		json.Unmarshal(data, &msg)
		p.msgs = append(p.msgs, msg)
		p.data = append(p.data, data)
		p.attrs = append(p.attrs, m.Attributes)
	}
	io.WriteString(w, `{"messageIds":["1"]}`)
}

func (p *pubsub) reasons() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, m := range p.msgs {
		// Whose document: a pool's member, or a namespace's proxy.
		owner := "namespaces/" + m["namespace"]
		if m["pool"] != "" {
			owner = "pools/" + m["pool"]
		}
		out = append(out, owner+"/"+m["name"]+":"+m["reason"])
	}
	return out
}

const uid = "3f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098"

type fixture struct {
	md     *imagetest.Metadata
	host   *engineHost
	ps     *pubsub
	agent  *agent.Agent
	proxy  string
	target string // an echo server the proxy may reach
	listen string
}

func setUp(t *testing.T) *fixture {
	t.Helper()
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { echo.Close() })
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ps := &pubsub{}
	pss := httptest.NewServer(ps)
	t.Cleanup(pss.Close)
	f := &fixture{ps: ps, proxy: ln.Addr().String(), target: echo.Addr().String(), listen: ln.Addr().String()}
	f.md = imagetest.NewMetadata(imagetest.Instance{Project: "demo-proxies", Zone: "us-central1-b", Name: "vm", ID: "1",
		Attributes: map[string]string{
			vmconfig.KeyGuestAttributes: "TRUE",
			vmconfig.KeyProbeTarget:     f.target,
			vmconfig.KeyCallHomeTopic:   "projects/demo-proxies/topics/proxy-callhome",
			vmconfig.KeyPubSubEndpoint:  pss.URL,
			vmconfig.KeyPool:            "ci",
			vmconfig.KeyName:            "warm-1",
			vmconfig.KeyUID:             uid,
		}}, "token")
	mds := httptest.NewServer(f.md)
	t.Cleanup(mds.Close)
	dir := t.TempDir()
	f.host = &engineHost{t: t, dir: dir, ln: ln}
	f.agent = &agent.Agent{Metadata: &agent.Metadata{Base: mds.URL + "/computeMetadata/v1"}, Host: f.host, Dir: dir,
		ProxyUID: 1000, ConfigGID: -1, Forbidden: "10.1.2.3:80", WatchTimeout: 2 * time.Second,
		// A refused configuration waits out the whole window: 30 s
		// by default, a test's five.
		SelfTestWindow: 5 * time.Second,
		Log:            slog.New(slog.DiscardHandler)}
	return f
}

// config is a configuration of generation gen with one user per name,
// whose password is the name repeated.
func (f *fixture) config(t *testing.T, gen int64, sources []string, users ...string) string {
	c := vmconfig.Config{Generation: gen, Listen: f.listen, Users: []vmconfig.User{},
		AllowedSourceRanges: append([]string{"127.0.0.1/32"}, sources...), ConnectPorts: []int{mustPort(f.target)},
		DenyDestinations: vmconfig.DefaultDenyDestinations, AllowDestinations: []string{"127.0.0.1/32"}}
	for _, u := range users {
		h, err := vmconfig.NewPasswordHash(strings.Repeat(u, 4))
		if err != nil {
			t.Fatal(err)
		}
		c.Users = append(c.Users, vmconfig.User{Name: u, PasswordHash: h})
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// withPort is the configuration text with port added to its connectPorts.
func withPort(t *testing.T, text string, port int) string {
	var c vmconfig.Config
	if err := json.Unmarshal([]byte(text), &c); err != nil {
		t.Fatal(err)
	}
	c.ConnectPorts = append(c.ConnectPorts, port)
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustPort(hostport string) int {
	_, p, _ := net.SplitHostPort(hostport)
	n, _ := strconv.Atoi(p)
	return n
}

// connect opens a CONNECT tunnel as user (password: the name repeated).
func (f *fixture) connect(t *testing.T, user string) (int, net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", f.proxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	head := "CONNECT " + f.target + " HTTP/1.1\r\nHost: " + f.target + "\r\n"
	if user != "" {
		head += "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+strings.Repeat(user, 4))) + "\r\n"
	}
	io.WriteString(c, head+"\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, c
}

func echoes(c net.Conn, msg string) bool {
	if _, err := io.WriteString(c, msg); err != nil {
		return false
	}
	got := make([]byte, len(msg))
	_, err := io.ReadFull(c, got)
	return err == nil && string(got) == msg
}

// waitReady waits for egress/ready to say want.
func (f *fixture) waitReady(t *testing.T, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		if f.md.GuestAttributes()["egress/ready"] == want {
			return
		}
		if _, err := f.md.WaitGuest(ctx, time.Now().Add(-time.Second), "egress/ready", "egress/error"); err != nil {
			t.Fatalf("egress/ready is %q, want %q: %v", f.md.GuestAttributes()["egress/ready"], want, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCallHomeCarriesTheVMsIdentity: the call-home carries the identity
// token the metadata server signs for this VM, for the call-home topic,
// which the control plane's verifier accepts as this VM's.
func TestCallHomeCarriesTheVMsIdentity(t *testing.T) {
	f := setUp(t)
	ctx := context.Background()
	warm := f.config(t, 0, nil)
	f.md.SetAttributes(map[string]string{vmconfig.KeyConfig: warm})
	if err := f.agent.Apply(ctx, warm, false); err != nil {
		t.Fatal(err)
	}
	f.ps.mu.Lock()
	attrs := f.ps.attrs
	f.ps.mu.Unlock()
	if len(attrs) == 0 {
		t.Fatal("no call-home")
	}
	v, err := vmidentity.NewVerifier(ctx, "projects/demo-proxies/topics/proxy-callhome", "demo-proxies", "", option.WithHTTPClient(f.md.Issuer.KeysClient()))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range attrs {
		in, err := v.Verify(ctx, a[vmconfig.IdentityAttribute])
		if err != nil || in.Name != "vm" || in.Zone != "us-central1-b" {
			t.Errorf("the call-home's identity: %+v, %v; want VM vm of us-central1-b", in, err)
		}
	}
}

// TestWarmToProxy: a warm VM (generation 0, no users) is proven and serves
// no one; a change of egress-config with its identity makes it a proxy
// (generation 1), then a rotation with a range removed (generation 2)
// applies live: the tunnel alice opened before is closed (her password is
// revoked), the old password gets 407 and the new one 200; each reports
// its generation and calls home with the identity of the moment.
func TestWarmToProxy(t *testing.T) {
	f := setUp(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	warm := f.config(t, 0, nil)
	f.md.SetAttributes(map[string]string{vmconfig.KeyConfig: warm})
	if err := f.agent.Apply(ctx, warm, false); err != nil {
		t.Fatal(err)
	}
	type state struct {
		Ready            string
		NoUser, SomeUser int
	}
	noUser, _ := f.connect(t, "")
	someUser, _ := f.connect(t, "alice")
	if diff := cmp.Diff(state{"0", 407, 407}, state{f.md.GuestAttributes()["egress/ready"], noUser, someUser}); diff != "" {
		t.Errorf("a warm VM (-want +got):\n%s", diff)
	}

	done := make(chan error, 1)
	go func() { done <- f.agent.Run(ctx) }()
	// The claim: the proxy's configuration and identity in one change.
	f.md.SetAttributes(map[string]string{vmconfig.KeyConfig: f.config(t, 1, []string{"192.0.2.0/24"}, "alice"),
		vmconfig.KeyNamespace: "team-a", vmconfig.KeyName: "egress-1", vmconfig.KeyPool: ""})
	f.waitReady(t, "1")
	code, open := f.connect(t, "alice")
	if code != 200 {
		t.Fatalf("alice after the claim: %d, want 200", code)
	}

	f.md.SetAttributes(map[string]string{vmconfig.KeyConfig: f.config(t, 2, []string{"198.51.100.0/24"}, "bob")})
	f.waitReady(t, "2")
	for i := 0; i < 100 && len(f.ps.reasons()) < 3; i++ {
		time.Sleep(50 * time.Millisecond)
	}
	type after struct {
		Alice, Bob int
		// AliceTunnel is the tunnel alice opened: revoked with her.
		AliceTunnel bool
		Error       string
		CallHomes   []string
	}
	alice, _ := f.connect(t, "alice")
	bob, _ := f.connect(t, "bob")
	got := after{alice, bob, echoes(open, "still here"), f.md.GuestAttributes()["egress/error"], f.ps.reasons()}
	want := after{Alice: 407, Bob: 200, AliceTunnel: false,
		CallHomes: []string{"pools/ci/warm-1:ready", "namespaces/team-a/egress-1:ready", "namespaces/team-a/egress-1:ready"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after the rotation (-want +got):\n%s", diff)
	}
	cancel()
	<-done
}

// TestFailedChangeKeepsServing: a configuration whose self-test fails (its
// probe target refuses) is not served: the previous generation is, and
// egress/ready still says so; egress/error says why, the call-home says
// boot-failed; the next good configuration clears the error.
func TestFailedChangeKeepsServing(t *testing.T) {
	f := setUp(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := f.config(t, 1, nil, "alice")
	f.md.SetAttributes(map[string]string{vmconfig.KeyConfig: first})
	if err := f.agent.Apply(ctx, first, false); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- f.agent.Run(ctx) }()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	// The closed port allowed: the self-test expects the probe carried.
	f.md.SetAttributes(map[string]string{vmconfig.KeyConfig: withPort(t, f.config(t, 2, nil, "bob"), mustPort(closed.Addr().String())),
		vmconfig.KeyProbeTarget: closed.Addr().String()})
	wctx, wcancel := context.WithTimeout(ctx, 90*time.Second)
	defer wcancel()
	if _, err := f.md.WaitGuest(wctx, time.Time{}, "egress/error"); err != nil {
		t.Fatal(err)
	}
	// The call-home follows the guest write.
	for i := 0; i < 100 && len(f.ps.reasons()) < 2; i++ {
		time.Sleep(50 * time.Millisecond)
	}
	type state struct {
		Ready      string
		Alice, Bob int
		CallHomes  []string
	}
	alice, _ := f.connect(t, "alice")
	bob, _ := f.connect(t, "bob")
	got := state{f.md.GuestAttributes()["egress/ready"], alice, bob, f.ps.reasons()}
	want := state{"1", 200, 407, []string{"pools/ci/warm-1:ready", "pools/ci/warm-1:boot-failed"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after a failed change (-want +got):\n%s", diff)
	}
	if e := f.md.GuestAttributes()["egress/error"]; !strings.Contains(e, "generation 2") || !strings.Contains(e, "served before is served still") {
		t.Errorf("egress/error %q does not name the generation and the rollback", e)
	} else if g, ok := vmconfig.RefusedGeneration(e); !ok || g != 2 {
		// The control plane reads the refused generation from it
		// (the gcp provider's Get), and acts on the refusal at once.
		t.Errorf("egress/error %q: vmconfig.RefusedGeneration reads %d, %v; want 2", e, g, ok)
	}
	f.md.SetAttributes(map[string]string{vmconfig.KeyConfig: f.config(t, 3, nil, "bob"), vmconfig.KeyProbeTarget: f.target})
	f.waitReady(t, "3")
	if e, ok := f.md.GuestAttributes()["egress/error"]; ok {
		t.Errorf("egress/error %q stays after generation 3 was served", e)
	}
	cancel()
	<-done
}
