package dofake

import (
	"strconv"

	"github.com/egress-proxies/egress/internal/vm/loopback"
)

// Serve makes the fake's Droplets boot, for the local stack and its
// end-to-end test (package loopback): every Droplet's public IPv4 and
// every reserved IP is a loopback address of its own, the fake settles by
// itself every Tick (Droplets run, destroyed ones go), and a Droplet
// whose user-data is one of package cloudinit's runs the proxy engine of
// the configuration in it on its address, from its create until its
// delete; its engine is ready once the Droplet is active. A reserved IP
// assigned to a Droplet is where its engine listens from then on (the
// loopback stand-in has one address per engine, and a Static proxy is
// reached at its reserved IP), as the EC2 fake moves an engine to its
// Elastic IP.
type Serve = loopback.Serve

// StartServing turns Serve on: the Droplets made from now on boot, on
// addresses of 127.0.112.0/20 (their own) and 127.0.128.0/20 (reserved
// IPs), apart from the mock's, Hetzner's and EC2's. StopServing (or
// Close) stops their engines and the settling.
func (s *Server) StartServing(opts Serve) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.serving = loopback.Start(opts, s.Settle, "127.0.112.0/20", "127.0.128.0/20")
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
func (s *Server) nextAddress(reserved bool) (string, bool) {
	if s.serving == nil {
		return "", false
	}
	if reserved {
		return s.serving.Ranges[1].Next(), true
	}
	return s.serving.Ranges[0].Next(), true
}

// boot starts the engine of a new Droplet (loopback.VMs.Boot). Called
// with s.mu held.
func (s *Server) boot(id int, ip, userData string) {
	if s.serving != nil {
		s.serving.VMs.Boot(strconv.Itoa(id), ip, userData)
	}
}

// running marks a served Droplet's engine ready: it is active. Called
// with s.mu held.
func (s *Server) running(id int) {
	if s.serving != nil {
		s.serving.VMs.Running(strconv.Itoa(id))
	}
}

// unserve stops a Droplet's engine at once, as a destroy cuts a VM's
// tunnels. Called with s.mu held.
func (s *Server) unserve(id int) {
	if s.serving != nil {
		s.serving.VMs.Stop(strconv.Itoa(id))
	}
}

// Serving reports whether a Droplet runs an engine.
func (s *Server) Serving(id int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.serving != nil && s.serving.VMs.Serving(strconv.Itoa(id))
}

// serveAt moves a served Droplet's engine to addr, a reserved IP
// assigned to it. Called with s.mu held.
func (s *Server) serveAt(d *droplet, addr string) {
	if s.serving == nil {
		return
	}
	id := strconv.Itoa(d.ID)
	s.serving.VMs.Stop(id)
	s.serving.VMs.Boot(id, addr, d.userData)
	if d.Status == "active" {
		s.serving.VMs.Running(id)
	}
}
