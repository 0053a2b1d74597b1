package hetznerfake

import (
	"strconv"

	"github.com/egress-proxies/egress/internal/vm/loopback"
)

// Serve makes the fake's servers boot, for the local stack and its
// end-to-end test (package loopback): every public IPv4 is a loopback
// address of its own, the fake settles by itself every Tick (servers run,
// deleted ones go), and a server whose user-data is one of package
// cloudinit's runs the proxy engine of the configuration in it on that
// address, from its create until its delete; its engine is ready once the
// server runs.
type Serve = loopback.Serve

// StartServing turns Serve on: the servers made from now on boot, on
// addresses of 127.0.48.0/20 (ephemeral) and 127.0.64.0/20 (Primary IPs
// made on their own). StopServing (or Close) stops their engines and the
// settling.
func (s *Server) StartServing(opts Serve) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.serving = loopback.Start(opts, s.Settle, "127.0.48.0/20", "127.0.64.0/20")
}

// StopServing stops the settling and every engine.
func (s *Server) StopServing() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.serving.Stop()
	s.serving = nil
}

// nextAddress is the next address of a served range, or ok false when
// the fake does not serve. Called with s.mu held.
func (s *Server) nextAddress(static bool) (string, bool) {
	if s.serving == nil {
		return "", false
	}
	if static {
		return s.serving.Ranges[1].Next(), true
	}
	return s.serving.Ranges[0].Next(), true
}

// boot starts the engine of a new server (loopback.VMs.Boot). Called
// with s.mu held.
func (s *Server) boot(id int64, ip, userData string) {
	if s.serving != nil {
		s.serving.VMs.Boot(strconv.FormatInt(id, 10), ip, userData)
	}
}

// running marks a served server's engine ready: its server runs. Called
// with s.mu held.
func (s *Server) running(id int64) {
	if s.serving != nil {
		s.serving.VMs.Running(strconv.FormatInt(id, 10))
	}
}

// unserve stops a server's engine at once, as a deletion cuts a VM's
// tunnels. Called with s.mu held.
func (s *Server) unserve(id int64) {
	if s.serving != nil {
		s.serving.VMs.Stop(strconv.FormatInt(id, 10))
	}
}

// Serving reports whether a server runs an engine.
func (s *Server) Serving(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.serving != nil && s.serving.VMs.Serving(strconv.FormatInt(id, 10))
}
