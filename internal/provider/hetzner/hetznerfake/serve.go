package hetznerfake

import (
	"log/slog"
	"strconv"
	"time"

	"github.com/egress-proxies/egress/internal/vm/loopback"
)

// Serve makes the fake's servers boot, for the local stack and its
// end-to-end test (package loopback): every public IPv4 is a loopback
// address of its own, the fake settles by itself every Tick (servers run,
// deleted ones go), and a server whose user-data is one of package
// cloudinit's runs the proxy engine of the configuration in it on that
// address, from its create until its delete; its engine is ready once the
// server runs.
type Serve struct {
	// AllowDestinations are exceptions to the engine's deny list, which
	// refuses loopback: the local test targets.
	AllowDestinations []string
	// Tick is how often the fake settles; zero is a second.
	Tick time.Duration
	// Log receives the engines' lines; nil discards them.
	Log *slog.Logger
}

// StartServing turns Serve on: the servers made from now on boot, on
// addresses of 127.0.48.0/20 (ephemeral) and 127.0.64.0/20 (Primary IPs
// made on their own). StopServing (or Close) stops their engines and the
// settling.
func (s *Server) StartServing(opts Serve) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vms = loopback.New(loopback.Options{AllowDestinations: opts.AllowDestinations, Log: opts.Log})
	s.servedIPs, s.servedStatic = loopback.NewRange("127.0.48.0/20"), loopback.NewRange("127.0.64.0/20")
	s.stopServing = loopback.Settling(opts.Tick, s.Settle)
}

// StopServing stops the settling and every engine.
func (s *Server) StopServing() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopServing != nil {
		s.stopServing()
		s.stopServing = nil
	}
	if s.vms != nil {
		s.vms.StopAll()
		s.vms = nil
	}
}

// nextAddress is the next address of a served range, or ok false when
// the fake does not serve. Called with s.mu held.
func (s *Server) nextAddress(static bool) (string, bool) {
	if s.vms == nil {
		return "", false
	}
	if static {
		return s.servedStatic.Next(), true
	}
	return s.servedIPs.Next(), true
}

// boot starts the engine of a new server (loopback.VMs.Boot). Called
// with s.mu held.
func (s *Server) boot(id int64, ip, userData string) {
	if s.vms != nil {
		s.vms.Boot(strconv.FormatInt(id, 10), ip, userData)
	}
}

// running marks a served server's engine ready: its server runs. Called
// with s.mu held.
func (s *Server) running(id int64) {
	if s.vms != nil {
		s.vms.Running(strconv.FormatInt(id, 10))
	}
}

// unserve stops a server's engine at once, as a deletion cuts a VM's
// tunnels. Called with s.mu held.
func (s *Server) unserve(id int64) {
	if s.vms != nil {
		s.vms.Stop(strconv.FormatInt(id, 10))
	}
}

// Serving reports whether a server runs an engine.
func (s *Server) Serving(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.vms != nil && s.vms.Serving(strconv.FormatInt(id, 10))
}
