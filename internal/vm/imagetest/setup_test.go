package imagetest

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/api/option"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/gcp"
	"github.com/egress-proxies/egress/internal/provider/gcp/computefake"
	"github.com/egress-proxies/egress/internal/proxy"
)

// claimWorkDir takes the lock that keeps runs of this test one at a time
// (they share namespace names), ends what a dead run left behind, and
// returns a fresh folder for this run's throwaway copies, removed at the
// end.
func claimWorkDir(t *testing.T, cache string) string {
	t.Helper()
	work := filepath.Join(cache, "runs")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(cache, "runs.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Close() })
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		t.Fatalf("locking %s: %v", lock.Name(), err)
	}
	if err := KillLeftovers(prefix, work); err != nil {
		t.Fatal(err)
	}
	if err := DeleteNetnsWithPrefix(prefix); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(work); err != nil {
		t.Fatalf("removing a dead run's copies: %v", err)
	}
	dir := filepath.Join(work, fmt.Sprintf("run-%d", os.Getpid()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing %s: %v", dir, err)
		}
	})
	return dir
}

// role is what the VM is created as.
type role int

const (
	// asProxy: the test's proxy, generation 1, as the reconciler creates
	// it cold.
	asProxy role = iota
	// asMember: a warm pool's member, generation 0, no credentials and no
	// source range, egress-pool set, as the pool reconcile has it created;
	// r.creds are then the credentials a claim will give it.
	asMember
)

// setUp makes the network (newTopology, which NewTopology is unless the
// caller needs more) and starts every stand-in in it, the storage
// stand-in serving engine, the metadata stand-in serving what the gcp
// provider's Create sent for a VM of role vm.
func setUp(t *testing.T, ctx context.Context, rel Release, engine []byte, newTopology func(string) (*Topology, error), vm role) *run {
	t.Helper()
	r := newRun(t, rel, engine, newTopology)
	r.storage.Token = r.token
	r.storage.Path = "/" + project + "-egress-functions-source/egress-proxy-" + r.storage.SHA256()

	cfg := bootstrap.Config{Port: ProxyPort, AllowedSourceRanges: []string{AllowedRange.String()}, Credentials: r.creds, Generation: 1}
	req := provider.CreateRequest{UID: uid, Namespace: namespace, ProxyName: proxyName}
	if vm == asMember {
		// What the reconciler renders for a member document: its spec is
		// the pool's MemberSpec, it has no credentials, generation 0.
		cfg = bootstrap.ForProxy(proxy.PoolSpec{Provider: "gcp"}.MemberSpec(), proxy.Credentials{}, nil)
		cfg.Port = ProxyPort
		req = provider.CreateRequest{UID: memberUID, Pool: poolName, ProxyName: memberName}
	}
	req.Name = provider.NameFromUID(req.UID)
	r.instance = req.Name
	attrs := insertMetadata(t, ctx, r, cfg, req)
	r.metadata = NewMetadata(Instance{Project: project, Zone: zone, Name: r.instance, ID: "4711",
		ServiceAccount: "proxy-vm@" + project + ".iam.gserviceaccount.com", Attributes: attrs}, r.token)
	serve(t, r.topo.Internet, HostPort(MetadataAddr, MetadataPort), r.metadata)
	serve(t, r.topo.Internet, HostPort(PubSubAddr, PubSubPort), r.pubsub)
	r.serveInternet(t)
	return r
}

// newRun makes the network (newTopology, which NewTopology is unless the
// caller needs more), the proxy's credentials and the stand-ins that do
// not depend on the cloud, none of them serving yet: serveInternet
// serves them once the caller has set the storage stand-in's object.
func newRun(t *testing.T, rel Release, engine []byte, newTopology func(string) (*Topology, error)) *run {
	t.Helper()
	topo, err := newTopology(prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := topo.Close(); err != nil {
			t.Error(err)
		}
	})
	creds, err := proxy.NewCredentials()
	if err != nil {
		t.Fatal(err)
	}
	r := &run{rel: rel, topo: topo, creds: creds, token: "ya29.image-test-" + randomHex(16)}
	r.pubsub = &PubSub{Token: r.token}
	r.storage = &Storage{Binary: engine}
	r.tlsHost = &Host{Body: "hello from the TLS host " + randomHex(4)}
	r.httpHost = &Host{Body: "hello from the HTTP host " + randomHex(4)}
	return r
}

// serveInternet serves the hosts of the test's internet in it: the HTTP
// and TLS hosts, the storage stand-in, the resolver, the private host and
// the refused port.
func (r *run) serveInternet(t *testing.T) {
	t.Helper()
	topo := r.topo
	serve(t, topo.Internet, HostPort(HTTPHostAddr, HTTPPort), r.httpHost)
	serve(t, topo.Internet, HostPort(StorageAddr, StoragePort), r.storage)

	l, err := topo.Internet.Listen(HostPort(TLSHostAddr, TLSPort))
	if err != nil {
		t.Fatal(err)
	}
	tlsSrv := httptest.NewUnstartedServer(r.tlsHost)
	tlsSrv.Listener.Close()
	tlsSrv.Listener = l
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	r.roots = x509.NewCertPool()
	r.roots.AddCert(tlsSrv.Certificate())

	resolver := MetadataAddr
	if r.cloud != nil && r.cloud.resolver.IsValid() {
		resolver = r.cloud.resolver
	}
	pc, err := topo.Internet.ListenPacket(HostPort(resolver, DNSPort))
	if err != nil {
		t.Fatal(err)
	}
	r.dns = NewDNS(pc, map[string]netip.Addr{TLSHostName: TLSHostAddr, metadataAlias: MetadataAddr, privateAlias: PrivateAddr})
	t.Cleanup(func() { r.dns.Close() })
	upc, err := topo.Internet.ListenPacket(HostPort(UpstreamDNSAddr, DNSPort))
	if err != nil {
		t.Fatal(err)
	}
	r.upstreamDNS = NewDNS(upc, map[string]netip.Addr{UpstreamDNSName: TLSHostAddr})
	t.Cleanup(func() { r.upstreamDNS.Close() })

	r.private = sink(t, topo.Internet, HostPort(PrivateAddr, PrivatePort))
	r.refused = sink(t, topo.Internet, HostPort(TLSHostAddr, RefusedPort))
	r.serveIPv6Host(t)
}

// insertMetadata is the metadata the gcp provider sends in its insert
// request for req, with the script and engine configuration rendered from
// cfg, read back from the Compute fake: the stand-in serves exactly what
// Compute Engine would have been told. The provider, the fake and the
// providerID stay in r, for the checks that the provider reads what the VM
// wrote and for its Reconfigure.
func insertMetadata(t *testing.T, ctx context.Context, r *run, cfg bootstrap.Config, req provider.CreateRequest) map[string]string {
	t.Helper()
	r.withDataPlane(&cfg)
	script, err := bootstrap.Render(cfg)
	if err != nil {
		t.Fatal(err)
	}
	engine, err := bootstrap.EngineConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.withIPv6(&engine)
	r.engine = engine
	fake := computefake.New()
	t.Cleanup(fake.Close)
	clients, err := gcp.NewClients(ctx, option.WithEndpoint(fake.URL), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { clients.Close() })
	p, err := gcp.New(clients, gcp.Config{
		Project: project, ServiceAccount: "proxy-vm@" + project + ".iam.gserviceaccount.com",
		// A name, as the production default is: the self-test then
		// resolves it through the VM's resolver, as a client's CONNECT does.
		ProbeTarget:    TLSHostName + ":" + strconv.Itoa(TLSPort),
		CallHomeTopic:  topic,
		PubSubEndpoint: "http://" + HostPort(PubSubAddr, PubSubPort),
		EngineURL:      "http://" + HostPort(StorageAddr, StoragePort) + r.storage.Path,
		EngineSHA256:   r.storage.SHA256(),
	})
	if err != nil {
		t.Fatal(err)
	}
	req.Placement = provider.Placement{Region: "us-central1", Zone: zone}
	req.Port = cfg.Port
	req.StartupScript, req.Engine = script, &engine
	id, err := p.Create(ctx, req)
	if err != nil {
		t.Fatalf("gcp provider Create: %v", err)
	}
	r.provider, r.compute, r.providerID = p, fake, id
	inserts := fake.Inserts()
	if len(inserts) != 1 {
		t.Fatalf("the Compute fake got %d inserts, want 1", len(inserts))
	}
	attrs := map[string]string{}
	for _, it := range inserts[0].Instance.GetMetadata().GetItems() {
		attrs[it.GetKey()] = it.GetValue()
	}
	return attrs
}

// boot boots root and waits for egress/ready, failing at once on
// egress/error or on a container that stops.
func boot(t *testing.T, ctx context.Context, r *run, root, consolePath string) (*Container, GuestWrite) {
	t.Helper()
	c := startContainer(t, prefix+r.rel.Suite, r, root, consolePath)
	wctx, cancel := context.WithTimeout(ctx, bootTimeout)
	defer cancel()
	go func() {
		// A container that stops ends the wait at once.
		c.Wait(wctx)
		cancel()
	}()
	w, err := r.metadata.WaitGuest(wctx, c.Started, guestReady, guestError)
	if err != nil {
		done, code := c.Exited()
		t.Fatalf("no egress/ready within %s of boot (container stopped: %t, status %d): %v\nconsole tail:\n%s",
			bootTimeout, done, code, err, tailOf(consolePath))
	}
	if w.Key == guestError {
		t.Fatalf("the startup script wrote egress/error: %q", w.Value)
	}
	return c, w
}

// startContainer boots root as the container name in the VM's namespace,
// its console to consolePath, stopped when the test ends, with its
// journal in the log if the test failed.
func startContainer(t *testing.T, name string, r *run, root, consolePath string) *Container {
	t.Helper()
	console, err := os.Create(consolePath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { console.Close() })
	c, err := Boot(name, root, r.topo.VM, console)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(30 * time.Second); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("journal of %s:\n%s", c.Name, c.Journal(context.Background(), 200))
		}
	})
	return c
}

// serve runs an HTTP handler on addr inside ns until the test ends.
func serve(t *testing.T, ns *Netns, addr string, h http.Handler) {
	t.Helper()
	l, err := ns.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
}

func sink(t *testing.T, ns *Netns, addr string) *Sink {
	t.Helper()
	l, err := ns.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	s := NewSink(l)
	t.Cleanup(func() { s.Close() })
	return s
}
