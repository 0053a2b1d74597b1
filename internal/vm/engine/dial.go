package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// errDenied is a destination whose every address is in a denied range.
var errDenied = errors.New("destination denied")

// resolver is what dial resolves names with: net.DefaultResolver, or a
// test's.
type resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// dial resolves host once, checks every address it resolves to against the
// rules and connects to an address it checked, never to the name: a second
// resolution could answer a denied address (DNS rebinding). If any address
// is denied the whole name is refused, so a name cannot smuggle a denied
// address past the check by listing an allowed one first.
func (s *Server) dial(ctx context.Context, r *rules, host string, port int) (*net.TCPConn, error) {
	ctx, cancel := context.WithTimeout(ctx, r.dialTimeout)
	defer cancel()
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		if addrs, err = s.resolver.LookupNetIP(ctx, "ip", host); err != nil {
			return nil, fmt.Errorf("resolving %s: %w", host, err)
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolving %s: no address", host)
	}
	for _, a := range addrs {
		if !r.destinationAllowed(a) {
			return nil, fmt.Errorf("%s resolves to %s: %w", host, a.Unmap(), errDenied)
		}
	}
	var d net.Dialer
	var errs []error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(a.Unmap().String(), strconv.Itoa(port)))
		if err == nil {
			return c.(*net.TCPConn), nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("connecting to %s port %d: %w", host, port, errors.Join(errs...))
}
