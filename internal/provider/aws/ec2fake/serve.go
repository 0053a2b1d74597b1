package ec2fake

import (
	"log/slog"
	"time"

	"github.com/egress-proxies/egress/internal/vm/loopback"
)

// Serve makes the fake's instances boot, for the local stack and its
// end-to-end test, as the Hetzner fake's servers do (package loopback):
// every public address is a loopback address of its own (an instance's
// of 127.0.80.0/20, an Elastic IP's of 127.0.96.0/20), the fake settles
// by itself every Tick (pending instances run, shutting-down ones end),
// and an instance whose user-data is one of package cloudinit's runs the
// proxy engine of the configuration in it on its public address from
// when it runs until it ends; an Elastic IP associated with it moves its
// engine to that address, as the instance's public address changes.
type Serve struct {
	// AllowDestinations are exceptions to the engine's deny list, which
	// refuses loopback: the local test targets.
	AllowDestinations []string
	// Tick is how often the fake settles; zero is a second.
	Tick time.Duration
	// Log receives the engines' lines; nil discards them.
	Log *slog.Logger
}

// StartServing turns Serve on for the instances and Elastic IPs made from
// now on. StopServing (or Close) stops their engines and the settling.
func (s *Server) StartServing(opts Serve) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vms = loopback.New(loopback.Options{AllowDestinations: opts.AllowDestinations, Log: opts.Log})
	s.servedIPs, s.servedEIPs = loopback.NewRange("127.0.80.0/20"), loopback.NewRange("127.0.96.0/20")
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

// publicIP is a new instance's public address (elastic false) or a new
// Elastic IP's: a served loopback address when the fake serves, else one
// of the benchmark ranges. Called with s.mu held.
func (s *Server) publicIP(elastic bool) string {
	switch {
	case s.vms != nil && elastic:
		return s.servedEIPs.Next()
	case s.vms != nil:
		return s.servedIPs.Next()
	case elastic:
		return s.newIP("198.19")
	}
	return s.newIP("198.18")
}

// serveAt (re)starts an instance's engine on its public address, ready
// at once: the instance runs. Called with s.mu held.
func (s *Server) serveAt(in *Instance) {
	if s.vms == nil {
		return
	}
	s.vms.Stop(in.ID)
	s.vms.Boot(in.ID, in.PublicIP, in.UserData)
	s.vms.Running(in.ID)
}

// unserve stops an instance's engine at once, as a termination cuts a
// VM's tunnels. Called with s.mu held.
func (s *Server) unserve(id string) {
	if s.vms != nil {
		s.vms.Stop(id)
	}
}

// Serving reports whether an instance runs an engine.
func (s *Server) Serving(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.vms != nil && s.vms.Serving(id)
}
