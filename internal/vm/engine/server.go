package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"sync"
	"sync/atomic"
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
	// Log receives one line per decision; nil discards them.
	Log *slog.Logger
	// Resolver resolves destination names; nil is net.DefaultResolver.
	Resolver interface {
		LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
	}
}

// Server is one proxy: it serves CONNECT and plain HTTP on vmconfig.Config.Listen
// and the vmconfig.Stats on vmconfig.Config.StatsListen. Apply swaps its rules without
// touching the tunnels it holds; Shutdown drains it.
type Server struct {
	log      *slog.Logger
	resolver resolver
	rules    atomic.Pointer[rules]
	// started is the vmconfig.Config the listeners were made from: what Apply
	// cannot change.
	started vmconfig.Config

	http      *http.Server
	forwarder *httputil.ReverseProxy
	transport *http.Transport

	since                   time.Time
	bytesIn, bytesOut       atomic.Int64
	connections, activeTuns atomic.Int64

	mu       sync.Mutex
	tunnels  map[*tunnel]struct{}
	tunnelWG sync.WaitGroup
	stats    *http.Server
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
		log:      opts.Log,
		resolver: opts.Resolver,
		started:  cfg,
		since:    time.Now(),
		tunnels:  map[*tunnel]struct{}{},
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.resolver == nil {
		s.resolver = net.DefaultResolver
	}
	s.rules.Store(r)
	s.transport = s.newTransport(cfg.ResponseHeaderTimeout.Or(vmconfig.DefaultResponseHeaderTimeout))
	s.forwarder = s.newForwarder()
	s.http = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: cfg.HeaderTimeout.Or(vmconfig.DefaultHeaderTimeout),
		IdleTimeout:       r.idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	return s, nil
}

// loopbackOnly refuses a stats address that is not on loopback: the
// counters are for the VM itself.
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

// ListenAndServe listens on vmconfig.Config.Listen (and StatsListen) and serves
// until Shutdown.
func (s *Server) ListenAndServe() error {
	ln, err := net.Listen("tcp", s.started.Listen)
	if err != nil {
		return fmt.Errorf("engine: listening on %s: %w", s.started.Listen, err)
	}
	return s.Serve(ln)
}

// Serve serves on ln, which must be a TCP listener for tunnels to take the
// kernel's splice path, and on StatsListen if the vmconfig.Config has one. It
// returns http.ErrServerClosed after Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	if s.started.StatsListen != "" {
		sl, err := net.Listen("tcp", s.started.StatsListen)
		if err != nil {
			ln.Close()
			return fmt.Errorf("engine: listening on %s for stats: %w", s.started.StatsListen, err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("GET /stats", s.serveStats)
		s.mu.Lock()
		s.stats = &http.Server{Handler: mux, ReadHeaderTimeout: vmconfig.DefaultHeaderTimeout}
		s.mu.Unlock()
		go s.stats.Serve(sl)
	}
	s.log.Info("proxy serving", slog.String("listen", ln.Addr().String()), slog.Int64("generation", s.rules.Load().generation))
	return s.http.Serve(sourceFilter{Listener: ln, s: s})
}

// Apply replaces the rules for every request that starts from now on:
// users, ranges, ports and the dial and idle timeouts. Tunnels already
// open keep going. Listen, StatsListen, HeaderTimeout and
// ResponseHeaderTimeout take effect at the next start, which the log line
// says.
func (s *Server) Apply(cfg vmconfig.Config) error {
	r, err := compile(cfg)
	if err != nil {
		return err
	}
	if cfg.Listen != s.started.Listen || cfg.StatsListen != s.started.StatsListen ||
		cfg.HeaderTimeout != s.started.HeaderTimeout || cfg.ResponseHeaderTimeout != s.started.ResponseHeaderTimeout {
		s.log.Warn("listen, statsListen, headerTimeout or responseHeaderTimeout changed: they take effect at the next start",
			slog.String("listen", cfg.Listen), slog.String("statsListen", cfg.StatsListen))
	}
	old := s.rules.Swap(r)
	// A kept-alive upstream connection was checked against the old rules.
	s.transport.CloseIdleConnections()
	cut := s.closeOutside(r)
	s.log.Info("configuration applied", slog.Int64("generation", r.generation), slog.Int64("previousGeneration", old.generation),
		slog.Int("users", len(r.users)), slog.Int64("activeTunnels", s.activeTuns.Load()), slog.Int("tunnelsClosed", cut))
	return nil
}

// closeOutside closes the tunnels whose client is outside r's source
// ranges, and returns how many. A range removed from allowedSourceRanges
// is taken away from its clients now: the VM's kernel filter drops their
// packets from the same moment, so such a tunnel could carry nothing more
// anyway, and closing it says so at once instead of at the idle timeout.
// Every other tunnel keeps going, under the credentials it opened with:
// a rotation refuses the old password to new requests only.
func (s *Server) closeOutside(r *rules) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for t := range s.tunnels {
		if c := t.clientSet.Load(); c != nil && !r.sourceAllowed(remoteAddr(c)) {
			t.close()
			n++
		}
	}
	return n
}

// Shutdown stops accepting, lets the requests and tunnels in flight finish
// until ctx is done, then closes those left. It returns ctx's error if it
// had to close any.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.http.Shutdown(ctx)
	if err != nil {
		// The deadline passed with plain requests in flight: cut them.
		s.http.Close()
	}
	s.mu.Lock()
	stats := s.stats
	s.mu.Unlock()
	if stats != nil {
		stats.Close()
	}
	done := make(chan struct{})
	go func() { s.tunnelWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.mu.Lock()
		n := len(s.tunnels)
		for t := range s.tunnels {
			t.close()
		}
		s.mu.Unlock()
		if n > 0 {
			s.log.Warn("drain deadline passed: tunnels closed", slog.Int("tunnels", n))
		}
		<-done
		err = ctx.Err()
	}
	s.transport.CloseIdleConnections()
	s.log.Info("proxy stopped", slog.Int64("bytesIn", s.bytesIn.Load()), slog.Int64("bytesOut", s.bytesOut.Load()))
	return err
}

// vmconfig.Stats returns the counters now.
func (s *Server) Stats() vmconfig.Stats {
	return vmconfig.Stats{
		Generation:    s.rules.Load().generation,
		Since:         s.since,
		BytesIn:       s.bytesIn.Load(),
		BytesOut:      s.bytesOut.Load(),
		Connections:   s.connections.Load(),
		ActiveTunnels: s.activeTuns.Load(),
	}
}

func (s *Server) serveStats(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(s.Stats())
}

// sourceFilter closes a connection from outside AllowedSourceRanges before
// reading a byte of it, and counts the others. It hands the
// *net.TCPConn itself to the HTTP server, so a hijacked tunnel is still
// one the kernel can splice.
type sourceFilter struct {
	net.Listener
	s *Server
}

func (l sourceFilter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := remoteAddr(c)
		if !l.s.rules.Load().sourceAllowed(addr) {
			c.Close()
			l.s.log.Info("connection refused: source not in allowedSourceRanges", slog.String("source", addr.String()))
			continue
		}
		l.s.connections.Add(1)
		return c, nil
	}
}

func remoteAddr(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// ServeHTTP answers one request: 407 without valid credentials, then a
// CONNECT tunnel or a forwarded plain HTTP request.
func (s *Server) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r := s.rules.Load()
	if a, err := netip.ParseAddrPort(req.RemoteAddr); err == nil && !r.sourceAllowed(a.Addr().Unmap()) {
		// A kept-alive connection accepted before a reload took its
		// source's range away.
		s.log.Info("request refused: source no longer in allowedSourceRanges", slog.String("source", req.RemoteAddr))
		w.Header().Set("Connection", "close")
		http.Error(w, http.StatusText(http.StatusForbidden), http.StatusForbidden)
		return
	}
	user, err := r.authorize(req.Header.Get("Proxy-Authorization"))
	if err != nil {
		reason := "missing"
		if req.Header.Get("Proxy-Authorization") != "" {
			reason = "wrong"
		}
		// Never the header: it carries the password.
		s.log.Info("request refused: credentials "+reason, slog.String("method", req.Method), slog.String("source", req.RemoteAddr))
		w.Header().Set("Proxy-Authenticate", `Basic realm="`+Realm+`"`)
		http.Error(w, "proxy authentication required", http.StatusProxyAuthRequired)
		return
	}
	if req.Method == http.MethodConnect {
		s.connect(w, req, r, user)
		return
	}
	s.forward(w, req, r, user)
}

// refuse answers a request the proxy will not carry, with the status its
// error calls for, and logs the decision.
func (s *Server) refuse(w http.ResponseWriter, req *http.Request, user string, err error) {
	code := http.StatusBadGateway
	var ne net.Error
	switch {
	case errors.Is(err, errPort), errors.Is(err, errDenied):
		code = http.StatusForbidden
	case errors.Is(err, errBadRequest):
		code = http.StatusBadRequest
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		code = http.StatusGatewayTimeout
	}
	s.log.Info("request refused", slog.String("method", req.Method), slog.String("user", user),
		slog.String("source", req.RemoteAddr), slog.Int("status", code), slog.String("reason", err.Error()))
	http.Error(w, http.StatusText(code), code)
}

// errBadRequest is a request no proxy can carry.
var errBadRequest = errors.New("bad request")
