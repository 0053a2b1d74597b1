package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"
)

// resolver is what dial resolves names with: net.DefaultResolver, or a
// test's.
type resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// attemptDelay is RFC 8305's Connection Attempt Delay: how long one
// address has to itself before the next one is tried beside it. A
// blackholed address (an IPv6 route that drops everything, often) then
// costs the others 250 ms, not the whole dial timeout.
const attemptDelay = 250 * time.Millisecond

// dial resolves host once, checks every address it resolves to against the
// rules and connects to an address it checked, never to the name: a second
// resolution could answer a denied address (DNS rebinding). If any address
// is denied the whole name is refused, so a name cannot smuggle a denied
// address past the check by listing an allowed one first. The addresses
// are raced as RFC 8305 says (Happy Eyeballs): IPv6 and IPv4 alternating,
// IPv6 first, a new attempt every attemptDelay or as soon as one fails,
// the first to connect kept. A VM without an IPv6 route fails its IPv6
// attempts at once (the kernel has no route), so IPv4 follows at once.
// The IPv6 attempts leave from the source the rules' ipv6Egress picks for
// who (source.go), one for the whole dial: a connection's one fresh
// address, or its session's; the IPv4 ones from the kernel's choice.
//
// ctx bounds the dial with the rules' dial timeout; it is the server's,
// never a client request's, so a client that half-closes after its
// request still gets its answer.
func (s *Server) dial(ctx context.Context, r *rules, who credential, host string, port int) (*net.TCPConn, error) {
	if !validHost(host) {
		return nil, refusef(ansBadTarget, "destination host %q", host)
	}
	ctx, cancel := context.WithTimeout(ctx, r.dialTimeout)
	defer cancel()
	addrs, err := s.resolve(ctx, r, host)
	if err != nil {
		return nil, err
	}
	var src netip.Addr
	if r.rotates() && slices.ContainsFunc(addrs, func(a netip.Addr) bool { return !a.Unmap().Is4() }) {
		src = r.ipv6Source(who)
	}
	c, err := s.race(ctx, interleave(addrs), port, src)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s port %d: %w", host, port, err)
	}
	return c, nil
}

// resolve resolves host once (an address literal is its own answer) and
// checks every address it resolves to: a zone or a denied address refuses
// the whole name. Both the dial and each SOCKS5 datagram (udp.go) go
// only to an address it returned.
func (s *Server) resolve(ctx context.Context, r *rules, host string) ([]netip.Addr, error) {
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		if addrs, err = s.resolver.LookupNetIP(ctx, "ip", host); err != nil {
			return nil, fmt.Errorf("resolving %s: %w", host, err)
		}
	}
	if len(addrs) == 0 {
		return nil, refusef(ansNameNotResolved, "resolving %s: no address", host)
	}
	for _, a := range addrs {
		if a.Zone() != "" {
			return nil, refusef(ansZoneNotAllowed, "%s resolves to %s", host, a)
		}
		if !r.destinationAllowed(a) {
			return nil, refusef(ansDestinationDenied, "%s resolves to %s", host, a.Unmap())
		}
	}
	return addrs, nil
}

// interleave orders addresses as RFC 8305 §4 does: the families
// alternating, IPv6 first, each family in the resolver's order.
func interleave(addrs []netip.Addr) []netip.Addr {
	var v6, v4 []netip.Addr
	for _, a := range addrs {
		if a = a.Unmap(); a.Is4() {
			v4 = append(v4, a)
		} else {
			v6 = append(v6, a)
		}
	}
	out := make([]netip.Addr, 0, len(addrs))
	for i := 0; i < max(len(v6), len(v4)); i++ {
		if i < len(v6) {
			out = append(out, v6[i])
		}
		if i < len(v4) {
			out = append(out, v4[i])
		}
	}
	return out
}

// race connects to the first of addrs that answers: a new attempt starts
// every attemptDelay, or at once when the last one failed; the first
// connection wins and the attempts still running are cancelled (and any
// that connect anyway, closed). An attempt to an IPv6 address leaves from
// v6src when it is valid.
func (s *Server) race(ctx context.Context, addrs []netip.Addr, port int, v6src netip.Addr) (*net.TCPConn, error) {
	attempt := func(ctx context.Context, a netip.Addr) (net.Conn, error) {
		src := netip.Addr{}
		if !a.Is4() {
			src = v6src
		}
		return s.connectTo(ctx, src, netip.AddrPortFrom(a, uint16(port)))
	}
	if len(addrs) == 1 {
		// Nothing to race (an address literal, most often): no goroutine,
		// no timer.
		c, err := attempt(ctx, addrs[0])
		if err != nil {
			return nil, err
		}
		return c.(*net.TCPConn), nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		c   net.Conn
		err error
	}
	results := make(chan result, len(addrs))
	next, pending := 0, 0
	start := func() {
		a := addrs[next]
		next++
		pending++
		go func() {
			c, err := attempt(ctx, a)
			results <- result{c, err}
		}()
	}
	start()
	timer := time.NewTimer(attemptDelay)
	defer timer.Stop()
	var errs []error
	for pending > 0 {
		select {
		case res := <-results:
			pending--
			if res.err == nil {
				// The losers are closed as they come in.
				go func(n int) {
					for range n {
						if r := <-results; r.c != nil {
							r.c.Close()
						}
					}
				}(pending)
				return res.c.(*net.TCPConn), nil
			}
			errs = append(errs, res.err)
			if next < len(addrs) && ctx.Err() == nil {
				start()
				timer.Reset(attemptDelay)
			}
		case <-timer.C:
			if next < len(addrs) {
				start()
				timer.Reset(attemptDelay)
			}
		}
	}
	return nil, errors.Join(errs...)
}
