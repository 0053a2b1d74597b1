package imagetest

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"
)

// checkInboundOnlyProxyPorts: from outside the VM, nothing but the
// proxy's ports is reachable, whatever listens. The image has no sshd,
// so the check puts a listener of its own on port 22, and one on a port
// the kernel picks, in the VM's network namespace (where the VM's
// nftables rules apply to them as to any socket of the VM's): a refusal
// is then the filter's doing, not an empty port. A dial from inside the
// VM reaches both (the control); one from a client inside
// allowedSourceRanges and one from an outsider get no answer at all (the
// filter drops, so the dial ends at its deadline, not with a reset) and
// neither listener accepts anything; and the proxy port still carries a
// CONNECT to a TLS host.
func checkInboundOnlyProxyPorts(t *testing.T, ctx context.Context, r *run) {
	var sinks []*Sink
	for _, addr := range []string{":22", ":0"} {
		l, err := r.topo.VM.Listen(addr)
		if err != nil {
			t.Fatal(err)
		}
		s := NewSink(l)
		defer s.Close()
		sinks = append(sinks, s)
	}
	dial := func(dialer func(ctx context.Context, network, addr string) (net.Conn, error), addr string) error {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		conn, err := dialer(ctx, "tcp", addr)
		if err == nil {
			conn.Close()
		}
		return err
	}
	var targets []string
	for _, s := range sinks {
		port := s.l.Addr().(*net.TCPAddr).Port
		target := HostPort(VMPrefix.Addr(), port)
		targets = append(targets, target)
		// The control: the VM's own address, dialled on the VM, goes
		// over loopback, which the filter admits.
		if err := dial(r.topo.VM.Dialer(netip.Addr{}), target); err != nil {
			t.Fatalf("control: nothing answers on %s on the VM itself: %v", target, err)
		}
	}
	for _, from := range []netip.Addr{ClientAddr, OutsiderAddr} {
		for _, target := range targets {
			err := dial(r.topo.Internet.Dialer(from), target)
			var ne net.Error
			switch {
			case err == nil:
				t.Errorf("%s opened a connection to %s: the VM's filter lets a port besides the proxy's in", from, target)
			case !errors.As(err, &ne) || !ne.Timeout():
				// A reset or an ICMP error tells a scanner the address is
				// alive; the filter is to say nothing.
				t.Errorf("%s dialling %s: %v, want no answer (the filter drops)", from, target, err)
			}
		}
	}
	// Each listener's accepts, but the control's from the VM itself (by
	// source, since a sink records an accept after the dial returns).
	for i, s := range sinks {
		for _, from := range s.Accepted() {
			if ap, err := netip.ParseAddrPort(from); err != nil || ap.Addr() != VMPrefix.Addr() {
				t.Errorf("the listener on %s accepted a connection from %s, outside the VM", targets[i], from)
			}
		}
	}
	t.Logf("from %s and %s: no answer on %v", ClientAddr, OutsiderAddr, targets)
	checkConnectTLS(t, ctx, r)
}
