package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// Realm is the realm of the proxy's Proxy-Authenticate challenge.
const Realm = "egress-proxy"

// maxHeaderBytes bounds a request's head: a proxy request needs a line and
// a few headers, never a megabyte.
const maxHeaderBytes = 64 << 10

// Options are what a Server needs besides its vmconfig.Config.
type Options struct {
	// Log receives one line per decision, and the access lines; nil
	// discards them.
	Log *slog.Logger
	// Resolver resolves destination names; nil is net.DefaultResolver.
	Resolver interface {
		LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
	}
	// Readiness is what the VM's agent last said of the configuration it
	// applied (a cloud-init boot's readiness file): the status request's
	// ready and error. Nil: never ready.
	Readiness func() vmconfig.Readiness
	// TrafficState is the file the month's traffic is kept in across
	// restarts (quota.go), in a directory of the engine's own (the unit's
	// StateDirectory); "" keeps it in memory only.
	TrafficState string
	// Now is the clock the month is read from; nil is time.Now.
	Now func() time.Time
}

// Server is one proxy: it serves CONNECT and plain HTTP on
// vmconfig.Config.Listen, SOCKS5 on Socks5Listen, and the vmconfig.Stats
// and the access log on StatsListen. Apply swaps its rules, closing only
// what the new rules take away; Shutdown drains it.
type Server struct {
	log       *slog.Logger
	resolver  resolver
	readiness func() vmconfig.Readiness
	rules     atomic.Pointer[rules]
	// started is the vmconfig.Config the listeners were made from: what
	// Apply cannot change.
	started  vmconfig.Config
	maxConns int64

	// transport carries plain HTTP, keeping its upstream connections
	// alive for the next request; fresh carries it where ipv6Egress
	// rotates, a connection per request, so no request rides a
	// connection another connection's or session's source made.
	transport, fresh *http.Transport
	// connectTo makes one connection attempt from a source (the zero
	// Addr: the kernel's choice): connectFrom, or a test's, which sees
	// the source chosen without a route for it.
	connectTo func(ctx context.Context, src netip.Addr, dst netip.AddrPort) (net.Conn, error)
	// udp is the SOCKS5 UDP relay, when the Config started with
	// Socks5UDP (udp.go); nil otherwise.
	udp *udpRelay
	// up and down bound the bytes from the clients and to them.
	up, down *bucket
	access   accessRing
	// ctx is the server's life: every dial is under it, never under a
	// client's request, and Shutdown ends it.
	ctx    context.Context
	cancel context.CancelFunc

	since             time.Time
	bytesIn, bytesOut atomic.Int64
	month             monthly
	// order is the last traffic order taken on the status door
	// (budget.go), orderMu orders the taking; nil: none.
	order                           atomic.Pointer[vmconfig.TrafficOrder]
	orderMu                         sync.Mutex
	connections, activeTuns         atomic.Int64
	activeConns, refused            atomic.Int64
	reqHTTP, reqConnect, reqSocks   atomic.Int64
	overCapAnswering, overCapLogged atomic.Int64
	outsiders                       outsiders
	statsOnce                       sync.Once
	mu                              sync.Mutex
	conns                           map[*clientConn]struct{}
	listeners                       map[net.Listener]struct{}
	closing                         bool
	wg                              sync.WaitGroup
	stats                           *http.Server
}

// New checks cfg and returns a Server for it; Serve or ListenAndServe
// starts it.
func New(cfg vmconfig.Config, opts Options) (*Server, error) {
	r, err := compile(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.StatsListen != "" {
		if err := loopbackOnly(cfg.StatsListen); err != nil {
			return nil, err
		}
	}
	s := &Server{
		log:       opts.Log,
		resolver:  opts.Resolver,
		readiness: opts.Readiness,
		started:   cfg,
		since:     time.Now(),
		conns:     map[*clientConn]struct{}{},
		listeners: map[net.Listener]struct{}{},
		up:        newBucket(),
		down:      newBucket(),
		connectTo: connectFrom,
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.resolver == nil {
		s.resolver = net.DefaultResolver
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.month.now, s.month.path = opts.Now, opts.TrafficState
	if s.month.now == nil {
		s.month.now = time.Now
	}
	if err := s.month.load(0); err != nil {
		return nil, err
	}
	s.month.carry(0, cfg.TrafficCarried)
	if s.month.path != "" {
		go s.keepMonth()
	}
	s.maxConns = int64(cfg.MaxConnections)
	if s.maxConns == 0 {
		s.maxConns = defaultMaxConnections()
	}
	s.rules.Store(r)
	s.up.setRate(r.bandwidth)
	s.down.setRate(r.bandwidth)
	s.transport = s.newTransport(r.responseHeaderTimeout)
	s.fresh = s.newTransport(r.responseHeaderTimeout)
	s.fresh.DisableKeepAlives = true
	return s, nil
}

// defaultMaxConnections sizes the connection cap to the descriptor limit
// (vmconfig.Config.MaxConnections says how).
func defaultMaxConnections() int64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 16 << 10
	}
	n := (int64(lim.Cur) - vmconfig.ReservedDescriptors) / vmconfig.DescriptorsPerConnection
	return max(n, 16)
}

// loopbackOnly refuses a stats address that is not on loopback: the
// counters and the access log are for the VM itself.
func loopbackOnly(hostport string) error {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return fmt.Errorf("engine: statsListen %q is not host:port: %w", hostport, err)
	}
	if host == "localhost" {
		return nil
	}
	if a, err := netip.ParseAddr(host); err != nil || !a.IsLoopback() {
		return fmt.Errorf("engine: statsListen %q is not a loopback address: the counters are for the VM itself", hostport)
	}
	return nil
}

// ListenAndServe listens on vmconfig.Config.Listen (and StatsListen and
// Socks5Listen) and serves until Shutdown.
func (s *Server) ListenAndServe() error {
	ln, err := net.Listen("tcp", s.started.Listen)
	if err != nil {
		return fmt.Errorf("engine: listening on %s: %w", s.started.Listen, err)
	}
	return s.Serve(ln)
}

// Serve serves HTTP on ln, which must be a TCP listener for tunnels to
// take the kernel's splice path, and SOCKS5 on Socks5Listen and the stats
// on StatsListen if the vmconfig.Config has them. It returns
// http.ErrServerClosed after Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	var err error
	s.statsOnce.Do(func() { err = s.serveStats() })
	if err == nil && s.started.Socks5Listen != "" {
		var sl net.Listener
		if sl, err = net.Listen("tcp", s.started.Socks5Listen); err == nil {
			if s.started.Socks5UDP {
				// The relay takes the SOCKS5 port's number (the
				// listener's own, when the address asked for any).
				if s.udp, err = s.listenUDP(sl.Addr()); err != nil {
					sl.Close()
					ln.Close()
					return err
				}
				go s.udp.run()
			}
			go s.ServeSOCKS5(sl)
		} else {
			err = fmt.Errorf("engine: listening on %s for SOCKS5: %w", s.started.Socks5Listen, err)
		}
	}
	if err != nil {
		ln.Close()
		return err
	}
	s.log.Info("proxy serving", slog.String("listen", ln.Addr().String()), slog.String("socks5Listen", s.started.Socks5Listen),
		slog.Int64("generation", s.rules.Load().generation), slog.Int64("maxConnections", s.maxConns))
	return s.acceptLoop(ln, s.serveHTTP, true)
}

// ServeSOCKS5 serves SOCKS5 on ln until Shutdown, when it returns
// http.ErrServerClosed.
func (s *Server) ServeSOCKS5(ln net.Listener) error {
	return s.acceptLoop(ln, s.serveSOCKS5, false)
}

func (s *Server) serveStats() error {
	if s.started.StatsListen == "" {
		return nil
	}
	sl, err := net.Listen("tcp", s.started.StatsListen)
	if err != nil {
		return fmt.Errorf("engine: listening on %s for stats: %w", s.started.StatsListen, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(s.Stats())
	})
	mux.HandleFunc("GET /access", s.serveAccess)
	s.mu.Lock()
	s.stats = &http.Server{Handler: mux, ReadHeaderTimeout: vmconfig.DefaultHeaderTimeout}
	s.mu.Unlock()
	go s.stats.Serve(sl)
	return nil
}

// Apply replaces the rules for every request that starts from now on, and
// closes at once what they take away: the connections (tunnels, SOCKS5
// connections and kept-alive HTTP connections) from a source no longer
// allowed, and those authenticated with a credential the rules no longer
// hold (a user removed, or a password rotated: revocation means the old
// password carries nothing more). Every other tunnel keeps going. A new
// bandwidth limit applies to the bytes already flowing. Listen,
// StatsListen, Socks5Listen, MaxConnections and ResponseHeaderTimeout take
// effect at the next start, which the log line says.
func (s *Server) Apply(cfg vmconfig.Config) error {
	r, err := compile(cfg)
	if err != nil {
		return err
	}
	if cfg.Socks5UDP && !s.started.Socks5UDP {
		s.log.Warn("socks5UDP turned on: the UDP relay opens at the next start; until then UDP ASSOCIATE is refused")
	}
	if cfg.Listen != s.started.Listen || cfg.StatsListen != s.started.StatsListen || cfg.Socks5Listen != s.started.Socks5Listen ||
		cfg.MaxConnections != s.started.MaxConnections || cfg.ResponseHeaderTimeout != s.started.ResponseHeaderTimeout {
		s.log.Warn("listen, statsListen, socks5Listen, maxConnections or responseHeaderTimeout changed: they take effect at the next start",
			slog.String("listen", cfg.Listen), slog.String("statsListen", cfg.StatsListen), slog.String("socks5Listen", cfg.Socks5Listen))
	}
	old := s.rules.Swap(r)
	s.up.setRate(r.bandwidth)
	s.down.setRate(r.bandwidth)
	// A kept-alive upstream connection was checked against the old rules.
	s.transport.CloseIdleConnections()
	revoked, removed := s.closeTakenAway(r)
	s.log.Info("configuration applied", slog.Int64("generation", r.generation), slog.Int64("previousGeneration", old.generation),
		slog.Int("users", len(r.users)), slog.Int64("activeTunnels", s.activeTuns.Load()),
		slog.Int("connectionsRevoked", revoked), slog.Int("connectionsFromRemovedSources", removed),
		slog.Int64("bandwidthBitsPerSecond", r.bandwidth), slog.Bool("accessLog", r.accessLog), slog.Any("trafficStop", r.trafficStop),
		slog.String("ipv6Egress", r.ipv6Egress), slog.String("ipv6Prefix", prefixText(r.ipv6Prefix)))
	return nil
}

// closeTakenAway closes the connections r no longer allows. A range
// removed from allowedSourceRanges is taken away from its clients now:
// the VM's kernel filter drops their packets from the same moment, so
// such a connection could carry nothing more anyway, and closing it says
// so at once instead of at the idle timeout.
func (s *Server) closeTakenAway(r *rules) (revoked, removed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Each credential is checked once, however many connections share it.
	held := map[credential]bool{}
	for cc := range s.conns {
		if cc.statusOnly && r.statusSource(cc.source) {
			continue
		}
		if !r.sourceAllowed(cc.source) {
			cc.end(endSourceGone)
			removed++
			continue
		}
		if !r.udp && cc.udp.Load() {
			cc.end(endUDPOff)
			continue
		}
		c := cc.cred.Load()
		if c == nil {
			continue
		}
		ok, seen := held[*c]
		if !seen {
			ok = r.holds(*c)
			held[*c] = ok
		}
		if !ok {
			cc.end(endRevoked)
			revoked++
		}
	}
	return revoked, removed
}

// Shutdown stops accepting, closes the HTTP connections waiting for a
// request, lets the requests and tunnels in flight finish until ctx is
// done, then closes those left. It returns ctx's error if it had to close
// any.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	for ln := range s.listeners {
		ln.Close()
	}
	for cc := range s.conns {
		if cc.idle.Load() {
			cc.end(endShutdown)
		}
	}
	stats := s.stats
	s.mu.Unlock()
	if stats != nil {
		stats.Close()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		s.mu.Lock()
		n := len(s.conns)
		for cc := range s.conns {
			cc.end(endShutdown)
		}
		s.mu.Unlock()
		if n > 0 {
			s.log.Warn("drain deadline passed: connections closed", slog.Int("connections", n), slog.Int64("tunnels", s.activeTuns.Load()))
		}
		<-done
		err = ctx.Err()
	}
	s.cancel()
	if s.udp != nil {
		// Every association ended with its control connection.
		s.udp.conn.Close()
	}
	s.transport.CloseIdleConnections()
	if err := s.month.save(s.total()); err != nil {
		s.log.Warn("the month's traffic not kept", slog.Any("error", err))
	}
	s.log.Info("proxy stopped", slog.Int64("bytesIn", s.bytesIn.Load()), slog.Int64("bytesOut", s.bytesOut.Load()))
	return err
}

// Stats returns the counters now.
func (s *Server) Stats() vmconfig.Stats {
	st := vmconfig.Stats{
		Generation:        s.rules.Load().generation,
		Since:             s.since,
		BytesIn:           s.bytesIn.Load(),
		BytesOut:          s.bytesOut.Load(),
		Connections:       s.connections.Load(),
		ActiveTunnels:     s.activeTuns.Load(),
		ActiveConnections: s.activeConns.Load(),
		Refused:           s.refused.Load(),
		Requests: vmconfig.ProtocolCounts{
			HTTP:    s.reqHTTP.Load(),
			Connect: s.reqConnect.Load(),
			Socks5:  s.reqSocks.Load(),
		},
	}
	st.Month, st.MonthBytes = s.month.used(s.total())
	r := s.rules.Load()
	st.TrafficQuotaBytes = r.trafficQuota
	if stop := s.stopHolds(r); stop != nil {
		c := *stop
		st.TrafficStop = &c
	}
	return st
}
