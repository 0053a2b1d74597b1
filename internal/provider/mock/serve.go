package mock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/vm/engine"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// Serve makes the mock's VMs really serve, for the local stack: each
// instance whose request carries an engine configuration runs the proxy
// engine on a loopback address of its own, with the spec's port,
// credentials, source ranges and CONNECT ports, and that address is the
// instance's IP, so a Ready proxy's proxyURL takes a request. Unit tests
// and the simulation leave it off.
type Serve struct {
	// AllowDestinations are exceptions to the engine's deny list, which
	// stands in for the VM's kernel filter and so refuses loopback: the
	// local test targets (the API's own /healthz, an end-to-end test's
	// server) on 127.0.0.1.
	AllowDestinations []string
	// Log receives the engines' lines; nil discards them.
	Log *slog.Logger
}

// The loopback ranges the served instances' addresses come from: the
// ephemeral ones and the static ones apart, as the documentation and
// benchmarking ranges keep them apart when nothing serves. 127.0.0.1 is
// neither, so a proxy never listens where the local test targets do.
var (
	servedRange       = netip.MustParsePrefix("127.0.16.0/20")
	servedStaticRange = netip.MustParsePrefix("127.0.32.0/20")
)

// served is an instance's running engine.
type served struct {
	ip     netip.Addr
	listen string
	server *engine.Server
}

// stop closes the engine, its listener and its tunnels at once, as a VM's
// deletion cuts them; the address is free again when it returns, for the
// next VM of a static address.
func (s *served) stop() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s.server.Shutdown(ctx)
}

// freeLoopback returns the next address of r, from *next on, where port
// can be listened on, and the listener. Another local stack on the same
// machine may hold an address: it is skipped.
func freeLoopback(r netip.Prefix, next *int, port int) (netip.Addr, net.Listener, error) {
	size := 1 << (32 - r.Bits())
	for range size {
		*next = *next%(size-2) + 1
		a := r.Addr().As4()
		n := int(a[2])<<8 | int(a[3]) + *next
		a[2], a[3] = byte(n>>8), byte(n)
		ip := netip.AddrFrom4(a)
		ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), strconv.Itoa(port)))
		if err == nil {
			return ip, ln, nil
		}
	}
	return netip.Addr{}, nil, fmt.Errorf("no address of %s is free on port %d", r, port)
}

// serve starts the engine for a new instance, on its static address if it
// has one. p.mu must be held.
func (p *Provider) serve(in *instance) error {
	if p.serveOpts == nil || in.req.Engine == nil {
		return nil
	}
	port := int(in.req.Port)
	var (
		ip  netip.Addr
		ln  net.Listener
		err error
	)
	if in.address != nil {
		if !in.address.ip.IsLoopback() {
			in.address.ip, ln, err = freeLoopback(servedStaticRange, &p.nextStatic, port)
		} else {
			ln, err = net.Listen("tcp", net.JoinHostPort(in.address.ip.String(), strconv.Itoa(port)))
		}
		ip = in.address.ip
	} else {
		ip, ln, err = freeLoopback(servedRange, &p.nextServed, port)
	}
	if err != nil {
		return fmt.Errorf("the proxy engine cannot listen on loopback: %w", err)
	}
	cfg := p.engineConfig(in, ln.Addr().String())
	log := p.serveLog()
	// The mock's clock is the engine's: the month a stop or a quota is
	// counted in is the one the control plane's tests set.
	s, err := engine.New(cfg, engine.Options{Log: log.With(slog.String("instance", in.name)), Now: p.clock.Now})
	if err != nil {
		ln.Close()
		return fmt.Errorf("the proxy engine refuses its configuration: %w", err)
	}
	in.served = &served{ip: ip, listen: cfg.Listen, server: s}
	go func() {
		if err := s.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("mock proxy engine stopped", slog.String("instance", in.name), slog.Any("error", err))
		}
	}()
	in.console = append(in.console, "egress-proxy: serving on "+cfg.Listen)
	return nil
}

// engineConfig is the configuration an instance's engine runs, listening
// on listen: its request's, with the local stack's exceptions. p.mu must
// be held.
func (p *Provider) engineConfig(in *instance, listen string) vmconfig.Config {
	return onLoopback(*in.req.Engine, listen, p.serveOpts.AllowDestinations)
}

// onLoopback is cfg as a mock VM of the local stack runs it: on listen,
// one loopback address of its own, and its SOCKS5 port on the same
// address (":1080" would be every mock VM's, and every interface of the
// developer's machine); the VM's self-test sources dropped, since they
// would admit the whole machine here and the spec's ranges alone decide;
// no counters served, since every mock VM would want the same port; and
// allow, the local test targets, excepted from the deny list.
func onLoopback(cfg vmconfig.Config, listen string, allow []string) vmconfig.Config {
	if n := len(bootstrap.SelfTestSources); len(cfg.AllowedSourceRanges) >= n && slices.Equal(cfg.AllowedSourceRanges[:n], bootstrap.SelfTestSources) {
		cfg.AllowedSourceRanges = cfg.AllowedSourceRanges[n:]
	}
	cfg.StatsListen = ""
	if _, port, err := net.SplitHostPort(cfg.Socks5Listen); err == nil && port != "" {
		if host, _, err := net.SplitHostPort(listen); err == nil {
			cfg.Socks5Listen = net.JoinHostPort(host, port)
		}
	}
	cfg.Listen = listen
	cfg.AllowDestinations = slices.Concat(cfg.AllowDestinations, allow)
	return cfg
}

// reapply applies an instance's new engine configuration to the engine it
// runs, if it runs one, as the VM's agent applies a reconfiguration: the
// same listener, new users, ranges and ports for every request from now
// on, the tunnels already open kept. p.mu must be held.
func (p *Provider) reapply(in *instance) error {
	if in.served == nil || in.req.Engine == nil {
		return nil
	}
	if err := in.served.server.Apply(p.engineConfig(in, in.served.listen)); err != nil {
		return fmt.Errorf("the proxy engine refuses its new configuration: %w", err)
	}
	in.console = append(in.console, fmt.Sprintf("egress-agent: applied generation %d", in.req.Engine.Generation))
	return nil
}

func (p *Provider) serveLog() *slog.Logger {
	if p.serveOpts == nil || p.serveOpts.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.serveOpts.Log
}

// unserve stops an instance's engine, if it runs one. p.mu must be held.
func (p *Provider) unserve(in *instance) {
	if in.served != nil {
		in.served.stop()
		in.served = nil
	}
}

// Close stops every engine the provider runs.
func (p *Provider) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, in := range p.instances {
		p.visits++
		p.unserve(in)
	}
}
