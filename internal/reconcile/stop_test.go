package reconcile_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/binary"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/budgetstop"
	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/reconcile"
	"github.com/egress-proxies/egress/internal/spend"
	"github.com/egress-proxies/egress/internal/store/rules"
	"github.com/egress-proxies/egress/internal/tenancy"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// servedEngine is the default bootstrap as a real engine runs it on the
// mock's loopback VMs: the proxy's credentials (hashed), loopback
// clients, the target's port, HTTP and SOCKS5, an access log.
func servedEngine(targetPort int) reconcile.BootstrapFunc {
	return func(s proxy.Spec, c proxy.Credentials, generation int64) (string, *vmconfig.Config, error) {
		return "#!/bin/sh\n", &vmconfig.Config{Generation: generation, Listen: ":3128", Socks5Listen: ":1080",
			Users:               []vmconfig.User{{Name: c.Username, PasswordHash: vmconfig.HashPassword(c.Password, []byte("salt-of-the-test"))}},
			AllowedSourceRanges: []string{"127.0.0.0/8"}, ConnectPorts: []int{targetPort}, DenyDestinations: vmconfig.DefaultDenyDestinations,
			AccessLog: true}, nil
	}
}

// TestStopTrafficAtTheBudget: a namespace whose budget stops traffic at
// it, with a proxy on a VM that runs the real engine. While its month is
// under the budget the proxy carries; once the collector's tick finds
// the month at the budget it records the stop on the namespace and the
// reconciler hands it to the running VM, whose next CONNECT gets 403
// budget-exceeded and whose next SOCKS5 CONNECT gets reply 2, with no VM
// made or deleted for it; a raised budget lifts it at the next tick, and
// the same VM carries again.
func TestStopTrafficAtTheBudget(t *testing.T) {
	target, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	go func() {
		for {
			c, err := target.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	targetPort := target.Addr().(*net.TCPAddr).Port

	w := newWorld(t, reconcile.Options{})
	w.mock = mock.New(mock.Options{Clock: w.clock, ProvisioningDelay: boot, Serve: &mock.Serve{AllowDestinations: []string{"127.0.0.1/32"}},
		CallHome: func(c mock.CallHome) { w.queue.Publish(context.Background(), callHomeMessage(c)) }})
	defer w.mock.Close()
	w.r = reconcile.New(w.store, providers{w.mock}, w.queue, secrets{}, w.clock, slog.New(slog.DiscardHandler),
		reconcile.Options{Rand: rand.New(rand.NewPCG(1, 2)), Bootstrap: servedEngine(targetPort)})
	ctx := context.Background()
	if _, err := w.store.CreateNamespace(ctx, rules.NewNamespace(w.key.Namespace, nil, 20, 20, start)); err != nil {
		t.Fatal(err)
	}
	setBudget := func(monthly string) {
		t.Helper()
		if _, err := w.store.UpdateNamespace(ctx, w.key.Namespace, func(ns *tenancy.Namespace) error {
			ns.Budget = &tenancy.Budget{Monthly: monthly, Currency: "EUR", AtBudget: tenancy.StopTraffic}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	setBudget("1.00")
	// A VM of 0.10 EUR an hour: the month reaches 1.00 EUR ten hours
	// after the proxy's create.
	perHour, _ := pricing.ParseMoney("0.10", "EUR")
	look := &budgetstop.Look{Store: w.store, Requeuer: w.queue, Log: slog.New(slog.DiscardHandler),
		Costs: spend.Costs{Catalog: spend.StaticCatalog{{Provider: mock.Type}: {Provider: mock.Type, VMPerHour: perHour}}, Rates: pricing.Rates{Currency: "EUR"}}}
	tick := func() budgetstop.Summary {
		t.Helper()
		namespaces, err := tenancy.All(ctx, w.store)
		if err != nil {
			t.Fatal(err)
		}
		s, err := look.Run(ctx, namespaces, w.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		w.deliver()
		return s
	}

	p := w.ready()
	endpoint, creds := p.Status.Endpoint, p.Reconciler.Credentials
	type seen struct {
		Connect     int
		ConnectWhy  string
		Socks       int
		Stopped     *tenancy.TrafficStopped
		Phase       proxy.Phase
		Creates     int
		Deletes     int
		SameVM      bool
		Generation  int64
		EngineMonth string
	}
	vm := p.Status.ProviderID
	look1 := func() seen {
		t.Helper()
		var s seen
		s.Connect, s.ConnectWhy = connectVia(t, endpoint, creds, targetPort)
		s.Socks = socksVia(t, endpoint, creds, targetPort)
		ns, err := w.store.GetNamespace(ctx, w.key.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		s.Stopped = ns.TrafficStopped
		d := w.doc()
		s.Phase, s.SameVM, s.Generation = d.Status.Phase, d.Status.ProviderID == vm, d.Status.ObservedGeneration
		calls := w.calls()
		s.Creates, s.Deletes = calls[mock.MethodCreate], calls[mock.MethodDelete]
		if d.Reconciler.TrafficStop != nil {
			s.EngineMonth = d.Reconciler.TrafficStop.Month
		}
		return s
	}

	w.clock.Advance(5*time.Hour - boot) // w.ready's boot took the rest
	if diff := cmp.Diff(budgetstop.Summary{Watched: 1}, tick()); diff != "" {
		t.Errorf("the tick at half the budget (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(seen{Connect: 200, Phase: proxy.PhaseReady, SameVM: true, Generation: 1}, look1()); diff != "" {
		t.Errorf("at half the budget (-want +got):\n%s", diff)
	}

	w.clock.Advance(5 * time.Hour)
	if diff := cmp.Diff(budgetstop.Summary{Watched: 1, Stopped: 1, Changed: 1, Asked: 1}, tick()); diff != "" {
		t.Errorf("the tick that finds the month at the budget (-want +got):\n%s", diff)
	}
	stopped := &tenancy.TrafficStopped{Month: "2026-12",
		Reason: "the namespace's month 2026-12 is 1.00 EUR so far, at its monthly budget of 1.00 EUR, which stops traffic there"}
	if diff := cmp.Diff(seen{Connect: 403, ConnectWhy: "budget-exceeded", Socks: 2, Stopped: stopped, Phase: proxy.PhaseReady, SameVM: true,
		Generation: 1, EngineMonth: "2026-12"}, look1()); diff != "" {
		t.Errorf("at the budget (-want +got):\n%s", diff)
	}
	// Another tick finds the stop handed over: the runs it asks for have
	// nothing to do.
	tick()
	if got := w.calls(); len(got) != 0 {
		t.Errorf("a tick with the stop in place called the provider: %v", got)
	}

	setBudget("5.00")
	if diff := cmp.Diff(budgetstop.Summary{Watched: 1, Changed: 1, Asked: 1}, tick()); diff != "" {
		t.Errorf("the tick after the budget was raised (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(seen{Connect: 200, Phase: proxy.PhaseReady, SameVM: true, Generation: 1}, look1()); diff != "" {
		t.Errorf("after the budget was raised (-want +got):\n%s", diff)
	}
}

// orderedVMs is the mock seen as a cloud whose VMs take no configuration
// in place but take a traffic order on their status door (Hetzner, AWS,
// DigitalOcean: provider.TrafficStopper): the mock's Reconfigure is
// hidden, and each order is recorded.
type orderedVMs struct {
	provider.Provider
	mu     sync.Mutex
	orders []*vmconfig.TrafficStop
}

func (o *orderedVMs) StopTraffic(_ context.Context, _ string, stop *vmconfig.TrafficStop) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.orders = append(o.orders, stop)
	return nil
}

// taken returns the orders given since the last call.
func (o *orderedVMs) taken() []*vmconfig.TrafficStop {
	o.mu.Lock()
	defer o.mu.Unlock()
	got := o.orders
	o.orders = nil
	return got
}

// TestStopTrafficOrderedAgain: a VM that takes the stop as an order
// (provider.TrafficStopper) keeps it in its engine's memory only, which a
// reboot forgets; so each of the tick's requests while the namespace is
// stopped gives the order again, where a Reconfigurer's VM, which keeps
// the stop in its configuration, is called once (TestStopTrafficAtTheBudget).
// The lift is ordered once, and a request with nothing stopped orders
// nothing. No VM is made or deleted for any of it.
func TestStopTrafficOrderedAgain(t *testing.T) {
	w := newWorld(t, reconcile.Options{})
	vms := &orderedVMs{Provider: w.mock}
	w.r = reconcile.New(w.store, providers{vms}, w.queue, secrets{}, w.clock, slog.New(slog.DiscardHandler),
		reconcile.Options{Rand: rand.New(rand.NewPCG(1, 2))})
	ctx := context.Background()
	if _, err := w.store.CreateNamespace(ctx, rules.NewNamespace(w.key.Namespace, nil, 20, 20, start)); err != nil {
		t.Fatal(err)
	}
	p := w.ready()
	vm := p.Status.ProviderID
	stopped := func(st *tenancy.TrafficStopped) {
		t.Helper()
		if _, err := w.store.UpdateNamespace(ctx, w.key.Namespace, func(ns *tenancy.Namespace) error {
			ns.TrafficStopped = st
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	type seen struct {
		Orders     []*vmconfig.TrafficStop
		Given      *proxy.TrafficStop
		Phase      proxy.Phase
		SameVM     bool
		Creates    int
		Deletes    int
		Generation int64
	}
	request := func() seen {
		t.Helper()
		w.reconcile(reconcile.Trigger{Reason: proxy.ReasonTrafficStop})
		d := w.doc()
		calls := w.calls()
		return seen{Orders: vms.taken(), Given: d.Reconciler.TrafficStop, Phase: d.Status.Phase, SameVM: d.Status.ProviderID == vm,
			Creates: calls[mock.MethodCreate], Deletes: calls[mock.MethodDelete], Generation: d.Status.ObservedGeneration}
	}
	month := start.UTC().Format("2006-01")
	stop := &vmconfig.TrafficStop{Month: month, Reason: "at the budget"}
	stopped(&tenancy.TrafficStopped{Month: month, Reason: "at the budget"})
	for i := range 2 {
		if diff := cmp.Diff(seen{Orders: []*vmconfig.TrafficStop{stop}, Given: &proxy.TrafficStop{Month: month, Reason: "at the budget"},
			Phase: proxy.PhaseReady, SameVM: true, Generation: 1}, request()); diff != "" {
			t.Errorf("request %d while stopped (-want +got):\n%s", i+1, diff)
		}
	}
	stopped(nil)
	if diff := cmp.Diff(seen{Orders: []*vmconfig.TrafficStop{nil}, Phase: proxy.PhaseReady, SameVM: true, Generation: 1}, request()); diff != "" {
		t.Errorf("the request after the lift (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(seen{Phase: proxy.PhaseReady, SameVM: true, Generation: 1}, request()); diff != "" {
		t.Errorf("a request with nothing stopped (-want +got):\n%s", diff)
	}
}

// connectVia sends a CONNECT to the target's port through the proxy at
// endpoint and returns the status and X-Egress-Error (the refusal's
// reason).
func connectVia(t *testing.T, endpoint string, creds proxy.Credentials, port int) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", endpoint, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	target := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	auth := base64.StdEncoding.EncodeToString([]byte(creds.Username + ":" + creds.Password))
	io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\nProxy-Authorization: Basic "+auth+"\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("the answer to CONNECT through %s: %v", endpoint, err)
	}
	return resp.StatusCode, resp.Header.Get("X-Egress-Error")
}

// socksVia asks the proxy's SOCKS5 port (1080, on the endpoint's
// address) to CONNECT to the target's port and returns the reply code.
func socksVia(t *testing.T, endpoint string, creds proxy.Credentials, port int) int {
	t.Helper()
	host, _, _ := net.SplitHostPort(endpoint)
	c, err := net.DialTimeout("tcp", net.JoinHostPort(host, "1080"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	read := func(n int) []byte {
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			t.Fatalf("reading the SOCKS5 answer: %v", err)
		}
		return b
	}
	c.Write([]byte{5, 1, 2})
	if m := read(2); m[1] != 2 {
		t.Fatalf("SOCKS5 method %d, want 2 (username/password)", m[1])
	}
	auth := append([]byte{1, byte(len(creds.Username))}, creds.Username...)
	auth = append(append(auth, byte(len(creds.Password))), creds.Password...)
	c.Write(auth)
	if a := read(2); a[1] != 0 {
		t.Fatalf("SOCKS5 authentication status %d, want 0", a[1])
	}
	req := append([]byte{5, 1, 0, 1}, netip.MustParseAddr("127.0.0.1").AsSlice()...)
	req = binary.BigEndian.AppendUint16(req, uint16(port))
	c.Write(req)
	return int(read(2)[1])
}
