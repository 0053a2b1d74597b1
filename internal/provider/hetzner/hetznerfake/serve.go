package hetznerfake

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/egress-proxies/egress/internal/bootstrap"
	"github.com/egress-proxies/egress/internal/bootstrap/cloudinit"
	"github.com/egress-proxies/egress/internal/vm/engine"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// Serve makes the fake's servers boot, for the local stack and its
// end-to-end test, as the mock's MOCK_SERVE does: every public IPv4 is a
// loopback address of its own, the fake settles by itself every Tick
// (servers run, deleted ones go), and a server whose user-data is one of
// package cloudinit's runs the proxy engine of the configuration in it on
// that address, from its create until its delete. So the hetzner provider
// asks the real engine for the status through the proxy port, with the
// status credential of the real user-data (package vmstatus), and a Ready
// proxy's proxyURL carries a request. What the fake does not run is the
// bootstrap script: the installation, the kernel filter and the agent's
// self-test are the image test's (internal/vm/imagetest); here the
// engine's readiness is its server running.
type Serve struct {
	// AllowDestinations are exceptions to the engine's deny list, which
	// refuses loopback: the local test targets.
	AllowDestinations []string
	// Tick is how often the fake settles; zero is a second.
	Tick time.Duration
	// Log receives the engines' lines; nil discards them.
	Log *slog.Logger
}

// The loopback ranges of the served servers' addresses, beside the
// mock's (127.0.16.0/20, 127.0.32.0/20): ephemeral ones, and Primary IPs
// made on their own.
var (
	servedRange       = netip.MustParsePrefix("127.0.48.0/20")
	servedStaticRange = netip.MustParsePrefix("127.0.64.0/20")
)

// served is a server's running engine.
type served struct {
	server  *engine.Server
	running atomic.Bool
}

// StartServing turns Serve on: the servers made from now on boot.
// StopServing (or Close) stops their engines and the settling.
func (s *Server) StartServing(opts Serve) {
	if opts.Tick == 0 {
		opts.Tick = time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.mu.Lock()
	s.serve, s.stopServing = &opts, cancel
	s.mu.Unlock()
	go func() {
		t := time.NewTicker(opts.Tick)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.Settle()
			}
		}
	}()
}

// StopServing stops the settling and every engine.
func (s *Server) StopServing() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopServing != nil {
		s.stopServing()
	}
	for id := range s.engines {
		s.unserve(id)
	}
	s.serve = nil
}

// nextAddress is the next address of a served range, from *next on, or
// ok false when the fake does not serve. Called with s.mu held.
func (s *Server) nextAddress(static bool) (string, bool) {
	if s.serve == nil {
		return "", false
	}
	r, next := servedRange, &s.nextIPv4
	if static {
		r, next = servedStaticRange, &s.nextStatic
	}
	*next++
	size := 1 << (32 - r.Bits())
	n := *next%(size-2) + 1
	a := r.Addr().As4()
	m := int(a[2])<<8 | int(a[3]) + n
	a[2], a[3] = byte(m>>8), byte(m)
	return netip.AddrFrom4(a).String(), true
}

// boot starts the engine of a new server, when it has an address of the
// served ranges and user-data of package cloudinit. A server whose engine
// cannot start (its address's port is taken, by another local stack)
// serves nothing, and is logged: it never becomes Ready, as a VM that
// failed its boot. Called with s.mu held.
func (s *Server) boot(id int64, ip, userData string) {
	if s.serve == nil || userData == "" {
		return
	}
	log := s.serve.Log.With(slog.Int64("server", id))
	boot, err := cloudinit.Parse(userData)
	if err != nil {
		return // not the proxy's user-data: a server of another tool
	}
	cfg, err := boot.Engine()
	if err != nil {
		log.Warn("the server's user-data carries no engine configuration", slog.Any("error", err))
		return
	}
	_, port, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		log.Warn("the server's engine configuration has no port", slog.Any("error", err))
		return
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, port))
	if err != nil {
		log.Warn("the server's engine cannot listen on its address", slog.Any("error", err))
		return
	}
	cfg = onLoopback(cfg, ln.Addr().String(), s.serve.AllowDestinations)
	sv := &served{}
	eng, err := engine.New(cfg, engine.Options{Log: log, Readiness: func() vmconfig.Readiness {
		return vmconfig.Readiness{Generation: cfg.Generation, Ready: sv.running.Load()}
	}})
	if err != nil {
		ln.Close()
		log.Warn("the server's engine refuses its configuration", slog.Any("error", err))
		return
	}
	sv.server = eng
	s.engines[id] = sv
	go func() {
		if err := eng.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("the server's engine stopped", slog.Any("error", err))
		}
	}()
}

// onLoopback is cfg as a server of the fake runs it, on listen: its
// SOCKS5 port on the same address, no counters served (every engine
// would want the same port), the self-test's sources that lead the ranges dropped
// (the spec's ranges alone decide on a developer's machine), and allow
// excepted from the deny list.
func onLoopback(cfg vmconfig.Config, listen string, allow []string) vmconfig.Config {
	if self := bootstrap.SelfTestSources; len(cfg.AllowedSourceRanges) >= len(self) && slices.Equal(cfg.AllowedSourceRanges[:len(self)], self) {
		cfg.AllowedSourceRanges = cfg.AllowedSourceRanges[len(self):]
	}
	cfg.StatsListen = ""
	host, _, _ := net.SplitHostPort(listen)
	if _, port, err := net.SplitHostPort(cfg.Socks5Listen); err == nil {
		cfg.Socks5Listen = net.JoinHostPort(host, port)
	}
	cfg.Listen = listen
	cfg.AllowDestinations = slices.Concat(cfg.AllowDestinations, allow)
	return cfg
}

// running marks a served server's engine ready: its server runs. Called
// with s.mu held.
func (s *Server) running(id int64) {
	if sv := s.engines[id]; sv != nil {
		sv.running.Store(true)
	}
}

// unserve stops a server's engine at once, as a deletion cuts a VM's
// tunnels. Called with s.mu held.
func (s *Server) unserve(id int64) {
	sv := s.engines[id]
	if sv == nil {
		return
	}
	delete(s.engines, id)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sv.server.Shutdown(ctx)
}

// Serving reports whether a server runs an engine.
func (s *Server) Serving(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.engines[id] != nil
}
