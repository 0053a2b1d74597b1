package imagetest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// IPv6 egress from the VM's prefix (issue 46): on the Debian 13
// GCE-shaped boot, the Hetzner-shaped one and the EC2-shaped one, the
// topology routes the VM a prefix (VMIPv6Prefix, RouteIPv6 and
// RouteIPv6OnTheVM; on EC2 the /80 the EC2 fake delegated,
// RouteDelegated), the engine's configuration names it with an
// ipv6Egress mode, and the IPv6 host on the internet answers each
// connection with the source it saw. IPv6PerConnection: 100 connections
// to it, at least 95 distinct sources, all in the prefix. IPv6PerSession:
// three session IDs (USER-session-ID), 20 connections each, exactly one
// address per ID, three distinct; the access lines name each session and
// the address the host saw, and an IPv4 destination still sees the VM's
// IPv4 address. On GCE the modes come by reconfigurations (the agent adds
// the prefix's local route at a change); on Hetzner the boot's
// configuration is perSession (a cloud-init VM's configuration is fixed
// at boot; on EC2 the agent reads the prefix from IMDS, since it is not
// around the VM's address), under which a plain USER gets a fresh address per connection,
// and after a reboot, with the route taken away between the boots, each
// session has the address it had (the agent routes the prefix again at
// every boot, and a session's address is derived, not kept).

// ipv6Families are the Google-shaped releases whose topology routes the
// VM a prefix (a cloud-init boot routes one by its shape's ipv6).
var ipv6Families = map[string]bool{"debian-13": true}

// withIPv6Part is the topology newTopology makes, given its IPv6 part
// by route.
func withIPv6Part(newTopology func(string) (*Topology, error), route func(*Topology) error) func(string) (*Topology, error) {
	return func(prefix string) (*Topology, error) {
		t, err := newTopology(prefix)
		if err != nil {
			return nil, err
		}
		if err := route(t); err != nil {
			return nil, errors.Join(err, t.Close())
		}
		return t, nil
	}
}

var (
	// newIPv6Topology is NewTopology with its IPv6 part.
	newIPv6Topology = withIPv6Part(NewTopology, (*Topology).RouteIPv6)
	// newIPv6OnTheVMTopology is NewTopology with the IPv6 part a
	// cloud-init cloud's VM has (RouteIPv6OnTheVM).
	newIPv6OnTheVMTopology = withIPv6Part(NewTopology, (*Topology).RouteIPv6OnTheVM)
	// newIPv6BenchTopology is NewBenchTopology with its IPv6 part, for
	// make image-bench's IPv6 connections under each ipv6Egress.
	newIPv6BenchTopology = withIPv6Part(NewBenchTopology, (*Topology).RouteIPv6)
)

// withIPv6 names the VM's prefix and the run's ipv6Egress in an engine
// configuration the test renders, when the run asks for a mode: the
// control plane's passing of status.ipv6Prefix is the providers', and the
// test gives the VM the prefix its topology routes.
func (r *run) withIPv6(engine *vmconfig.Config) {
	if r.ipv6Egress == "" {
		return
	}
	engine.IPv6Prefix, engine.IPv6Egress = r.prefix6().String(), r.ipv6Egress
}

// prefix6 is the prefix the topology routes the VM.
func (r *run) prefix6() netip.Prefix {
	if r.ipv6Prefix.IsValid() {
		return r.ipv6Prefix
	}
	return VMIPv6Prefix
}

// serveIPv6Host serves the IPv6 host, if the topology has its address.
func (r *run) serveIPv6Host(t *testing.T) {
	t.Helper()
	if !r.topo.IPv6 {
		return
	}
	l, err := r.topo.Internet.Listen(HostPort(IPv6HostAddr, IPv6HostPort))
	if err != nil {
		t.Fatal(err)
	}
	r.ipv6Host = NewSourceHost(l)
	t.Cleanup(func() { r.ipv6Host.Close() })
}

// testIPv6Reconfigured runs the IPv6 checks on the booted GCE-shaped VM,
// each mode handed over as the reconciler hands over a PATCH (handOver):
// generation gen perConnection, gen+1 perSession, then gen+2 without a
// prefix, as before.
func testIPv6Reconfigured(checks *checklist, ctx context.Context, r *run, c *Container, from string, ranges []string, gen int64) {
	t := checks.t
	cfg := bootstrap.Config{Port: ProxyPort, AllowedSourceRanges: ranges, Credentials: r.creds}
	r.ipv6Egress = vmconfig.IPv6EgressPerConnection
	handOver(t, ctx, r, gen, cfg)
	checks.run("IPv6PerConnection", func(t *testing.T) { checkIPv6PerConnection(t, ctx, r, from) })
	r.ipv6Egress = vmconfig.IPv6EgressPerSession
	handOver(t, ctx, r, gen+1, cfg)
	checks.run("IPv6PerSession", func(t *testing.T) { r.ipv6Sessions = checkIPv6PerSession(t, ctx, r, c, from) })
	r.ipv6Egress = ""
	handOver(t, ctx, r, gen+2, cfg)
}

// ipv6Through opens n connections to the IPv6 host through the proxy as
// user, from the client at from, and returns the source the host saw on
// each.
func ipv6Through(ctx context.Context, r *run, from, user string, n int) ([]netip.Addr, error) {
	cl := r.client(from, user, r.creds.Password)
	var seen []netip.Addr
	for i := range n {
		status, tunnel, err := cl.Connect(ctx, HostPort(IPv6HostAddr, IPv6HostPort))
		if err != nil || status != http.StatusOK {
			return seen, fmt.Errorf("connection %d as %s: CONNECT %s: %d %v", i, user, HostPort(IPv6HostAddr, IPv6HostPort), status, err)
		}
		tunnel.SetReadDeadline(time.Now().Add(10 * time.Second))
		line, err := bufio.NewReader(tunnel).ReadString('\n')
		tunnel.Close()
		if err != nil {
			return seen, fmt.Errorf("connection %d as %s: the host's answer: %q %v", i, user, line, err)
		}
		a, err := netip.ParseAddr(strings.TrimSpace(line))
		if err != nil {
			return seen, fmt.Errorf("connection %d as %s: the host answered %q", i, user, line)
		}
		seen = append(seen, a)
	}
	return seen, nil
}

// sourcesSeen sums up sources: how many, how many distinct, how many
// outside the prefix or its network address.
type sourcesSeen struct {
	Connections, Distinct, OutsideThePrefix int
}

func summarizeSources(prefix netip.Prefix, srcs []netip.Addr) sourcesSeen {
	s := sourcesSeen{Connections: len(srcs)}
	distinct := map[netip.Addr]bool{}
	for _, a := range srcs {
		distinct[a] = true
		if !prefix.Contains(a) || a == prefix.Addr() {
			s.OutsideThePrefix++
		}
	}
	s.Distinct = len(distinct)
	return s
}

// checkIPv6PerConnection: 100 connections of the plain user to the IPv6
// host leave from at least 95 distinct addresses, all inside the prefix;
// the host saw as many connections as the client made.
func checkIPv6PerConnection(t *testing.T, ctx context.Context, r *run, from string) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	before := len(r.ipv6Host.Sources())
	srcs, err := ipv6Through(ctx, r, from, r.creds.Username, 100)
	if err != nil {
		t.Fatal(err)
	}
	got := summarizeSources(r.prefix6(), srcs)
	if got.Distinct >= 95 {
		got.Distinct = 95 // at least
	}
	if diff := cmp.Diff(sourcesSeen{Connections: 100, Distinct: 95}, got); diff != "" {
		t.Errorf("100 connections of %s, perConnection (-want +got, distinct: at least 95):\n%s", r.creds.Username, diff)
	}
	if n := len(r.ipv6Host.Sources()) - before; n != 100 {
		t.Errorf("the IPv6 host saw %d connections, want 100", n)
	}
}

// checkIPv6PerSession: three session IDs, 20 connections each, leave
// from exactly one address per ID, inside the prefix, three distinct; the
// access lines name the user, the session and the address the host saw;
// a connection to the IPv4 TLS host with a session leaves from the VM's
// IPv4 address. It returns each ID's address.
func checkIPv6PerSession(t *testing.T, ctx context.Context, r *run, c *Container, from string) map[string]netip.Addr {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	type session struct {
		Addresses        int
		OutsideThePrefix int
	}
	got, want := map[string]session{}, map[string]session{}
	addrs := map[string]netip.Addr{}
	distinct := map[netip.Addr]bool{}
	for _, id := range []string{"cart-1", "cart_2", "C3"} {
		srcs, err := ipv6Through(ctx, r, from, r.creds.Username+"-session-"+id, 20)
		if err != nil {
			t.Fatal(err)
		}
		s := summarizeSources(r.prefix6(), srcs)
		got[id] = session{s.Distinct, s.OutsideThePrefix}
		want[id] = session{Addresses: 1}
		addrs[id] = srcs[0]
		distinct[srcs[0]] = true
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("20 connections of each session, perSession (-want +got):\n%s", diff)
	}
	if len(distinct) != 3 {
		t.Errorf("three sessions left from %d addresses: %v", len(distinct), addrs)
	}
	// An IPv4 destination: the VM's IPv4 address, session or not.
	status, tunnel, err := r.client(from, r.creds.Username+"-session-cart-1", r.creds.Password).Connect(ctx, HostPort(TLSHostAddr, TLSPort))
	if err != nil || status != http.StatusOK {
		t.Fatalf("CONNECT to the IPv4 TLS host with a session: %d %v", status, err)
	}
	tunnel.Close()

	// The access lines: user, session and the source address.
	_, statsPort, _ := net.SplitHostPort(r.engine.StatsListen)
	type line struct{ Session, SourceHost string }
	var lines map[line]int
	wantLines := map[line]int{}
	for id, a := range addrs {
		wantLines[line{id, a.String()}] = 20
	}
	wantLines[line{"cart-1", VMPrefix.Addr().String()}] = 1
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := c.Exec(ctx, "curl", "-fsS", "--max-time", "5", "http://127.0.0.1:"+statsPort+"/access?after=0")
		if err != nil {
			t.Fatalf("GET /access on the VM: %v: %s", err, out)
		}
		var page vmconfig.AccessPage
		if err := json.Unmarshal(out, &page); err != nil {
			t.Fatalf("GET /access: %q: %v", out, err)
		}
		lines = map[line]int{}
		for _, l := range page.Lines {
			if l.Session == "" || l.User != r.creds.Username {
				continue
			}
			host, _, _ := net.SplitHostPort(l.SourceAddress)
			lines[line{l.Session, host}]++
		}
		if cmp.Equal(wantLines, lines) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if diff := cmp.Diff(wantLines, lines); diff != "" {
		t.Errorf("the access lines of the sessions, by session and source address (-want +got):\n%s", diff)
	}
	return addrs
}

// checkIPv6SessionsKept: after a reboot, each session leaves from the
// address it had before.
func checkIPv6SessionsKept(t *testing.T, ctx context.Context, r *run, from string) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if len(r.ipv6Sessions) == 0 {
		t.Fatal("no session addresses from before the reboot")
	}
	got := map[string]netip.Addr{}
	for id := range r.ipv6Sessions {
		srcs, err := ipv6Through(ctx, r, from, r.creds.Username+"-session-"+id, 3)
		if err != nil {
			t.Fatal(err)
		}
		got[id] = srcs[0]
		if s := summarizeSources(r.prefix6(), srcs); s.Distinct != 1 || s.OutsideThePrefix != 0 {
			t.Errorf("session %s after the reboot: %+v", id, s)
		}
	}
	if diff := cmp.Diff(r.ipv6Sessions, got, cmpopts.EquateComparable(netip.Addr{})); diff != "" {
		t.Errorf("each session's address, before the reboot and after (-before +after):\n%s", diff)
	}
}

// takeIPv6Route removes the prefix's local route from the VM's
// namespace, which the namespace would keep across the container's
// reboot and a VM's reboot would not: the agent's apply at the next boot
// must put it back.
func takeIPv6Route(t *testing.T, r *run) {
	if err := r.topo.VM.IP("-6", "route", "del", "local", r.prefix6().String(), "dev", "lo", "table", "local"); err != nil {
		t.Fatalf("taking the prefix's local route away between the boots: %v", err)
	}
}
